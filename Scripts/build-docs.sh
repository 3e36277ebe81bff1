#!/usr/bin/env bash
# Builds the DocC documentation of Habitat, HabitatPersistence, HabitatTesting and HabitatKeychain with the toolchain's own tools
# (symbol graphs from the compiler, then `docc convert`), and fails on any DocC warning.
#
#     bash Scripts/build-docs.sh [OUTPUT-DIR]     # default: .build-docc/
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.build-docc}
graphs="$out/symbol-graphs"
rm -rf "$out"
mkdir -p "$graphs"
swift build --target HabitatTesting --scratch-path .build-docc-build >/dev/null
swift build --target HabitatPersistenceTesting --scratch-path .build-docc-build >/dev/null
bin=$(swift build --scratch-path .build-docc-build --show-bin-path)
extract=$(command -v swift-symbolgraph-extract || echo "$(dirname "$(command -v swift)")/swift-symbolgraph-extract")
triple=$(swift -print-target-info | python3 -c 'import json,sys; print(json.load(sys.stdin)["target"]["triple"])')
for module in Habitat HabitatPersistence HabitatTesting HabitatPersistenceTesting HabitatKeychain; do
    "$extract" -module-name "$module" -target "$triple" -I "$bin/Modules" \
        -module-cache-path "$bin/ModuleCache" \
        -Xcc -fmodule-map-file="$bin/_HabitatShims.build/module.modulemap" \
        -Xcc -I -Xcc "$PWD/Sources/_HabitatShims/include" \
        -minimum-access-level public -emit-extension-block-symbols -output-dir "$graphs"
done
docc=$(command -v docc || echo "$(dirname "$(command -v swift)")/docc")
status=0
for module in Habitat HabitatPersistence HabitatTesting HabitatPersistenceTesting HabitatKeychain; do
    module_graphs="$out/$module-graphs"
    mkdir -p "$module_graphs"
    # NB: a module's graph also holds the symbols of the modules it re-exports (HabitatTesting
    # re-exports Habitat); keep only those declared in the module's own sources.
    python3 - "$graphs/$module.symbols.json" "$module_graphs/$module.symbols.json" "Sources/$module/" <<'PY'
import json, sys
source, target, own = sys.argv[1:]
graph = json.load(open(source))
kept = [s for s in graph["symbols"] if own in s.get("location", {}).get("uri", own)]
ids = {s["identifier"]["precise"] for s in kept}
graph["symbols"] = kept
graph["relationships"] = [r for r in graph["relationships"] if r["source"] in ids]
json.dump(graph, open(target, "w"))
PY
    # Extensions a module declares on another's types (HabitatTesting's on Habitat's).
    cp "$graphs/$module"@*.symbols.json "$module_graphs/" 2>/dev/null || true
    log="$out/$module.log"
    "$docc" convert "Sources/$module/$module.docc" \
        --additional-symbol-graph-dir "$module_graphs" \
        --fallback-display-name "$module" --fallback-bundle-identifier "org.habitat.$module" \
        --output-path "$out/$module.doccarchive" >"$log" 2>&1 || status=1
    warnings=$(grep -cE "^(warning|error)|: (warning|error):" "$log" || true)
    echo "$module: $warnings warning(s) -> $out/$module.doccarchive"
    echo "  to read it in a browser: $docc preview Sources/$module/$module.docc --additional-symbol-graph-dir $module_graphs (then open the URL it prints)"
    if [ "$warnings" != 0 ]; then grep -E "warning|error" "$log" | head -40; status=1; fi
    # The public surface: every documented symbol, underscored ones and SPI left out.
    python3 - "$module_graphs" "$module" <<'PY'
import json, pathlib, sys
graphs, module = pathlib.Path(sys.argv[1]), sys.argv[2]
count = 0
for graph in graphs.glob("*.symbols.json"):
    for symbol in json.load(open(graph))["symbols"]:
        if not any(part.startswith("_") for part in symbol["pathComponents"]) and "spi" not in symbol:
            count += 1
print(f"  {module}: {count} public symbols")
PY
done
# The public surface as issue 45 budgets it: declarations that carry `public` or `open` (imports
# aside), counted in each product's own sources.
for entry in Habitat:150 HabitatPersistence:120 HabitatTesting:50 HabitatPersistenceTesting:- HabitatKeychain:- HabitatOperators:-; do
    module=${entry%%:*} budget=${entry#*:}
    count=$(grep -rhE '^\s*(@[A-Za-z_]+(\([^)]*\))?\s+)*(public|open)\s' "Sources/$module" --include='*.swift' | grep -cvE '^\s*(@[A-Za-z_]+\s+)*public import\b' || true)
    if [ "$budget" = - ]; then echo "public declarations: $module $count"; else echo "public declarations: $module $count (budget $budget)"; fi
done
exit $status
