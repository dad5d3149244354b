#!/usr/bin/env bash
# Does the lab see evaluation? Two generated flakes that differ only in the
# evaluation work per package (WORK_A against WORK_B), RUNS cold-clean passes
# each through `evalbench run`, taking turns, then `evalbench compare`; and the hello flake
# with one evaluator against two (`--eval-workers`), cold. Prints compare's
# verdicts on the evaluated seconds and the resolve spans.
#
#   bash bench/lab-sensitivity.sh            # RUNS=5 WORK_A=1500 WORK_B=1800
#   ONLY=work bash bench/lab-sensitivity.sh  # just the two flakes (ONLY=workers: just the evaluators)
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
RUNS="${RUNS:-5}"
WORK_A="${WORK_A:-1500}"
WORK_B="${WORK_B:-1800}"
cd "$ROOT"
build_release
# Bundles are kept for a closer look: $OUT (default /tmp/evalbench-sensitivity).
scratch_dir sensitivity
WORK="$OUT"
lab_down_on_exit "$WORK/*.lab"
# One cold-clean pass of NAME, kept as pass K of the bundle $WORK/NAME.
# The two sides take turns pass by pass, so that a drifting machine (this
# one's CPU time for the same nix evaluation varies by 30%) hits both alike.
once() { # NAME K FLAKE [extra run flags]
    local name="$1" k="$2" flake="$3"; shift 3
    local one="$WORK/$name.run$k"
    "$BIN" run --flake "$flake" --passes cold-clean --repeat 1 --no-pcap --no-report \
        --out "$one" --lab-dir "$WORK/$name.lab" "$@" >"$one.log" 2>&1 || { cat "$one.log"; exit 1; }
    mkdir -p "$WORK/$name"
    local dest="$WORK/$name/cold-clean"; [ "$k" = 1 ] || dest="$dest.$k"
    mv "$one/cold-clean" "$dest" && rm -rf "$one" "$one.log"
}
pair() { # A FLAKE_A ARGS_A B FLAKE_B ARGS_B
    for k in $(seq "$RUNS"); do
        say "pass $k of $RUNS: $1, then $4"
        once "$1" "$k" "$2" $3
        once "$4" "$k" "$5" $6
    done
}
verdicts() { # A B TITLE
    echo "== $3"
    "$BIN" compare "$1" "$2" --json > "$WORK/cmp.json"
    python3 - "$WORK/cmp.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
for p in c["passes"]:
    w = p["wall"]
    print(f"  {p['pass_a']} evaluated: {w['a']['median']:.3f} s (MAD {w['a']['mad']:.3f}) -> {w['b']['median']:.3f} s (MAD {w['b']['mad']:.3f}): {w['text']}")
    for r in p["spans"]:
        if r["what"] in ("eval resolve", "eval open", "eval evaluator"):
            print(f"  {r['what']}: {r['verdict']['text']}")
    for f in p["families"]:
        if f.get("power"):
            print(f"  note: {f['power']}")
PY
}
"$BIN" lab gen-flake --out "$WORK/flake-a" --work "$WORK_A"
"$BIN" lab gen-flake --out "$WORK/flake-b" --work "$WORK_B"
if [ "${ONLY:-work}" = work ] || [ -z "${ONLY:-}" ]; then
    pair work-a "$WORK/flake-a" "" work-b "$WORK/flake-b" ""
    verdicts "$WORK/work-a" "$WORK/work-b" "--work $WORK_A against --work $WORK_B (100 packages)"
fi
if [ "${ONLY:-workers}" = workers ] || [ -z "${ONLY:-}" ]; then
    pair one examples/hello-flake "--eval-workers 1" two examples/hello-flake "--eval-workers 2"
    verdicts "$WORK/one" "$WORK/two" "hello flake, cold: one evaluator against two"
fi
