#!/usr/bin/env bash
# The API-breakage check: `swift package diagnose-api-breaking-changes` against the last
# release's commit (the last line of RELEASES) for every library product, then
# Scripts/api_breaks.py: any break of the public API that CHANGELOG.md's "Unreleased" section
# doesn't name under a "### Breaking" heading fails.
#
#     bash Scripts/check-api.sh               # what CI runs
#     bash Scripts/check-api.sh --self-test   # a planted rename, in a scratch copy: must fail, then pass once listed
set -euo pipefail
cd "$(dirname "$0")/.."

products=(Habitat HabitatPersistence HabitatKeychain HabitatTesting HabitatPersistenceTesting HabitatOperators)
read -r version commit _ < <(grep -v '^#' RELEASES | awk 'NF' | tail -1)

# A clean clone may be shallow: fetch the release's commit when it is missing. A shallow clone
# that can't fetch it (no remote) skips the check and says so; a full clone without it fails.
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
    git fetch --quiet --unshallow 2>/dev/null || git fetch --quiet origin "$commit" 2>/dev/null || true
fi
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
    if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
        echo "api: SKIPPED, not run: this clone is shallow and the release $version's commit $commit can't be fetched"
        exit 0
    fi
    echo "api: the release $version's commit $commit is not in this repository's history" >&2
    exit 1
fi

# The digester's outputs, and the self-test's copy of the tree: removed at exit.
outputs=$(mktemp -d)
scratch=""
trap '[ -z "$scratch" ] || git worktree remove --force "$scratch" 2>/dev/null || rm -rf "$scratch"; rm -rf "$outputs"' EXIT

# Runs the digester in the package at $1 against the release; prints its output's file.
diagnose() {
    local out
    out=$(mktemp -p "$outputs")
    if ! (cd "$1" && swift package diagnose-api-breaking-changes "$commit" --products "${products[@]}") > "$out" 2>&1; then
        if ! grep -q "API breakage:" "$out"; then
            cat "$out" >&2
            echo "api: the comparison itself failed (above)" >&2
            exit 1
        fi
    fi
    echo "$out"
}

if [ "${1:-}" != "--self-test" ]; then
    echo "api: comparing with $version ($commit)"
    python3 Scripts/api_breaks.py "$(diagnose .)"
    exit 0
fi

# The self-test: a copy of this tree whose public `EnvironmentStack.replaceCurrent` is renamed.
scratch=$(mktemp -d)
git worktree add --quiet --detach "$scratch" HEAD
sed -i 's/public func replaceCurrent</public func replaceTop</' "$scratch/Sources/Habitat/EnvironmentStack+Stack.swift"
grep -q "public func replaceTop<" "$scratch/Sources/Habitat/EnvironmentStack+Stack.swift"
output=$(diagnose "$scratch")
grep "API breakage" "$output" || true
if python3 Scripts/api_breaks.py "$output" "$scratch/CHANGELOG.md" "$scratch/Sources"; then
    echo "api self-test: FAILED: the planted rename was not caught" >&2
    exit 1
fi
echo "api self-test: the planted rename, unlisted, fails the check (above)"
python3 - "$scratch/CHANGELOG.md" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
text = text.replace("## Unreleased\n", "## Unreleased\n\n### Breaking: a rename\n\n- `replaceCurrent` -> `replaceTop`.\n", 1)
open(path, "w").write(text)
PY
python3 Scripts/api_breaks.py "$output" "$scratch/CHANGELOG.md" "$scratch/Sources"
echo "api self-test: listed under \"### Breaking\" in Unreleased, it passes"
