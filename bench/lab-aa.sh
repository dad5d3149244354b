#!/usr/bin/env bash
# A/A on the lab: two bundles of the same hello flake, RUNS repeats of the
# clean passes each (`evalbench run --repeat`), then `evalbench compare`.
# Every verdict of "faster" or "slower" here is a false alarm: the script
# counts them.
#
#   bash bench/lab-aa.sh            # RUNS=5
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
RUNS="${RUNS:-5}"
cd "$ROOT"
build_release
scratch_dir aa
lab_down_on_exit "$OUT/lab"
for side in a b; do
    say "side $side: $RUNS repeats of cold-clean and warm-clean"
    "$BIN" run --passes cold-clean,warm-clean --repeat "$RUNS" --no-report --out "$OUT/$side" --lab-dir "$OUT/lab" > "$OUT/$side.log" 2>&1 || { tail -20 "$OUT/$side.log"; exit 1; }
done
"$BIN" compare "$OUT/a" "$OUT/b" --json > "$OUT/compare.json"
python3 - "$OUT/compare.json" <<'PY'
import collections, json, sys
c = json.load(open(sys.argv[1]))
print("lab A/A: the hello flake twice, compared")
for p in c["passes"]:
    kinds = collections.Counter(r["verdict"]["kind"] for r in p["spans"] + p["statements"])
    outside = [r["what"] for r in p["spans"] + p["statements"] if r["verdict"]["kind"] in ("faster", "slower")]
    print(f"  {p['pass_a']} ({p['runs_a']} vs {p['runs_b']} runs): evaluated {p['wall']['kind']} ({p['wall']['change_pct']:+.1f}%); "
          f"{len(p['spans'])} spans and {len(p['statements'])} statements: {dict(kinds)}; outside noise: {outside or 'none'}")
    for f in p["families"]:
        if f.get("power"):
            print(f"    note: {f['power']}")
PY
