#!/usr/bin/env bash
# What the answer costs (issue 55): summarize now walks each run's path
# for what its top steps would buy and reads own times from the graph, and
# whatif without --faster walks every run of a pass for the answer over
# them. A bundle of RUNS runs of the sample pipeline's cold-clean pass (one
# run generated, copied to cold-clean.2 .. cold-clean.RUNS), at DRVS and at
# ten times DRVS derivations a job; each command timed REPEAT times,
# interleaved, median seconds and peak RSS. With OLD=path/to/an/older/
# evalbench, the same commands by it side by side, and the ratios.
#
#   bash bench/answer.sh                                   # RUNS=8, DRVS=1000 and 10000
#   OLD=/tmp/old-target/release/evalbench bash bench/answer.sh
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_pkg /usr/bin/time time
RUNS="${RUNS:-8}"
DRVS="${DRVS:-1000}"
REPEAT="${REPEAT:-3}"
OLD="${OLD:-}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-answer.XXXXXX)"
remove_on_exit "$WORK"

measure() { # file command... ; appends "seconds kib"
    local file="$1"; shift
    /usr/bin/time -f "%e %M" -o "$WORK/t" "$@" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
    cat "$WORK/t" >> "$file"
}
for drvs in "$DRVS" $((DRVS * 10)); do
    b="$WORK/b$drvs"
    EVALBENCH_TRACE_QUEUE=4000000 "$BIN" sample --out "$b" --passes cold-clean --ci-jobs 4 --drvs "$drvs" 2>/dev/null
    for i in $(seq 2 "$RUNS"); do cp -r "$b/cold-clean" "$b/cold-clean.$i"; done
    spans=$(cat "$b"/cold-clean/trace/*.jsonl | grep -c '"name"')
    say "$drvs derivations a job: $spans spans a run, $RUNS runs"
    echo "$spans" > "$WORK/spans$drvs"
    for r in $(seq "$REPEAT"); do
        for who in new old; do
            bin="$BIN"; [ "$who" = old ] && bin="$OLD"
            [ -z "$bin" ] && continue
            rm -rf "$WORK/o"
            measure "$WORK/$who-summarize-$drvs" "$bin" summarize -q --no-trace "$b" -o "$WORK/o"
            measure "$WORK/$who-whatif-$drvs" "$bin" whatif -q "$b"
        done
    done
done

python3 - "$WORK" "$DRVS" "$RUNS" "$OLD" <<'PY'
import statistics as st, sys, os
work, drvs, runs, old = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def load(name):
    p = f"{work}/{name}"
    if not os.path.exists(p):
        return None
    rows = [l.split() for l in open(p)]
    return st.median(float(r[0]) for r in rows), max(int(r[1]) for r in rows) / 1024
for cmd in ["summarize", "whatif"]:
    for d in [drvs, drvs * 10]:
        spans = int(open(f"{work}/spans{d}").read())
        n = load(f"new-{cmd}-{d}")
        line = f"{cmd:<10} {runs} runs x {spans:>8} spans: now {n[0]:7.2f} s {n[1]:7.0f} MiB"
        o = load(f"old-{cmd}-{d}")
        if o:
            ratio = f"x{n[0] / o[0]:.2f}" if o[0] > 0 else "– (before: under 10 ms)"
            line += f" | before {o[0]:7.2f} s {o[1]:7.0f} MiB | time {ratio}, RSS x{n[1] / o[1]:.2f}"
        print(line)
    a, b = load(f"new-{cmd}-{drvs}"), load(f"new-{cmd}-{drvs * 10}")
    print(f"{cmd:<10} growth at 10x the spans: time x{b[0] / a[0]:.1f}, RSS x{b[1] / a[1]:.1f}")
PY
