#!/usr/bin/env bash
# Builds the fuzz target with libFuzzer and AddressSanitizer, then fuzzes the store document
# reader for SECONDS (60 by default) from the committed corpus. New inputs that reach new code
# go to a scratch copy; add the interesting ones to Corpus/ by hand.
#
#     bash Fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-60}
swift build -c release --product fuzz-store-document \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library >/dev/null
binary=$(swift build -c release --show-bin-path)/fuzz-store-document
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp Corpus/store-document/* "$work/"
"$binary" "$work" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 2>&1 \
    | grep -E "^#[0-9]+ +(DONE|INITED)|stat::number_of_executed_units|ERROR|SUMMARY|Done" || true
# libFuzzer exits non-zero on a crash, a leak or a timeout; the pipe above hides that, so ask again.
test "${PIPESTATUS[0]}" -eq 0
