#!/usr/bin/env python3
"""Reads `swift package diagnose-api-breaking-changes` output and CHANGELOG.md: fails on any break
of the public API that the changelog's "Unreleased" section doesn't name under a "Breaking" heading.

    python3 Scripts/api_breaks.py DIGESTER_OUTPUT [CHANGELOG] [SOURCES]

A break names a declaration (`func EnvironmentStack.push(label:)`, `var X.y`...); it is listed
when its name (the last component, `push`) appears in backticks in a "### Breaking..." part of
"## Unreleased". Breaks of `package` declarations (shared between Habitat's own modules, not
users') are not the public API and are reported, not judged.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
KINDS = r"(?:func|var|let|constructor|struct|class|enum|enumelement|protocol|typealias|subscript|associatedtype|accessor|actor|macro|operator)"
BREAK = re.compile(r"API breakage:\s*" + KINDS + r"\s+([A-Za-z_][\w.]*)")
PACKAGE_TYPE = re.compile(r"^\s*(?:@\w+\s+)*package\s+(?:final\s+|indirect\s+)*(?:enum|struct|class|protocol|actor)\s+(\w+)", re.M)


def breaks(output):
    """(the message, the declaration's dotted name) for every break the digester reported."""
    found = []
    for line in output.splitlines():
        match = BREAK.search(line)
        if match:
            found.append((line.strip().lstrip("💔").strip(), match.group(1)))
    return found


def listed_names(changelog):
    """Every backticked text in the "Breaking" parts of the "Unreleased" section."""
    unreleased = re.split(r"(?m)^## ", changelog)
    section = next((part for part in unreleased if part.startswith("Unreleased")), "")
    names = []
    for part in re.split(r"(?m)^### ", section)[1:]:
        if part.startswith("Breaking"):
            names += re.findall(r"`([^`]+)`", part)
    return names


def package_types(sources):
    return {name for file in sources.rglob("*.swift") for name in PACKAGE_TYPE.findall(file.read_text())}


def judge(output, changelog, internal):
    """The unlisted breaks of the public API, and the breaks of package declarations."""
    listed = " ".join(listed_names(changelog))
    unlisted, package = [], []
    for message, name in breaks(output):
        parts = name.split(".")
        if any(part in internal for part in parts[:-1]) or parts[0] in internal:
            package.append(message)
        elif not re.search(r"(?<![\w])" + re.escape(parts[-1]) + r"(?![\w])", listed):
            unlisted.append(message)
    return unlisted, package


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    output = pathlib.Path(sys.argv[1]).read_text()
    changelog = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else ROOT / "CHANGELOG.md").read_text()
    internal = package_types(pathlib.Path(sys.argv[3] if len(sys.argv) > 3 else ROOT / "Sources"))
    unlisted, package = judge(output, changelog, internal)
    total = len(breaks(output))
    for message in package:
        print(f"api: not public (a package declaration), not judged: {message}")
    if unlisted:
        print("api: breaking changes that CHANGELOG.md's Unreleased section doesn't list under a "
              "\"### Breaking\" heading (name each in backticks there, old -> new):", file=sys.stderr)
        for message in unlisted:
            print(f"  {message}", file=sys.stderr)
        sys.exit(1)
    print(f"api: {total} break(s) reported, {total - len(package)} of the public API, every one listed in CHANGELOG.md")


if __name__ == "__main__":
    main()
