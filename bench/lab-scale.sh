#!/usr/bin/env bash
# The lab at scale: a generated flake of PACKAGES packages (default 2000,
# SHAPE flat or nixpkgs, both in nixpkgs' dependency shape; docs/generated-flakes.md), through `evalbench run` with
# PASSES (default cold-clean) once each and EVAL_WORKERS evaluators
# (default 1). Prints per pass the evaluated seconds (and per package: run
# PACKAGES=1000, 10000 and 100000 to see how it grows), where they went by
# stage (the critical path's steps), the spans, dropped spans, the bundle's
# size, the evaluators' peak RSS, and the server's graph walks: their time
# and rows, their share of the critical path, and the database's share of
# the evaluated seconds. GRAPH_WALK=join, lateral (the lab's setting) or
# both: one run in each form, one after the other, on one flake.
#
#   bash bench/lab-scale.sh                                  # PACKAGES=2000 WORK=100
#   PACKAGES=100000 PASSES=cold-clean,warm-clean EVAL_WORKERS=2 bash bench/lab-scale.sh
#   SHAPE=nixpkgs GRAPH_WALK=both PACKAGES=10000 bash bench/lab-scale.sh
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
PACKAGES="${PACKAGES:-2000}"
WORK_PER="${WORK:-100}"
PASSES="${PASSES:-cold-clean}"
EVAL_WORKERS="${EVAL_WORKERS:-1}"
SHAPE="${SHAPE:-flat}"
case "${GRAPH_WALK:-lateral}" in both) FORMS="join lateral" ;; *) FORMS="${GRAPH_WALK:-lateral}" ;; esac
cd "$ROOT"
build_release
scratch_dir scale
lab_down_on_exit "$OUT/lab"
"$BIN" lab gen-flake --out "$OUT/flake" --shape "$SHAPE" --packages "$PACKAGES" --work "$WORK_PER"
for FORM in $FORMS; do
say "$PASSES over $PACKAGES packages ($SHAPE), $EVAL_WORKERS evaluator(s), graph_walk=$FORM"
/usr/bin/time -f "%e s wall for the whole run" "$BIN" run --flake "$OUT/flake" --passes "$PASSES" --repeat 1 --no-pcap --no-report \
    --eval-workers "$EVAL_WORKERS" --lab-setting "graph_walk=$FORM" --out "$OUT/bundle-$FORM" --lab-dir "$OUT/lab" > "$OUT/run-$FORM.log" 2>&1 || {
    # The lab goes when the script ends: its logs are kept beside the bundle.
    cp -r "$OUT/lab/logs" "$OUT/failed-lab-logs" 2>/dev/null
    tail -20 "$OUT/run-$FORM.log"; tail -20 "$OUT/failed-lab-logs/server.log" 2>/dev/null; echo "the lab's logs: $OUT/failed-lab-logs"; exit 1; }
tail -n1 "$OUT/run-$FORM.log"
/usr/bin/time -f "summarize (no trace.json): %e s, %M KiB peak" "$BIN" summarize --no-trace -q -o "$OUT/summary-$FORM" "$OUT/bundle-$FORM" > /dev/null
python3 - "$OUT/summary-$FORM/summary.json" "$OUT/bundle-$FORM" "$PACKAGES" <<'PY'
import json, os, sys
summary, bundle, packages = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
def size(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
for p in summary["passes"]:
    name, ev = p["pass"], p["evaluated_s"]
    m = p.get("evaluation_metric") or {}
    print(f"{name}: {packages} packages, evaluated {ev:.3f} s ({ev / packages * 1e3:.3f} ms a package); status {p['status']}")
    print(f"  spans {p['span_count']}, dropped {p['dropped_spans']}; pass directory {size(os.path.join(bundle, name)) / 1e6:.1f} MB")
    print(f"  eval subprocess: fetch {m.get('fetch_ms')} ms, flake (nix) {m.get('flake_ms')} ms, evaluators' peak RSS {m.get('eval_peak_rss_kb')} KiB")
    # A new flake's first evaluation writes every .drv to the store; a repeat finds them (docs/lab.md, "the nix store is not reset").
    print(f"  .drv files written to the nix store: {m.get('drvs_written', 'not counted')}")
    cp = p.get("critical_path") or {}
    by = ", ".join(f"{q['process'] or 'waits'} {q['on_path_us'] / 1e6:.2f} s" for q in cp.get("processes", []))
    print(f"  critical path by process: {by}")
    for s in cp.get("steps", [])[:8]:
        print(f"    {s['process'] or '':8} {s['name'][:40]:40} {s['on_path_us'] / 1e6:10.3f} s {s['on_path_us'] / packages:9.1f} us a package")
    # The graph walks: the eval_closure span (server), the statement as
    # pg_stat_statements counted it, and every statement's execution time
    # against the evaluated seconds (the database's share).
    spans = {(x["process"], x["name"]): x for x in p.get("spans", [])}
    walk = spans.get(("server", "eval_closure"))
    try:
        stmts = json.load(open(os.path.join(bundle, name, "pg", "pg_stat_statements.json")))
    except OSError:
        stmts = []
    # The walk's rows: the derivations it recorded, the span's own field.
    rows = 0
    tdir = os.path.join(bundle, name, "trace")
    for f in os.listdir(tdir) if os.path.isdir(tdir) else []:
        if f.startswith("server."):
            for l in open(os.path.join(tdir, f)):
                if '"eval_closure"' in l:
                    rows += json.loads(l).get("fields", {}).get("derivations", 0)
    db_s = sum(x["total_exec_time"] + (x.get("total_plan_time") or 0) for x in stmts) / 1e3
    on_path = sum(s["on_path_us"] for s in cp.get("steps", []) if s["name"] in ("eval_closure", "/* eval_closure */")) / 1e6
    path_s = (cp.get("total_us") or 0) / 1e6
    walk_s = (walk or {}).get("total_us", 0) / 1e6
    print(f"  graph walk eval_closure: {walk_s:.3f} s, {rows} derivations ({walk_s / packages * 1e6:.1f} us a package); "
          f"on the critical path {on_path:.3f} s = {on_path / path_s * 100 if path_s else 0:.1f}%")
    print(f"  database: {db_s:.2f} s of statements' execution and planning = {db_s / ev * 100 if ev else 0:.1f}% of the evaluated seconds")
    for name_, key in (("seed_blocking_deps", "seed_blocking_deps"), ("promote", "promote")):
        x = spans.get(("server", key))
        if x:
            print(f"  {name_}: {x['total_us'] / 1e6:.3f} s over {x['count']} batches")
PY
done
# The same walk from single derivations (a small seed in a large graph, as a
# failure cascade or one project's closure in a shared database): the lab's
# database as the last run left it, each form in turn, EXPLAIN ANALYZE's
# execution time; the seeds spread over the derivations' ids.
if [ "$FORMS" = "join lateral" ]; then
    "$BIN" lab up --lab-dir "$OUT/lab" --flake "$OUT/flake" > /dev/null 2>&1
    mapfile -t SEEDS < <("$BIN" lab sql --lab-dir "$OUT/lab" "SELECT drv_path FROM derivation WHERE walked ORDER BY id" | awk -v n="$PACKAGES" 'NR % int(n / 15 + 1) == 1')
    for FORM in join lateral lateral join; do
        for d in "${SEEDS[@]}"; do
            "$BIN" lab walk --lab-dir "$OUT/lab" --form "$FORM" --explain "$d" | sed -n "s/^Execution Time: \(.*\) ms/$FORM \1/p"
        done
    done > "$OUT/single.txt"
    "$BIN" lab walk --lab-dir "$OUT/lab" --form join --explain "${SEEDS[1]}" > "$OUT/plan-join.txt"
    "$BIN" lab walk --lab-dir "$OUT/lab" --form lateral --explain "${SEEDS[1]}" > "$OUT/plan-lateral.txt"
    python3 - "$OUT/single.txt" "${#SEEDS[@]}" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    f, ms = line.split()
    by.setdefault(f, []).append(float(ms))
j, l = statistics.median(by["join"]), statistics.median(by["lateral"])
print(f"walks from one derivation ({sys.argv[2]} seeds, each form twice, interleaved): median execution join {j:.2f} ms, lateral {l:.2f} ms, join/lateral {j / l:.2f}x")
PY
    echo "plans of one of them: $OUT/plan-join.txt $OUT/plan-lateral.txt"
fi
