#!/usr/bin/env bash
# Runs every benchmark once, side by side with the peers, then prints the comparison table and
# writes it to results.tsv (for scripts), results.md (for the README) and results.svg (a plot).
#
#     bash Benchmarks/compare.sh            # the full run (a few minutes)
#     bash Benchmarks/compare.sh --smoke    # a few iterations of everything; targets not checked
set -euo pipefail
cd "$(dirname "$0")"

smoke=0
[ "${1:-}" = "--smoke" ] && smoke=1

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ $smoke = 1 ]; then export HABITAT_BENCH_ITERATIONS=5; fi
swift package --allow-writing-to-package-directory benchmark \
    --format influx --path "$out" --no-progress --quiet

if [ $smoke = 1 ]; then
    python3 summarize.py "$out"/*.csv --smoke
else
    python3 summarize.py "$out"/*.csv --tsv results.tsv --svg results.svg --markdown results.md
fi
