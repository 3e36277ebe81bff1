#!/usr/bin/env python3
"""Compiles every ```swift block of README.md and the DocC articles, and runs most of them.

Each document is one program, its blocks in order:
- a block with tests (@Test, @Suite, XCTestCase, EnvironmentTestCase) goes to the document's
  test target, and runs with `swift test`; it compiles with its own imports only, as pasted into
  a test target, and must import the app module as `@testable import MyApp` (the check points
  that at the document's module);
- a block of declarations only (types, extensions, functions, globals) goes to the document's
  library, one file per block;
- any other block (statements at the top level) goes, in order, into the `main.swift` of the
  document's program, which runs.
A document defines every type its examples use in a block the reader sees (its last section,
"The app in these examples"): nothing is compiled that the reader can't paste.

A block that can't compile here says so on the line above its fence, with a reason:
    <!-- not compiled: SwiftUI exists only on Apple platforms -->
Any other block that fails to compile, to run, or whose tests fail, fails this script.

    python3 Scripts/check-docs.py            # generate .build-docs/, build, run, test
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / ".build-docs"
DOCS = [ROOT / "README.md"] + sorted((ROOT / "Sources").glob("*/*.docc/**/*.md"))
SKIP = re.compile(r"<!--\s*not compiled:\s*(\S.*?)\s*-->")
TEST = re.compile(r"@Test\b|@Suite\b|XCTestCase\b|EnvironmentTestCase<")
DECLARATION = re.compile(
    r"^(import|@testable|struct|enum|final|class|actor|protocol|extension|func|let|var|typealias|"
    r"nonisolated|public|private|fileprivate|internal|@|//|#if|#else|#endif|\}|$)"
)


def blocks(path):
    """(line number, code, skip reason or None) for every ```swift block of `path`."""
    lines = path.read_text().splitlines()
    found = []
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```swift":
            above = next((l for l in reversed(lines[:index]) if l.strip()), "")
            skip = SKIP.search(above)
            end = index + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            found.append((index + 1, "\n".join(lines[index + 1:end]), skip.group(1) if skip else None))
            index = end
        index += 1
    return found


def kind(code):
    if TEST.search(code):
        return "test"
    depth = 0
    for line in code.splitlines():
        if depth == 0 and not DECLARATION.match(line):
            return "statements"
        depth += sum(line.count(c) for c in "{([") - sum(line.count(c) for c in "})]")
    return "declarations"


def module_name(path):
    stem = "Readme" if path.name == "README.md" else path.stem
    return "Doc" + re.sub(r"[^A-Za-z0-9]", "", stem)


def main():
    if OUT.exists():
        for child in OUT.iterdir():
            if child.name != ".build":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
    OUT.mkdir(exist_ok=True)
    targets, programs, skipped, total = [], [], [], 0
    for doc in DOCS:
        found = blocks(doc)
        if not found:
            continue
        name = module_name(doc)
        relative = doc.relative_to(ROOT)
        library, program, tests = OUT / name, OUT / f"{name}Program", OUT / f"{name}Tests"
        statements = []
        # A document is one program: every file of it sees the imports its blocks show.
        imports = sorted({m for _, code, skip in found if not skip for m in re.findall(r"^import \w+$", code, re.M)})
        if not imports and any(not skip for _, _, skip in found):
            sys.exit(f"check-docs: {relative} shows no import; its first code block should say what to import")
        prelude = "\n".join(imports) + "\n"
        for number, (line, code, skip) in enumerate(found):
            total += 1
            if skip:
                skipped.append(f"{relative}:{line} ({skip})")
                continue
            header = f"// {relative}:{line}\n"
            what = kind(code)
            if what == "declarations":
                library.mkdir(exist_ok=True)
                (library / f"Block{number:02}.swift").write_text(prelude + header + code + "\n")
            elif what == "statements":
                statements.append(header + code)
            else:
                # A test block compiles as a reader pastes it into a test target: with its own
                # imports only, the app module's among them (written `MyApp`, the docs' app).
                if not re.search(r"^(@testable )?import MyApp\b", code, re.M):
                    sys.exit(f"check-docs: {relative}:{line}: a test block must import the app module "
                             "(`@testable import MyApp`), as a test target does")
                code = re.sub(r"^(@testable )?import MyApp\b", rf"\1import {name}", code, flags=re.M)
                tests.mkdir(exist_ok=True)
                (tests / f"Block{number:02}.swift").write_text(header + code + "\n")
        if not library.exists():
            library.mkdir()
            (library / "Empty.swift").write_text("// This document declares nothing of its own.\n")
        targets.append(f'        .target(name: "{name}", dependencies: [habitat, testing, keychain], path: "{name}"),')
        if statements:
            program.mkdir(exist_ok=True)
            body = re.sub(r"^import \w+$\n?", "", "\n\n".join(statements), flags=re.M)
            (program / "main.swift").write_text(f"@testable import {name}\n" + prelude + "\n" + body + "\n")
            targets.append(f'        .executableTarget(name: "{name}Program", dependencies: ["{name}", habitat, keychain], path: "{name}Program"),')
            programs.append(f"{name}Program")
        if tests.exists():
            targets.append(f'        .testTarget(name: "{name}Tests", dependencies: ["{name}", testing], path: "{name}Tests"),')

    (OUT / "Package.swift").write_text(f'''// swift-tools-version:6.2
// Generated by Scripts/check-docs.py from the documentation's code blocks. Do not edit.
import PackageDescription

let habitat: Target.Dependency = .product(name: "Habitat", package: "{ROOT.name.lower()}")
let testing: Target.Dependency = .product(name: "HabitatTesting", package: "{ROOT.name.lower()}")
let keychain: Target.Dependency = .product(name: "HabitatKeychain", package: "{ROOT.name.lower()}")

let package = Package(
    name: "DocSnippets",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [.package(path: "..")],
    targets: [
{chr(10).join(targets)}
    ],
    swiftLanguageModes: [.v6]
)
''')
    print(f"docs: {total} swift blocks, {total - len(skipped)} compiled, {len(skipped)} marked not compiled:")
    for line in skipped:
        print(f"  - {line}")

    def run(*command):
        print("$", " ".join(command), flush=True)
        result = subprocess.run(command, cwd=OUT)
        if result.returncode != 0:
            sys.exit(f"check-docs: `{' '.join(command)}` failed")

    run("swift", "build", "--build-tests", "-Xswiftc", "-warnings-as-errors")
    # NB: the programs save sessions where apps do (Application Support, which is $XDG_DATA_HOME
    # on Linux): give them a home of their own rather than the user's.
    home = OUT / "home"
    home.mkdir(exist_ok=True)
    os.environ["HOME"] = str(home)
    os.environ["XDG_DATA_HOME"] = str(home / "data")
    for program in programs:
        run("swift", "run", "--skip-build", program)
    run("swift", "test", "--skip-build")
    print(f"docs: {total - len(skipped)} blocks compiled without warnings; {len(programs)} programs ran; the tests passed")


if __name__ == "__main__":
    main()
