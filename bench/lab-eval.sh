#!/usr/bin/env bash
# The lab's evaluator on the hello flake, side by side in one run:
#   - one plain `nix eval` of all 101 drvPaths (no eval cache), RUNS times;
#   - `evalbench run --passes cold-clean,warm-clean --repeat RUNS` with this
#     tree's evalbench, and with BEFORE's (default: the commit before the
#     evaluator became one evaluation per shard), built in a worktree.
# Prints medians: the sum of the cold resolve spans against the plain
# evaluation, evaluated_s cold and warm before and after, and warm against
# cold (on evaluated_s, and on the eval subprocess's `open`).
#
#   bash bench/lab-eval.sh                  # RUNS=5 BEFORE=dd011fb
#   BEFORE= bash bench/lab-eval.sh          # this tree only
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
RUNS="${RUNS:-5}"
BEFORE="${BEFORE-dd011fb}"
cd "$ROOT"
build_release
scratch_dir lab-eval
lab_down_on_exit "$OUT/lab-*"
export NIX_CONFIG=$'experimental-features = nix-command flakes\nsubstituters =\nbuild-users-group =\n'

BINS=("after=$BIN")
if [ -n "$BEFORE" ]; then
    TREE="/tmp/evalbench-before-$BEFORE"
    if [ ! -x "$TREE/target/release/evalbench" ]; then
        say "building $BEFORE in $TREE (once)"
        rm -rf "$TREE"
        git worktree prune
        git worktree add --detach "$TREE" "$BEFORE" >/dev/null
        (cd "$TREE" && cargo build --release --locked -p evalbench >/dev/null 2>&1)
    fi
    BINS+=("before=$TREE/target/release/evalbench")
fi

say "plain nix eval of every drvPath, $RUNS times"
SRC="$(nix flake metadata --json "$ROOT/examples/hello-flake" 2>/dev/null | jq -r .path)/examples/hello-flake"
for i in $(seq "$RUNS"); do
    /usr/bin/time -f "%e" -o "$OUT/plain.$i" env XDG_CACHE_HOME="$OUT/plain-cache.$i" \
        nix eval --json --option eval-cache false "path:$SRC#packages.x86_64-linux" \
        --apply 'ps: builtins.mapAttrs (n: p: p.drvPath) ps' >/dev/null
done
for b in "${BINS[@]}"; do
    name="${b%%=*}" exe="${b#*=}"
    say "$name: cold-clean and warm-clean, $RUNS runs each"
    "$exe" run --passes cold-clean,warm-clean --repeat "$RUNS" --no-pcap --no-report \
        --out "$OUT/$name" --lab-dir "$OUT/lab-$name" > "$OUT/$name.log" 2>&1 || { tail -20 "$OUT/$name.log"; exit 1; }
done
PYTHONPATH="$ROOT/bench" python3 - "$OUT" "$RUNS" "${BINS[@]}" <<'PY'
from spans import eval_total
import glob, json, statistics as st, sys
out, runs, bins = sys.argv[1], int(sys.argv[2]), [b.split("=")[0] for b in sys.argv[3:]]
med = st.median
plain = [float(open(f"{out}/plain.{i}").read().split()[-1]) for i in range(1, runs + 1)]
def passes(name, base):
    return [d for d in sorted(glob.glob(f"{out}/{name}/{base}*")) if d.rsplit("/", 1)[1].split(".")[0] == base]
print(f"hello flake (101 attributes), medians of {runs} runs")
print(f"  one plain nix eval of all drvPaths (wall, nix start included): {med(plain):.3f} s  (runs {', '.join(f'{x:.3f}' for x in plain)})")
r = {}
for n in bins:
    for base in ("cold-clean", "warm-clean"):
        ds = passes(n, base)
        ev = [json.load(open(f"{d}/run.json"))["evaluated_s"] for d in ds]
        r[(n, base)] = dict(evaluated=med(ev), resolve=med([eval_total(d, "resolve") for d in ds]), open=med([eval_total(d, "open") for d in ds]), n=len(ds))
    c, w = r[(n, "cold-clean")], r[(n, "warm-clean")]
    print(f"  {n:>6}: cold evaluated {c['evaluated']:.3f} s, warm {w['evaluated']:.3f} s (warm {c['evaluated'] / w['evaluated']:.1f}x faster);"
          f" eval subprocess open: cold {c['open']:.3f} s, warm {w['open']:.3f} s ({c['open'] / max(w['open'], 1e-9):.1f}x)")
    print(f"          sum of cold resolve spans {c['resolve']:.3f} s = {c['resolve'] / med(plain):.2f} x the plain evaluation (goal: within 2x)")
if "before" in bins:
    a, b = r[("after", "cold-clean")], r[("before", "cold-clean")]
    print(f"  cold evaluated_s before -> after: {b['evaluated']:.3f} -> {a['evaluated']:.3f} s ({b['evaluated'] / a['evaluated']:.1f}x)")
PY
