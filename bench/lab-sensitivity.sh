#!/usr/bin/env bash
# Does the lab see evaluation? Two generated flakes that differ only in the
# evaluation work per package (WORK_A against WORK_B), RUNS cold-clean passes
# each through `evalbench run`, then `evalbench compare`; and the hello flake
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
WORK="${OUT:-/tmp/evalbench-sensitivity}"
rm -rf "$WORK" && mkdir -p "$WORK" && chmod 755 "$WORK"
trap 'for d in "$WORK"/*.lab; do "$BIN" lab down --dir "$d" >/dev/null 2>&1; rm -rf "$d"; done' EXIT
run() { # NAME FLAKE [extra run flags]
    local name="$1" flake="$2"; shift 2
    say "$name: $RUNS cold-clean passes"
    "$BIN" run --flake "$flake" --passes cold-clean --repeat "$RUNS" --no-pcap --no-report \
        --out "$WORK/$name" --lab-dir "$WORK/$name.lab" "$@" >"$WORK/$name.log" 2>&1 || { cat "$WORK/$name.log"; exit 1; }
    "$BIN" lab down --dir "$WORK/$name.lab" >/dev/null 2>&1 || true
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
"$BIN" lab gen-flake --out "$WORK/work-a" --work "$WORK_A"
"$BIN" lab gen-flake --out "$WORK/work-b" --work "$WORK_B"
if [ "${ONLY:-work}" = work ] || [ -z "${ONLY:-}" ]; then
    run work-a "$WORK/work-a"
    run work-b "$WORK/work-b"
    verdicts "$WORK/work-a" "$WORK/work-b" "--work $WORK_A against --work $WORK_B (100 packages)"
fi
if [ "${ONLY:-workers}" = workers ] || [ -z "${ONLY:-}" ]; then
    run one examples/hello-flake --eval-workers 1
    run two examples/hello-flake --eval-workers 2
    verdicts "$WORK/one" "$WORK/two" "hello flake, cold: one evaluator against two"
fi
