-- A schema-19 diagnostic report, hand-written from Gradient's DDL (see README.md).
CREATE TABLE report_meta (schema_version INTEGER NOT NULL, gradient_version TEXT NOT NULL, generated_at TEXT NOT NULL,
  evaluation TEXT NOT NULL, anonymize_identities INTEGER NOT NULL, anonymize_packages INTEGER NOT NULL,
  include_logs INTEGER NOT NULL, include_instance INTEGER NOT NULL);
CREATE TABLE report_manifest ("table" TEXT NOT NULL PRIMARY KEY, rows_included INTEGER NOT NULL,
  rows_available INTEGER NOT NULL, scope TEXT NOT NULL, filter TEXT NOT NULL, redactions TEXT NOT NULL);
INSERT INTO report_meta VALUES (19, '1.4.2', '2026-11-25 08:00:00.000001', '01a05a38-3276-7252-bc05-c139d9c8a015',
  1, 0, 1, 1);

CREATE TABLE evaluation (id TEXT, task TEXT, repository TEXT, commit_id TEXT, wildcard TEXT, status INTEGER,
  previous TEXT, next TEXT, created_at TEXT, updated_at TEXT, flake_source TEXT, waiting_reason TEXT, trigger_id TEXT,
  concurrent INTEGER, fetch_started_at TEXT, eval_flake_started_at TEXT, eval_drv_started_at TEXT,
  building_started_at TEXT, finished_at TEXT, started_by TEXT, cache_status INTEGER, kind INTEGER);
INSERT INTO evaluation VALUES ('01a05a38-3276-7252-bc05-c139d9c8a015', '7d3e1f20-aa10-4c55-9e61-0b2f6c1d4e88',
  'repo-5f1c9a', '0c4e2d11-6b7a-4f0e-8d2c-3a9b8e7f6d51', 'packages.x86_64-linux.*', '5',
  '01a05a30-0000-7000-8000-000000000001', NULL, '2026-11-24 09:00:00', '2026-11-24 09:04:00.250000',
  'repo-5f1c9a', NULL, NULL, '0', '2026-11-24 09:00:02.5', '2026-11-24 09:00:06', '2026-11-24 09:00:48',
  '2026-11-24 09:01:30', '2026-11-24 09:04:00', 'user-2b81e0', '0', '0');

CREATE TABLE "commit" (id TEXT, hash TEXT, author TEXT, author_name TEXT, message TEXT);
INSERT INTO "commit" VALUES ('0c4e2d11-6b7a-4f0e-8d2c-3a9b8e7f6d51', '9f2c4b7e1a0d3c5b8e6f4a2d1c0b9e8f7a6d5c4b',
  'user-2b81e0', 'user-2b81e0', 'flake.lock: update nixpkgs for repo-5f1c9a');

CREATE TABLE evaluation_message (id TEXT, evaluation TEXT, level INTEGER, message TEXT, source TEXT, created_at TEXT);
INSERT INTO evaluation_message VALUES
  ('m1', '01a05a38-3276-7252-bc05-c139d9c8a015', 1,
   'evaluation warning: ''system'' has been renamed to/replaced by ''stdenv.hostPlatform.system''', 'eval',
   '2026-11-24 09:00:20'),
  ('m2', '01a05a38-3276-7252-bc05-c139d9c8a015', 2, 'build of <script>alert(1)</script>-hello.drv failed',
   'build', '2026-11-24 09:03:10');

CREATE TABLE evaluation_metric (id TEXT, evaluation TEXT, total_thunks INTEGER, fn_calls INTEGER,
  primop_calls INTEGER, lookups INTEGER, alloc_bytes INTEGER, peak_heap_mb INTEGER, peak_rss_mb INTEGER,
  fetch_ms INTEGER, eval_flake_ms INTEGER, eval_drv_ms INTEGER, total_eval_ms INTEGER, worker_id TEXT, created_at TEXT);
INSERT INTO evaluation_metric VALUES ('em1', '01a05a38-3276-7252-bc05-c139d9c8a015', '4821933', '12048817',
  '3120044', '5120441', '2147483648', '1650', '2210', '3400', '41800', '41650', '86850', 'worker-9c1d0e',
  '2026-11-24 09:01:29');

CREATE TABLE entry_point (id TEXT, task TEXT, evaluation TEXT, created_at TEXT, eval TEXT, repo_check_id TEXT,
  derivation TEXT);
INSERT INTO entry_point VALUES
  ('ep1', '7d3e1f20-aa10-4c55-9e61-0b2f6c1d4e88', '01a05a38-3276-7252-bc05-c139d9c8a015', '2026-11-24 09:01:29',
   'packages.x86_64-linux.hello', NULL, 'd1'),
  ('ep2', '7d3e1f20-aa10-4c55-9e61-0b2f6c1d4e88', '01a05a38-3276-7252-bc05-c139d9c8a015', '2026-11-24 09:01:29',
   'packages.x86_64-linux.tool', NULL, 'd2'),
  ('ep3', '7d3e1f20-aa10-4c55-9e61-0b2f6c1d4e88', '01a05a38-3276-7252-bc05-c139d9c8a015', '2026-11-24 09:01:29',
   'packages.x86_64-linux.docs', NULL, 'd3');

CREATE TABLE build_job (id TEXT, evaluation TEXT, derivation TEXT, derivation_build TEXT, score REAL,
  score_breakdown TEXT, created_at TEXT);
INSERT INTO build_job VALUES
  ('bj1', '01a05a38-3276-7252-bc05-c139d9c8a015', 'd1', 'db1', 1.5, '{}', '2026-11-24 09:01:29'),
  ('bj2', '01a05a38-3276-7252-bc05-c139d9c8a015', 'd2', 'db2', 0.5, '{}', '2026-11-24 09:01:29'),
  ('bj3', '01a05a38-3276-7252-bc05-c139d9c8a015', 'd3', 'db3', 0.25, '{}', '2026-11-24 09:01:29');

CREATE TABLE derivation_build (id TEXT, derivation TEXT, status INTEGER, substitutable INTEGER, substituted INTEGER,
  attempt INTEGER, timeout_secs INTEGER, max_silent_secs INTEGER, created_at TEXT, updated_at TEXT, queued_at TEXT,
  ready_at TEXT, dispatched_at TEXT, closure_complete INTEGER, drv_closure_cached INTEGER);
INSERT INTO derivation_build VALUES
  ('db1', 'd1', 3, 0, 0, 1, 36000, 7200, '2026-11-24 09:01:29', '2026-11-24 09:04:00', '2026-11-24 09:01:30',
   '2026-11-24 09:01:31', '2026-11-24 09:01:40', 1, 1),
  ('db2', 'd2', 4, 1, 1, 1, 36000, 7200, '2026-11-24 09:01:29', '2026-11-24 09:02:00', '2026-11-24 09:01:30',
   '2026-11-24 09:01:31', '2026-11-24 09:01:40', 1, 1),
  ('db3', 'd3', 5, 0, 0, 2, 36000, 7200, '2026-11-24 09:01:29', '2026-11-24 09:03:10', '2026-11-24 09:01:30',
   '2026-11-24 09:01:31', '2026-11-24 09:01:40', 1, 0);

CREATE TABLE derivation (id TEXT, created_at TEXT, architecture TEXT, hash TEXT, name TEXT, pname TEXT,
  prefer_local_build INTEGER, allow_substitutes INTEGER, closure_size INTEGER, is_fixed_output INTEGER,
  dep_closure_count INTEGER, walked INTEGER);
INSERT INTO derivation VALUES
  ('d1', '2026-11-24 09:01:29', 'x86_64-linux', 'a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6', 'hello-2.12.1', 'hello', 0, 1,
   5, 0, 4, 1),
  ('d2', '2026-11-24 09:01:29', 'x86_64-linux', 'b1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6', 'tool-0.3', 'tool', 0, 1, 3, 0,
   2, 1),
  ('d3', '2026-11-24 09:01:29', 'x86_64-linux', 'c1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6', 'docs', 'docs', 1, 1, 2, 0, 1, 1),
  ('d4', '2026-11-24 09:01:29', 'x86_64-linux', 'd1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6', 'glibc-2.40', 'glibc', 0, 1, 1,
   0, 0, 1),
  ('d5', '2026-11-24 09:01:29', 'x86_64-linux', 'e1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6', 'source.tar.gz', NULL, 0, 1, 1,
   1, 0, 1);

CREATE TABLE derivation_output (id TEXT, derivation TEXT, name TEXT, hash TEXT, package TEXT, ca TEXT,
  nar_size INTEGER, is_cached INTEGER, created_at TEXT, cached_path TEXT, external_url TEXT, nar_hash TEXT,
  file_size INTEGER, references_list TEXT, deriver TEXT, file_hash TEXT);
INSERT INTO derivation_output VALUES
  ('o1', 'd1', 'out', 'h1', 'hello-2.12.1', NULL, 226480, 1, '2026-11-24 09:01:29', 'cp1', NULL, 'sha256:n1', 70000,
   'h4', 'a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6-hello-2.12.1.drv', 'sha256:f1'),
  ('o2', 'd2', 'out', 'h2', 'tool-0.3', NULL, 10240, 1, '2026-11-24 09:01:29', 'cp2', NULL, 'sha256:n2', 4000, NULL,
   NULL, NULL),
  ('o3', 'd3', 'out', 'h3', 'docs', NULL, NULL, 0, '2026-11-24 09:01:29', NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  ('o4', 'd4', 'out', 'h4', 'glibc-2.40', NULL, 30000000, 1, '2026-11-24 09:01:29', 'cp4', NULL, 'sha256:n4',
   9000000, NULL, NULL, NULL),
  ('o5', 'd5', 'out', 'h5', 'source.tar.gz', 'fixed:r:sha256:x', 1000, 1, '2026-11-24 09:01:29', 'cp5', NULL,
   'sha256:n5', 1000, NULL, NULL, NULL);

CREATE TABLE build_attempt (id TEXT, build_job TEXT, derivation_build TEXT, dispatched_job TEXT, substitute INTEGER,
  outcome INTEGER, reason INTEGER, failure_message TEXT, build_context TEXT, build_started_at TEXT,
  build_finished_at TEXT, created_at TEXT);
INSERT INTO build_attempt VALUES
  ('a1', 'bj1', 'db1', 'job-build', 0, 1, NULL, NULL, '{}', '2026-11-24 09:01:42', '2026-11-24 09:03:50',
   '2026-11-24 09:01:40'),
  ('a2', 'bj2', 'db2', 'job-build', 1, 2, NULL, NULL, '{}', '2026-11-24 09:01:42', '2026-11-24 09:01:49',
   '2026-11-24 09:01:40'),
  ('a3', 'bj3', 'db3', 'job-build', 0, 3, 1, 'builder failed with exit code 2', '{}', '2026-11-24 09:01:42',
   '2026-11-24 09:03:10', '2026-11-24 09:01:40');

CREATE TABLE dispatched_job (id TEXT, kind INTEGER, evaluation_id TEXT, project TEXT, task TEXT, worker_id TEXT,
  score REAL, queued_at TEXT, ready_at TEXT, dispatched_at TEXT, finished_at TEXT, outcome INTEGER,
  score_breakdown TEXT, worker_context TEXT, job_context TEXT, candidates TEXT, created_at TEXT,
  instance_context TEXT);
INSERT INTO dispatched_job VALUES
  ('job-eval', '0', '01a05a38-3276-7252-bc05-c139d9c8a015', 'p1', '7d3e1f20-aa10-4c55-9e61-0b2f6c1d4e88',
   'worker-9c1d0e', 3.0, '2026-11-24 09:00:00.2', '2026-11-24 09:00:00.4', '2026-11-24 09:00:02.4',
   '2026-11-24 09:01:30', '0', '{}', '{}', '{}', '[]', '2026-11-24 09:00:00.2', '{}'),
  ('job-build', '1', '01a05a38-3276-7252-bc05-c139d9c8a015', 'p1', '7d3e1f20-aa10-4c55-9e61-0b2f6c1d4e88',
   'worker-77ab41', 2.0, '2026-11-24 09:01:30.1', '2026-11-24 09:01:31', '2026-11-24 09:01:40',
   '2026-11-24 09:04:00', '1', '{}', '{}', '{}', '[]', '2026-11-24 09:01:30.1', '{}');

CREATE TABLE dispatched_job_phase (id TEXT, dispatched_job TEXT, seq INTEGER, parent_seq INTEGER, phase INTEGER,
  start_ms INTEGER, end_ms INTEGER, paths INTEGER, bytes INTEGER, created_at TEXT);
INSERT INTO dispatched_job_phase VALUES
  ('p1', 'job-eval', 0, NULL, 0, 0, 3500, 1, 52000000, '2026-11-24 09:01:30'),
  ('p2', 'job-eval', 1, NULL, 2, 3500, 45300, 0, 0, '2026-11-24 09:01:30'),
  ('p3', 'job-eval', 2, 1, 4, 3600, 5100, 12, 800000, '2026-11-24 09:01:30'),
  ('p4', 'job-eval', 3, NULL, 3, 45300, 87000, 0, 0, '2026-11-24 09:01:30'),
  ('p5', 'job-eval', 4, 3, 6, 60000, 61200, 5, 0, '2026-11-24 09:01:30'),
  ('p6', 'job-eval', 5, NULL, 7, 87000, 87500, 5, 40000, '2026-11-24 09:01:30'),
  ('p7', 'job-build', 0, NULL, 8, 0, 2000, 4, 39000000, '2026-11-24 09:04:00'),
  ('p8', 'job-build', 1, NULL, 10, 2000, 130000, 3, 0, '2026-11-24 09:04:00'),
  ('p9', 'job-build', 2, 1, 14, 2500, 9000, 1, 10240, '2026-11-24 09:04:00'),
  ('p10', 'job-build', 3, NULL, 12, 130000, 139000, 2, 240000, '2026-11-24 09:04:00'),
  ('p11', 'job-build', 4, NULL, 23, 139000, 139500, 0, 0, '2026-11-24 09:04:00');

CREATE TABLE phase_event (id TEXT, subject_kind INTEGER, subject_id TEXT, phase INTEGER, event INTEGER, at TEXT,
  worker_id TEXT, detail TEXT);
INSERT INTO phase_event VALUES
  ('pe1', 0, '01a05a38-3276-7252-bc05-c139d9c8a015', 2, 0, '2026-11-24 09:00:06', 'worker-9c1d0e', NULL),
  ('pe2', 1, 'db1', 10, 0, '2026-11-24 09:01:42', 'worker-77ab41', NULL);

CREATE TABLE derivation_dependency (derivation TEXT, dependency TEXT);
INSERT INTO derivation_dependency VALUES ('d1', 'd4'), ('d1', 'd5'), ('d2', 'd4'), ('d3', 'd1');

CREATE TABLE cached_path (id TEXT, hash TEXT, package TEXT, file_hash TEXT, file_size INTEGER, nar_size INTEGER,
  nar_hash TEXT, ca TEXT, created_at TEXT, deriver TEXT, closure_complete INTEGER);
INSERT INTO cached_path VALUES
  ('cp1', 'h1', 'hello-2.12.1', 'sha256:f1', 70000, 226480, 'sha256:n1', NULL, '2026-11-24 09:03:55', NULL, 1),
  ('cp2', 'h2', 'tool-0.3', 'sha256:f2', 4000, 10240, 'sha256:n2', NULL, '2026-11-24 09:01:49', NULL, 1),
  ('cp4', 'h4', 'glibc-2.40', 'sha256:f4', 9000000, 30000000, 'sha256:n4', NULL, '2026-10-01 00:00:00', NULL, 1),
  ('cp5', 'h5', 'source.tar.gz', 'sha256:f5', 1000, 1000, 'sha256:n5', 'fixed:r:sha256:x', '2026-10-01 00:00:00',
   NULL, 1);

CREATE TABLE cached_path_signature (id TEXT, cached_path TEXT, cache TEXT, cache_name TEXT, signed INTEGER,
  last_fetched_at TEXT, fetch_count INTEGER, created_at TEXT);
INSERT INTO cached_path_signature VALUES
  ('s1', 'cp1', 'c1', 'cache-41aa9c', 1, NULL, 0, '2026-11-24 09:03:55'),
  ('s2', 'cp4', 'c1', 'cache-41aa9c', 1, '2026-11-24 09:01:35', 17, '2026-10-01 00:00:00');

CREATE TABLE evaluation_input_update (id TEXT, evaluation TEXT, base_commit TEXT, generator TEXT,
  target_inputs TEXT, bumped_inputs TEXT, discover_only INTEGER, created_at TEXT, updated_at TEXT);

CREATE TABLE worker_registration (id TEXT, peer_id TEXT, worker_id TEXT, created_at TEXT, managed INTEGER, url TEXT,
  active INTEGER, display_name TEXT, created_by TEXT, enable_fetch INTEGER, enable_eval INTEGER,
  enable_build INTEGER);
INSERT INTO worker_registration VALUES
  ('wr1', 'peer1', 'worker-9c1d0e', '2026-01-01 00:00:00', 1, 'url-11aa22', 1, 'worker-9c1d0e', 'user-2b81e0', 1, 1,
   0),
  ('wr2', 'peer2', 'worker-77ab41', '2026-01-01 00:00:00', 1, 'url-33bb44', 1, 'worker-77ab41', 'user-2b81e0', 0, 0,
   1);

CREATE TABLE worker_connection (id TEXT, worker_id TEXT, project TEXT, display_name TEXT, connected_at TEXT,
  disconnected_at TEXT, capabilities TEXT, reason INTEGER);
INSERT INTO worker_connection VALUES
  ('wc1', 'worker-9c1d0e', 'p1', 'worker-9c1d0e', '2026-11-24 08:00:00', NULL, '{"eval": true}', NULL),
  ('wc2', 'worker-77ab41', 'p1', 'worker-77ab41', '2026-11-24 08:00:00', NULL, '{"build": true}', NULL);

-- The evaluating worker samples every 10 s at 35-60% CPU with memory to spare; the building one at 97% with
-- 300 MB of 16 GB free and six jobs.
CREATE TABLE worker_sample (id TEXT, worker_id TEXT, project TEXT, at TEXT, cpu_usage_pct REAL, ram_free_mb INTEGER,
  ram_total_mb INTEGER, disk_speed_mbps REAL, network_speed_mbps REAL, assigned_jobs INTEGER,
  max_concurrent_builds INTEGER, state INTEGER, capabilities TEXT);
INSERT INTO worker_sample
  WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < 9)
  SELECT 'ws-e' || n, 'worker-9c1d0e', 'p1', datetime('2026-11-24 09:00:00', '+' || (n * 10) || ' seconds'),
    35 + (n % 3) * 10, 12000, 16000, 400.0, 900.0, 1, 4, 1, '{}' FROM s;
INSERT INTO worker_sample
  WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < 15)
  SELECT 'ws-b' || n, 'worker-77ab41', 'p1', datetime('2026-11-24 09:01:30', '+' || (n * 10) || ' seconds'),
    97.0, 300, 16000, 80.0, 900.0, 6, 4, 1, '{}' FROM s;

CREATE TABLE cache_upstream (id TEXT, cache TEXT, display_name TEXT, mode INTEGER, upstream_cache TEXT, url TEXT,
  public_key TEXT, kind INTEGER, remote_cache_name TEXT);
INSERT INTO cache_upstream VALUES ('cu1', 'c1', 'cache-90ff12', 0, NULL, 'url-55cc66', 'key', 0, 'cache-90ff12');

CREATE TABLE upstream_metric (id TEXT, bucket_time TEXT, latency_ms_sum INTEGER, request_count INTEGER,
  narinfo_hits INTEGER, narinfo_misses INTEGER, upstream_url TEXT);
INSERT INTO upstream_metric VALUES
  ('um1', '2026-11-24 09:00:00', 4200, 120, 100, 20, 'url-55cc66'),
  ('um2', '2026-11-24 09:05:00', 900, 30, 29, 1, 'url-55cc66');

CREATE TABLE base_worker (id TEXT, worker_id TEXT, display_name TEXT, url TEXT, enabled INTEGER, enable_fetch INTEGER,
  enable_eval INTEGER, enable_build INTEGER, created_by TEXT, created_at TEXT);
INSERT INTO base_worker VALUES ('bw1', 'worker-aa0011', 'worker-aa0011', 'url-77dd88', 0, 1, 1, 1, 'user-2b81e0',
  '2026-01-01 00:00:00');

CREATE TABLE project_base_worker (id TEXT, project TEXT, base_worker TEXT, created_by TEXT, created_at TEXT);
INSERT INTO project_base_worker VALUES ('pbw1', 'p1', 'bw1', 'user-2b81e0', '2026-01-01 00:00:00');

CREATE TABLE build_log (build_attempt TEXT PRIMARY KEY, log TEXT NOT NULL);
INSERT INTO build_log VALUES ('a3', 'error: builder for ''/nix/store/c1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6-docs.drv''
  failed with exit code 2');

INSERT INTO report_manifest VALUES
  ('evaluation', 1, 1, 'the evaluation', 'none', 'repository, flake_source and started_by pseudonymised'),
  ('commit', 1, 1, 'the evaluation''s commit', 'none', 'author pseudonymised; message redacted as a log'),
  ('evaluation_message', 2, 2, 'the evaluation', 'none', 'none'),
  ('evaluation_metric', 1, 1, 'the evaluation', 'none', 'worker_id pseudonymised'),
  ('entry_point', 3, 3, 'the evaluation', 'none', 'none'),
  ('build_job', 3, 3, 'the evaluation', 'none', 'none'),
  ('derivation_build', 3, 3, 'the evaluation''s derivations, shared with every other evaluation that built them',
   'none', 'none'),
  ('derivation', 5, 5, 'the evaluation''s derivations, shared with every other evaluation that built them', 'none',
   'none'),
  ('derivation_output', 5, 5, 'the evaluation''s derivations, shared with every other evaluation that built them',
   'none', 'deriver and references pseudonymised'),
  ('build_attempt', 3, 3, 'the evaluation''s build anchors, so attempts made for other evaluations are included',
   'none', 'none'),
  ('dispatched_job', 2, 2, 'the evaluation', 'none', 'worker_id pseudonymised'),
  ('dispatched_job_phase', 11, 11, 'the evaluation', 'none', 'none'),
  ('phase_event', 2, 2, 'the evaluation and its build anchors, so events from other evaluations are included', 'none',
   'worker_id pseudonymised'),
  ('derivation_dependency', 4, 4, 'the evaluation''s derivations, shared with every other evaluation that built them',
   'none', 'none'),
  ('cached_path', 4, 4, 'the evaluation''s output hashes, shared with every other evaluation that produced them',
   'none', 'none'),
  ('cached_path_signature', 2, 2, 'the evaluation''s output hashes, one row per cache holding the path', 'none',
   'cache_name pseudonymised'),
  ('evaluation_input_update', 0, 0, 'the evaluation''s input-update sidecar', 'none', 'none'),
  ('worker_registration', 2, 2, 'the whole instance', 'none', 'worker_id, display_name, url, created_by pseudonymised'),
  ('worker_connection', 2, 2, 'the workers that ran this evaluation, while it ran', 'none', 'worker_id pseudonymised'),
  ('worker_sample', 26, 26, 'the workers that ran this evaluation, while it ran', 'none', 'worker_id pseudonymised'),
  ('cache_upstream', 1, 1, 'the caches this project subscribes to', 'none', 'url, display_name pseudonymised'),
  ('upstream_metric', 2, 31, 'the whole instance, last 7 days', 'last 7 days', 'upstream_url pseudonymised'),
  ('base_worker', 1, 1, 'the whole instance', 'none', 'worker_id, display_name, url pseudonymised'),
  ('project_base_worker', 1, 1, 'this project''s base worker opt-ins', 'none', 'created_by pseudonymised'),
  ('build_log', 1, 3, 'the evaluation''s build anchors, so attempts made for other evaluations are included',
   'failed attempts only', 'store paths and identities pseudonymised');
