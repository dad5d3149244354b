#!/usr/bin/env bash
# What counting nix's instructions costs: the counted passes against the
# clean ones, side by side in one run (each round runs cold-clean,
# cold-counted, warm-clean, warm-counted in turn), RUNS rounds, on the
# bundled hello flake and on a nixpkgs-shaped flake of PACKAGES packages
# (`lab gen-flake --shape nixpkgs`). Prints per flake and temperature the
# median evaluated seconds of each and their ratio (the slowdown), and the
# counted pass's instructions with their spread over the runs.
#
#   bash bench/instructions-cost.sh         # RUNS=3 PACKAGES=2000
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
need_pkg valgrind valgrind
RUNS="${RUNS:-3}"
PACKAGES="${PACKAGES:-2000}"
cd "$ROOT"
build_release
scratch_dir instructions-cost
lab_down_on_exit "$OUT/lab-*"
"$BIN" lab gen-flake --shape nixpkgs --packages "$PACKAGES" --out "$OUT/nixpkgs-$PACKAGES" 2>/dev/null
for flake in hello "nixpkgs-$PACKAGES"; do
    args=()
    [ "$flake" = hello ] || args=(--flake "$OUT/$flake")
    say "$flake: $RUNS rounds of cold-clean, cold-counted, warm-clean, warm-counted"
    "$BIN" run "${args[@]}" --passes cold-clean,cold-counted,warm-clean,warm-counted --repeat "$RUNS" --repeat-counted "$RUNS" \
        --warmup 0 --no-report --no-pcap --lab-dir "$OUT/lab-$flake" --out "$OUT/$flake" > "$OUT/$flake.log" 2>&1 \
        || { tail -20 "$OUT/$flake.log"; exit 1; }
done
python3 - "$OUT" "$RUNS" "$PACKAGES" <<'PY'
import glob, json, os, statistics, sys
out, runs, packages = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print(f"counted passes against clean ones: median evaluated seconds over {runs} runs each, side by side in one run")
print(f"  {'flake':14} {'pass':6} {'clean s':>9} {'counted s':>10} {'slowdown':>9} {'instructions (median)':>22} {'spread':>9}")
for flake in ("hello", f"nixpkgs-{packages}"):
    s = json.load(open(f"{out}/{flake}/summary.json"))
    counted = {c["pass"]: c for c in s.get("instructions", [])}
    for temp in ("cold", "warm"):
        def secs(p):
            dirs = [d for d in glob.glob(f"{out}/{flake}/{p}*") if os.path.isdir(d)]
            return statistics.median(json.load(open(f"{d}/run.json"))["evaluated_s"] for d in dirs)
        c, k = secs(f"{temp}-clean"), secs(f"{temp}-counted")
        i = counted[f"{temp}-counted"]
        print(f"  {flake:14} {temp:6} {c:9.3f} {k:10.3f} {k / c:8.1f}x {round(i['median']):>22,} {i['spread_pct']:8.4f}%")
PY
say "bundles in $OUT"
