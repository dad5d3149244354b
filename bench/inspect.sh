#!/usr/bin/env bash
# inspect on bundles of about 10k, 100k and 1M spans made with the real
# layer (the sample pipeline): render time and peak RSS (median of RUNS),
# page size, and the page's load time in headless Chromium (median of RUNS,
# with an empty page's load time beside it for the browser's own start).
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_browser
need_pkg /usr/bin/time time
RUNS="${RUNS:-3}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-inspectbench.XXXXXX)"
remove_on_exit "$WORK"
CHROME=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync --dump-dom)
load() { # url -> seconds
    local t0 t1
    t0=$(date +%s.%N)
    "${CHROME[@]}" --user-data-dir="$WORK/profile" "$1" >/dev/null 2>&1
    t1=$(date +%s.%N)
    python3 -c "print(f'{$t1 - $t0:.3f}')"
}
median() { python3 -c "import statistics,sys; print(f'{statistics.median(float(x) for x in sys.argv[1:]):.3f}')" "$@"; }
echo "<html><body>empty</body></html>" > "$WORK/empty.html"
printf 'inspect bench: median of %s runs\n' "$RUNS"
printf '  %-10s %10s %12s %12s %12s %14s\n' spans render "peak RSS" "page size" "load page" "load empty"
for spec in "2 1600" "4 8000" "4 85000"; do
    set -- $spec
    B="$WORK/b$2"
    EVALBENCH_TRACE_QUEUE=4000000 "$BIN" sample --out "$B" --passes cold-clean --ci-jobs "$1" --drvs "$2" 2>/dev/null
    SPANS=$(cat "$B"/cold-clean/trace/*.jsonl | grep -c '"name"')
    R=(); M=(); L=(); E=()
    for i in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %M" -o "$WORK/t" "$BIN" inspect "$B" -o "$WORK/r$2" 2>/dev/null
        read -r s m < "$WORK/t"; R+=("$s"); M+=("$m")
        L+=("$(load "file://$WORK/r$2/index.html")")
        E+=("$(load "file://$WORK/empty.html")")
    done
    SIZE=$(stat -c %s "$WORK/r$2/index.html")
    printf '  %-10s %9ss %9s MiB %9s MiB %11ss %13ss\n' "$SPANS" "$(median "${R[@]}")" "$(( $(printf '%s\n' "${M[@]}" | sort -n | tail -1) / 1024 ))" "$(python3 -c "print(f'{$SIZE/1048576:.2f}')")" "$(median "${L[@]}")" "$(median "${E[@]}")"
    LAST=("$SPANS" "$(median "${R[@]}")" "$(( $(printf '%s\n' "${M[@]}" | sort -n | tail -1) / 1024 ))")
    rm -rf "$B"
done
printf '  goal on %s spans: render <= 1.5 s (measured %s s), peak RSS <= 200 MiB (measured %s MiB)\n' "${LAST[@]}"

