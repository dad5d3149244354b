#!/usr/bin/env bash
# The critical path without span ids, against the path with them, on one
# bundle of the lab: Gradient's span lines carry no `id`, `parent` or
# `thread`, so evalbench infers nesting by time (bundle::spans::nesting).
# This strips those keys from every span line of a copy of BUNDLE (and,
# with GRADIENT_RUN=1, gives each run.json Gradient's keys only, so the
# path's start comes from the spans and its end from evaluated_s rounded to
# 0.1 s), summarizes both, and prints per clean pass the median path's top
# ten steps side by side: time on the path with ids, inferred, and the
# difference; then how many of the top ten the two share.
#   bash bench/inferred-path.sh BUNDLE            # e.g. the main job's ./out
#   GRADIENT_RUN=1 bash bench/inferred-path.sh BUNDLE
source "$(dirname "$0")/../scripts/lib.sh"
BUNDLE="${1:?usage: bench/inferred-path.sh BUNDLE}"
build_release
scratch_dir inferred-path
remove_on_exit "$OUT"
cp -r "$BUNDLE" "$OUT/ids"
cp -r "$BUNDLE" "$OUT/none"
python3 - "$OUT/none" "${GRADIENT_RUN:-0}" <<'EOF'
import json, os, sys
root, gradient_run = sys.argv[1], sys.argv[2] == "1"
for d, _, files in os.walk(root):
    for f in files:
        p = os.path.join(d, f)
        if f.endswith(".jsonl") and os.path.basename(d) == "trace":
            out = []
            for line in open(p, encoding="utf-8", errors="replace"):
                try:
                    v = json.loads(line)
                except ValueError:
                    out.append(line.rstrip("\n"))
                    continue
                for k in ("id", "parent", "thread", "host"):
                    v.pop(k, None)
                out.append(json.dumps(v, separators=(",", ":")))
            open(p, "w").write("\n".join(out) + "\n")
        elif f == "run.json" and gradient_run:
            r = json.load(open(p))
            json.dump({"eval_id": r.get("evaluation_id"), "cold": r["pass"].startswith("cold-"),
                       "instrumented": r["pass"].endswith("-instrumented"), "evaluated_s": round(r["evaluated_s"], 1)}, open(p, "w"))
EOF
for side in ids none; do
    "$BIN" summarize --quiet --no-trace -o "$OUT/$side-summary" "$OUT/$side" > /dev/null
done
python3 - "$OUT/ids-summary/summary.json" "$OUT/none-summary/summary.json" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def steps(s, name):
    """The median path over the pass's runs (summary.json's repeats), and the first run's note."""
    rep = next((r for r in s["repeats"] if r["pass"] == name), None)
    note = next((p["critical_path"].get("note") for p in s["passes"] if p["pass"] == name and isinstance(p.get("critical_path"), dict)), None)
    if rep is None:
        return {}, note
    return {x["step"]: x["median_on_path_us"] for x in rep["critical_path"]}, note
for name in [r["pass"] for r in a["repeats"]]:
    (sa, _), (sb, note) = steps(a, name), steps(b, name)
    top = sorted(sa, key=lambda k: -sa[k])[:10]
    top_b = sorted(sb, key=lambda k: -sb[k])[:10]
    print(f"== {name}: the median path's top ten steps with ids, and inferred")
    if note:
        print(f"   inferred path made: {note}")
    print(f"   {'step':60} {'with ids':>11} {'inferred':>11} {'diff':>9}")
    for k in top:
        x, y = sa[k] / 1000, sb.get(k, 0) / 1000
        print(f"   {k[:60]:60} {x:9.3f}ms {y:9.3f}ms {(y - x) / x * 100 if x else 0:+8.1f}%")
    print(f"   shared in both top tens: {len(set(top) & set(top_b))} of 10; inferred's own top ten adds: "
          + (", ".join(f"{k[:50]} ({sb[k] / 1000:.3f} ms)" for k in top_b if k not in top) or "none"))
EOF
