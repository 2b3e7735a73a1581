#!/usr/bin/env python3
"""Compiles, runs and checks every Swift example of the documentation, as a reader would paste it.

Examples come from the ```swift blocks of README.md, Docs/*.md and the DocC articles (Sources/*/*.docc/*.md), and
from the ```swift blocks of the `///` comments in Sources/. A block whose first line is `// Package.swift` is a
manifest excerpt and is skipped.

Each example is compiled exactly as written, as the `main.swift` of an executable target of its own in a generated
package that depends on ConcurrencyKit by path: top-level code stays top-level code (so a top-level `await` picks
the overload it would pick in a reader's `main.swift`), and the example sees only the modules it imports. A missing
`import Dispatch` fails here as it would in the reader's package; `--self-test` proves that it does.

One line is added after the example: a call that keeps the process alive and drains the main queue, as an app's run
loop would. Names the examples use as stand-ins for the reader's own code (`download()`, `client`, `images`...) live
in a module of their own (scripts/doc-examples/Fixtures.swift) that every example sees without importing it; an
example's own declarations shadow them.

A block that is only a fragment — code that belongs inside the reader's function or type — says so on its first
line, `// Fragment: <where it goes>`. A fragment is compiled as the body of a function, with `ConcurrencyKit`,
`Dispatch` and `Foundation` imported for it, and run as the other examples are.

An example states what it prints, in either form:

    print(hits.value)  // 8          the comment after a `print(...)` line is the line it prints
    // Prints "tick"                  a comment line of this form names a line printed anywhere in the block

Every example must state at least one printed line. It passes when the lines it states appear in its standard
output in the order stated (other output may come between them) within the time limit, and the process did not
fail.
"""
import glob
import json
import os
import pty
import re
import select
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, ".build", "doc-examples")
FIXTURES = os.path.join(ROOT, "scripts", "doc-examples", "Fixtures.swift")
TIME_LIMIT = 120.0  # seconds per example: a hang guard; on a loaded machine a run can wait long for a core
FRAGMENT = "// Fragment:"
PRODUCTS = [
    "AtomicPrimitives",
    "SafeValueCore",
    "OperationQueuing",
    "DispatchKit",
    "CallbackRouting",
    "ConcurrencyKit",
    "ConcurrencyKitTesting",
]

MANIFEST_HEAD = """// swift-tools-version: 6.2
import PackageDescription

let ck: [Target.Dependency] = %s.map { .product(name: $0, package: "ConcurrencyKit") }
// Every example sees the stand-ins without importing them, and nothing else that it did not import.
let fixtures: [SwiftSetting] = [.unsafeFlags(["-Xfrontend", "-import-module", "-Xfrontend", "DocFixtures"])]

let package = Package(
    name: "DocExamples",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ConcurrencyKit", path: "%s")],
    targets: [
        .target(name: "DocFixtures", dependencies: ck),
"""
MANIFEST_TARGET = """        .executableTarget(name: "%s", dependencies: ck + ["DocFixtures"], swiftSettings: fixtures),
"""
MANIFEST_TAIL = """    ]
)
"""

# The self-test: an example that uses Dispatch without importing it must not compile.
SELF_TEST_TARGET = "CheckerSelfTest"
SELF_TEST_CODE = """import ConcurrencyKit

let hits = AtomicBox(0)
DispatchQueue.concurrentPerform(iterations: 8) { _ in
    hits.mutate { $0 += 1 }
}
print(hits.value)  // 8
"""
SELF_TEST_ERROR = "cannot find 'DispatchQueue' in scope"

TRAILING = re.compile(r"^\s*print\(.*\)\s*// (.+?)\s*$")
PRINTS = re.compile(r'^\s*// Prints "(.*)"\s*$')


def markdown_blocks(path):
    text = open(path, encoding="utf-8").read()
    for match in re.finditer(r"^```swift\n(.*?)^```", text, re.S | re.M):
        yield text[: match.start()].count("\n") + 1, match.group(1)


def comment_blocks(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() == "/// ```swift":
            start, body = index + 1, []
            index += 1
            while lines[index].strip() != "/// ```":
                stripped = lines[index].strip()
                body.append(stripped[4:] if stripped.startswith("/// ") else stripped[3:])
                index += 1
            yield start, "\n".join(body) + "\n"
        index += 1


def examples():
    documents = [os.path.join(ROOT, "README.md")]
    documents += sorted(glob.glob(os.path.join(ROOT, "Docs", "*.md")))
    documents += sorted(glob.glob(os.path.join(ROOT, "Sources", "*", "*.docc", "*.md")))
    for path in documents:
        for line, code in markdown_blocks(path):
            yield os.path.relpath(path, ROOT), line, code
    for path in sorted(glob.glob(os.path.join(ROOT, "Sources", "**", "*.swift"), recursive=True)):
        for line, code in comment_blocks(path):
            yield os.path.relpath(path, ROOT), line, code


def expectations(code):
    expected = []
    for source_line in code.splitlines():
        match = TRAILING.match(source_line) or PRINTS.match(source_line)
        if match:
            expected.append(match.group(1))
    return expected


def example_source(code, is_async):
    """The `main.swift` of one example: the code as written, then the line that keeps the process alive."""
    if not code.startswith(FRAGMENT):
        keep_alive = "await keepExampleAliveAsync()" if is_async else "keepExampleAlive()"
        return code + "\n" + keep_alive + "\n"
    # A fragment runs as the body of a function that never returns, so that its locals live on.
    imports = {"import ConcurrencyKit", "import Dispatch", "import Foundation"}
    body = []
    for source_line in code.splitlines():
        if source_line.startswith("import "):
            imports.add(source_line.strip())
        else:
            body.append("    " + source_line if source_line else "")
    if is_async:
        signature, end, call = "func fragment() async throws", "    await keepExampleAliveAsync()", "try await fragment()"
    else:
        signature, end, call = "func fragment() throws -> Never", "    keepExampleAlive()", "try fragment()"
    return "\n".join(sorted(imports)) + f"\n\n{signature} {{\n" + "\n".join(body) + f"\n\n{end}\n}}\n\n{call}\n"


def write_manifest(targets):
    with open(os.path.join(OUT, "Package.swift"), "w") as manifest:
        manifest.write(MANIFEST_HEAD % (json.dumps(PRODUCTS), ROOT))
        for target in targets:
            manifest.write(MANIFEST_TARGET % target)
        manifest.write(MANIFEST_TAIL)


def write_target(name, source):
    folder = os.path.join(OUT, "Sources", name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "main.swift"), "w") as main:
        main.write(source)


def generate():
    sources = os.path.join(OUT, "Sources")
    if os.path.isdir(sources):
        for old in glob.glob(os.path.join(sources, "*", "*.swift")):
            os.remove(old)
    os.makedirs(os.path.join(sources, "DocFixtures"), exist_ok=True)
    with open(FIXTURES, encoding="utf-8") as source, open(os.path.join(sources, "DocFixtures", "Fixtures.swift"), "w") as copy:
        copy.write(source.read())
    cases, problems = [], []
    for origin, line, code in examples():
        if code.startswith("// Package.swift"):
            continue
        where = f"{origin}:{line}"
        expected = expectations(code)
        if not expected:
            problems.append(f'{where}: the example states no output (`print(x)  // value` or `// Prints "value"`)')
        number = len(cases) + 1
        is_async = re.search(r"\bawait\b", code) is not None
        write_target(f"Example{number}", f"// {where}\n" + example_source(code, is_async))
        cases.append((number, where, expected))
    write_manifest([f"Example{number}" for number, _, _ in cases])
    return cases, problems


def self_test(cases):
    """Proves the checker fails on a missing import: an example without `import Dispatch` must not compile."""
    write_target(SELF_TEST_TARGET, example_source(SELF_TEST_CODE, False))
    write_manifest([f"Example{number}" for number, _, _ in cases] + [SELF_TEST_TARGET])
    try:
        build = subprocess.run(
            ["swift", "build", "--package-path", OUT, "--target", SELF_TEST_TARGET], capture_output=True, text=True
        )
    finally:
        write_manifest([f"Example{number}" for number, _, _ in cases])
    if build.returncode == 0 or SELF_TEST_ERROR not in build.stdout + build.stderr:
        sys.exit(f"doc examples: the self-test example without `import Dispatch` did not fail with {SELF_TEST_ERROR!r}")
    print("doc examples: an example that misses `import Dispatch` fails to compile, as it should")


def run(number, expected):
    """Runs one example with a terminal as its standard output, so that each printed line arrives as it is printed."""
    binary = os.path.join(OUT, ".build", "debug", f"Example{number}")
    reader, writer = pty.openpty()
    process = subprocess.Popen([binary], stdout=writer, stderr=subprocess.PIPE)
    os.close(writer)
    output, remaining, deadline = [], list(expected), time.monotonic() + TIME_LIMIT
    buffer = b""
    while remaining and time.monotonic() < deadline:
        ready, _, _ = select.select([reader], [], [], 0.1)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            chunk = os.read(reader, 4096)
        except OSError:  # the terminal closed: the process has exited
            break
        if not chunk:
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            text = line.decode("utf-8", "replace").rstrip("\r")
            output.append(text)
            if remaining and text == remaining[0]:
                remaining.pop(0)
    os.close(reader)
    finished = process.poll()
    if finished is None:
        process.kill()
    stderr = process.communicate()[1].decode("utf-8", "replace")
    failed = finished not in (None, 0)
    return remaining, output, stderr, failed


def main():
    cases, problems = generate()
    if problems:
        sys.exit("doc examples:\n  " + "\n  ".join(problems))
    build = subprocess.run(["swift", "build", "--package-path", OUT], capture_output=True, text=True)
    if build.returncode != 0:
        # The build stops at the first target that fails: build each example alone to name every one that fails.
        errors = []
        for number, where, _ in cases:
            alone = subprocess.run(
                ["swift", "build", "--package-path", OUT, "--target", f"Example{number}"], capture_output=True, text=True
            )
            for text in (alone.stdout + alone.stderr).splitlines():
                match = re.search(r"Sources/(\w+)/\w+\.swift:(\d+):\d+: error: (.*)", text)
                if match:
                    errors.append(f"{where} ({match.group(1)}, line {match.group(2)}): {match.group(3)}")
        print("\n".join(dict.fromkeys(errors)) or build.stdout[-8000:] + build.stderr[-3000:])
        sys.exit(f"doc examples: the examples do not compile (sources in {OUT}/Sources)")
    self_test(cases)
    failures = []
    for number, where, expected in cases:
        remaining, output, stderr, failed = run(number, expected)
        if remaining or failed:
            failures.append(
                f"{where} (Example{number}/main.swift): "
                + (f"never printed {remaining[0]!r}" if remaining else "the process failed")
                + f"\n    stdout: {output}\n    stderr: {stderr.strip()[-1500:]}"
            )
    if failures:
        sys.exit("doc examples failed:\n  " + "\n  ".join(failures))
    print(f"doc examples: {len(cases)} examples compile, run and print what they state")


if __name__ == "__main__":
    main()
