#!/usr/bin/env bash
# whatif against a real change, in the sample pipeline: side A as it is,
# side B with one step's work halved for real, RUNS runs each, interleaved.
# The prediction (`whatif --faster STEP=50` on each A run, median) is set
# beside the measured change of the medians; then the same for a step off
# the critical path (the worker's log upload), where both should be ~0.
#
#   bash bench/whatif.sh            # RUNS=5
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
RUNS="${RUNS:-5}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-whatif.XXXXXX)"
remove_on_exit "$WORK"
ONE=(--passes cold-clean --ci-jobs 4 --drvs 50)
# name | A's flags | B's flags | whatif's --faster on A
CASES=(
  "on the path: eval resolve halved|--work resolve=40|--work resolve=20|eval:resolve=50"
  "off the path: worker upload_logs halved|--work upload_logs=200|--work upload_logs=100|worker:upload_logs=50"
)
for c in "${CASES[@]}"; do
    IFS='|' read -r name fa fb faster <<< "$c"
    : > "$WORK/a"; : > "$WORK/b"; : > "$WORK/p"
    for i in $(seq "$RUNS"); do
        for side in a b; do
            flags="$fa"; [ "$side" = b ] && flags="$fb"
            # shellcheck disable=SC2086
            "$BIN" sample -o "$WORK/$side$i" "${ONE[@]}" $flags 2>/dev/null
            python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["evaluated_s"])' "$WORK/$side$i/cold-clean/run.json" >> "$WORK/$side"
        done
        "$BIN" whatif -q --json --faster "$faster" "$WORK/a$i" | python3 -c 'import json,sys; w=json.load(sys.stdin)["whatif"]; print(w["predicted_s"]-w["measured_s"])' >> "$WORK/p"
    done
    python3 - "$name" "$WORK/a" "$WORK/b" "$WORK/p" <<'PY'
import statistics as st, sys
name, a, b, p = sys.argv[1], *[[float(x) for x in open(f)] for f in sys.argv[2:]]
ma, mb, mp = st.median(a), st.median(b), st.median(p)
measured = mb - ma
spread = (max(a) - min(a) + max(b) - min(b)) / 2
ratio = f"{mp / measured:.2f}" if abs(measured) > 1e-9 else "–"
print(f"{name}: A median {ma*1e3:.1f} ms, B median {mb*1e3:.1f} ms ({len(a)} runs each)")
print(f"  measured change {measured*1e3:+.1f} ms (runs spread about ±{spread*1e3/2:.1f} ms); predicted {mp*1e3:+.1f} ms; predicted/measured {ratio}")
PY
done
