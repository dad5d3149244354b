#!/usr/bin/env bash
# summarize on a bundle of about a million spans written by the real layer
# (the sample pipeline), against jq computing the same per-name totals from
# the same files. Side by side in one run: medians of RUNS, peak RSS, ratio.
#
#   bash bench/summarize.sh            # RUNS=5, ~1.1M spans
#   DRVS=20000 RUNS=3 bash bench/summarize.sh
#   OLD=/path/to/an/older/evalbench bash bench/summarize.sh   # that binary side by side, interleaved
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_pkg jq jq
need_pkg /usr/bin/time time
RUNS="${RUNS:-5}"
OLD="${OLD:-}"
DRVS="${DRVS:-85000}"
JOBS="${JOBS:-4}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-bench.XXXXXX)"
remove_on_exit "$WORK"
say "generating the bundle ($JOBS jobs x $DRVS derivations) in $WORK"
EVALBENCH_TRACE_QUEUE=4000000 "$BIN" sample --out "$WORK/b" --passes cold-clean --ci-jobs "$JOBS" --drvs "$DRVS" 2>/dev/null
FILES=("$WORK"/b/cold-clean/trace/*.jsonl)
SPANS=$(cat "${FILES[@]}" | grep -c '"name"')
DROPPED=$(cat "${FILES[@]}" | { grep -h dropped_spans || true; } | wc -l)
BYTES=$(cat "${FILES[@]}" | wc -c)
say "$SPANS spans, $((BYTES / 1048576)) MiB of span lines, $DROPPED dropped-span notes"

measure() { # label command... ; appends "seconds kib" to $WORK/$label
    local label="$1"; shift
    /usr/bin/time -f "%e %M" -o "$WORK/t" "$@" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
    cat "$WORK/t" >> "$WORK/$label"
}
JQ_PROG='reduce inputs as $s ({}; if $s.name then .[$s.name + "\t" + $s.process] += $s.dur_us else . end)'
for i in $(seq "$RUNS"); do
    # Interleaved, so a noisy neighbour hits both alike.
    measure summarize "$BIN" summarize -q "$WORK/b" -o "$WORK/o"
    if [ -n "$OLD" ]; then measure old "$OLD" summarize -q "$WORK/b" -o "$WORK/o3"; fi
    measure summarize-no-trace "$BIN" summarize -q --no-trace "$WORK/b" -o "$WORK/o2"
    measure jq jq -n "$JQ_PROG" "${FILES[@]}"
done
jq -n "$JQ_PROG" "${FILES[@]}" > "$WORK/jq.json"

python3 - "$WORK" "$SPANS" "$OLD" <<'PY'
import json, os, statistics, sys
work, spans, old = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def load(label):
    rows = [l.split() for l in open(f"{work}/{label}")]
    return statistics.median(float(r[0]) for r in rows), max(int(r[1]) for r in rows), len(rows)
# Same answer: per (name, process) totals from jq and from summary.json.
jq = json.load(open(f"{work}/jq.json"))
summary = json.load(open(f"{work}/o/summary.json"))
ours = {f"{s['name']}\t{s['process']}": s["total_us"] for s in summary["passes"][0]["spans"]}
assert ours == jq, "summarize and jq disagree on the totals"
# The trace.json of a million spans is valid JSON with one event per span.
trace = json.load(open(f"{work}/o/cold-clean/trace.json"))
# The critical path's slices are a process of their own, beside the spans.
path_pids = {e["pid"] for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"].get("name", "").startswith("critical path")}
events = sum(1 for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] not in path_pids)
path_events = sum(1 for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] in path_pids)
assert events == spans, f"trace.json has {events} span events, expected {spans}"
del trace
s, s_rss, n = load("summarize")
t, t_rss, _ = load("summarize-no-trace")
j, j_rss, _ = load("jq")
print(f"summarize bench: {spans} spans, median of {n} runs each, side by side")
print(f"  summarize (summary + trace.json)  {s:7.2f} s  {spans / s / 1e6:5.2f} M spans/s  peak RSS {s_rss / 1024:6.0f} MiB")
print(f"  summarize --no-trace              {t:7.2f} s  {spans / t / 1e6:5.2f} M spans/s  peak RSS {t_rss / 1024:6.0f} MiB")
print(f"  jq per-name totals                {j:7.2f} s  {spans / j / 1e6:5.2f} M spans/s  peak RSS {j_rss / 1024:6.0f} MiB")
print(f"  ratio jq / summarize              {j / s:7.1f}x   (goal >= 20x; same totals checked)")
print(f"  ratio jq / summarize --no-trace   {j / t:7.1f}x   (goal >= 35x)")
if old:
    o, o_rss, _ = load("old")
    print(f"  old binary ({old}) summarize      {o:7.2f} s  peak RSS {o_rss / 1024:6.0f} MiB")
    print(f"  ratio old / summarize             {o / s:7.2f}x   (goal >= 1.8x; RSS goal <= the old binary's)")
print(f"  trace.json: valid JSON, {events} span events, {path_events} critical path slices")
PY
