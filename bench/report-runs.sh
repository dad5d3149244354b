#!/usr/bin/env bash
# The report of a bundle with many runs a pass (the main job's: 32 of each
# clean pass), as a reader meets it: the page's size, its load time in
# headless Chromium (median of RUNS, an empty page's beside it for the
# browser's own start), and two screenshots: the top of the page, and a
# pass's runs and median critical path (Chromium's --screenshot of a
# #fragment URL came out blank, so that part is cut into a page of its own).
#
#   bash scripts/main && bash bench/report-runs.sh          # BUNDLE=out
#   BUNDLE=/path/to/bundle RUNS=5 bash bench/report-runs.sh
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_browser
RUNS="${RUNS:-5}"
BUNDLE="${BUNDLE:-$ROOT/out}"
cd "$ROOT"
build_release
scratch_dir report-runs
CHROME=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync)
load() { # url -> seconds
    local t0 t1
    t0=$(date +%s.%N)
    "${CHROME[@]}" --dump-dom --user-data-dir="$OUT/profile" "$1" >/dev/null 2>&1
    t1=$(date +%s.%N)
    python3 -c "print(f'{$t1 - $t0:.3f}')"
}
median() { python3 -c "import statistics,sys; print(f'{statistics.median(float(x) for x in sys.argv[1:]):.3f}')" "$@"; }
"$BIN" inspect "$BUNDLE" -o "$OUT/report" 2>/dev/null
PAGE="$OUT/report/index.html"
echo "<html><body>empty</body></html>" > "$OUT/empty.html"
L=(); E=()
for _ in $(seq "$RUNS"); do
    L+=("$(load "file://$PAGE")")
    E+=("$(load "file://$OUT/empty.html")")
done
# The first pass's runs section to the end of its median path, as a page of its own.
python3 - "$PAGE" "$OUT/runs.html" <<'PY'
import sys
page = open(sys.argv[1]).read()
head, body = page.split("<main>", 1)
at = body.index('<h2 id="runs-')
end = body.index('<h2 id="pass-', at)
open(sys.argv[2], "w").write(head + "<main>" + body[at:end] + "</main></body></html>")
PY
"${CHROME[@]}" --user-data-dir="$OUT/profile" --window-size=1400,1000 --screenshot="$OUT/top.png" "file://$PAGE" >/dev/null 2>&1
"${CHROME[@]}" --user-data-dir="$OUT/profile" --window-size=1400,1000 --screenshot="$OUT/runs.png" "file://$OUT/runs.html" >/dev/null 2>&1
printf 'report of %s: %s bytes, %s pass sections, %s links in its contents\n' "$BUNDLE" "$(stat -c %s "$PAGE")" \
    "$(grep -o '<h2 id="pass-' "$PAGE" | wc -l)" "$(python3 -c "import sys,re; p=open(sys.argv[1]).read(); n=p.split('<nav>',1)[1].split('</nav>',1)[0]; print(n.count('<a '))" "$PAGE")"
printf 'headless Chromium, median of %s loads: the page %ss, an empty page %ss\n' "$RUNS" "$(median "${L[@]}")" "$(median "${E[@]}")"
printf 'screenshots: %s/top.png %s/runs.png\n' "$OUT" "$OUT"
