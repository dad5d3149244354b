//! A report's rows into the model: `report_meta` first (its schema version
//! decides everything else), then the manifest, the evaluation, its commit,
//! messages, metric, jobs and phases, the workers' samples, and the counts.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{DiagnosticError, ErrorKind};
use crate::model::*;
use crate::open::{Limits, Report};
use crate::schema::{self, SCHEMA_VERSIONS};

/// Reads the report at `path`, refusing what is not one, a schema version
/// evalbench does not know, a missing table or column, a value of the wrong
/// kind, and a file past `limits`.
pub fn read(path: &Path, limits: Limits) -> Result<Diagnostic, DiagnosticError> {
    let r = Report::open(path, limits)?;
    let meta = meta(&r)?;
    let v = meta.schema_version;
    for t in schema::TABLES {
        r.require(t.name, v, meta.include_instance, meta.include_logs)?;
    }
    let mut warnings = Vec::new();
    let evaluation = evaluation(&r, &meta.evaluation)?;
    let commit = commit(&r, evaluation.commit_id.as_deref())?;
    let metric = metric(&r, &meta.evaluation, &mut warnings)?;
    let jobs = jobs(&r, v, &mut warnings)?;
    let samples = if r.tables.contains_key("worker_sample") { samples(&r)? } else { Vec::new() };
    let counts = Counts {
        derivations: r.count("derivation")?,
        dependencies: r.count("derivation_dependency")?,
        derivation_outputs: r.count("derivation_output")?,
        cached_paths: r.count("cached_path")?,
        build_jobs: r.count("build_job")?,
        entry_points: r.count("entry_point")?,
        build_attempts: r.count("build_attempt")?,
        build_logs: r.count("build_log")?,
    };
    Ok(Diagnostic {
        bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        file: path.to_path_buf(),
        manifest: manifest(&r)?,
        messages: messages(&r)?,
        meta,
        evaluation,
        commit,
        metric,
        jobs,
        samples,
        counts,
        warnings,
    })
}

/// `report_meta`: its schema version first, on its own, so that a version
/// whose other columns differ is still refused by its number.
fn meta(r: &Report) -> Result<Meta, DiagnosticError> {
    let columns = r.tables.get("report_meta").ok_or_else(|| r.error(ErrorKind::NoMeta))?;
    if !columns.iter().any(|c| c == "schema_version") {
        return Err(r.error(ErrorKind::NoMeta));
    }
    let mut versions = Vec::new();
    r.each("report_meta", &["schema_version"], |c| {
        versions.push(c.int(0)?);
        Ok(())
    })?;
    let [Some(found)] = versions[..] else { return Err(r.error(ErrorKind::NoMeta)) };
    if !SCHEMA_VERSIONS.contains(&found) {
        return Err(r.error(ErrorKind::Schema { found, reads: SCHEMA_VERSIONS.to_vec() }));
    }
    let cols = [
        "gradient_version",
        "generated_at",
        "evaluation",
        "anonymize_identities",
        "anonymize_packages",
        "include_logs",
        "include_instance",
    ];
    if let Some(missing) = cols.iter().find(|c| !columns.iter().any(|h| h == *c)) {
        return Err(r.error(ErrorKind::MissingColumn {
            table: "report_meta".into(),
            column: missing.to_string(),
            schema: found,
        }));
    }
    let mut out = None;
    r.each("report_meta", &cols, |c| {
        let flag = |i| c.int(i).map(|v| v.unwrap_or(0) != 0);
        out = Some(Meta {
            schema_version: found,
            gradient_version: c.text(0)?.unwrap_or_default(),
            generated_at: c.text(1)?.unwrap_or_default(),
            evaluation: c.text(2)?.unwrap_or_default(),
            anonymize_identities: flag(3)?,
            anonymize_packages: flag(4)?,
            include_logs: flag(5)?,
            include_instance: flag(6)?,
        });
        Ok(())
    })?;
    out.ok_or_else(|| r.error(ErrorKind::NoMeta))
}

fn manifest(r: &Report) -> Result<Vec<ManifestRow>, DiagnosticError> {
    let mut out = Vec::new();
    if !r.tables.contains_key("report_manifest") {
        return Ok(out);
    }
    let cols = ["table", "rows_included", "rows_available", "scope", "filter", "redactions"];
    r.each("report_manifest", &cols, |c| {
        out.push(ManifestRow {
            table: c.text(0)?.unwrap_or_default(),
            rows_included: c.int(1)?.unwrap_or(0),
            rows_available: c.int(2)?.unwrap_or(0),
            scope: c.text(3)?.unwrap_or_default(),
            filter: c.text(4)?.unwrap_or_default(),
            redactions: c.text(5)?.unwrap_or_default(),
        });
        Ok(())
    })?;
    Ok(out)
}

const EVALUATION: [&str; 12] = [
    "id",
    "task",
    "wildcard",
    "status",
    "commit_id",
    "created_at",
    "updated_at",
    "fetch_started_at",
    "eval_flake_started_at",
    "eval_drv_started_at",
    "building_started_at",
    "finished_at",
];

/// The evaluation's own row: the report is of one evaluation, and a report
/// without its row is refused.
fn evaluation(r: &Report, id: &str) -> Result<Evaluation, DiagnosticError> {
    let mut out = None;
    r.each("evaluation", &EVALUATION, |c| {
        if c.text(0)?.as_deref() != Some(id) {
            return Ok(());
        }
        out = Some(Evaluation {
            id: id.to_string(),
            task: c.text(1)?,
            wildcard: c.text(2)?,
            status: c.int(3)?,
            commit_id: c.text(4)?,
            created_at: c.time(5)?,
            created_at_text: c.text(5)?,
            updated_at: c.time(6)?,
            fetch_started_at: c.time(7)?,
            eval_flake_started_at: c.time(8)?,
            eval_drv_started_at: c.time(9)?,
            building_started_at: c.time(10)?,
            finished_at: c.time(11)?,
        });
        Ok(())
    })?;
    out.ok_or_else(|| {
        r.error(ErrorKind::Invalid(format!("table evaluation holds no row for the report's evaluation {id}")))
    })
}

fn commit(r: &Report, id: Option<&str>) -> Result<Option<Commit>, DiagnosticError> {
    let mut out = None;
    r.each("commit", &["id", "hash"], |c| {
        let this = c.text(0)?.unwrap_or_default();
        if id.is_none_or(|id| id == this) {
            out = Some(Commit { id: this, hash: c.text(1)? });
        }
        Ok(())
    })?;
    Ok(out)
}

fn messages(r: &Report) -> Result<Vec<Message>, DiagnosticError> {
    let mut out = Vec::new();
    r.each("evaluation_message", &["level", "message", "source", "created_at"], |c| {
        out.push(Message {
            level: c.int(0)?,
            message: c.text(1)?.unwrap_or_default(),
            source: c.text(2)?,
            created_at: c.time(3)?,
        });
        Ok(())
    })?;
    out.sort_by_key(|m| m.created_at);
    Ok(out)
}

/// The evaluation's `evaluation_metric` row as a JSON object (counts and ms
/// as numbers); of several, the last made, and said.
fn metric(
    r: &Report,
    evaluation: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, DiagnosticError> {
    let table = schema::table("evaluation_metric").expect("schema 19 has it");
    let cols: Vec<&str> = table.names().collect();
    let mut rows = Vec::new();
    r.each("evaluation_metric", &cols, |c| {
        let mut row = serde_json::Map::new();
        for (i, name) in cols.iter().enumerate() {
            let text = matches!(*name, "id" | "evaluation" | "worker_id" | "created_at");
            let v = if text { c.text(i)?.map(serde_json::Value::from) } else { c.int(i)?.map(serde_json::Value::from) };
            row.insert(name.to_string(), v.unwrap_or(serde_json::Value::Null));
        }
        if row["evaluation"].as_str().is_none_or(|e| e == evaluation) {
            rows.push((c.time(cols.len() - 1)?, row));
        }
        Ok(())
    })?;
    if rows.len() > 1 {
        warnings.push(format!(
            "{}: evaluation_metric holds {} rows for the evaluation: the last made is read",
            r.file.display(),
            rows.len()
        ));
    }
    rows.sort_by_key(|(at, _)| *at);
    Ok(rows.pop().map(|(_, row)| row))
}

const JOB: [&str; 8] = ["id", "kind", "worker_id", "queued_at", "ready_at", "dispatched_at", "finished_at", "outcome"];
const PHASE: [&str; 8] = ["dispatched_job", "seq", "parent_seq", "phase", "start_ms", "end_ms", "paths", "bytes"];

fn jobs(r: &Report, schema_version: i64, warnings: &mut Vec<String>) -> Result<Vec<Job>, DiagnosticError> {
    let mut jobs = Vec::new();
    r.each("dispatched_job", &JOB, |c| {
        jobs.push(Job {
            id: c.text(0)?.unwrap_or_default(),
            kind: c.int(1)?,
            worker_id: c.text(2)?,
            queued_at: c.time(3)?,
            ready_at: c.time(4)?,
            dispatched_at: c.time(5)?,
            finished_at: c.time(6)?,
            outcome: c.int(7)?,
            phases: Vec::new(),
        });
        Ok(())
    })?;
    let index: BTreeMap<String, usize> = jobs.iter().enumerate().map(|(i, j)| (j.id.clone(), i)).collect();
    let mut orphans = 0usize;
    r.each("dispatched_job_phase", &PHASE, |c| {
        let job = c.text(0)?.unwrap_or_default();
        let int = |i: usize, what: &'static str| c.int(i)?.ok_or_else(|| ErrorKind::Invalid(format!("{what} is NULL")));
        let code = int(3, "dispatched_job_phase.phase")?;
        let phase = Phase {
            seq: int(1, "dispatched_job_phase.seq")?,
            parent_seq: c.int(2)?,
            code,
            name: schema::phase_name(schema_version, code),
            start_ms: int(4, "dispatched_job_phase.start_ms")?,
            end_ms: c.int(5)?,
            paths: c.int(6)?,
            bytes: c.int(7)?,
        };
        match index.get(&job) {
            Some(&i) => jobs[i].phases.push(phase),
            None => orphans += 1,
        }
        Ok(())
    })?;
    if orphans > 0 {
        warnings.push(format!(
            "{}: {orphans} dispatched_job_phase rows name a job dispatched_job does not hold: left out",
            r.file.display()
        ));
    }
    for j in &mut jobs {
        j.phases.sort_by_key(|p| p.seq);
    }
    jobs.sort_by(|a, b| a.queued_at.cmp(&b.queued_at).then(a.id.cmp(&b.id)));
    Ok(jobs)
}

fn samples(r: &Report) -> Result<Vec<WorkerSample>, DiagnosticError> {
    let mut out = Vec::new();
    let cols = ["worker_id", "at", "cpu_usage_pct", "ram_free_mb", "ram_total_mb", "assigned_jobs"];
    r.each("worker_sample", &cols, |c| {
        let Some(at) = c.time(1)? else { return Ok(()) };
        out.push(WorkerSample {
            worker_id: c.text(0)?,
            at,
            cpu_usage_pct: c.real(2)?,
            ram_free_mb: c.int(3)?,
            ram_total_mb: c.int(4)?,
            assigned_jobs: c.int(5)?,
        });
        Ok(())
    })?;
    out.sort_by_key(|s| s.at);
    Ok(out)
}
