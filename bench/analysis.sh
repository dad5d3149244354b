#!/usr/bin/env bash
# Every analysis command on two bundles of the sample pipeline, one four
# times the other (default ~1.1M and ~4.5M spans): wall time and peak RSS
# (/usr/bin/time), medians of RUNS, and how each grows from the small
# bundle to the large one. Issue 31's targets are printed beside them.
#
#   bash bench/analysis.sh                  # RUNS=1, 85,000 and 340,000 derivations x 4 jobs
#   SMALL=20000 LARGE=80000 RUNS=3 bash bench/analysis.sh
#   KEEP=1 ...                              # keep the bundles (1.3 GB) in the printed directory
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_pkg /usr/bin/time time
RUNS="${RUNS:-1}"
SMALL="${SMALL:-85000}"
LARGE="${LARGE:-340000}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-analysis.XXXXXX)"
[ -n "${KEEP:-}" ] || remove_on_exit "$WORK"

measure() { # label command... ; appends "seconds kib" to $WORK/$label
    local label="$1"; shift
    /usr/bin/time -f "%e %M" -o "$WORK/t" "$@" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
    cat "$WORK/t" >> "$WORK/$label"
}
for size in small large; do
    drvs=$SMALL; [ "$size" = large ] && drvs=$LARGE
    say "generating the $size bundle (4 jobs x $drvs derivations)"
    EVALBENCH_TRACE_QUEUE=8000000 "$BIN" sample --out "$WORK/$size" --passes cold-clean --ci-jobs 4 --drvs "$drvs" 2>/dev/null
    cat "$WORK/$size"/cold-clean/trace/*.jsonl | grep -c '"name"' > "$WORK/$size.spans"
    for i in $(seq "$RUNS"); do
        say "$size: run $i of $RUNS"
        measure "$size.summarize" "$BIN" summarize -q "$WORK/$size" -o "$WORK/out-$size"
        measure "$size.inspect" "$BIN" inspect "$WORK/$size" -o "$WORK/inspect-$size"
        measure "$size.compare" "$BIN" compare "$WORK/$size" "$WORK/$size" --html "$WORK/compare-$size" --json
        rm -f "$WORK/h-$size.sqlite"
        measure "$size.history-add" "$BIN" history add "$WORK/$size" --db "$WORK/h-$size.sqlite" --commit c1
    done
done

# The pages in a real browser: headless Chromium's wall time to load and
# lay out each, beside an empty page's (its own start-up).
need_browser
CHROME=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync --dump-dom)
echo "<html><body>empty</body></html>" > "$WORK/empty.html"
for page in inspect-small/index.html compare-small/index.html inspect-large/index.html compare-large/index.html empty.html; do
    for i in 1 2 3; do
        t0=$(date +%s.%N)
        "${CHROME[@]}" --user-data-dir="$WORK/profile" "file://$WORK/$page" >/dev/null 2>&1
        t1=$(date +%s.%N)
        echo "$t0 $t1 $(stat -c %s "$WORK/$page")" >> "$WORK/load.${page%%/*}"
    done
done

python3 - "$WORK" "$RUNS" <<'PY'
import statistics, sys
work, runs = sys.argv[1], sys.argv[2]
def load(label):
    rows = [l.split() for l in open(f"{work}/{label}")]
    return statistics.median(float(r[0]) for r in rows), max(int(r[1]) for r in rows) / 1024
spans = {s: int(open(f"{work}/{s}.spans").read()) for s in ("small", "large")}
target = {"summarize": 256, "inspect": 512, "compare": 512, "history-add": 256}
print(f"analysis bench: {spans['small']:,} and {spans['large']:,} spans ({spans['large'] / spans['small']:.1f}x), median of {runs} run(s)")
print(f"  {'command':<12} {'small s':>8} {'MiB':>6}   {'large s':>8} {'MiB':>6}   time x  RSS x   target MiB")
for cmd in ("summarize", "inspect", "compare", "history-add"):
    (ts, ms), (tl, ml) = load(f"small.{cmd}"), load(f"large.{cmd}")
    ok = "met" if ml <= target[cmd] else "NOT met"
    print(f"  {cmd:<12} {ts:8.2f} {ms:6.0f}   {tl:8.2f} {ml:6.0f}   {tl / ts:5.2f}  {ml / ms:5.2f}   <= {target[cmd]} ({ok})")
def page(name):
    rows = [l.split() for l in open(f"{work}/load.{name}")]
    return statistics.median(float(b) - float(a) for a, b, _ in rows), int(rows[0][2])
empty, _ = page("empty.html")
print(f"  pages in headless Chromium (median of 3; an empty page takes {empty:.2f} s):")
for name in ("inspect-small", "compare-small", "inspect-large", "compare-large"):
    t, size = page(name)
    print(f"    {name:<14} {size / 1024:8.0f} KiB  {t:5.2f} s   (targets: <= 5 MB, <= 3 s)")
PY
[ -z "${KEEP:-}" ] || say "kept in $WORK"
