#!/usr/bin/env bash
# A newcomer's install, as the README says it: a fresh package beside a clone named ConcurrencyKit, with the README's
# dependency line copied verbatim and the README's first example as its main.swift. It must resolve, build and run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$root" "$work/ConcurrencyKit"
mkdir -p "$work/App/Sources/App"
dependency=$(grep -m1 '^    \.package(name: "ConcurrencyKit", path:' README.md) || {
    echo "install-check: README.md has no path dependency line"; exit 1; }
# The README's target must be an executable target: a `main.swift` in a plain `.target` builds with a warning.
grep -q '^    \.executableTarget(name: "App"' README.md || {
    echo "install-check: README.md's install section does not declare App as an .executableTarget"; exit 1; }
cat >"$work/App/Package.swift" <<MANIFEST
// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "App",
    platforms: [.macOS(.v15)],
    dependencies: [
$dependency
    ],
    targets: [
        .executableTarget(name: "App", dependencies: [.product(name: "ConcurrencyKit", package: "ConcurrencyKit")]),
    ]
)
MANIFEST
# The README's first example that is not a manifest excerpt.
python3 - "$work/App/Sources/App/main.swift" <<'PY'
import re, sys
text = open("README.md", encoding="utf-8").read()
blocks = [b for b in re.findall(r"^```swift\n(.*?)^```", text, re.S | re.M) if not b.startswith("// Package.swift")]
open(sys.argv[1], "w").write(blocks[0])
PY
expected=$(sed -n 's/^print(.*)  \/\/ \(.*\)$/\1/p' "$work/App/Sources/App/main.swift" | head -1)
output=$(swift run --package-path "$work/App" -c debug App 2>"$work/build.log") || { cat "$work/build.log"; echo "install-check: the README's install does not build"; exit 1; }
[ "$output" = "$expected" ] || { echo "install-check: printed '$output', the README says '$expected'"; exit 1; }
echo "install-check: a fresh package that follows the README resolves, builds and prints $expected"
