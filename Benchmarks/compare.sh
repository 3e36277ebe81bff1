#!/usr/bin/env bash
# Runs every benchmark, side by side with the peers, then prints the comparison table and
# writes it to results.tsv (for scripts), results.md (for the README) and results.svg (a plot).
#
#     bash Benchmarks/compare.sh            # the full run (about 8 minutes)
#     bash Benchmarks/compare.sh --smoke    # a few iterations of everything; targets not checked
set -euo pipefail
cd "$(dirname "$0")"

smoke=0
[ "${1:-}" = "--smoke" ] && smoke=1

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# NB: run-to-run noise on these machines is +-30-40%, so a full run repeats the whole suite
# (5 times by default) and the table takes each benchmark's median across the runs.
runs=${HABITAT_BENCH_RUNS:-5}
if [ $smoke = 1 ]; then export HABITAT_BENCH_ITERATIONS=5; runs=1; fi
for run in $(seq 1 "$runs"); do
    mkdir -p "$out/$run"
    # NB: --target, because the plugin would also run the instruction probe as a benchmark.
    swift package --allow-writing-to-package-directory benchmark --target HabitatBenchmarks \
        --format influx --path "$out/$run" --no-progress --quiet
done

if [ $smoke = 1 ]; then
    python3 summarize.py "$out"/*/*.csv --smoke
else
    python3 summarize.py "$out"/*/*.csv --tsv results.tsv --svg results.svg --markdown results.md
fi
