#!/usr/bin/env bash
# Counts the flushes to disk (fsync, fdatasync) a session's saves make, with strace, through
# the demo (habitat-demo: a JSON file store and a file secret store, as an app on Linux keeps
# them). Each command is one launch: its restore (which writes nothing here) and its save. A
# file write is two flushes (the file, then its directory, after the rename); a removal, one.
#
#     bash Benchmarks/syncs.sh [CHECKOUT]   # needs strace (apt-get install strace); CHECKOUT:
#                                         # another checkout's demo instead (a release's, to compare)
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
command -v strace >/dev/null || { echo "syncs.sh needs strace" >&2; exit 1; }
swift build --product habitat-demo >/dev/null
demo="$(swift build --show-bin-path)/habitat-demo"
store=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$store" "$log"' EXIT

printf "%-44s %6s\n" "save (one launch of habitat-demo)" "syncs"
while IFS='|' read -r label arguments; do
    # shellcheck disable=SC2086
    strace -f -e trace=fsync,fdatasync -o "$log" "$demo" --store "$store/s" $arguments >/dev/null 2>&1
    printf "%-44s %6s\n" "$label" "$(grep -cE 'fsync|fdatasync' "$log")"
done <<'ROWS'
the first login|login Ada --token tok-ada-1
a second account signs in|login Grace --token tok-grace-1
a switch|switch Ada
a refresh (a new token for the active account)|refresh
a restore that saves nothing|status
another account's sign-out|logout Grace
the last account's sign-out|logout
ROWS
