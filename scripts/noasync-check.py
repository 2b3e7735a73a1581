#!/usr/bin/env python3
"""Checks that a top-level `await` on a waiting call of ConcurrencyKit never runs the blocking overload.

In the top-level code of a `main.swift`, `await group.wait()` resolves to the blocking `wait()`, not to the async
one (swiftlang/swift#74459); the compiler only warns "no 'async' operations occur within 'await' expression". The
blocking calls are `@available(*, noasync)`, which turns that line into an error that names the async form. This
script compiles two `main.swift` files, as a reader's package would, in a generated package that depends on
ConcurrencyKit by path:

- AsyncForms: every async form at top level, each waiting for a block that only the main queue runs. It must compile
  without a warning, and run to its end: a call that blocked the main thread would never see its block run.
- BlockingTwins: every blocking twin at top level with `await`. It must not compile, and each line must fail with
  "unavailable from asynchronous contexts" and the message that names its async form. Remove one `noasync`, and its
  line compiles (with only the warning above), and this check fails.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, ".build", "noasync-check")
TIME_LIMIT = 300  # seconds for AsyncForms to run: a hang guard; on a loaded machine a run can wait long for a core

MANIFEST = """// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "NoasyncCheck",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ConcurrencyKit", path: "%s")],
    targets: [
        .executableTarget(name: "AsyncForms", dependencies: ["ConcurrencyKit"]),
        .executableTarget(name: "BlockingTwins", dependencies: ["ConcurrencyKit"]),
    ]
)
"""

# Each async form waits for a block sent to the main queue: the program ends only if every `await` suspends.
ASYNC_FORMS = """import ConcurrencyKit
import Dispatch

let semaphore = CountingSemaphore()
DispatchQueue.main.async { semaphore.signal() }
try await semaphore.acquire()
print("acquire")

DispatchQueue.main.async { semaphore.signal() }
print("wait(timeout:)", await semaphore.wait(timeout: .seconds(30)))

DispatchQueue.main.async { semaphore.signal() }
try await semaphore.withPermit { print("withPermit") }

let group = GCDGroup()
group.enter()
DispatchQueue.main.async { group.leave() }
await group.waitForAll()
print("group.waitForAll")

let queuer = Queuer(name: "noasync-check")
let mainRan = CountingSemaphore()
DispatchQueue.main.async { mainRan.signal() }
queuer.addOperation { mainRan.wait() }
await queuer.waitForAll()
print("queuer.waitForAll")

let value = QueueSafeValue(value: 1)
value.async(performIn: .global()).lowestPriority.set(manualCompletion: { number, done in
    number += 1
    DispatchQueue.main.async { done() }
})
print("suspend.get", await value.suspend.lowestPriority.get())
print("suspend.read", try await value.suspend.lowestPriority.read())

// In an async function, the older names resolve to the async overloads.
func olderNames() async throws {
    DispatchQueue.main.async { semaphore.signal() }
    try await semaphore.wait()
    group.enter()
    DispatchQueue.main.async { group.leave() }
    await group.wait()
    DispatchQueue.main.async { mainRan.signal() }
    queuer.addOperation { mainRan.wait() }
    await queuer.waitUntilAllOperationsAreFinished()
    print("older names")
}
try await olderNames()
"""
EXPECTED_OUTPUT = [
    "acquire",
    "wait(timeout:) true",
    "withPermit",
    "group.waitForAll",
    "queuer.waitForAll",
    "suspend.get success(2)",
    "suspend.read 2",
    "older names",
]

# Each line: a blocking twin, and the text its error must name.
BLOCKING_TWINS = [
    ("try await semaphore.wait()", "use `try await semaphore.acquire()`"),
    ("_ = await semaphore.wait(.now() + 1)", "use `await semaphore.wait(timeout:)`"),
    ("_ = await semaphore.wait(.seconds(1))", "use `await semaphore.wait(timeout:)`"),
    ("await semaphore.perform {}", "use `try await semaphore.withPermit { … }`"),
    ("await semaphore--", "use `try await semaphore.acquire()`"),
    ("await semaphore <<< {}", "use `try await semaphore.withPermit { … }`"),
    ("await group.wait()", "use `await group.waitForAll()`"),
    ("_ = await group.wait(timeout: .now() + 1)", "use `await group.waitForAll()`"),
    ("_ = await group.wait(timeout: .seconds(1))", "use `await group.waitForAll()`"),
    ("await queuer.waitUntilAllOperationsAreFinished()", "use `await queuer.waitForAll()`"),
    ("_ = await value.wait.lowestPriority.get()", "use the suspend schedule: `await value.suspend.lowestPriority.get()`"),
    ("_ = try await value.wait.lowestPriority.read()", "`try await value.suspend.lowestPriority.read()`"),
    ("await value.wait.lowestPriority.get(completion: { _ in })", "`await value.suspend.lowestPriority.get()`"),
    ("await value.wait.lowestPriority.get(manualCompletion: { _, done in done() })", "use the async schedule"),
    ("await value.wait.lowestPriority.set(newValue: 2)", "`await value.suspend.lowestPriority.set(newValue:)`"),
    ("await value.wait.lowestPriority.set { $0 += 1 }", "`await value.suspend.lowestPriority.set { … }`"),
    ("await value.wait.lowestPriority.set(manualCompletion: { _, done in done() })", "use the async schedule"),
    ("_ = await value.wait.highestPriority.map { $0 }", "`await value.suspend.lowestPriority.map { … }`"),
    ("_ = await QueueSafeSyncedValue(value: 1).lowestPriority.get()", "use the suspend schedule"),
]
BLOCKING_HEAD = """import ConcurrencyKit
import Dispatch

let semaphore = CountingSemaphore(.binary)
let group = GCDGroup()
let queuer = Queuer(name: "noasync-check")
let value = QueueSafeValue(value: 1)
"""
UNAVAILABLE = "is unavailable from asynchronous contexts"


def write(target, source):
    folder = os.path.join(OUT, "Sources", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "main.swift"), "w") as main:
        main.write(source)


def build(target):
    return subprocess.run(
        ["swift", "build", "--package-path", OUT, "--product", target], capture_output=True, text=True
    )


def check_async_forms():
    built = build("AsyncForms")
    log = built.stdout + built.stderr
    if built.returncode != 0:
        sys.exit(f"noasync check: the async forms do not compile at top level:\n{log[-6000:]}")
    warnings = [line for line in log.splitlines() if "AsyncForms/main.swift" in line and "warning:" in line]
    if warnings:
        sys.exit("noasync check: the async forms compile with warnings:\n  " + "\n  ".join(warnings))
    binary = os.path.join(OUT, ".build", "debug", "AsyncForms")
    try:
        ran = subprocess.run([binary], capture_output=True, text=True, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        sys.exit("noasync check: AsyncForms hangs: a top-level await blocked the main thread")
    lines = ran.stdout.splitlines()
    if ran.returncode != 0 or lines != EXPECTED_OUTPUT:
        sys.exit(f"noasync check: AsyncForms printed {lines}, expected {EXPECTED_OUTPUT}\n{ran.stderr[-3000:]}")
    print(f"noasync check: {len(EXPECTED_OUTPUT)} top-level awaits on the async forms suspend, as they should")


def check_blocking_twins():
    first = BLOCKING_HEAD.count("\n") + 1
    write("BlockingTwins", BLOCKING_HEAD + "".join(code + "\n" for code, _ in BLOCKING_TWINS))
    built = build("BlockingTwins")
    log = built.stdout + built.stderr
    errors = {}
    for match in re.finditer(r"BlockingTwins/main\.swift:(\d+):\d+: error: (.*)", log):
        errors.setdefault(int(match.group(1)), set()).add(match.group(2))
    problems = []
    for offset, (code, advice) in enumerate(BLOCKING_TWINS):
        found = errors.get(first + offset, set())
        if not any(UNAVAILABLE in error and advice in error for error in found):
            problems.append(f"`{code}`: expected an error naming {advice!r}; got {sorted(found) or 'none'}")
    if built.returncode == 0 or problems:
        sys.exit("noasync check: a top-level await reaches a blocking call:\n  " + "\n  ".join(problems or ["built"]))
    print(f"noasync check: {len(BLOCKING_TWINS)} top-level awaits on blocking twins fail to compile, naming the fix")


def main():
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "Package.swift"), "w") as manifest:
        manifest.write(MANIFEST % ROOT)
    write("AsyncForms", ASYNC_FORMS)
    write("BlockingTwins", BLOCKING_HEAD)  # compiles, so that AsyncForms builds first
    check_async_forms()
    check_blocking_twins()


if __name__ == "__main__":
    main()
