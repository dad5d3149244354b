//! `evalbench history add|show|report`: every run kept under its commit, in
//! SQLite (default) or a PostgreSQL shared by many CI machines.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use evalbench_bundle::Bundle;
use evalbench_history::{BundleRecord, Meta, Select};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Cmd,
}

/// The database: a SQLite file, or `postgresql://user@host:port/db`.
#[derive(clap::Args, Clone)]
pub struct Db {
    /// Where the history lives: a SQLite file (made on first use) or postgresql://USER@HOST:PORT/DB.
    #[arg(long, env = "EVALBENCH_DB", default_value = "evalbench-history.sqlite")]
    pub db: String,
}

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Store every pass of a bundle under a commit (one transaction; a bundle is added once). A Gradient
    /// diagnostic report is kept as one run of the pass `production`: benchmark gradient:<task>/<wildcard>,
    /// machine `production`, the report's commit, dated by the evaluation's created_at (UTC).
    Add {
        /// The bundle: a directory, or a .tar.gz of one; or a Gradient diagnostic report (SQLite).
        bundle: PathBuf,
        /// The commit the bundle measured (any revision string, not empty); for a report, its own commit unless
        /// given.
        #[arg(long, value_parser = commit_name)]
        commit: Option<String>,
        /// When the commit was made: RFC 3339 (2026-11-30T12:00:00Z) or Unix seconds. Default: the bundle's run time.
        #[arg(long)]
        commit_time: Option<String>,
        /// The branch, shown beside the commit.
        #[arg(long)]
        branch: Option<String>,
        /// The machine that ran it (default: the bundle's own record of it, else this host's name).
        #[arg(long)]
        machine: Option<String>,
        /// The benchmark its series is kept under (default: the flake as the bundle's run was given it).
        #[arg(long)]
        benchmark: Option<String>,
        #[command(flatten)]
        db: Db,
        #[command(flatten)]
        unpack: crate::size::MaxUnpacked,
    },
    /// A Gradient task's production evaluations: each one's diagnostic report downloaded once
    /// (kept beside the history) and added as `add REPORT` adds it; run again, only new ones.
    Import(crate::history_import::Args),
    /// The series per pass (commit, time, median and spread of the evaluated seconds, top spans) and the changes along
    /// it.
    Show {
        #[command(flatten)]
        db: Db,
        #[command(flatten)]
        filter: Filter,
        /// Print {"commits": [...], "series": {...}, "changes": [...]} on stdout; --format json.
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// text (for a terminal), json (for scripts) or markdown (GitHub tables, for a pull request comment or
        /// $GITHUB_STEP_SUMMARY).
        #[arg(long, value_enum, default_value = "text")]
        format: crate::Format,
    },
    /// One self-contained HTML page: evaluated seconds across commits, change points, the spans that moved most.
    Report {
        #[command(flatten)]
        db: Db,
        #[command(flatten)]
        filter: Filter,
        /// Where to write index.html.
        #[arg(short, long, default_value = "history-report")]
        out: PathBuf,
        /// Print what was written as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Which series `show` and `report` read: one set of flags for both.
#[derive(clap::Args, Debug, Clone)]
pub struct Filter {
    /// Only this pass (cold-clean, warm-clean, ...).
    #[arg(long)]
    pass: Option<String>,
    /// Only this benchmark's series (the flake as given; see the series listed by show).
    #[arg(long)]
    benchmark: Option<String>,
    /// Only this machine's series.
    #[arg(long)]
    machine: Option<String>,
}

impl Filter {
    fn select(self) -> Select {
        Select { pass: self.pass, benchmark: self.benchmark, machine: self.machine }
    }
}

/// What `add` is told beside the bundle (`history add`'s flags; `bisect --history` gives each probe's).
pub struct Added<'a> {
    pub commit: &'a str,
    /// RFC 3339 or Unix seconds; None: the bundle's run time.
    pub commit_time: Option<&'a str>,
    pub branch: Option<String>,
    pub machine: Option<String>,
    pub benchmark: Option<String>,
    pub db: &'a str,
}

/// Adds the bundle `b` (opened from `path`) to the history: its warnings
/// first, then one line saying what was added. The run's id.
pub fn add(b: &Bundle, path: &std::path::Path, a: Added) -> anyhow::Result<i64> {
    add_record(BundleRecord::read(b)?, path, a)
}

/// Adds a record (a bundle's, or a production evaluation's) to the history.
pub fn add_record(record: BundleRecord, path: &std::path::Path, a: Added) -> anyhow::Result<i64> {
    // What reading went past comes first, each with its file and line.
    for w in evalbench_report::output::warnings::grouped(&record.warnings) {
        eprintln!("evalbench history: warning: {w}");
    }
    let commit_time = match a.commit_time {
        Some(t) => parse_time(t).with_context(|| format!("--commit-time {t:?}"))?,
        None => record.run_time.unwrap_or_else(|| evalbench_host::now_us() / 1_000_000),
    };
    let machine = a
        .machine
        .or_else(|| record.provenance.machine.hostname.clone())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|s| s.trim().to_string()));
    let benchmark = a.benchmark.or_else(|| record.provenance.workload.flake.clone());
    let meta = Meta {
        commit: a.commit.to_string(),
        commit_time,
        branch: a.branch,
        machine,
        benchmark,
        bundle: path.display().to_string(),
    };
    let mut store = evalbench_history::open(a.db)?;
    let id = store.add(&meta, &record)?;
    eprintln!(
        "evalbench history: {} added as run {id}: commit {}, {} pass runs, in {}",
        path.display(),
        a.commit,
        record.runs.len(),
        a.db
    );
    Ok(id)
}

/// Adds a production evaluation: under its own commit unless `commit` is
/// given, on the machine `production` and in its `gradient:` series unless
/// told others. The run's id.
pub fn add_report(
    p: &evalbench_analyze::production::Production,
    path: &std::path::Path,
    a: Added,
    commit: Option<String>,
) -> anyhow::Result<i64> {
    let Some(commit) = commit.or_else(|| p.commit.clone()) else {
        anyhow::bail!("{}: the report names no commit (its \"commit\" table is empty): give --commit", path.display());
    };
    let record = evalbench_history::production::record(p);
    let machine = a.machine.or_else(|| Some(evalbench_history::production::MACHINE.to_string()));
    let benchmark = a.benchmark.or_else(|| Some(evalbench_history::production::benchmark(p)));
    add_record(record, path, Added { commit: &commit, machine, benchmark, ..a })
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    match a.command {
        Cmd::Add { bundle, commit, commit_time, branch, machine, benchmark, db, unpack } => {
            if crate::production::is_report(&bundle) {
                let p = crate::production::read(&bundle, unpack.bytes, "history")?;
                add_report(
                    &p,
                    &bundle,
                    Added { commit: "", commit_time: commit_time.as_deref(), branch, machine, benchmark, db: &db.db },
                    commit,
                )?;
                return Ok(ExitCode::SUCCESS);
            }
            let Some(commit) = commit else {
                anyhow::bail!("--commit is needed for a bundle (the commit it measured)");
            };
            let b = Bundle::open(&bundle, unpack.limits())?;
            add(
                &b,
                &bundle,
                Added { commit: &commit, commit_time: commit_time.as_deref(), branch, machine, benchmark, db: &db.db },
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Import(args) => crate::history_import::run(args),
        Cmd::Show { db, filter, json, format } => {
            let h = read(&db.db, filter.select(), false)?;
            let format = if json { crate::Format::Json } else { format };
            if format == crate::Format::Markdown {
                crate::emit(&evalbench_report::history::text::markdown(&h))?;
            } else if format == crate::Format::Json {
                crate::emit(&evalbench_report::history::text::json(&h))?;
            } else {
                crate::emit(&evalbench_report::history::text::text(&h))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Report { db, filter, out, json } => {
            let h = read(&db.db, filter.select(), true)?;
            crate::claim(&out, &["index.html".into()])?;
            let charts = evalbench_history::chart::charts(&h);
            let w = evalbench_report::history::html::render(&h, &charts, &db.db, &out)?;
            if json {
                crate::emit(&format!("{}\n", serde_json::to_string_pretty(&w).expect("serializes")))?;
            } else {
                eprintln!(
                    "evalbench history: {} ({} bytes, {} commits, {} points)",
                    w.page.display(),
                    w.page_bytes,
                    w.commits,
                    w.points
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A history that is there, with the selected series in it, as `add`
/// judged it (`medians`: with each commit's span medians, for the page).
/// A history whose runs no add judged yet is judged here, not stored.
pub fn read(db: &str, select: Select, medians: bool) -> anyhow::Result<evalbench_history::History> {
    let mut store = evalbench_history::open_existing(db)?;
    let judged = match store.load_judged(medians)? {
        Some(j) => j,
        None => {
            eprintln!(
                "evalbench history: {db} holds runs stored before judgements were kept; judged now, from every stored \
                    run (the next `history add` keeps the judgements)"
            );
            let rows = store.load()?;
            evalbench_history::JudgedHistory {
                commits: evalbench_history::commits_of(&rows),
                series: evalbench_history::judge_all(&rows),
            }
        }
    };
    let keys: Vec<_> = judged.series.keys().cloned().collect();
    select.check(&keys, db)?;
    Ok(evalbench_history::assemble(judged.commits, judged.series, &select))
}

/// RFC 3339 (`2026-11-30T12:00:00Z`, `...+01:00`, fractions dropped) or Unix seconds.
fn parse_time(s: &str) -> anyhow::Result<i64> {
    let secs = match s.parse::<i64>() {
        Ok(n) => n,
        Err(_) => {
            let t: jiff::Timestamp = s
                .parse()
                .map_err(|e| anyhow::anyhow!("expected RFC 3339 (2026-11-30T12:00:00Z) or Unix seconds: {e}"))?;
            t.as_second()
        }
    };
    // No commit was made before the epoch: a negative time is a typing error, not a date.
    anyhow::ensure!(secs >= 0, "expected a time at or after 1970-01-01T00:00:00Z, got {secs} Unix seconds");
    Ok(secs)
}

/// A commit as given: any revision string but an empty or blank one.
fn commit_name(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("expected a commit (a hash or any revision name), not an empty string".into());
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_parse_as_rfc3339_or_unix_seconds() {
        assert_eq!(super::parse_time("1700000000").unwrap(), 1_700_000_000);
        assert_eq!(super::parse_time("1970-01-01T00:00:00Z").unwrap(), 0);
        assert_eq!(super::parse_time("2023-11-14T22:13:20Z").unwrap(), 1_700_000_000);
        assert_eq!(super::parse_time("2023-11-14T23:13:20.5+01:00").unwrap(), 1_700_000_000);
        assert!(super::parse_time("2023-11-14").is_err());
        assert!(super::parse_time("2023-13-14T22:13:20Z").is_err());
        assert!(super::parse_time("2023-02-31T22:13:20Z").is_err(), "no 31 February");
        assert!(super::parse_time("2023-11-14T22:13:20+0\u{e9}00").is_err(), "non-ASCII is an error, not a panic");
        assert!(super::parse_time("").is_err());
        assert!(super::parse_time("-5").is_err(), "before the epoch");
        assert!(
            super::commit_name("").is_err() && super::commit_name("  ").is_err() && super::commit_name("abc").is_ok()
        );
    }
}
