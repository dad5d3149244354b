#!/usr/bin/env bash
# history at scale: COMMITS commits (default 1000) of 4 passes with RUNS runs
# each (default 3) and 50 spans, added one `history add` at a time into
# SQLite (and into PostgreSQL with PG=1); then `history show --json` and
# `history report` timed (median of REPEAT), with the page's size and its
# load time in headless Chromium. Bundles are drawn by a seeded generator,
# with cold-clean 25% slower from the middle commit on: show must find it.
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_browser
COMMITS="${COMMITS:-1000}"; RUNS="${RUNS:-3}"; REPEAT="${REPEAT:-3}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-historybench.XXXXXX)"
[ -n "${KEEP:-}" ] || remove_on_exit "$WORK"
python3 "$(dirname "$0")/history_bundles.py" "$WORK/bundles" "$COMMITS" "$RUNS"
median() { python3 -c "import statistics,sys; print(f'{statistics.median(float(x) for x in sys.argv[1:]):.3f}')" "$@"; }
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }; t1=$(date +%s.%N); python3 -c "print($t1 - $t0)"; }
run_db() { # label db
    local label="$1" db="$2" t0 t1
    t0=$(date +%s.%N)
    for c in $(seq 0 $((COMMITS - 1))); do
        "$BIN" history add "$WORK/bundles/$(printf c%04d "$c")" --db "$db" --commit "$(printf c%04d "$c")" --commit-time $((1700000000 + 3600 * c)) 2>/dev/null \
            || { echo "add $c failed" >&2; exit 1; }
    done
    t1=$(date +%s.%N)
    "$BIN" history show --json --db "$db" > "$WORK/show.json"
    python3 - "$WORK/show.json" "$COMMITS" <<'PY' || exit 1
import json, sys
v = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert len(v["commits"]) == n, len(v["commits"])
head = [(c["commit"], c["pass"]) for c in v["changes"] if c["what"] == "evaluated"]
step = (f"c{n // 2:04}", "cold-clean")
assert step in head, f"the step at {step} not found: {head}"
# Anything else is a false alarm: the rules' A/A rate (docs/history.md)
# is about one in 30,000 commits a pass for commits judged by change points.
others = [c for c in head if c != step]
print(f"  checked: {n} commits, the step found at c{n // 2:04}; {len(others)} other change(s) in evaluated seconds (false alarms over {4 * n} commit-passes): {others}")
PY
    local show=() rep=()
    for _ in $(seq "$REPEAT"); do
        show+=("$(secs "$BIN" history show --json --db "$db")")
        rep+=("$(secs "$BIN" history report --db "$db" -o "$WORK/page")")
    done
    local size load
    size=$(stat -c %s "$WORK/page/index.html")
    load=$(secs chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$WORK/profile" --dump-dom "file://$WORK/page/index.html")
    printf '  %-10s add %6.1f s in all (%5.1f ms each); show %7s s, report %7s s (median of %s); page %s bytes, Chromium load %.2f s\n' \
        "$label" "$(python3 -c "print($t1 - $t0)")" "$(python3 -c "print(($t1 - $t0) * 1000 / $COMMITS)")" "$(median "${show[@]}")" "$(median "${rep[@]}")" "$REPEAT" "$size" "$load"
}
printf 'history bench: %s commits x 4 passes x %s runs x 50 spans\n' "$COMMITS" "$RUNS"
run_db sqlite "$WORK/h.sqlite"
if [ "${PG:-0}" = 1 ]; then
    need_postgres
    PGDIR="$WORK/pg"; mkdir -p "$PGDIR"; chmod 755 "$WORK"
    PORT=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
    id evalbench-pg >/dev/null 2>&1 || useradd --system --no-create-home evalbench-pg
    chown evalbench-pg "$PGDIR"
    PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    runuser -u evalbench-pg -- "$PGBIN/initdb" -D "$PGDIR/data" -U postgres --auth=trust >/dev/null
    runuser -u evalbench-pg -- "$PGBIN/pg_ctl" -D "$PGDIR/data" -o "-p $PORT -k $PGDIR -c listen_addresses=127.0.0.1" -l "$PGDIR/log" -w start >/dev/null
    run_on_exit 'runuser -u evalbench-pg -- "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast stop'
    run_db postgresql "postgresql://postgres@127.0.0.1:$PORT/postgres"
fi
