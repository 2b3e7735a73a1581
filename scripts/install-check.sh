#!/usr/bin/env bash
# A newcomer's install, as the documentation says it: a fresh package beside a clone named ConcurrencyKit, whose
# Package.swift is the manifest the README shows, byte for byte (and so is Docs/GettingStarted.md's), and whose
# main.swift is the README's first example. It must resolve, build its app and test targets, and print what the
# example states.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$root" "$work/ConcurrencyKit"
mkdir -p "$work/App/Sources/App" "$work/App/Tests/AppTests"
# The manifests: the ```swift blocks that start with `// swift-tools-version`, exactly as shown.
python3 - "$work/App" <<'PY'
import re, sys
def blocks(path):
    text = open(path, encoding="utf-8").read()
    return re.findall(r"^```swift\n(.*?)^```[ \t]*$", text, re.S | re.M)
readme = [b for b in blocks("README.md") if b.startswith("// swift-tools-version")]
guide = [b for b in blocks("Docs/GettingStarted.md") if b.startswith("// swift-tools-version")]
if len(readme) != 1 or len(guide) != 1:
    sys.exit("install-check: README.md and Docs/GettingStarted.md must each show one whole manifest "
             "(a ```swift block starting with `// swift-tools-version`)")
if readme[0] != guide[0]:
    sys.exit("install-check: the manifests of README.md and Docs/GettingStarted.md differ; show the same one")
open(sys.argv[1] + "/Package.swift", "w").write(readme[0])
examples = [b for b in blocks("README.md") if not b.startswith("// swift-tools-version")]
open(sys.argv[1] + "/Sources/App/main.swift", "w").write(examples[0])
PY
cat >"$work/App/Tests/AppTests/AppTests.swift" <<'SWIFT'
import ConcurrencyKitTesting
import Testing

@Test func theTestClockStartsAtZero() {
    #expect(TestClock().now == TestClock().now)
}
SWIFT
expected=$(sed -n 's/^print(.*)  \/\/ \(.*\)$/\1/p' "$work/App/Sources/App/main.swift" | head -1)
swift build --package-path "$work/App" -c debug --build-tests >"$work/build.log" 2>&1 || {
    cat "$work/build.log"; echo "install-check: the README's manifest does not build its app and test targets"; exit 1; }
output=$(swift run --package-path "$work/App" -c debug App 2>"$work/run.log") || {
    cat "$work/run.log"; echo "install-check: the README's first example does not run"; exit 1; }
[ "$output" = "$expected" ] || { echo "install-check: printed '$output', the README says '$expected'"; exit 1; }
echo "install-check: a fresh package with the README's manifest, byte for byte, resolves, builds and prints $expected"
