#!/usr/bin/env bash
# What a test's isolation costs: one test's worth of work (install a test environment, 10 reads,
# leave) through Habitat's `.environment` trait and swift-dependencies' `.dependencies` trait,
# each driven as Swift Testing drives a trait, beside 10 plain reads with no trait
# (IsolationCost/IsolationCostTests.swift). Medians of 7 interleaved rounds, in time: valgrind
# 3.19 dies inside the Swift Testing runner, so this row has no instruction count.
#
#     bash Benchmarks/isolation.sh [--tsv FILE] [--iterations N]
set -euo pipefail
cd "$(dirname "$0")"
tsv=/dev/null
iterations=20000
while [ $# -gt 0 ]; do
    case $1 in
        --tsv) tsv=$2; shift 2 ;;
        --iterations) iterations=$2; shift 2 ;;
        *) echo "isolation.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
swift build -c release --build-tests >/dev/null 2>&1
bundle="$(swift build -c release --show-bin-path)/HabitatBenchmarksPackageTests.xctest"
line=$(ISOLATION_ITERATIONS=$iterations "$bundle" --testing-library swift-testing --filter "IsolationCost/oneTestsIsolation" 2>/dev/null \
    | grep '^isolation' || true)
[ -n "$line" ] || { echo "isolation.sh: the measurement printed nothing" >&2; exit 1; }
IFS=$'\t' read -r _ control habitat dependencies ratio <<< "$line"
printf "%-56s %9s\n" "one test's isolation (install, 10 reads, leave)" "ns/test"
printf "%-56s %9s\n" "10 plain reads, no trait (control)" "$control"
printf "%-56s %9s\n" "Habitat .environment trait" "$habitat"
printf "%-56s %9s\n" "swift-dependencies .dependencies trait" "$dependencies"
echo "Habitat / swift-dependencies: ${ratio}x (target <= 0.5x)"
printf "isolation-control-ns\t%s\nisolation-habitat-ns\t%s\nisolation-swift-dependencies-ns\t%s\nisolation-ratio\t%s\n" \
    "$control" "$habitat" "$dependencies" "$ratio" > "$tsv"
