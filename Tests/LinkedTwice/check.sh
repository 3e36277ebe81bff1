#!/usr/bin/env bash
# Habitat linked twice (issue 58, item 6): two dynamic frameworks that each link Habitat
# statically, and a test bundle with a copy of its own. The second copy's first read in a test
# run says "Habitat is loaded twice", naming both images; a process with one copy says nothing.
set -euo pipefail
cd "$(dirname "$0")/App"
swift build
bin="$(swift build --show-bin-path)/two-frameworks"
HABITAT_CONTEXT=test "$bin" > /dev/null 2> two-copies.err
grep -q "Habitat is loaded twice" two-copies.err
grep -q "libFrameworkA" two-copies.err
grep -q "libFrameworkB" two-copies.err
# Outside a test run, nothing is checked, so nothing is said.
"$bin" > /dev/null 2> live.err
! grep -q "loaded twice" live.err
rm -f two-copies.err live.err
echo "linked twice: the program's second copy warned, naming both frameworks; outside a test run, nothing"
# The test bundle's own copy beside framework A's: an issue of the test that reads second.
swift test
