#!/usr/bin/env python3
"""Seeds fuzz/corpus/diagnostic_report: the hand-written schema-19 report
(crates/evalbench/tests/data/gradient-report/anonymised.sql, made with small
pages so each input is small), broken at the SQL level (missing tables and
columns, values of the wrong kind, hostile times, cycles of phases, another
schema version, views), and at the byte level (flips, truncations), seeded
so the corpus is the same on every run. The fuzzer grows it from here."""
import os, random, sqlite3, sys

root = os.path.dirname(os.path.abspath(__file__))
sql = open(os.path.join(root, "../crates/evalbench/tests/data/gradient-report/anonymised.sql")).read()
out = os.path.join(root, "corpus/diagnostic_report")
os.makedirs(out, exist_ok=True)

def make(name, then=""):
    path = os.path.join(out, name)
    if os.path.exists(path):
        os.remove(path)
    c = sqlite3.connect(path)
    c.execute("PRAGMA page_size = 512")
    c.executescript(sql)
    c.executescript(then)
    c.commit()
    c.execute("VACUUM")
    c.close()
    return path

SQL = {
    "whole": "",
    "schema20": "UPDATE report_meta SET schema_version = 20",
    "schema-text": "UPDATE report_meta SET schema_version = 'nineteen'",
    "no-meta": "DROP TABLE report_meta",
    "no-manifest": "DROP TABLE report_manifest",
    "no-samples": "DROP TABLE worker_sample",
    "no-instance": "DROP TABLE worker_sample; UPDATE report_meta SET include_instance = 0",
    "no-worker-col": "ALTER TABLE dispatched_job DROP COLUMN worker_id",
    "bad-count": "UPDATE evaluation_metric SET fn_calls = 'lots'",
    "blob-count": "UPDATE evaluation_metric SET fn_calls = x'deadbeef'",
    "real-count": "UPDATE evaluation_metric SET fn_calls = 1.5",
    "huge-count": "UPDATE evaluation_metric SET fn_calls = 9223372036854775807",
    "bad-time": "UPDATE evaluation SET created_at = 'yesterday'",
    "far-times": "UPDATE evaluation SET created_at = '0001-01-01 00:00:00', finished_at = '9999-12-31 23:59:59'",
    "backwards": "UPDATE evaluation SET finished_at = '2020-01-01 00:00:00'",
    "zoned": "UPDATE evaluation SET created_at = created_at || '+05'",
    "no-evaluation": "DELETE FROM evaluation",
    "other-evaluation": "UPDATE evaluation SET id = 'someone-else'",
    "no-commit": "DELETE FROM \"commit\"",
    "phase-cycle": "UPDATE dispatched_job_phase SET parent_seq = seq + 1 WHERE dispatched_job = 'job-build'",
    "phase-self": "UPDATE dispatched_job_phase SET parent_seq = seq",
    "phase-huge": "UPDATE dispatched_job_phase SET start_ms = 9223372036854775807, end_ms = -9223372036854775808",
    "phase-null": "UPDATE dispatched_job_phase SET start_ms = NULL",
    "phase-codes": "UPDATE dispatched_job_phase SET phase = seq * 7 - 20",
    "orphans": "UPDATE dispatched_job_phase SET dispatched_job = 'gone'",
    "no-dispatch": "UPDATE dispatched_job SET dispatched_at = NULL",
    "sample-times": "UPDATE worker_sample SET at = NULL WHERE rowid % 2 = 0",
    "sample-bad-cpu": "UPDATE worker_sample SET cpu_usage_pct = 'busy'",
    "sample-inf-cpu": "UPDATE worker_sample SET cpu_usage_pct = 1e308 * 10",
    "two-metrics": "INSERT INTO evaluation_metric SELECT * FROM evaluation_metric",
    "no-metric": "DELETE FROM evaluation_metric",
    "markup": "UPDATE evaluation_message SET message = '<script>x</script><img src=x onerror=1>'; UPDATE evaluation SET wildcard = '</pre><script>'",
    "view": "ALTER TABLE evaluation RENAME TO e2; CREATE VIEW evaluation AS SELECT * FROM e2",
    "slow-view": "ALTER TABLE derivation RENAME TO d2; CREATE VIEW derivation AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000) SELECT d2.* FROM d2, (SELECT max(i) FROM n)",
    "trigger": "CREATE TABLE log (x); CREATE TRIGGER t AFTER INSERT ON evaluation BEGIN INSERT INTO log VALUES (1); END",
    "statuses": "UPDATE evaluation SET status = 42",
    "null-everything": "UPDATE evaluation SET task = NULL, wildcard = NULL, status = NULL, fetch_started_at = NULL, eval_flake_started_at = NULL, eval_drv_started_at = NULL, building_started_at = NULL, finished_at = NULL",
}
for name, then in SQL.items():
    make(f"sql-{name}.db", then)

rng = random.Random(19)
whole = open(os.path.join(out, "sql-whole.db"), "rb").read()
for k in range(50):
    b = bytearray(whole)
    for _ in range(rng.randint(1, 12)):
        i = rng.randrange(len(b))
        b[i] = rng.randrange(256)
    open(os.path.join(out, f"flip-{k:02}.db"), "wb").write(bytes(b))
for k in range(20):
    n = rng.randrange(16, len(whole))
    open(os.path.join(out, f"cut-{k:02}.db"), "wb").write(whole[:n])
for k, junk in enumerate([b"", b"SQLite format 3\0", b"SQLite format 3\0" + b"\xff" * 84, b"PK\x03\x04", b"{}\n"]):
    open(os.path.join(out, f"junk-{k}.db"), "wb").write(junk)
print(len(os.listdir(out)), "inputs in", out, file=sys.stderr)
