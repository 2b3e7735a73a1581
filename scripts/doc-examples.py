#!/usr/bin/env python3
"""Compiles, runs and checks every Swift example of the documentation, so that the docs cannot rot.

Examples come from the ```swift blocks of README.md, Docs/*.md and the DocC articles (Sources/*/*.docc/*.md), and
from the ```swift blocks of the `///` comments in Sources/. A block whose first line is `// Package.swift` is a
manifest excerpt and is skipped.

Each block becomes the body of a function in a generated executable package that depends on ConcurrencyKit by path
(its `import` lines are hoisted). Names the examples use as stand-ins for the reader's own code (`download()`,
`client`, `images`...) are defined in scripts/doc-examples/Fixtures.swift.

Each example then runs in its own process: its function is called from the main thread, as top-level code would be
(an example that awaits runs in a `Task`), and never returns, so that its locals live on as top-level ones would;
the main queue is drained (`dispatchMain()`). An example states what it prints, in either form:

    print(hits.value)  // 8          the comment after a `print(...)` line is the line it prints
    // Prints "tick"                  a comment line of this form names a line printed anywhere in the block

Every example must state at least one printed line. It passes when the lines it states appear in its standard
output in the order stated (other output may come between them) within the time limit, and the process did not
fail.
"""
import glob
import os
import pty
import re
import select
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, ".build", "doc-examples")
SOURCES = os.path.join(OUT, "Sources", "DocExamples")
FIXTURES = os.path.join(ROOT, "scripts", "doc-examples", "Fixtures.swift")
TIME_LIMIT = 20.0  # seconds per example

MANIFEST = """// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "DocExamples",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ConcurrencyKit", path: "%s")],
    targets: [
        .executableTarget(
            name: "DocExamples",
            dependencies: [.product(name: "ConcurrencyKit", package: "ConcurrencyKit")]
        )
    ]
)
"""

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


def generate():
    os.makedirs(SOURCES, exist_ok=True)
    for old in glob.glob(os.path.join(SOURCES, "*.swift")):
        os.remove(old)
    with open(os.path.join(OUT, "Package.swift"), "w") as manifest:
        manifest.write(MANIFEST % ROOT)
    with open(FIXTURES, encoding="utf-8") as source, open(os.path.join(SOURCES, "Fixtures.swift"), "w") as copy:
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
        imports = {"import ConcurrencyKit", "import Dispatch", "import Foundation"}
        body = []
        for source_line in code.splitlines():
            if source_line.startswith("import "):
                imports.add(source_line.strip())
            else:
                body.append("    " + source_line if source_line else "")
        # The example's locals must outlive its last line, as they would in top-level code: subscriptions, timers
        # and queues are released otherwise. So the function never returns.
        is_async = re.search(r"\bawait\b", code) is not None
        if is_async:
            signature, end = f"func example{number}() async throws", "    try await Task.sleep(for: .seconds(3600))"
        else:
            signature, end = f"func example{number}() throws -> Never", "    dispatchMain()"
        with open(os.path.join(SOURCES, f"Example{number}.swift"), "w") as example:
            example.write(f"// {where}\n" + "\n".join(sorted(imports)) + "\n\n")
            example.write(f"{signature} {{\n" + "\n".join(body) + "\n\n" + end + "\n}\n")
        cases.append((number, where, expected, is_async))
    with open(os.path.join(SOURCES, "main.swift"), "w") as main:
        main.write("import Dispatch\nimport Foundation\n\n")
        main.write("switch Int(CommandLine.arguments[1])! {\n")
        for number, where, _, is_async in cases:
            main.write(f"case {number}:  // {where}\n")
            if is_async:
                main.write(f"    Task {{ try await example{number}() }}\n")
            else:
                main.write(f"    try example{number}()\n")
        main.write('default:\n    fatalError("no such example")\n}\n')
        main.write("dispatchMain()\n")
    return cases, problems


def run(number, expected):
    """Runs one example with a terminal as its standard output, so that each printed line arrives as it is printed."""
    binary = os.path.join(OUT, ".build", "debug", "DocExamples")
    reader, writer = pty.openpty()
    process = subprocess.Popen([binary, str(number)], stdout=writer, stderr=subprocess.PIPE)
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
        print(build.stdout[-8000:] + build.stderr[-3000:])
        sys.exit(f"doc examples: the examples do not compile (sources in {SOURCES})")
    failures = []
    for number, where, expected, _ in cases:
        remaining, output, stderr, failed = run(number, expected)
        if remaining or failed:
            failures.append(
                f"{where} (Example{number}.swift): "
                + (f"never printed {remaining[0]!r}" if remaining else "the process failed")
                + f"\n    stdout: {output}\n    stderr: {stderr.strip()[-1500:]}"
            )
    if failures:
        sys.exit("doc examples failed:\n  " + "\n  ".join(failures))
    print(f"doc examples: {len(cases)} examples compile, run and print what they state")


if __name__ == "__main__":
    main()
