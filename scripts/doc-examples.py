#!/usr/bin/env python3
"""Compiles, runs and checks every Swift example of the documentation, as a reader would paste it.

Examples come from the ```swift blocks of README.md, Docs/*.md and the DocC articles (Sources/*/*.docc/*.md), and
from the ```swift blocks of the `///` comments in Sources/. A block whose first line is `// Package.swift` or
`// swift-tools-version` is a manifest, and is skipped here: scripts/install-check.sh builds it.

Each example is compiled exactly as written, as the `main.swift` of an executable target of its own in a generated
package that depends on ConcurrencyKit by path: top-level code stays top-level code (so a top-level `await` picks
the overload it would pick in a reader's `main.swift`), and the example sees only the modules it imports. A missing
`import Dispatch` fails here as it would in the reader's package; `--self-test` proves that it does.

Nothing is added after the example: the process ends when the example's last line has run, as the reader's would,
so an example must itself wait for what it prints (a group, a semaphore, an `await`, or an explicit last line such
as `dispatchMain()` that the reader can see). Each example runs RUNS times, and every run must print what it states.
Names the examples use as stand-ins for the reader's own code (`download()`, `client`, `images`...) live in a module
of their own (scripts/doc-examples/Fixtures.swift) that every example sees without importing it; an example's own
declarations shadow them.

A block that is only a fragment — code that belongs inside the reader's function or type — says so on its first
line, `// Fragment: <where it goes>`. A fragment is compiled as the body of a function, with `ConcurrencyKit`,
`Dispatch` and `Foundation` imported for it, called once, and run as the other examples are: it too must wait for
what it prints before it returns.

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
TIME_LIMIT = 120.0  # seconds per run of an example: a hang guard; on a loaded machine a run can wait long for a core
RUNS = 3  # runs of each example; every one must print what the example states
# Documents whose complete examples must also compile and run pasted one after another into a single main.swift, as a
# reader trying them all at once would: one `await` in one of them must not break the blocking calls of another.
TOGETHER = ["Docs/GettingStarted.md"]
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

# The second self-test: an example that does not wait for what it prints must fail, as it would for the reader.
UNWAITED_TARGET = "CheckerSelfTestUnwaited"
UNWAITED_CODE = """import Dispatch

DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) { print("late") }
// Prints "late"
"""

TRAILING = re.compile(r"^\s*print\(.*\)\s*// (.+?)\s*$")
PRINTS = re.compile(r'^\s*// Prints "(.*)"\s*$')


def markdown_blocks(path):
    text = open(path, encoding="utf-8").read()
    for match in re.finditer(r"^```swift\n(.*?)^```[ \t]*$", text, re.S | re.M):
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


def pasted_together(cases_code):
    """The examples of each TOGETHER document, pasted one after another in the document's order."""
    for document in TOGETHER:
        codes = [code for origin, _, code in cases_code if origin == document and not code.startswith(FRAGMENT)]
        if codes:
            yield f"{document} (all its examples in one file)", "\n".join(codes)


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
    """The `main.swift` of one example: the code exactly as written; a fragment, as the body of a function it calls."""
    if not code.startswith(FRAGMENT):
        return code
    imports = {"import ConcurrencyKit", "import Dispatch", "import Foundation"}
    body = []
    for source_line in code.splitlines():
        if source_line.startswith("import "):
            imports.add(source_line.strip())
        else:
            body.append("    " + source_line if source_line else "")
    signature, call = ("func fragment() async throws", "try await fragment()") if is_async else ("func fragment() throws", "try fragment()")
    return "\n".join(sorted(imports)) + f"\n\n{signature} {{\n" + "\n".join(body) + f"\n}}\n\n{call}\n"


def write_manifest(targets):
    with open(os.path.join(OUT, "Package.swift"), "w") as manifest:
        manifest.write(MANIFEST_HEAD % (json.dumps(PRODUCTS), ROOT))
        for target in targets:
            manifest.write(MANIFEST_TARGET % target)
        manifest.write(MANIFEST_TAIL)


def write_if_changed(path, source):
    """Writes a file, leaving an unchanged one alone so that the next build need not compile it again."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path) and open(path, encoding="utf-8").read() == source:
        return
    with open(path, "w") as file:
        file.write(source)


def write_target(name, source):
    write_if_changed(os.path.join(OUT, "Sources", name, "main.swift"), source)


def generate():
    sources = os.path.join(OUT, "Sources")
    cases, problems = [], []
    found = [(origin, line, code) for origin, line, code in examples()]
    found = [(o, l, c) for o, l, c in found if not c.startswith(("// Package.swift", "// swift-tools-version"))]
    found += [(where, None, code) for where, code in pasted_together(found)]
    for origin, line, code in found:
        where = f"{origin}:{line}" if line is not None else origin
        expected = expectations(code)
        if not expected:
            problems.append(f'{where}: the example states no output (`print(x)  // value` or `// Prints "value"`)')
        number = len(cases) + 1
        is_async = re.search(r"\bawait\b", code) is not None
        write_target(f"Example{number}", f"// {where}\n" + example_source(code, is_async))
        cases.append((number, where, expected))
    # Targets of examples that are gone, and the fixtures, are written anew.
    kept = {f"Example{number}" for number, _, _ in cases} | {"DocFixtures"}
    if os.path.isdir(sources):
        for folder in glob.glob(os.path.join(sources, "*")):
            if os.path.basename(folder) not in kept:
                for old in glob.glob(os.path.join(folder, "*.swift")):
                    os.remove(old)
    with open(FIXTURES, encoding="utf-8") as source:
        write_if_changed(os.path.join(sources, "DocFixtures", "Fixtures.swift"), source.read())
    write_manifest([f"Example{number}" for number, _, _ in cases])
    return cases, problems


def self_test(cases):
    """Proves the checker fails where a reader would: an example without `import Dispatch` must not compile, and one
    that ends before its background block prints must fail its run."""
    write_target(SELF_TEST_TARGET, example_source(SELF_TEST_CODE, False))
    write_target(UNWAITED_TARGET, example_source(UNWAITED_CODE, False))
    write_manifest([f"Example{number}" for number, _, _ in cases] + [SELF_TEST_TARGET, UNWAITED_TARGET])
    try:
        build = subprocess.run(
            ["swift", "build", "--package-path", OUT, "--target", SELF_TEST_TARGET], capture_output=True, text=True
        )
        unwaited = subprocess.run(
            ["swift", "build", "--package-path", OUT, "--product", UNWAITED_TARGET], capture_output=True, text=True
        )
    finally:
        write_manifest([f"Example{number}" for number, _, _ in cases])
    if build.returncode == 0 or SELF_TEST_ERROR not in build.stdout + build.stderr:
        sys.exit(f"doc examples: the self-test example without `import Dispatch` did not fail with {SELF_TEST_ERROR!r}")
    print("doc examples: an example that misses `import Dispatch` fails to compile, as it should")
    if unwaited.returncode != 0:
        sys.exit("doc examples: the self-test example that does not wait failed to build:\n" + unwaited.stderr[-2000:])
    remaining, _, _, _ = run(UNWAITED_TARGET, expectations(UNWAITED_CODE))
    if not remaining:
        sys.exit("doc examples: the self-test example that ends before its block prints passed; the check is blind")
    print("doc examples: an example that ends before its background block prints fails, as it should")


def run(target, expected):
    """Runs one example with a terminal as its standard output, so that each printed line arrives as it is printed."""
    binary = os.path.join(OUT, ".build", "debug", target if isinstance(target, str) else f"Example{target}")
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
    """Checks every example; `--only TEXT` runs only those whose origin (`Docs/AsyncCode.md:45`) contains TEXT."""
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
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
        if only and only not in where:
            continue
        for attempt in range(1, RUNS + 1):
            remaining, output, stderr, failed = run(number, expected)
            if remaining or failed:
                failures.append(
                    f"{where} (Example{number}/main.swift), run {attempt} of {RUNS}: "
                    + (f"never printed {remaining[0]!r}" if remaining else "the process failed")
                    + f"\n    stdout: {output}\n    stderr: {stderr.strip()[-1500:]}"
                )
                break
    if failures:
        sys.exit(f"doc examples failed ({len(failures)} of {len(cases)}):\n  " + "\n  ".join(failures))
    with open(os.path.join(OUT, "report.txt"), "w") as report:
        for number, where, expected in cases:
            if not only or only in where:
                report.write(f"{where}: ran {RUNS} times as written, printed its {len(expected)} stated line(s) each time\n")
    print(
        f"doc examples: {sum(1 for _, where, _ in cases if not only or only in where)} examples compile as written and, run {RUNS} times each with nothing added, print "
        f"what they state every time (each one listed in {os.path.relpath(OUT, ROOT)}/report.txt)"
    )


if __name__ == "__main__":
    main()
