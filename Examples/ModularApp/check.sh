#!/usr/bin/env bash
# Builds and runs the modular app, runs each package's tests, and checks that neither
# feature's package depends on the app or on the other feature. One build directory for the
# three packages, so Habitat is compiled once.
set -euo pipefail
cd "$(dirname "$0")"
scratch=$PWD/.build
for feature in Profile Projects; do
    dependencies=$(cd "$feature" && swift package dump-package | python3 -c '
import json, sys
print(" ".join(sorted(d["fileSystem"][0]["path"].rstrip("/").split("/")[-1] for d in json.load(sys.stdin)["dependencies"])))')
    echo "$feature depends on: $dependencies"
    for forbidden in App Profile Projects; do
        [ "$forbidden" = "$feature" ] && continue
        case " $dependencies " in *" $forbidden "*) echo "check.sh: $feature depends on $forbidden" >&2; exit 1 ;; esac
    done
    (cd "$feature" && swift test --scratch-path "$scratch" 2>&1 | grep -E "error|warning:|Test run|Executed" | sort -u)
done
(cd App && swift run --scratch-path "$scratch" modular-app && swift test --scratch-path "$scratch" 2>&1 | grep -E "error|warning:|Test run|Executed" | sort -u)
