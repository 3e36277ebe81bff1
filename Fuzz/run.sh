#!/usr/bin/env bash
# Builds the fuzz targets with libFuzzer and AddressSanitizer, then fuzzes each for SECONDS (60 by
# default) from its committed corpus: the store document reader (Corpus/store-document) and the
# session store as a launch finds it (Corpus/session-store: a snapshot, the token index and two
# accounts' items, split at zero bytes). New inputs that reach new code go to a scratch copy; add
# the interesting ones to Corpus/ by hand.
#
#     bash Fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-60}
for target in store-document session-store; do
    swift build -c release --product "fuzz-$target" \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library >/dev/null
    binary=$(swift build -c release --show-bin-path)/fuzz-$target
    work=$(mktemp -d)
    cp "Corpus/$target"/* "$work/"
    echo "fuzz-$target:"
    status=0
    # NB: the target's own files (a store document) go in a directory removed after the run.
    scratch=$(mktemp -d)
    TMPDIR=$scratch SWIFT_BACKTRACE=enable=no "$binary" "$work" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 >"$work.log" 2>&1 || status=$?
    grep -E "^#[0-9]+ +(DONE|INITED)|stat::number_of_executed_units|ERROR|SUMMARY|Done|precondition|Fatal error|Test unit written" "$work.log" || true
    rm -rf "$work" "$work.log" "$scratch"
    # libFuzzer exits non-zero on a crash, a leak or a timeout.
    test "$status" -eq 0
done
