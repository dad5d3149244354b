#!/usr/bin/env bash
# Work, not noise: flakes of 100 packages with --work 1500 (A) and 1800 (B),
# RUNS cold-clean runs each (and a second A, for A/A). Prints what `compare`
# says with one run a side and with RUNS a side, on nix's counters and on
# the evaluated seconds, and whether the counters of all 2 x RUNS runs of
# A are identical.
#
#   bash bench/lab-work.sh                  # RUNS=5
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
RUNS="${RUNS:-5}"
cd "$ROOT"
build_release
scratch_dir lab-work
lab_down_on_exit "$OUT/lab-*"
for side in a:1500 a2:1500 b:1800; do
    name="${side%%:*}" work="${side#*:}"
    "$BIN" lab gen-flake --out "$OUT/flake-$name" --packages 100 --work "$work"
    say "$name: --work $work, $RUNS cold-clean runs"
    "$BIN" run --flake "$OUT/flake-$name" --passes cold-clean --repeat "$RUNS" --no-pcap --no-report \
        --out "$OUT/$name" --lab-dir "$OUT/lab-$name" > "$OUT/$name.log" 2>&1 || { tail -20 "$OUT/$name.log"; exit 1; }
    # One run a side: the first run alone.
    mkdir -p "$OUT/$name-1" && cp -r "$OUT/$name/cold-clean" "$OUT/$name-1/"
done
echo "== one run a side, A (--work 1500) vs B (--work 1800)"
"$BIN" compare "$OUT/a-1" "$OUT/b-1" --top 3 | sed -n '1,12p'
echo "== $RUNS runs a side, A vs B"
"$BIN" compare "$OUT/a" "$OUT/b" --top 3 | sed -n '1,12p'
echo "== $RUNS runs a side, A vs A (same flake, another lab)"
"$BIN" compare "$OUT/a" "$OUT/a2" --top 3 | sed -n '1,12p'
python3 - "$OUT" <<'PY'
import glob, json, sys
out = sys.argv[1]
noisy = {"cpuTime", "gc.heapSize", "gc.cycles", "time.cpu", "time.gc", "time.gcFraction"}
runs = [json.load(open(f))["nix_stats"] for f in sorted(glob.glob(f"{out}/a/cold-clean*/run.json")) + sorted(glob.glob(f"{out}/a2/cold-clean*/run.json"))]
keys = sorted(set(runs[0]) - noisy)
differ = [k for k in keys if len({r.get(k) for r in runs}) > 1]
heap = sorted({r.get("gc.heapSize") for r in runs})
cpu = sorted(r.get("cpuTime") for r in runs)
print(f"== {len(runs)} runs of one flake (two labs): {len(keys)} exact counters, differing: {differ or 'none'};"
      f" gc.heapSize values {heap}; cpuTime {cpu[0]:.4f}..{cpu[-1]:.4f} s")
a = json.load(open(glob.glob(f"{out}/a/cold-clean/run.json")[0]))["nix_stats"]["nrFunctionCalls"]
b = json.load(open(glob.glob(f"{out}/b/cold-clean/run.json")[0]))["nix_stats"]["nrFunctionCalls"]
print(f"== nrFunctionCalls A {a} -> B {b}: {(b / a - 1) * 100:.2f}% (the flake: 100 packages x 300 more steps of work)")
PY
