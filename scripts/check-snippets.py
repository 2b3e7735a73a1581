#!/usr/bin/env python3
"""Compiles every ```swift code block in README.md and Docs/*.md, so that the docs cannot rot.

Each block becomes the body of a function in a generated package that depends on ConcurrencyKit by path; its
`import` lines are hoisted. A block whose first line is `// Package.swift` is a manifest excerpt and is skipped.
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, ".build", "snippets")
SOURCES = os.path.join(OUT, "Sources", "Snippets")

MANIFEST = """// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Snippets",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ConcurrencyKit", path: "%s")],
    targets: [
        .target(name: "Snippets", dependencies: [.product(name: "ConcurrencyKit", package: "ConcurrencyKit")])
    ]
)
"""


def blocks(path):
    text = open(path, encoding="utf-8").read()
    for match in re.finditer(r"^```swift\n(.*?)^```", text, re.S | re.M):
        line = text[: match.start()].count("\n") + 1
        yield line, match.group(1)


def main():
    os.makedirs(SOURCES, exist_ok=True)
    for old in glob.glob(os.path.join(SOURCES, "*.swift")):
        os.remove(old)
    with open(os.path.join(OUT, "Package.swift"), "w") as manifest:
        manifest.write(MANIFEST % ROOT)
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "Docs", "*.md")))
    count = 0
    for path in files:
        for line, code in blocks(path):
            if code.startswith("// Package.swift"):
                continue
            count += 1
            imports = {"import ConcurrencyKit", "import Dispatch", "import Foundation"}
            body = []
            for source_line in code.splitlines():
                if source_line.startswith("import "):
                    imports.add(source_line.strip())
                else:
                    body.append("    " + source_line if source_line else "")
            relative = os.path.relpath(path, ROOT)
            name = f"snippet{count}"
            with open(os.path.join(SOURCES, f"{name}.swift"), "w") as snippet:
                snippet.write(f"// {relative}:{line}\n")
                snippet.write("\n".join(sorted(imports)) + "\n\n")
                snippet.write(f"func {name}() async throws {{\n" + "\n".join(body) + "\n}\n")
    if count == 0:
        sys.exit("snippets: no Swift code blocks found")
    result = subprocess.run(["swift", "build", "--package-path", OUT], capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout[-6000:] + result.stderr[-3000:])
        sys.exit(f"snippets: the code blocks of README.md and Docs/ do not compile (sources in {SOURCES})")
    print(f"snippets: {count} code blocks from README.md and Docs/ compile")


if __name__ == "__main__":
    main()
