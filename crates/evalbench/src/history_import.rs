//! `evalbench history import`: a Gradient task's production evaluations
//! into the history. The task's completed evaluations are listed (`GET
//! tasks/{p}/{t}/metrics`; a failed one is named with `--evaluation`), each
//! one's diagnostic report downloaded once (`GET evals/{id}/report`, logged
//! in as `--target gradient` is) and kept beside the history, then added as
//! `history add REPORT` adds it. Run again, it downloads and adds only what
//! is new. The steps the series then shows are named with their evaluation
//! and commit, and the `evalbench bisect` that would narrow each.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

#[derive(clap::Args)]
pub struct Args {
    /// Where the evaluations come from: `gradient` (a Gradient deployment, or the lab, through Gradient's API).
    #[arg(long, value_parser = ["gradient"])]
    pub target: String,
    /// The deployment: the JSON `run --target gradient` takes (url, and api_key or login; the rest is not used here).
    #[arg(long)]
    pub target_config: PathBuf,
    /// The task: PROJECT/TASK, as Gradient's routes name it (tasks/{project}/{task}).
    #[arg(long, value_parser = task)]
    pub task: (String, String),
    /// Only evaluations created on or after this day (YYYY-MM-DD, UTC).
    #[arg(long, value_parser = day)]
    pub since: Option<String>,
    /// Also this evaluation (an id), e.g. a failed one the task's metrics do not list; repeatable.
    #[arg(long = "evaluation", value_name = "ID")]
    pub evaluations: Vec<String>,
    /// Where the downloaded reports are kept. Default: beside a SQLite history, DB.reports/; else ./evalbench-reports/.
    #[arg(long)]
    pub reports: Option<PathBuf>,
    /// The machine the series is kept under.
    #[arg(long, default_value = evalbench_history::production::MACHINE)]
    pub machine: String,
    #[command(flatten)]
    pub db: crate::history::Db,
    /// Refuse a report larger than this (e.g. 512M).
    #[arg(long = "max-report", default_value = "4G", value_parser = crate::size::parse_size)]
    pub max_report: u64,
}

fn task(s: &str) -> Result<(String, String), String> {
    match s.split_once('/') {
        Some((p, t)) if !p.is_empty() && !t.is_empty() && !t.contains('/') => Ok((p.into(), t.into())),
        _ => Err(format!("{s:?}: expected PROJECT/TASK")),
    }
}

fn day(s: &str) -> Result<String, String> {
    s.parse::<jiff::civil::Date>().map(|d| d.to_string()).map_err(|_| format!("{s:?}: expected a day, YYYY-MM-DD"))
}

/// The API's endpoint from the target's config file.
fn endpoint(a: &Args) -> anyhow::Result<evalbench_api::Endpoint> {
    let text = std::fs::read(&a.target_config).with_context(|| format!("reading {}", a.target_config.display()))?;
    let v: serde_json::Value =
        serde_json::from_slice(&text).with_context(|| format!("{}: not JSON", a.target_config.display()))?;
    let url = v["url"].as_str().with_context(|| format!("{}: no \"url\"", a.target_config.display()))?;
    let login = match &v["login"] {
        serde_json::Value::Null => None,
        l => Some(serde_json::from_value::<evalbench_api::Login>(l.clone()).with_context(|| {
            format!("{}: \"login\": expected {{\"loginname\", \"password\"}}", a.target_config.display())
        })?),
    };
    Ok(evalbench_api::Endpoint {
        url: url.trim_end_matches('/').to_string(),
        api_key: v["api_key"].as_str().unwrap_or_default().to_string(),
        organization: a.task.0.clone(),
        project: a.task.1.clone(),
        login,
    })
}

fn reports_dir(a: &Args) -> PathBuf {
    a.reports.clone().unwrap_or_else(|| {
        if a.db.db.starts_with("postgres") {
            PathBuf::from("evalbench-reports")
        } else {
            PathBuf::from(format!("{}.reports", a.db.db))
        }
    })
}

/// The evaluations to import: the task's completed ones (since the day) and those named.
fn evaluations(a: &Args, client: &evalbench_api::Client) -> anyhow::Result<Vec<String>> {
    let metrics = client.task_metrics()?;
    let mut ids = Vec::new();
    for p in metrics["points"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let (Some(id), created) = (p["evaluation_id"].as_str(), p["created_at"].as_str().unwrap_or_default()) else {
            continue;
        };
        if a.since.as_deref().is_none_or(|d| created.get(..10).is_some_and(|c| c >= d)) {
            ids.push(id.to_string());
        }
    }
    for e in &a.evaluations {
        if !ids.contains(e) {
            ids.push(e.clone());
        }
    }
    Ok(ids)
}

/// The report of `id` in `dir`: the file kept there, else downloaded now.
fn report_file(client: &evalbench_api::Client, dir: &Path, id: &str, max: u64) -> anyhow::Result<(PathBuf, bool)> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        anyhow::bail!("{id:?}: not an evaluation id (letters, digits and '-')");
    }
    let path = dir.join(format!("gradient-report-{id}.db"));
    if crate::production::is_report(&path) {
        return Ok((path, false));
    }
    let bytes = client.report(id, max)?;
    evalbench_bundle::write_atomic(&path, &bytes)?;
    Ok((path, true))
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let client = evalbench_api::Client::new(endpoint(&a)?, std::time::Duration::from_secs(300));
    let dir = reports_dir(&a);
    std::fs::create_dir_all(&dir).with_context(|| format!("making {}", dir.display()))?;
    let ids = evaluations(&a, &client)?;
    let (mut added, mut known, mut downloaded) = (Vec::new(), 0usize, 0usize);
    let mut benchmarks = Vec::new();
    let mut evaluation_of = std::collections::BTreeMap::new();
    for id in &ids {
        let (path, fresh) = report_file(&client, &dir, id, a.max_report)?;
        downloaded += fresh as usize;
        let p = crate::production::read(&path, a.max_report, "history import")?;
        if let Some(c) = &p.commit {
            evaluation_of.insert(c.clone(), p.evaluation.clone());
        }
        let b = evalbench_history::production::benchmark(&p);
        if !benchmarks.contains(&b) {
            benchmarks.push(b);
        }
        let meta = crate::history::Added {
            commit: "",
            commit_time: None,
            branch: None,
            machine: Some(a.machine.clone()),
            benchmark: None,
            db: &a.db.db,
        };
        match crate::history::add_report(&p, &path, meta, None) {
            Ok(_) => added.push((id.clone(), p.commit.clone().unwrap_or_default())),
            Err(e) if matches!(e.downcast_ref(), Some(evalbench_history::HistoryError::Duplicate { .. })) => known += 1,
            Err(e) => return Err(e),
        }
    }
    eprintln!(
        "evalbench history import: {} evaluations listed, {downloaded} reports downloaded into {}, {} added, {known} \
         already in {}",
        ids.len(),
        dir.display(),
        added.len(),
        a.db.db
    );
    steps(&a, &benchmarks, &evaluation_of)?;
    Ok(ExitCode::SUCCESS)
}

/// The steps the imported series show, each named with its evaluation and
/// commit, and the bisect that narrows it.
fn steps(
    a: &Args,
    benchmarks: &[String],
    evaluation_of: &std::collections::BTreeMap<String, String>,
) -> anyhow::Result<()> {
    for b in benchmarks {
        let select = evalbench_history::Select {
            pass: Some(evalbench_history::production::PASS.to_string()),
            benchmark: Some(b.clone()),
            machine: Some(a.machine.clone()),
        };
        let h = crate::history::read(&a.db.db, select, false)?;
        for c in h.changes.iter().filter(|c| c.what.starts_with("nix ")) {
            let evaluation = evaluation_of.get(&c.commit).map_or("an evaluation imported before", String::as_str);
            eprintln!(
                "evalbench history import: {b}: {} stepped at evaluation {evaluation} (commit {}): {}",
                c.what.trim_start_matches("nix "),
                c.commit,
                evalbench_report::words::change(c)
            );
        }
        for line in evalbench_report::history::text::bisect_hints(&h) {
            eprintln!("evalbench history import: {line}");
        }
    }
    Ok(())
}
