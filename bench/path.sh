#!/usr/bin/env bash
# The critical path's cost on about a million spans (the bundle of
# bench/summarize.sh): `whatif` (load, graph, path; with and without a
# --faster) beside `summarize --no-trace` (load, statistics and the path),
# medians of RUNS, wall time and peak RSS; whatif's own stderr line splits
# loading from the path.
#
#   bash bench/path.sh            # RUNS=3, ~1.1M spans
#   DRVS=8500 bash bench/path.sh  # ~110k spans, to see how it grows
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_pkg /usr/bin/time time
RUNS="${RUNS:-3}"
DRVS="${DRVS:-85000}"
JOBS="${JOBS:-4}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-path.XXXXXX)"
remove_on_exit "$WORK"
say "generating the bundle ($JOBS jobs x $DRVS derivations) in $WORK"
EVALBENCH_TRACE_QUEUE=4000000 "$BIN" sample --out "$WORK/b" --passes cold-clean --ci-jobs "$JOBS" --drvs "$DRVS" 2>/dev/null
SPANS=$(cat "$WORK"/b/cold-clean/trace/*.jsonl | grep -c '"name"')
say "$SPANS spans"
measure() { # label command...
    local label="$1"; shift
    /usr/bin/time -f "%e %M" -o "$WORK/t" "$@" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
    cat "$WORK/t" >> "$WORK/$label"
    grep -h "path in" "$WORK/err" >> "$WORK/$label.says" || true
}
for i in $(seq "$RUNS"); do
    measure whatif "$BIN" whatif "$WORK/b"
    measure whatif-faster "$BIN" whatif "$WORK/b" --faster resolve=50
    measure summarize "$BIN" summarize --no-trace "$WORK/b" -o "$WORK/o"
done
python3 - "$WORK" "$SPANS" <<'PY'
import statistics as st, sys, re
work, spans = sys.argv[1], int(sys.argv[2])
print(f"critical path on {spans} spans (medians of runs; wall s, peak RSS MiB)")
for label in ["whatif", "whatif-faster", "summarize"]:
    rows = [tuple(map(float, l.split())) for l in open(f"{work}/{label}")]
    wall, rss = st.median(r[0] for r in rows), st.median(r[1] for r in rows) / 1024
    extra = ""
    try:
        says = open(f"{work}/{label}.says").read().strip().splitlines()
        if says:
            extra = "; " + says[len(says) // 2]
    except FileNotFoundError:
        pass
    print(f"  {label:<14} {wall:7.2f} s  {rss:7.0f} MiB{extra}")
PY
