#!/usr/bin/env bash
# What a verdict may say across sessions and on a busy machine (docs/verdicts.md
# and docs/sessions.md). Default runs (32 of each clean pass, one
# warm-up) of two generated flakes, the hello flake's work (--work 1500)
# and a third more (--work 2000):
#   1. two sessions, A1 then B1: every faster/slower verdict of compare is
#      counted (the change touches nix's work only);
#   2. A1 against the same flake run beside two busy loops, throughout (A3)
#      and from part way on (A4: the loops start when its clean runs reach
#      round HOG_AT, default 17 of 32; a time would miss them as the runs get faster):
#      every time must be withheld, the exit status 0;
#   3. --baseline-rev on a repository holding both as two commits: nix's
#      time on the path and the counters must be called;
#   4. PAIRS interleaved A/A pairs of the default run: every verdict counted.
#
#   bash bench/sessions.sh            # PAIRS=10, about 60 minutes
#   PAIRS=2 bash bench/sessions.sh
#   SKIP_RUNS=1 PAIRS=2 bash bench/sessions.sh   # the verdicts again, on the bundles left in $OUT
#   STEPS="3 4" bash bench/sessions.sh           # only some of the four
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
PAIRS="${PAIRS:-10}"
HOG_AT="${HOG_AT:-17}"
STEPS=" ${STEPS:-1 2 3 4} "
step() { [[ "$STEPS" == *" $1 "* ]]; }
cd "$ROOT"
build_release
# SKIP_RUNS=1 reads the bundles an earlier run left in $OUT again.
if [ -n "${SKIP_RUNS:-}" ]; then OUT="${OUT:-/tmp/evalbench-sessions}"; else scratch_dir sessions; fi
lab_down_on_exit "$OUT/lab-*"
run_on_exit 'pkill -f "while :; do :; done" || true'
hog() { for _ in 1 2; do sh -c 'while :; do :; done' & done; }
unhog() { pkill -f "while :; do :; done" || true; }
run() { local name="$1"; shift; "$BIN" run --no-report --lab-dir "$OUT/lab-$name" --out "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1; }
cd "$OUT"
if [ -z "${SKIP_RUNS:-}" ]; then
"$BIN" lab gen-flake --work 1500 --out w1500 2>/dev/null
"$BIN" lab gen-flake --work 2000 --out w2000 2>/dev/null
mkdir repo && cp w1500/flake.nix repo/ && git -C repo init -q && git -C repo add -A && git -C repo -c user.name=b -c user.email=b@b commit -qm "work 1500"
cp w2000/flake.nix repo/ && git -C repo -c user.name=b -c user.email=b@b commit -qam "work 2000"
if step 1 || step 2; then
say "1. two sessions: A1 (w1500), then B1 (w2000)"
run A1 --flake w1500
fi
if step 1; then run B1 --flake w2000; fi
if step 2; then
say "2. busy machine: A3 beside two busy loops throughout, A4 with them from its round ${HOG_AT} on"
hog; run A3 --flake w1500; unhog
run A4 --flake w1500 & P=$!
until [ -e "A4/cold-clean.$HOG_AT" ] || ! kill -0 $P 2>/dev/null; do sleep 0.2; done; hog; wait $P; unhog
fi
if step 3; then
say "3. --baseline-rev HEAD~1 on the repository"
"$BIN" run --no-report --flake repo --baseline-rev HEAD~1 --lab-dir "$OUT/lab-RV" --out RV > RV.log 2>&1 || true
fi
if step 4; then
say "4. $PAIRS interleaved A/A pairs"
for k in $(seq 1 "$PAIRS"); do
    "$BIN" run --no-report --baseline w1500 --flake w1500 --lab-dir "$OUT/lab-AA$k" --out "AA$k" > "AA$k.log" 2>&1
done
fi
fi
verdicts() { # NAME A B: the comparison's verdicts, counted
    local rc=0
    "$BIN" compare "$2" "$3" --json --fail-on-regression 5 > "$1.json" 2> "$1.err" || rc=$?
    echo "$rc" > "$1.rc"
    python3 - "$1" <<'PY'
import json, sys
name = sys.argv[1]
c = json.load(open(name + ".json"))
rc = open(name + ".rc").read().strip()
calls, withheld, primary = [], 0, []
for p in c["passes"]:
    rows = [("evaluated", p["wall"])] + ([("nix on the path", p["nix_on_path"])] if p.get("nix_on_path") else [])
    for what, v in rows:
        primary.append(f"{p['pass_a']} {what} {v['kind']} {v['change_pct'] or 0:+.1f}%")
    for r in p["spans"] + p["statements"] + p["path"]:
        k = r["verdict"]["kind"]
        withheld += k == "withheld"
        if k in ("faster", "slower"):
            calls.append(f"{p['pass_a']} {r['what'][:60]} {k} {r['verdict']['change_pct'] or 0:+.1f}%")
print(f"{name}: exit {rc}; exploratory verdicts {len(calls)}, withheld {withheld}; primary: {'; '.join(primary)}")
for x in calls:
    print(f"    {x}")
PY
}
if step 1; then verdicts two-sessions A1 B1; fi
if step 2; then verdicts hog-throughout A1 A3; verdicts hog-part-way A1 A4; fi
if step 3; then verdicts baseline-rev RV/a RV/b; fi
if step 4; then for k in $(seq 1 "$PAIRS"); do verdicts "aa$k" "AA$k/a" "AA$k/b"; done; fi
