#!/usr/bin/env bash
# Runs every benchmark, side by side with the peers and floors, then prints the comparison and
# growth tables and writes results.tsv, growth.tsv, results.md, results.svg and growth.svg.
#
#     bash Benchmarks/compare.sh            # the full run (about 12 minutes on 2 vCPUs)
#     bash Benchmarks/compare.sh --smoke    # a few iterations of everything; targets not checked
set -euo pipefail
cd "$(dirname "$0")"

smoke=0
[ "${1:-}" = "--smoke" ] && smoke=1

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# NB: every benchmark process makes its own directory of files (`benchDirectory`); they go in
# this run's directory, and are removed with it (they were left in /tmp, hundreds a run).
export TMPDIR="$out/tmp"
mkdir -p "$TMPDIR"
# NB: run-to-run noise on these machines is +-30-40%, so a full run repeats everything
# (5 passes by default) and the tables take each measurement's median across the passes.
runs=${HABITAT_BENCH_RUNS:-5}
growth_flag=""
if [ $smoke = 1 ]; then export HABITAT_BENCH_ITERATIONS=5; runs=1; growth_flag="--smoke"; fi
swift build -c release --product habitat-growth >/dev/null
growth=$(swift build -c release --show-bin-path)/habitat-growth
for run in $(seq 1 "$runs"); do
    mkdir -p "$out/$run"
    # NB: --target, because the plugin would also run the other executables as benchmarks.
    swift package --allow-writing-to-package-directory benchmark --target HabitatBenchmarks \
        --format influx --path "$out/$run" --no-progress --quiet
    "$growth" $growth_flag > "$out/$run/growth.tsv"
done

# Following a store: another process's sign-out and idle wake-ups, change feed vs polling.
swift build -c release --product habitat-follow >/dev/null
"$(swift build -c release --show-bin-path)/habitat-follow" $growth_flag | tee "$out/follow.md"

# What a test's isolation costs: the two test traits, driven as Swift Testing drives them.
if [ $smoke = 1 ]; then bash isolation.sh --iterations 500; else bash isolation.sh --tsv "$out/isolation.tsv"; fi

if [ $smoke = 1 ]; then
    python3 summarize.py --csv "$out"/*/*.csv --growth "$out"/*/growth.tsv --smoke
    exit
fi
instructions=()
if command -v valgrind >/dev/null; then
    if bash instructions.sh --tsv "$out/instructions.tsv"; then
        instructions=(--instructions "$out/instructions.tsv")
    else
        echo "(instructions.sh failed: the tables go without instruction counts)" >&2
    fi
else
    echo "(valgrind not found: the tables go without instruction counts)" >&2
fi
python3 summarize.py --csv "$out"/*/*.csv --growth "$out"/*/growth.tsv "${instructions[@]}" \
    --tsv results.tsv --growth-tsv growth.tsv --svg results.svg --growth-svg growth.svg --markdown results.md
