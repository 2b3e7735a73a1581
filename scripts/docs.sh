#!/usr/bin/env bash
# Builds the DocC catalog of every module that has one, offline, with warnings as errors.
# Usage: scripts/docs.sh [output-dir]   (default .build/docs)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.build/docs}
graphs=.build/symbol-graphs
rm -rf "$graphs" "$out"
mkdir -p "$graphs" "$out"
swift build --quiet -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$graphs"
for catalog in Sources/*/*.docc; do
    module=$(basename "$(dirname "$catalog")")
    mkdir -p "$graphs/$module"
    find "$graphs" -maxdepth 1 \( -name "$module.symbols.json" -o -name "$module@*.symbols.json" \) \
        -exec cp {} "$graphs/$module/" \;
    docc convert "$catalog" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.concurrencykit.$module" \
        --additional-symbol-graph-dir "$graphs/$module" \
        --output-path "$out/$module.doccarchive" \
        --warnings-as-errors >"$out/$module.log" 2>&1 || { cat "$out/$module.log"; echo "docs: $module failed"; exit 1; }
    echo "docs: $module"
done
