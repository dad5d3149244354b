#!/usr/bin/env bash
# Cold and warm evaluation of the hello flake on the lab, alternated, RUNS
# of each: the evaluated seconds (request until the evaluation left
# EvaluatingDerivation), medians and spread, and the spans each writes.
#
#   bash bench/lab.sh                    # RUNS=5, one evaluator
#   EVAL_WORKERS=2 bash bench/lab.sh     # attributes sharded over two evaluators
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
RUNS="${RUNS:-5}"
export EVAL_WORKERS="${EVAL_WORKERS:-1}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-labbench.XXXXXX)"
chmod 755 "$WORK"
lab_down_on_exit "$WORK/lab"
remove_on_exit "$WORK"
"$BIN" lab up --lab-dir "$WORK/lab" --flake examples/hello-flake --eval-workers "$EVAL_WORKERS" >/dev/null
for i in $(seq "$RUNS"); do
    "$BIN" lab reset --lab-dir "$WORK/lab" --trace-dir "$WORK/cold$i"
    "$BIN" lab evaluate --lab-dir "$WORK/lab" > "$WORK/cold$i.json" 2>/dev/null
    "$BIN" lab restart --lab-dir "$WORK/lab" --trace-dir "$WORK/warm$i"
    "$BIN" lab evaluate --lab-dir "$WORK/lab" > "$WORK/warm$i.json" 2>/dev/null
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
def resolve_share(d):
    # The evaluators' resolve spans against the eval subprocess's `open`:
    # how much of the eval subprocess is evaluation of attributes.
    res, opened = 0, 0
    for f in glob.glob(f"{d}/eval[-.]*.jsonl"):
        for l in open(f):
            v = json.loads(l)
            if v.get("name") == "resolve":
                res += v["dur_us"]
            elif v.get("name") == "open":
                opened += v["dur_us"]
    return res / opened if opened else 0
rows = {}
for kind in ("cold", "warm"):
    secs = [json.load(open(f"{work}/{kind}{i}.json"))["evaluated_s"] for i in range(1, runs + 1)]
    n = [spans(f"{work}/{kind}{i}") for i in range(1, runs + 1)]
    share = statistics.median(resolve_share(f"{work}/{kind}{i}") for i in range(1, runs + 1))
    rows[kind] = (statistics.median(secs), min(secs), max(secs), n, share)
print(f"lab bench ({mode}): hello flake, {runs} cold and {runs} warm evaluations, alternated, {os.environ.get('EVAL_WORKERS', '1')} evaluator(s)")
for kind, (med, lo, hi, n, share) in rows.items():
    print(f"  {kind}: median {med:6.3f} s  (min {lo:.3f}, max {hi:.3f})  spans per evaluation {sorted(set(n))}  resolve/open {share:.2f} (summed over shards)")
print(f"  warm is {rows['cold'][0] / rows['warm'][0]:.2f}x faster than cold (medians)")
PY
