#!/usr/bin/env bash
# Type-checks Habitat for iOS and macOS against Apple's SDK interfaces, with
# ../shared/tools/apple-check (its README says what it checks and what it can't): the root
# package's libraries and executables, every example that depends only on Habitat (the SwiftUI
# app among them), and the docs' app code with their Apple-only blocks
# (`Scripts/check-docs.py --apple`), at iOS 16, iOS 17, macOS 13 and macOS 14. Fails on any error
# or warning in the project's own files.
#
#     APPLE_SDK_MIRROR=/path/to/maciOS.git bash Scripts/check-apple.sh
#
# APPLE_SDK_MIRROR is a git mirror of the public repository seayou2468-web/maciOS (never commit
# any of its files). Without it, this prints one line saying the check was skipped, and exits 0.
# APPLE_CHECK names the tool when it isn't at ../shared/tools/apple-check.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${APPLE_SDK_MIRROR:-}" ]; then
    echo "apple check: SKIPPED, not run: no Apple SDK here (set APPLE_SDK_MIRROR to a git mirror of seayou2468-web/maciOS)"
    exit 0
fi
tool=${APPLE_CHECK:-../shared/tools/apple-check}
[ -x "$tool" ] || { echo "apple check: $tool not found (set APPLE_CHECK)" >&2; exit 2; }
export APPLE_CHECK="$tool"

"$tool" --mirror "$APPLE_SDK_MIRROR" --targets ios16,ios17,macos13,macos14 \
    . Examples/FirstTest Examples/QuickStart Examples/ModularApp/Profile Examples/ModularApp/Projects Examples/ModularApp/App \
    Examples/SwiftUIApp
python3 Scripts/check-docs.py --apple
