#!/usr/bin/env bash
# What opening a schema-1 history costs (issue 56: schema 2 stores each
# change's grounds, and a schema-1 history is judged again from its own rows
# when first opened). OLD is an evalbench from before schema 2 (ab289216 or
# older); it adds COMMITS commits (history_bundles.py: 4 passes, RUNS runs,
# 50 spans) one `history add` at a time. Then this tree's evalbench shows the
# history three times: the first show migrates, the others only read. At
# COMMITS and at ten times COMMITS, with the JSON compared to OLD's.
#
#   OLD=/tmp/evalbench-ab28 bash bench/history-migrate.sh      # COMMITS=100, RUNS=3
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
COMMITS="${COMMITS:-100}"; RUNS="${RUNS:-3}"
[ -n "${OLD:-}" ] || { echo "OLD=path/to/an/evalbench from before schema 2 is needed" >&2; exit 2; }
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-history-migrate.XXXXXX)"
remove_on_exit "$WORK"
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }; t1=$(date +%s.%N); python3 -c "print(f'{$t1 - $t0:.2f}')"; }
for n in "$COMMITS" $((COMMITS * 10)); do
    python3 "$(dirname "$0")/history_bundles.py" "$WORK/b$n" "$n" "$RUNS"
    db="$WORK/h$n.sqlite"
    added=$(secs bash -c "for c in \$(seq 0 $((n - 1))); do c4=\$(printf %04d \$c); '$OLD' history add --db '$db' --commit c\$c4 --commit-time \$((1700000000 + c * 3600)) '$WORK/b$n/c'\$c4 || exit 1; done")
    "$OLD" history show --db "$db" --json > "$WORK/old.json"
    first=$(secs "$BIN" history show --db "$db" --json); cp "$WORK/out" "$WORK/new.json"
    second=$(secs "$BIN" history show --db "$db" --json)
    third=$(secs "$BIN" history show --db "$db" --json)
    same=$(cmp -s "$WORK/old.json" "$WORK/new.json" && echo "identical" || echo "DIFFERENT")
    say "$n commits: added by OLD in $added s; shown: first (migrating) $first s, then $second s and $third s; show --json $same to OLD's"
    rm -rf "$WORK/b$n"
done
