#!/usr/bin/env bash
# Builds the DocC catalog of every module that has one, offline, with warnings as errors, and merges them into one
# browsable site: <output-dir>/ConcurrencyKit.doccarchive (`make docs-serve` serves it). The guides of Docs/ go into
# the umbrella's catalog, and the site's front page shows the umbrella's overview (scripts/docs-guides.py).
# Usage: scripts/docs.sh [output-dir]   (default .build/docs)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.build/docs}
# dump-symbol-graph extracts every module's public symbols (whether or not the build was up to date); each catalog
# then gets a staging folder with just its own module's graphs.
staging=.build/docs-symbol-graphs
rm -rf "$staging" "$out"
mkdir -p "$staging" "$out/modules"
# It also tries the test modules, and fails on them unless the tests were built: only the library modules matter here.
graphs=$( (swift package dump-symbol-graph 2>&1 || true) | sed -n 's/^Files written to //p')
[ -d "$graphs" ] || { echo "docs: swift package dump-symbol-graph wrote no symbol graphs"; exit 1; }
# The umbrella's catalog is built from a staged copy that also holds the guides of Docs/.
umbrella=.build/docs-umbrella/ConcurrencyKit.docc
rm -rf "$(dirname "$umbrella")"
mkdir -p "$(dirname "$umbrella")"
cp -R Sources/ConcurrencyKit/ConcurrencyKit.docc "$umbrella"
python3 scripts/docs-guides.py stage "$umbrella"
for catalog in Sources/*/*.docc; do
    module=$(basename "$(dirname "$catalog")")
    [ "$module" = ConcurrencyKit ] && catalog=$umbrella
    mkdir -p "$staging/$module"
    # An article-only catalog (@TechnologyRoot: the umbrella) gets no symbols: its module only re-exports others.
    if ! grep -q "@TechnologyRoot" "$catalog"/*.md; then
        find "$graphs" -maxdepth 1 \( -name "$module.symbols.json" -o -name "$module@*.symbols.json" \) \
            -exec cp {} "$staging/$module/" \;
    fi
    docc convert "$catalog" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.concurrencykit.$module" \
        --additional-symbol-graph-dir "$staging/$module" \
        --output-path "$out/modules/$module.doccarchive" \
        --warnings-as-errors >"$out/$module.log" 2>&1 || { cat "$out/$module.log"; echo "docs: $module failed"; exit 1; }
    echo "docs: $module"
done
docc merge "$out"/modules/*.doccarchive \
    --synthesized-landing-page-name ConcurrencyKit \
    --output-path "$out/ConcurrencyKit.doccarchive" >"$out/merge.log" 2>&1 || { cat "$out/merge.log"; echo "docs: merge failed"; exit 1; }
# The front page: the umbrella's overview (what the package is, which tool fits which job) and its guides.
python3 scripts/docs-guides.py landing "$out/ConcurrencyKit.doccarchive"
echo "docs: one site in $out/ConcurrencyKit.doccarchive, the guides of Docs/ included; serve it with 'make docs-serve'"
