#!/usr/bin/env python3
"""Compiles every ```swift block of README.md and the DocC articles in the target it says it goes in.

The docs describe one app, `Examples/QuickStart`: an app target `MyApp` (Sources/MyApp), an
executable `my-app` (Sources/my-app/main.swift) and a test target `MyAppTests`
(Tests/MyAppTests). Every block says where it goes in the paragraph just above it, by naming a
file of that layout in backticks:

    The services, in `Sources/MyApp/AppServices.swift` (the app target):

and the check puts it there:
- README.md is the QuickStart: each of its blocks must be in the file it names, verbatim, and the
  QuickStart package is built, tested, and run twice (the second run must restore the first's
  session);
- an article's blocks are compiled against a copy of the QuickStart app, one package target per
  role: blocks for `Sources/MyApp/...` join the app module (a block naming a file the QuickStart
  has must be in it, verbatim), blocks for `Tests/MyAppTests/...` go to a test target that imports
  the app as `@testable import MyApp` (written so; the check points it at the copy) and runs, and
  blocks for `Sources/my-app/main.swift` make a program that runs.
App blocks never import a test framework or HabitatTesting; test blocks always import the app.

A block may instead name a file of another package CI builds and tests (`Examples/ModularApp/...`,
`Examples/Server/...`, `Integrations/...`): it must be in that file, verbatim; when the paragraph
above says "(whole)", it must be the whole file.

A block that compiles only for Apple (it imports SwiftUI, UIKit...) says so on the line above its
fence and names its app file like the others:
    <!-- Apple only: UIKit exists only on Apple platforms -->
On Linux it is listed, not compiled. `--apple` compiles it for iOS and macOS with
../shared/tools/apple-check (an SDK mirror in $APPLE_SDK_MIRROR), in a copy of the article's app
target, wrapped in `#if canImport(<the Apple module it imports>)`; the article's other app blocks
join it there, so their `#if canImport(Security)` branches are checked for Apple too.
Scripts/check-apple.sh runs that mode.

A transcript of the demo, a plain ``` block marked above its fence with
    <!-- transcript: habitat-demo -->
is run: each `swift run habitat-demo --store /tmp/demo ARGS   # OUTPUT` line runs the built demo
(in a fresh directory in place of /tmp/demo) and its output, lines joined by " / ", must be
OUTPUT; a `# stderr: TEXT` line below it must start what it printed on stderr (`…` ends the
part compared); other lines (`echo garbage > /tmp/demo/session.json`) run in the shell.

A block no check can compile says so, with a reason, and is the only kind that may name no file:
    <!-- not compiled: a Package.swift fragment -->
Any other block that names no file, fails to compile or run, or whose tests fail, fails this script.

    python3 Scripts/check-docs.py            # every block, on this machine
    python3 Scripts/check-docs.py --apple    # the app blocks, for Apple (needs $APPLE_SDK_MIRROR)
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / ".build-docs"
APPLE_OUT = ROOT / ".build-docs-apple"
APPLE_CHECK = pathlib.Path(os.environ.get("APPLE_CHECK", ROOT.parent / "shared" / "tools" / "apple-check"))
QUICKSTART = ROOT / "Examples" / "QuickStart"
DOCS = [ROOT / "README.md"] + sorted((ROOT / "Sources").glob("*/*.docc/**/*.md"))
SKIP = re.compile(r"<!--\s*not compiled:\s*(\S.*?)\s*-->")
APPLE_ONLY = re.compile(r"<!--\s*Apple only:\s*(\S.*?)\s*-->")
APPLE_MODULE = re.compile(r"^import (SwiftUI|UIKit|AppKit|WidgetKit|Security)\b", re.M)
PLACED = re.compile(r"`((Sources|Tests)/([^/`]+)/([^`]+\.swift))`")
# The other packages CI builds and tests (Examples/ModularApp, Examples/Server,
# Integrations/...): a block naming one of their files must be in it, verbatim.
MODULAR = re.compile(r"`((?:Examples|Integrations)/[^`]+\.swift)`")
ROLES = {"MyApp": "app", "MyAppTests": "test", "my-app": "main"}
TEST_ONLY = re.compile(r"^(@testable )?import (Testing|XCTest|HabitatTesting|HabitatPersistenceTesting)\b", re.M)


def fail(message):
    sys.exit(f"check-docs: {message}")


def blocks(path):
    """(line, code, skip reason, placement, Apple-only reason, whether the paragraph says the block
    is a whole file) for every ```swift block."""
    lines = path.read_text().splitlines()
    found = []
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```swift":
            above = index - 1
            while above >= 0 and not lines[above].strip():
                above -= 1
            skip = SKIP.search(lines[above]) if above >= 0 else None
            apple = APPLE_ONLY.search(lines[above]) if above >= 0 else None
            if apple:  # the file is named in the paragraph above the marker
                above -= 1
                while above >= 0 and not lines[above].strip():
                    above -= 1
            paragraph = []
            while above >= 0 and lines[above].strip():
                paragraph.insert(0, lines[above])
                above -= 1
            places = PLACED.findall(" ".join(paragraph)) or [
                (path, "Examples", "Package", path) for path in MODULAR.findall(" ".join(paragraph))]
            end = index + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            code = "\n".join(lines[index + 1:end])
            found.append((index + 1, code, skip.group(1) if skip else None, places[-1] if places else None,
                          apple.group(1) if apple else None, "(whole)" in " ".join(paragraph)))
            index = end
        index += 1
    return found


TRANSCRIPT = re.compile(r"<!--\s*transcript:\s*habitat-demo\s*-->")
DEMO_LINE = re.compile(r"^swift run habitat-demo --store /tmp/demo (.+?)\s+#\s(.*)$")


def check_transcripts(binary):
    """Runs every demo transcript in the docs and compares what it printed; returns how many lines."""
    checked = 0
    for doc in DOCS:
        lines = doc.read_text().splitlines()
        for index, line in enumerate(lines):
            if not TRANSCRIPT.search(line):
                continue
            scratch = tempfile.TemporaryDirectory()
            store = pathlib.Path(scratch.name) / "demo"
            end = lines.index("```", index + 2)
            last = None
            for number, text in enumerate(lines[index + 2:end], start=index + 3):
                where = f"{doc.relative_to(ROOT)}:{number}"
                stderr_line = re.match(r"^\s*#\s*stderr:\s*(.*)$", text)
                if stderr_line:
                    expected = stderr_line.group(1).split("…")[0]
                    actual = last.stderr.replace(str(store), "/tmp/demo") if last else ""
                    if not actual.startswith(expected):
                        fail(f"{where}: the demo printed on stderr {actual!r}, not {expected!r}…")
                    continue
                command = DEMO_LINE.match(text)
                if command:
                    last = subprocess.run([binary, "--store", str(store)] + command.group(1).split(), capture_output=True, text=True)
                    actual = " / ".join(l.strip() for l in last.stdout.strip().splitlines())
                    if actual != command.group(2).strip():
                        fail(f"{where}: `habitat-demo {command.group(1)}` printed {actual!r}, not {command.group(2).strip()!r}")
                elif text.strip():
                    subprocess.run(text.replace("/tmp/demo", str(store)), shell=True, check=True)
                checked += 1
            scratch.cleanup()
    return checked


def module_name(path):
    stem = "Readme" if path.name == "README.md" else path.stem
    return "Doc" + re.sub(r"[^A-Za-z0-9]", "", stem)


def run(*command, cwd):
    print("$", " ".join(command), flush=True)
    result = subprocess.run(command, cwd=cwd)
    if result.returncode != 0:
        fail(f"`{' '.join(command)}` failed in {cwd}")


def check_placement(relative, line, code, place):
    path, _, target, _ = place
    role = ROLES.get(target)
    if role is None:
        fail(f"{relative}:{line}: `{path}` is not in the app's layout (Sources/MyApp, Sources/my-app, Tests/MyAppTests)")
    if role in ("app", "main") and TEST_ONLY.search(code):
        fail(f"{relative}:{line}: app code imports a test framework; test-only code goes in Tests/MyAppTests")
    if role == "test" and not re.search(r"^@testable import MyApp\b", code, re.M):
        fail(f"{relative}:{line}: a test block must import the app as a test target does (`@testable import MyApp`)")
    if role == "main" and path != "Sources/my-app/main.swift":
        fail(f"{relative}:{line}: the executable's code goes in Sources/my-app/main.swift")
    return role, path


def in_quickstart(path, code):
    file = QUICKSTART / path
    return file.exists() and code.strip() in file.read_text()


def clean(directory):
    if directory.exists():
        for child in directory.iterdir():
            if child.name != ".build":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
    directory.mkdir(exist_ok=True)


def generate():
    """Writes the articles' blocks into OUT's targets; returns what the builds need."""
    clean(OUT)
    targets, programs, skipped, report, apple, total = [], [], [], [], [], 0
    app_sources = sorted((QUICKSTART / "Sources" / "MyApp").glob("*.swift"))
    for doc in DOCS:
        found = blocks(doc)
        if not found:
            continue
        relative = doc.relative_to(ROOT)
        name = module_name(doc)
        app, tests, program = OUT / f"{name}App", OUT / f"{name}Tests", OUT / f"{name}Program"
        main_code = []
        for number, (line, code, skip, place, apple_only, whole) in enumerate(found):
            total += 1
            if apple_only:
                module = APPLE_MODULE.search(code)
                if place is None or place[2] != "MyApp" or module is None:
                    fail(f"{relative}:{line}: an Apple-only block is app code (name its file in `Sources/MyApp/...`) "
                         "that imports the Apple module it needs (SwiftUI, UIKit, AppKit, WidgetKit, Security)")
                apple.append((name, f"// {relative}:{line}\n#if canImport({module.group(1)})\n{code}\n#endif\n"))
                report.append(f"  {relative}:{line}: {place[0]}: for Apple only ({apple_only}), where "
                              f"{module.group(1)} exists: by `check-docs.py --apple` (Scripts/check-apple.sh), not here")
                continue
            if skip:
                skipped.append(f"{relative}:{line} ({skip})")
                report.append(f"  {relative}:{line}: not compiled ({skip})")
                continue
            if place is None:
                fail(f"{relative}:{line}: the block says neither where it goes (name its file in backticks in the "
                     "paragraph above, such as `Sources/MyApp/Greeting.swift`) nor why it isn't compiled")
            if place[2] == "Package":
                file = ROOT / place[0]
                if not file.exists() or code.strip() not in file.read_text():
                    fail(f"{relative}:{line}: the block is not in {place[0]}, verbatim")
                if whole and code.strip() != file.read_text().strip():
                    fail(f"{relative}:{line}: the paragraph says the block is {place[0]} (whole), and it is only a part")
                how = ("type-checked for Apple by Scripts/check-apple.sh" if place[0].startswith("Examples/SwiftUIApp/")
                       else "built and tested by CI")
                report.append(f"  {relative}:{line}: {place[0]}: verbatim ({how})")
                continue
            role, path = check_placement(relative, line, code, place)
            if doc.name == "README.md":
                if not in_quickstart(path, code):
                    fail(f"{relative}:{line}: the block is not in Examples/QuickStart/{path}, verbatim")
                report.append(f"  {relative}:{line}: {path}: in Examples/QuickStart, verbatim")
                continue
            if role == "app" and (QUICKSTART / path).exists():
                if not in_quickstart(path, code):
                    fail(f"{relative}:{line}: Examples/QuickStart/{path} exists, and the block is not in it verbatim")
                report.append(f"  {relative}:{line}: {path}: in Examples/QuickStart, verbatim")
                continue
            header = f"// {relative}:{line}\n"
            if role == "app":
                app.mkdir(exist_ok=True)
                file = app / pathlib.Path(path).name
                file.write_text((file.read_text() + "\n" if file.exists() else "") + header + code + "\n")
                report.append(f"  {relative}:{line}: {path}: compiled in the app target {name}App")
            elif role == "test":
                tests.mkdir(exist_ok=True)
                code = re.sub(r"^@testable import MyApp\b", f"@testable import {name}App", code, flags=re.M)
                (tests / f"Block{number:02}.swift").write_text(header + code + "\n")
                report.append(f"  {relative}:{line}: {path}: compiled and run in the test target {name}Tests")
            else:
                main_code.append(header + re.sub(r"^import MyApp\b", f"import {name}App", code, flags=re.M))
                report.append(f"  {relative}:{line}: {path}: compiled and run in the program {name}Program")
        if doc.name == "README.md":
            continue
        app.mkdir(exist_ok=True)
        for source in app_sources:
            shutil.copy(source, app / source.name) if not (app / source.name).exists() else None
        targets.append(f'        .target(name: "{name}App", dependencies: [habitat, persistence, keychain], path: "{name}App"),')
        if main_code:
            program.mkdir(exist_ok=True)
            (program / "main.swift").write_text("\n\n".join(main_code) + "\n")
            targets.append(f'        .executableTarget(name: "{name}Program", dependencies: ["{name}App", habitat, persistence, keychain], path: "{name}Program"),')
            programs.append(f"{name}Program")
        if tests.exists():
            targets.append(f'        .testTarget(name: "{name}Tests", dependencies: ["{name}App", testing, persistenceTesting], path: "{name}Tests"),')

    write_package(OUT, targets)
    return targets, programs, skipped, report, apple, total


def write_package(directory, targets):
    package = ROOT.name.lower()
    (directory / "Package.swift").write_text(f'''// swift-tools-version:6.2
// Generated by Scripts/check-docs.py from the documentation's code blocks. Do not edit.
import PackageDescription

let habitat: Target.Dependency = .product(name: "Habitat", package: "{package}")
let testing: Target.Dependency = .product(name: "HabitatTesting", package: "{package}")
let persistenceTesting: Target.Dependency = .product(name: "HabitatPersistenceTesting", package: "{package}")
let persistence: Target.Dependency = .product(name: "HabitatPersistence", package: "{package}")
let keychain: Target.Dependency = .product(name: "HabitatKeychain", package: "{package}")

let package = Package(
    name: "DocSnippets",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [.package(path: "..")],
    targets: [
{chr(10).join(targets)}
    ],
    swiftLanguageModes: [.v6]
)
''')


def check_apple(apple, report):
    """The articles' app targets and their Apple-only blocks, type-checked for iOS and macOS."""
    mirror = os.environ.get("APPLE_SDK_MIRROR")
    if not mirror:
        fail("--apple needs $APPLE_SDK_MIRROR: a git mirror of seayou2468-web/maciOS (../shared/tools/README.md)")
    clean(APPLE_OUT)
    targets = []
    for app in sorted(OUT.glob("*App")):
        shutil.copytree(app, APPLE_OUT / app.name)
        targets.append(f'        .target(name: "{app.name}", dependencies: [habitat, persistence, keychain], path: "{app.name}"),')
    for number, (name, code) in enumerate(apple):
        (APPLE_OUT / f"{name}App" / f"AppleOnly{number:02}.swift").write_text(code)
    write_package(APPLE_OUT, targets)
    run(str(APPLE_CHECK), "--mirror", mirror, "--targets", "ios16,ios17,macos13,macos14", str(ROOT), str(APPLE_OUT), cwd=ROOT)
    print("\n".join(line for line in report if "for Apple only" in line).replace(
        "by `check-docs.py --apple` (Scripts/check-apple.sh), not here", "type-checked at iOS 16, iOS 17, macOS 13 and macOS 14"))
    print(f"docs: {len(apple)} Apple-only blocks and {len(targets)} articles' app code type-checked for iOS and macOS, "
          "without errors or warnings")


def main():
    targets, programs, skipped, report, apple, total = generate()
    if sys.argv[1:] == ["--apple"]:
        return check_apple(apple, report)
    if sys.argv[1:]:
        fail("usage: check-docs.py [--apple]")
    print(f"docs: {total} swift blocks, {total - len(skipped) - len(apple)} compiled where they say they go, "
          f"{len(apple)} for Apple only (Scripts/check-apple.sh), {len(skipped)} marked not compiled:")
    print("\n".join(report), flush=True)

    # The demo's transcripts, run.
    run("swift", "build", "--product", "habitat-demo", cwd=ROOT)
    demo = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    print(f"docs: {check_transcripts(demo + '/habitat-demo')} transcript lines of the demo ran and printed what they say")

    # The README's app: built, tested, and run twice from a fresh data directory.
    run("swift", "build", "--build-tests", "-Xswiftc", "-warnings-as-errors", cwd=QUICKSTART)
    run("swift", "test", "--skip-build", cwd=QUICKSTART)
    home = OUT / "home"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir()
    environment = dict(os.environ, TMPDIR=str(home), HOME=str(home), XDG_DATA_HOME=str(home / "data"))
    outputs = []
    for _ in range(2):
        result = subprocess.run(["swift", "run", "--skip-build", "my-app"], cwd=QUICKSTART, env=environment,
                                capture_output=True, text=True)
        print(result.stdout, end="")
        if result.returncode != 0:
            fail(f"my-app failed: {result.stderr}")
        outputs.append(result.stdout)
    if not outputs[0].startswith("nothing saved") or not outputs[1].startswith("restored a session"):
        fail("my-app's second run did not restore the first run's session")

    # The articles, against copies of the app.
    run("swift", "build", "--build-tests", "-Xswiftc", "-warnings-as-errors", cwd=OUT)
    os.environ.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"))
    for program in programs:
        run("swift", "run", "--skip-build", program, cwd=OUT)
    run("swift", "test", "--skip-build", cwd=OUT)
    print(f"docs: {total - len(skipped) - len(apple)} blocks compiled where they say they go, without warnings; "
          f"the QuickStart ran twice; {len(programs)} article programs ran; the tests passed")


if __name__ == "__main__":
    main()
