#!/usr/bin/env bash
# Cold and warm evaluation of the hello flake on the lab, alternated, RUNS
# of each: the evaluated seconds (request until the evaluation left
# EvaluatingDerivation), medians and spread, and the spans each writes.
#
#   bash bench/lab.sh          # RUNS=5
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
RUNS="${RUNS:-5}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-labbench.XXXXXX)"
chmod 755 "$WORK"
trap '"$BIN" lab down --dir "$WORK/lab" >/dev/null 2>&1; rm -rf "$WORK"' EXIT
"$BIN" lab up --dir "$WORK/lab" --flake examples/hello-flake >/dev/null
for i in $(seq "$RUNS"); do
    "$BIN" lab reset --dir "$WORK/lab" --trace-dir "$WORK/cold$i"
    "$BIN" lab evaluate --dir "$WORK/lab" > "$WORK/cold$i.json" 2>/dev/null
    "$BIN" lab restart --dir "$WORK/lab" --trace-dir "$WORK/warm$i"
    "$BIN" lab evaluate --dir "$WORK/lab" > "$WORK/warm$i.json" 2>/dev/null
    say "run $i of $RUNS done"
done
python3 - "$WORK" "$RUNS" "$(jq -r .net.mode "$WORK/lab/lab.json")" <<'PY'
import glob, json, os, statistics, sys
work, runs, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def spans(d):
    n = 0
    for f in glob.glob(f"{d}/*.jsonl"):
        n += sum(1 for l in open(f) if '"name"' in l)
    return n
rows = {}
for kind in ("cold", "warm"):
    secs = [json.load(open(f"{work}/{kind}{i}.json"))["evaluated_s"] for i in range(1, runs + 1)]
    n = [spans(f"{work}/{kind}{i}") for i in range(1, runs + 1)]
    rows[kind] = (statistics.median(secs), min(secs), max(secs), n)
print(f"lab bench ({mode}): hello flake, {runs} cold and {runs} warm evaluations, alternated")
for kind, (med, lo, hi, n) in rows.items():
    print(f"  {kind}: median {med:6.2f} s  (min {lo:.2f}, max {hi:.2f})  spans per evaluation {sorted(set(n))}")
print(f"  cold / warm (medians): {rows['cold'][0] / rows['warm'][0]:.2f}x")
PY
