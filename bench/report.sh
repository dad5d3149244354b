#!/usr/bin/env bash
# Gradient's diagnostic report: summarize and inspect on a report of N
# derivations (10,000 by default: the goal is under a second each) and of 10N
# (how the cost grows), medians of RUNS, peak memory beside. The reports are
# generated from the hand-written schema-19 report (bench/report_gen.py).
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_pkg python3 python3
need_pkg /usr/bin/time time
RUNS="${RUNS:-5}"
N="${N:-10000}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-reportbench.XXXXXX)"
remove_on_exit "$WORK"
t() { /usr/bin/time -f "%e %M" -o "$WORK/t" "$@" >/dev/null 2>&1 || { say "failed: $*"; exit 1; }; cat "$WORK/t"; }
ROWS=()
for n in "$N" "$((N * 10))"; do
    python3 bench/report_gen.py "$n" "$WORK/r$n.db"
    cp "$WORK/r$n.db" "$WORK/c$n.db"
    S=(); I=(); C=()
    for i in $(seq "$RUNS"); do
        S+=("$(t "$BIN" summarize -q "$WORK/r$n.db" -o "$WORK/s$n")")
        I+=("$(t "$BIN" inspect "$WORK/r$n.db" -o "$WORK/i$n")")
        C+=("$(t "$BIN" compare "$WORK/r$n.db" "$WORK/c$n.db")")
    done
    ROWS+=("$n $(stat -c %s "$WORK/r$n.db") ${S[*]} | ${I[*]} | ${C[*]}")
done
python3 - "$RUNS" "${ROWS[@]}" <<'PY'
import statistics, sys
runs = int(sys.argv[1])
print(f"Gradient diagnostic reports: medians of {runs} runs (wall s, peak RSS MiB); goal under 1 s at the smaller size")
print(f"{'derivations':>12} {'file MB':>8} {'summarize':>18} {'inspect':>18} {'compare (two)':>18}")
prev = None
for row in sys.argv[2:]:
    head, *groups = row.split(" | ")
    parts = head.split()
    n, size = int(parts[0]), int(parts[1])
    groups = [" ".join(parts[2:])] + groups
    cells = []
    meds = []
    for g in groups:
        v = g.split()
        wall = statistics.median(float(x) for x in v[0::2])
        rss = statistics.median(int(x) for x in v[1::2]) / 1024
        meds.append(wall)
        cells.append(f"{wall:8.3f} s {rss:5.0f} MiB")
    print(f"{n:>12,} {size / 1e6:>8.1f} " + " ".join(f"{c:>18}" for c in cells))
    if prev:
        print(f"{'x' + str(n // prev[0]):>12} {'':>8} " + " ".join(f"{'x%.2f' % (m / p):>18}" for m, p in zip(meds, prev[1])))
    prev = (n, meds)
PY
