#!/usr/bin/env bash
# Counts instructions per operation with valgrind's callgrind: the stable figure on machines
# whose wall-clock times vary by 30-40% from run to run. Each operation runs N and 2N times and
# the difference is divided by N, so start-up costs cancel out. Every operation has the loop
# shape and the work of its row in the harness (InstructionProbe/main.swift).
#
#     bash Benchmarks/instructions.sh [--tsv FILE]   # needs valgrind (apt-get install valgrind)
set -euo pipefail
cd "$(dirname "$0")"
command -v valgrind >/dev/null || { echo "instructions.sh needs valgrind" >&2; exit 1; }
tsv=/dev/null
[ "${1:-}" = "--tsv" ] && tsv=$2
swift build -c release --product habitat-instruction-probe >/dev/null
# NB: without its debug information, which valgrind 3.19 can't read since the probe links
# swift-dependencies ("Possibly corrupted debuginfo file"); counting instructions doesn't need it.
probe=$(mktemp)
trap 'rm -f "$probe"' EXIT
objcopy --strip-debug "$(swift build -c release --show-bin-path)/habitat-instruction-probe" "$probe"

count() {  # operation, iterations -> total instructions
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$probe" "$1" "$2" 2>&1 \
        | awk '/refs:/ { gsub(",", "", $NF); print $NF }'
}

: > "$tsv"
printf "%-26s %9s\n" operation "instr/op"
for operation in read read-floor read-swift-dependencies feature-read feature-read-app lazy-read lazy-first-read scoped-read scope scope-burst scope-swift-dependencies \
    scope-tasklocal-box scope-tasklocal-copy-box push-pop push-pop-floor push-pop-locked-floor \
    scope-rich scope-rich-tasklocal-copy-box push-pop-rich push-pop-rich-floor request-rich request-rich-tasklocal-environment \
    login-logout login-login switch-switch login-logout-floor request request-async request-bound request-bound-tasklocal request-floor request-tasklocal request-tasklocal-environment \
    request-tasklocal-async request-swift-dependencies; do
    n=20000
    case $operation in
        read|read-floor|scoped-read|feature-read|feature-read-app|lazy-read) n=1000000 ;;
        scope-burst) n=20480 ;;  # whole bursts of 64
    esac
    a=$(count "$operation" "$n")
    b=$(count "$operation" $((2 * n)))
    [ -n "$a" ] && [ -n "$b" ] || { echo "instructions.sh: valgrind counted nothing for $operation" >&2; exit 1; }
    printf "%-26s %9s\n" "$operation" "$(( (b - a + n / 2) / n ))"
    printf "%s\t%s\n" "$operation" "$(( (b - a + n / 2) / n ))" >> "$tsv"
done
