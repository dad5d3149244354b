//! The diagnostic report, as Gradient's twin writes it: `GET
//! /api/v1/evals/{id}/report` gives a SQLite file of schema 19 (the tables
//! and columns of `evalbench_diagnostic::schema`) made from the lab's own
//! rows: the evaluation and its timeline, its commit, evaluation_metric, its
//! jobs (Gradient's dispatched_job) and their phases, the derivations it
//! needs with their edges and outputs, its entry points. The tables the lab
//! does not keep (worker samples, builds, caches) are there and empty, their
//! manifest rows saying so. Values go in as text and take SQLite's affinity,
//! as Gradient's exporter writes them; identities (the repository, the
//! workers) are pseudonymised unless asked otherwise.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use evalbench_bundle::contract::Status;
use evalbench_diagnostic::schema::{self, Presence};
use rusqlite::Connection;
use serde_json::Value;

use super::report_rows::ReportRows;

/// The report's query options, with Gradient's defaults.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub anonymize_identities: bool,
    pub anonymize_packages: bool,
    pub include_logs: bool,
    pub include_instance: bool,
}

impl Options {
    /// From the query string; a value not true/false/1/0 is refused, naming it.
    pub fn from_query(q: &HashMap<String, String>) -> Result<Options, String> {
        let flag = |name: &str, default: bool| match q.get(name).map(String::as_str) {
            None => Ok(default),
            Some("true" | "1") => Ok(true),
            Some("false" | "0") => Ok(false),
            Some(other) => Err(format!("{name}={other:?}: expected true or false")),
        };
        Ok(Options {
            anonymize_identities: flag("anonymize_identities", true)?,
            anonymize_packages: flag("anonymize_packages", false)?,
            include_logs: flag("include_logs", true)?,
            include_instance: flag("include_instance", true)?,
        })
    }
}

type Row = Vec<Option<String>>;

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(if *b { "1" } else { "0" }.into()),
        other => Some(other.to_string()),
    }
}

/// A pseudonym that is the same for the same value (as Gradient's redactor keeps joins working).
fn pseudonym(kind: &str, value: &str) -> String {
    let mut h = evalbench_bundle::Fnv.build_hasher();
    h.write(value.as_bytes());
    format!("{kind}-{:06x}", h.finish() & 0xff_ffff)
}

/// The hash part of a store path (`/nix/store/<hash>-name`).
fn store_hash(path: &str) -> Option<String> {
    path.rsplit('/').next()?.split('-').next().map(String::from)
}

struct Writer<'a> {
    conn: Connection,
    opts: Options,
    manifest: Vec<(&'static str, usize, &'static str, String)>,
    evaluation: &'a str,
}

impl Writer<'_> {
    fn identity(&self, kind: &str, v: Option<String>) -> Option<String> {
        v.map(|v| if self.opts.anonymize_identities { pseudonym(kind, &v) } else { v })
    }

    fn package(&self, v: Option<String>) -> Option<String> {
        v.map(|v| if self.opts.anonymize_packages { pseudonym("package", &v) } else { v })
    }

    /// Makes the table and inserts its rows, noting its manifest row.
    fn table(&mut self, name: &'static str, rows: Vec<Row>, kept: bool, redactions: &str) -> rusqlite::Result<()> {
        let t = schema::table(name).expect("a table of schema 19");
        self.conn.execute_batch(&t.ddl())?;
        let marks = vec!["?"; t.names().count()].join(", ");
        let mut stmt = self.conn.prepare(&format!("INSERT INTO \"{name}\" VALUES ({marks})"))?;
        for r in &rows {
            stmt.execute(rusqlite::params_from_iter(r.iter()))?;
        }
        let filter = if kept { "none" } else { "the lab keeps no such rows" };
        self.manifest.push((name, rows.len(), filter, redactions.to_string()));
        Ok(())
    }
}

/// The first time the evaluation entered each status of its timeline.
fn started(rows: &ReportRows, status: &str) -> Option<String> {
    rows.statuses.iter().find(|(s, _)| s == status).map(|(_, at)| at.clone())
}

fn finished(rows: &ReportRows) -> Option<String> {
    let ends = [Status::Completed, Status::Failed, Status::Aborted];
    rows.statuses.iter().filter(|(s, _)| ends.iter().any(|e| e.as_str() == s)).map(|(_, at)| at.clone()).min()
}

fn evaluation_tables(w: &mut Writer, rows: &ReportRows) -> rusqlite::Result<()> {
    let e = rows.evaluation.as_ref().expect("an evaluation");
    let status = e["status"].as_str().and_then(Status::parse).map(|s| s.code().to_string());
    let commit_id = rows.commit.clone();
    let repo = w.identity("repo", text(&e["repository"]));
    let mut row: Row = vec![Some(w.evaluation.to_string()), text(&e["task"]), repo.clone(), commit_id.clone()];
    row.extend([Some("*".into()), status, None, None, text(&e["created_at"]), text(&e["updated_at"]), repo, None]);
    row.extend([None, Some("0".into()), started(rows, "Fetching"), started(rows, "EvaluatingFlake")]);
    row.extend([started(rows, "EvaluatingDerivation"), started(rows, "Building"), finished(rows), None, None, None]);
    let redacted = if w.opts.anonymize_identities { "repository, flake_source pseudonymised" } else { "none" };
    w.table("evaluation", vec![row], true, redacted)?;
    let commits = commit_id.iter().map(|h| vec![Some(h.clone()), Some(h.clone()), None, None, None]).collect();
    w.table("commit", commits, true, "none")?;
    let messages = text(&e["error"])
        .map(|m| vec![Some("m1".into()), Some(w.evaluation.into()), Some("2".into()), Some(m), Some("server".into())])
        .map(|mut r| {
            r.push(text(&e["updated_at"]));
            r
        });
    w.table("evaluation_message", messages.into_iter().collect(), true, "none")?;
    let metric = rows.metric.as_ref().map(|m| {
        let filled = evalbench_bundle::contract::evaluation_metric_row(m, Some(w.evaluation), None);
        let names = schema::table("evaluation_metric").expect("schema 19 has it").names();
        let mut r: Row = names.map(|c| text(&filled[c])).collect();
        r[0] = Some(format!("em-{}", w.evaluation));
        r[13] = w.identity("worker", r[13].clone());
        r
    });
    let redacted = if w.opts.anonymize_identities { "worker_id pseudonymised" } else { "none" };
    w.table("evaluation_metric", metric.into_iter().collect(), true, redacted)
}

fn job_tables(w: &mut Writer, rows: &ReportRows) -> rusqlite::Result<()> {
    let e = rows.evaluation.as_ref().expect("an evaluation");
    let jobs = rows
        .jobs
        .iter()
        .map(|j| {
            let queued = text(&j["queued_at"]);
            let mut r: Row = vec![text(&j["id"]), Some("0".into()), Some(w.evaluation.into()), text(&e["task"])];
            r.extend([
                text(&e["task"]),
                w.identity("worker", text(&j["worker"])),
                None,
                queued.clone(),
                queued.clone(),
            ]);
            r.extend([text(&j["dispatched_at"]), text(&j["finished_at"]), None, None, None, None, None, queued, None]);
            r
        })
        .collect();
    let redacted = if w.opts.anonymize_identities { "worker_id pseudonymised" } else { "none" };
    w.table("dispatched_job", jobs, true, redacted)?;
    let phases = rows
        .phases
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut r: Row = vec![Some(format!("p{i}")), text(&p["dispatched_job"]), text(&p["seq"])];
            r.extend([text(&p["parent_seq"]), text(&p["phase"]), text(&p["start_ms"]), text(&p["end_ms"])]);
            r.extend([None, None, text(&p["created_at"])]);
            r
        })
        .collect();
    w.table("dispatched_job_phase", phases, true, "none")
}

fn graph_tables(w: &mut Writer, rows: &ReportRows) -> rusqlite::Result<()> {
    let created = rows.evaluation.as_ref().and_then(|e| text(&e["created_at"]));
    let entry = rows
        .entry_points
        .iter()
        .map(|d| {
            let task = rows.evaluation.as_ref().and_then(|e| text(&e["task"]));
            vec![
                Some(format!("ep{d}")),
                task,
                Some(w.evaluation.into()),
                created.clone(),
                None,
                None,
                Some(d.to_string()),
            ]
        })
        .collect();
    w.table("entry_point", entry, true, "none")?;
    let mut jobs = Vec::new();
    let mut drvs = Vec::new();
    for d in &rows.derivations {
        let id = text(&d["id"]);
        jobs.push(vec![id.clone().map(|i| format!("bj{i}")), Some(w.evaluation.into()), id.clone(), None, None, None]);
        jobs.last_mut().expect("pushed").push(created.clone());
        let hash = d["drv_path"].as_str().and_then(store_hash);
        let mut r: Row = vec![id, None, text(&d["system"]), hash, w.package(text(&d["name"])), None];
        r.extend([None, None, None, None, None, text(&d["walked"])]);
        drvs.push(r);
    }
    w.table("build_job", jobs, true, "none")?;
    w.table("derivation", drvs, true, if w.opts.anonymize_packages { "name pseudonymised" } else { "none" })?;
    let outputs = rows
        .outputs
        .iter()
        .map(|o| {
            let d = text(&o["derivation"]);
            let id = Some(format!("o{}-{}", d.clone().unwrap_or_default(), o["name"].as_str().unwrap_or("")));
            let hash = o["path"].as_str().and_then(store_hash);
            let mut r: Row = vec![id, d, text(&o["name"]), hash, None, None, None, None, created.clone()];
            r.extend([None, None, None, None, None, None, None]);
            r
        })
        .collect();
    w.table("derivation_output", outputs, true, "none")?;
    let edges = rows.edges.iter().map(|(a, b)| vec![Some(a.to_string()), Some(b.to_string())]).collect();
    w.table("derivation_dependency", edges, true, "none")
}

/// The report of an evaluation, as the bytes of a SQLite file; None for an
/// evaluation the lab does not have.
pub fn write(
    rows: &ReportRows,
    evaluation: &str,
    opts: Options,
    gradient_version: &str,
) -> rusqlite::Result<Option<Vec<u8>>> {
    if rows.evaluation.is_none() {
        return Ok(None);
    }
    let mut w = Writer { conn: Connection::open_in_memory()?, opts, manifest: Vec::new(), evaluation };
    w.conn.execute_batch(schema::META_DDL)?;
    let generated = evalbench_diagnostic::time::format_us(evalbench_host::now_us());
    w.conn.execute(
        "INSERT INTO report_meta VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        rusqlite::params![
            schema::SCHEMA_VERSIONS[schema::SCHEMA_VERSIONS.len() - 1],
            gradient_version,
            generated,
            evaluation,
            opts.anonymize_identities as i64,
            opts.anonymize_packages as i64,
            opts.include_logs as i64,
            opts.include_instance as i64
        ],
    )?;
    evaluation_tables(&mut w, rows)?;
    job_tables(&mut w, rows)?;
    graph_tables(&mut w, rows)?;
    // What the lab does not keep: the tables, empty, and said so in the manifest.
    for t in schema::TABLES {
        let wanted = match t.presence {
            Presence::Always => true,
            Presence::Instance => opts.include_instance,
            Presence::Logs => opts.include_logs,
            Presence::Optional => false,
        };
        if wanted && !w.manifest.iter().any(|(n, ..)| *n == t.name) {
            w.table(t.name, Vec::new(), false, "none")?;
        }
    }
    for (name, n, filter, redactions) in std::mem::take(&mut w.manifest) {
        let scope = schema::table(name).map_or("", |t| t.scope);
        w.conn.execute(
            "INSERT INTO report_manifest VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![name, n as i64, n as i64, scope, filter, redactions],
        )?;
    }
    Ok(Some(w.conn.serialize(rusqlite::MAIN_DB)?.to_vec()))
}

/// The commit a git repository's HEAD is at, read from its files (no
/// process on the request's path): a loose ref, else packed-refs.
pub fn head_commit(repo: &std::path::Path) -> Option<String> {
    let git = repo.join(".git");
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(name) = head.strip_prefix("ref: ") else {
        return (head.len() >= 40).then(|| head.to_string());
    };
    if let Ok(h) = std::fs::read_to_string(git.join(name)) {
        return Some(h.trim().to_string());
    }
    let packed = std::fs::read_to_string(git.join("packed-refs")).ok()?;
    packed.lines().find_map(|l| l.strip_suffix(name).map(|h| h.trim().to_string()))
}
