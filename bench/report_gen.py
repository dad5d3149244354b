#!/usr/bin/env python3
"""A schema-19 diagnostic report of N derivations for bench/report.sh: the
hand-written report (crates/evalbench/tests/data/gradient-report) grown to N
derivations, build jobs, outputs and cached paths, 2N dependency edges, a
build job dispatched for every 10 derivations (four phases each, one nested)
and a worker sample every 2 s over the evaluation, on both workers. Seeded:
the same N gives the same file."""
import os, random, sqlite3, sys

n, out = int(sys.argv[1]), sys.argv[2]
root = os.path.dirname(os.path.abspath(__file__))
sql = open(os.path.join(root, "../crates/evalbench/tests/data/gradient-report/anonymised.sql")).read()
if os.path.exists(out):
    os.remove(out)
c = sqlite3.connect(out)
c.executescript(sql)
rng = random.Random(n)
ev = "01a05a38-3276-7252-bc05-c139d9c8a015"
t = "2026-11-24 09:01:29"
c.executemany("INSERT INTO derivation VALUES (?, ?, 'x86_64-linux', ?, ?, ?, 0, 1, 1, 0, 2, 1)",
              ((f"g{i}", t, f"{i:032x}", f"pkg-{i}", f"pkg{i}") for i in range(n)))
c.executemany("INSERT INTO build_job VALUES (?, ?, ?, NULL, 1.0, '{}', ?)", ((f"gbj{i}", ev, f"g{i}", t) for i in range(n)))
c.executemany("INSERT INTO derivation_output VALUES (?, ?, 'out', ?, ?, NULL, 1000, 1, ?, NULL, NULL, NULL, 100, NULL, NULL, NULL)",
              ((f"go{i}", f"g{i}", f"h{i:032x}", f"pkg-{i}", t) for i in range(n)))
c.executemany("INSERT INTO cached_path VALUES (?, ?, ?, NULL, 100, 1000, NULL, NULL, ?, NULL, 1)",
              ((f"gcp{i}", f"h{i:032x}", f"pkg-{i}", t) for i in range(n)))
c.executemany("INSERT INTO derivation_dependency VALUES (?, ?)",
              ((f"g{i}", f"g{rng.randrange(i)}") for i in range(1, n) for _ in range(2)))
jobs = []
phases = []
for j in range(n // 10):
    jid = f"gjob{j}"
    jobs.append((jid, ev, f"worker-77ab41", "2026-11-24 09:01:30", "2026-11-24 09:01:31", "2026-11-24 09:01:40", "2026-11-24 09:04:00", "2026-11-24 09:01:30"))
    phases += [(f"{jid}-0", jid, 0, None, 8, 0, 2000), (f"{jid}-1", jid, 1, None, 10, 2000, 130000),
               (f"{jid}-2", jid, 2, 1, 14, 2500, 9000), (f"{jid}-3", jid, 3, None, 12, 130000, 139000)]
c.executemany("INSERT INTO dispatched_job VALUES (?, 1, ?, 'p1', 't', ?, 1.0, ?, ?, ?, ?, 1, '{}', '{}', '{}', '[]', ?, '{}')", jobs)
c.executemany("INSERT INTO dispatched_job_phase VALUES (?, ?, ?, ?, ?, ?, ?, 1, 100, NULL)", phases)
c.executemany("INSERT INTO worker_sample VALUES (?, ?, 'p1', datetime('2026-11-24 09:00:00', '+' || ? || ' seconds'), ?, 8000, 16000, 1.0, 1.0, 2, 4, 1, '{}')",
              ((f"gws{w}{i}", w, 2 * i, 50 + i % 40) for w in ("worker-9c1d0e", "worker-77ab41") for i in range(120)))
c.commit()
c.close()
