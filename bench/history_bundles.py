#!/usr/bin/env python3
"""History bundles for the history benchmarks (history.sh, history-migrate.sh):
ROOT/cNNNN/<pass>[.k]/ for COMMITS commits, 4 passes of RUNS runs each, 50
spans a run, drawn by a seeded generator; cold-clean is 25% slower from the
middle commit on, so a history must find one change there.

    python3 bench/history_bundles.py ROOT COMMITS RUNS
"""
import json, math, os, random, sys
root, commits, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
passes = {"cold-clean": 6.0, "warm-clean": 0.9, "cold-instrumented": 9.0, "warm-instrumented": 1.5}
base = random.Random(1)
spans = [500.0 * 1000 ** base.random() for _ in range(50)]
for c in range(commits):
    r = random.Random(1000 + c)
    for p, ev in passes.items():
        for k in range(1, runs + 1):
            name = p if k == 1 else f"{p}.{k}"
            d = os.path.join(root, f"c{c:04}", name)
            os.makedirs(os.path.join(d, "trace"))
            e = ev * (1.25 if p == "cold-clean" and c >= commits // 2 else 1.0) * math.exp(0.02 * r.gauss(0, 1))
            json.dump({"pass": name, "status": "Completed", "evaluated_s": round(e, 6)}, open(os.path.join(d, "run.json"), "w"))
            ts, lines = 1_800_000_000_000_000, []
            for i, m in enumerate(spans):
                dur = max(1, round(m * math.exp(0.04 * r.gauss(0, 1))))
                lines.append(json.dumps({"name": f"step_{i:02}", "target": "t", "ts_us": ts, "dur_us": dur, "pid": 7, "process": "eval", "id": i + 1}))
                ts += dur + 10
            open(os.path.join(d, "trace", "eval.7.jsonl"), "w").write("\n".join(lines) + "\n")
