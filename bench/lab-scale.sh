#!/usr/bin/env bash
# The lab at scale: a generated flake of PACKAGES packages (default 2000),
# one cold-clean pass through `evalbench run`. Prints the evaluated seconds
# (and per package: run PACKAGES=200, 2000 and 10000 to see how it grows),
# the sum of the evaluators' resolve spans against the eval subprocess's
# open, every seed span present or not, and the evaluators' peak RSS.
#
#   bash bench/lab-scale.sh                 # PACKAGES=2000 WORK=100
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
PACKAGES="${PACKAGES:-2000}"
WORK_PER="${WORK:-100}"
cd "$ROOT"
build_release
scratch_dir scale
lab_down_on_exit "$OUT/lab"
"$BIN" lab gen-flake --out "$OUT/flake" --packages "$PACKAGES" --work "$WORK_PER"
say "one cold-clean pass over $PACKAGES packages"
/usr/bin/time -f "%e s wall for the whole run" "$BIN" run --flake "$OUT/flake" --passes cold-clean --repeat 1 --no-pcap --no-report \
    --out "$OUT/bundle" --lab-dir "$OUT/lab" > "$OUT/run.log" 2>&1 || { tail -20 "$OUT/run.log"; exit 1; }
tail -n1 "$OUT/run.log"
python3 - "$OUT/bundle/cold-clean" "$PACKAGES" <<'PY'
import glob, json, sys
d, packages = sys.argv[1], int(sys.argv[2])
run = json.load(open(f"{d}/run.json"))
spans = []
for f in glob.glob(f"{d}/trace/*.jsonl"):
    spans += [json.loads(l) for l in open(f) if '"name"' in l]
def total(name):
    return sum(s["dur_us"] for s in spans if s["process"] == "eval" and s["name"] == name)
resolves = [s for s in spans if s["name"] == "resolve"]
ev = [s for s in spans if s["name"] == "evaluator"]
metric = run.get("evaluation_metric") or {}
print(f"lab at scale: {packages} packages, one cold-clean pass")
print(f"  evaluated: {run['evaluated_s']:.3f} s ({run['evaluated_s'] / packages * 1e3:.3f} ms a package); status {run['status']}")
print(f"  resolve spans: {len(resolves)}; sum {total('resolve') / 1e6:.3f} s against open {total('open') / 1e6:.3f} s ({total('resolve') / max(total('open'), 1):.3f})")
print(f"  the slowest resolve: {max(s['dur_us'] for s in resolves) / 1e3:.1f} ms; the fastest {min(s['dur_us'] for s in resolves) / 1e3:.1f} ms")
print(f"  evaluator peak RSS: {[e['fields'].get('peak_rss_kb') for e in ev]} KiB; eval subprocess metric {metric}")
nix = run.get("nix_stats") or {}
print(f"  nix: {nix.get('nrFunctionCalls')} function calls, {nix.get('nrThunks')} thunks, {nix.get('gc.totalBytes')} bytes allocated; cpuTime {nix.get('cpuTime')} s")
names = {(s['process'], s['name']) for s in spans}
print(f"  distinct span names: {len(names)}; spans in all {len(spans)}")
PY
