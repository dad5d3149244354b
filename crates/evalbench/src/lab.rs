//! `evalbench lab`: the lab's command line (its library, `evalbench-lab`,
//! has the pipeline itself). The hidden commands are the lab's own
//! processes: server, worker and the worker's eval subprocess.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use evalbench_lab::{control, eval, flake, pg, server, LabError, LabState, PassOutput};

/// What `gen-flake` generates.
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum Shape {
    Flat,
    Nixpkgs,
}

/// The lab's directory, the same flag on every lab command and on `run`.
#[derive(clap::Args, Debug, Clone)]
pub struct LabDir {
    /// The lab's directory: PostgreSQL, sources, eval cache, logs, lab.json.
    #[arg(long = "lab-dir", alias = "dir", default_value = "lab")]
    pub dir: PathBuf,
}

/// How the lab is brought up: one set of flags, declared once, flattened
/// into `lab up` and `run` (which brings up its own lab).
#[derive(clap::Args, Debug, Clone)]
pub struct LabOptions {
    /// The lab's network: on = server and worker in network namespaces joined by a veth pair
    /// (needs root), off = both on loopback, auto = on when root.
    #[arg(long, value_enum, default_value = "auto")]
    pub net: evalbench_lab::control::NetMode,
    /// Shift every worker and eval span timestamp by this much (to see alignment work).
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    pub worker_clock_skew_ms: i64,
    /// Long-lived nix evaluators per eval subprocess; attributes are sharded over them and
    /// evaluated at once (Gradient's eval workers).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub eval_workers: u32,
    /// Recycle an evaluator whose resident memory is past this after an attribute (e.g. 512M):
    /// it is ended and a new one continues with the next attribute, as Gradient and
    /// nix-eval-jobs do. Default: never.
    #[arg(long, value_parser = crate::size::parse_size)]
    pub eval_max_rss: Option<u64>,
    /// The nix the lab runs (a path; default: nix on PATH), e.g. another version's; a run's
    /// provenance records its version.
    #[arg(long, value_name = "PATH", env = evalbench_lab::eval::ENV_NIX)]
    pub nix: Option<PathBuf>,
    #[command(flatten)]
    pub pg: PgSettings,
    #[command(flatten)]
    pub lab_settings: LabSettingArgs,
}

/// PostgreSQL settings for the lab's server, the same flag on `lab up` and `run`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PgSettings {
    /// Start the lab's PostgreSQL with this setting (repeatable), e.g. enable_seqscan=off or
    /// work_mem=64MB. PostgreSQL checks it; the settings are recorded in run.json and shown in
    /// the summary and the report.
    #[arg(long = "pg-setting", value_name = "NAME=VALUE", value_parser = pg::PgSetting::parse)]
    pub settings: Vec<pg::PgSetting>,
}

/// The lab's own settings, the same flag on `lab up` and `run`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LabSettingArgs {
    /// Run the lab's server with this setting (repeatable; later ones win). graph_walk=join|lateral:
    /// how its recursive walks over the derivation graph are written, a plain recursive join
    /// (Gradient before its PR #605) or a fenced LATERAL probe (since; the default). Recorded in
    /// run.json's provenance, so compare names it.
    #[arg(long = "lab-setting", value_name = "NAME=VALUE", value_parser = check_lab_setting)]
    pub lab_settings: Vec<String>,
}

pub fn check_lab_setting(s: &str) -> Result<String, evalbench_lab::setting::SettingError> {
    evalbench_lab::setting::LabSettings::default().set(s).map(|_| s.to_string())
}

impl LabOptions {
    /// The lab's set-up as `lab up` and `run` both start it: the one
    /// conversion of these flags.
    pub fn config(&self) -> evalbench_lab::control::LabConfig {
        evalbench_lab::control::LabConfig {
            net: self.net,
            worker_clock_skew_ms: self.worker_clock_skew_ms,
            eval_workers: self.eval_workers,
            eval_max_rss: self.eval_max_rss,
            pg_settings: self.pg.list(),
            nix: self.nix.clone(),
            lab_settings: self.lab_settings.settings(),
        }
    }
}

impl LabSettingArgs {
    pub fn settings(&self) -> evalbench_lab::setting::LabSettings {
        evalbench_lab::setting::LabSettings::from_args(&self.lab_settings).expect("each was checked when parsed")
    }
}

impl PgSettings {
    /// Later settings of one name win, as on PostgreSQL's own command line.
    pub fn list(&self) -> Vec<pg::PgSetting> {
        let mut out: Vec<pg::PgSetting> = Vec::new();
        for s in &self.settings {
            out.retain(|m| m.name() != s.name());
            out.push(s.clone());
        }
        out
    }
}

/// Where a restarted lab writes a pass's spans and nix's statistics.
#[derive(clap::Args, Debug, Clone)]
pub struct Output {
    /// Where the restarted processes write their spans (none when absent).
    #[arg(long)]
    trace_dir: Option<PathBuf>,
    /// Where each nix evaluation writes its statistics (`nix-stats.<shard>.json`).
    #[arg(long)]
    nix_stats_dir: Option<PathBuf>,
    /// nix also counts calls by primop, function and attribute (NIX_COUNT_CALLS).
    #[arg(long)]
    count_calls: bool,
    /// nix also traces its calls (--trace-function-calls), folded into nix-profile.folded.
    #[arg(long)]
    nix_trace: bool,
    /// nix runs under Valgrind, which counts its instructions (`cachegrind.<who>.out`
    /// beside the statistics; needs --nix-stats-dir).
    #[arg(long, requires = "nix_stats_dir")]
    count_instructions: bool,
}

impl From<Output> for PassOutput {
    fn from(o: Output) -> PassOutput {
        let (count_calls, nix_trace, count_instructions) = (o.count_calls, o.nix_trace, o.count_instructions);
        PassOutput {
            trace_dir: o.trace_dir,
            nix_stats_dir: o.nix_stats_dir,
            count_calls,
            nix_trace,
            count_instructions,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// Stop and remove every lab under DIR (default: where `run` makes its own, /var/tmp/evalbench)
    /// that nothing runs in any more; a lab still in use is named and left alone.
    Prune {
        /// The directory whose labs are pruned.
        #[arg(long, default_value = evalbench_lab::prune::RUN_LABS)]
        root: PathBuf,
        /// Print what was removed as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start PostgreSQL, the server and the workers (idempotent).
    Up {
        #[command(flatten)]
        dir: LabDir,
        /// The flake to evaluate (a directory with flake.nix); committed into the lab's own git
        /// repository. Default: the embedded hello flake.
        #[arg(long)]
        flake: Option<PathBuf>,
        /// Where server, worker and eval processes write their spans.
        #[arg(long)]
        trace_dir: Option<PathBuf>,
        /// Workers (each its own process, taking jobs over /proto).
        #[arg(long, default_value_t = 1)]
        workers: u32,
        #[command(flatten)]
        lab: LabOptions,
    },
    /// Stop everything the lab started and remove its namespaces (idempotent).
    Down {
        #[command(flatten)]
        dir: LabDir,
    },
    /// Restart server and workers, optionally with another trace directory.
    Restart {
        #[command(flatten)]
        dir: LabDir,
        #[command(flatten)]
        output: Output,
    },
    /// Cold reset: drop and recreate the database, empty the eval cache, restart.
    Reset {
        #[command(flatten)]
        dir: LabDir,
        #[command(flatten)]
        output: Output,
    },
    /// Request an evaluation, follow it to the end, print its timeline as JSON.
    Evaluate {
        #[command(flatten)]
        dir: LabDir,
        /// Give up when the evaluation has not ended after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout_s: u64,
    },
    /// Run SQL as the PostgreSQL superuser in the CI database; prints rows, one per line, fields separated by |.
    Sql {
        #[command(flatten)]
        dir: LabDir,
        /// The SQL to run.
        query: String,
    },
    /// The closure of derivations as the lab's server walks it (its one recursive statement),
    /// in either form: their paths, one per line, or with --explain PostgreSQL's EXPLAIN ANALYZE
    /// of the walk. The lab must be up; its database holds what it last evaluated.
    Walk {
        #[command(flatten)]
        dir: LabDir,
        /// join or lateral (default: the lab's graph_walk setting).
        #[arg(long, value_name = "FORM")]
        form: Option<String>,
        /// Print EXPLAIN ANALYZE of the walk instead of its result.
        #[arg(long)]
        explain: bool,
        /// Derivation paths (/nix/store/...drv) to walk from.
        #[arg(required = true, value_name = "DRV")]
        from: Vec<String>,
    },
    /// Print lab.json (where things run, the API key).
    Status {
        #[command(flatten)]
        dir: LabDir,
    },
    /// Write a self-contained flake with COUNT packages.
    GenFlake {
        /// The directory to write flake.nix into.
        #[arg(long)]
        out: PathBuf,
        /// Packages in the flake (`packages.<system>.pkg0` ...).
        #[arg(long, default_value_t = evalbench_lab::flake::HELLO_COUNT)]
        packages: u32,
        /// Evaluation work per package (list length folded over).
        #[arg(long, default_value_t = evalbench_lab::flake::HELLO_WORK)]
        work: u32,
        /// Instead: this many machines (`machines.m0` ...), each over --packages packages of its own.
        #[arg(long)]
        machines: Option<u32>,
        /// flat: every package in flake.nix, doing --work steps (the default); nixpkgs: a lib,
        /// callPackage, an overlay fixpoint and a file per package, as nixpkgs is (--work unused).
        #[arg(long, value_enum, default_value = "flat")]
        shape: Shape,
        /// Which of the shape's graphs (depth bounded, a few hubs; docs/generated-flakes.md):
        /// the same seed, the same flake.
        #[arg(long, default_value_t = evalbench_lab::shape::DEFAULT_SEED)]
        seed: u64,
        /// Print the graph's figures (depth, fan-in) as JSON on stdout; they go to stderr either way.
        #[arg(long)]
        json: bool,
    },
    #[command(hide = true)]
    Server {
        #[arg(long)]
        listen: std::net::SocketAddr,
        /// A second listener for /proto (workers), so captures can tell it from API calls.
        #[arg(long)]
        proto_listen: Option<std::net::SocketAddr>,
        /// The database URL (it holds a password): from the environment, as the lab starts it.
        #[arg(long, env = evalbench_lab::server::ENV_DATABASE, hide_env_values = true)]
        database: String,
        #[arg(long)]
        provision: PathBuf,
        #[command(flatten)]
        lab: LabSettingArgs,
    },
    #[command(hide = true)]
    Worker {
        #[arg(long)]
        server: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        sources: PathBuf,
    },
    #[command(hide = true)]
    Eval {
        #[arg(long)]
        flake: PathBuf,
        #[arg(long)]
        job: String,
        /// Evaluators run at once, each on its shard of the attributes (`lab up --eval-workers`).
        #[arg(long, default_value_t = 1, env = evalbench_lab::eval::ENV_EVAL_WORKERS)]
        eval_workers: usize,
        #[arg(long, env = evalbench_lab::eval::ENV_NIX_STATS_DIR)]
        nix_stats_dir: Option<PathBuf>,
        #[arg(long, env = evalbench_lab::eval::ENV_COUNT_CALLS)]
        count_calls: bool,
        #[arg(long, env = evalbench_lab::eval::ENV_EVAL_MAX_RSS)]
        max_rss: Option<u64>,
        #[arg(long, env = evalbench_lab::eval::ENV_NIX_TRACE)]
        nix_trace: bool,
        #[arg(long, env = evalbench_lab::eval::ENV_COUNT_INSTRUCTIONS)]
        count_instructions: bool,
    },
}

/// Runs a lab command; what it prints for the user goes to `out`.
fn dispatch(args: Args, out: &mut dyn std::io::Write) -> Result<(), LabError> {
    let mut print = |text: String| -> Result<(), LabError> {
        out.write_all(text.as_bytes())
            .map_err(|source| LabError::Io { path: PathBuf::from("<standard output>"), source })
    };
    match args.command {
        Cmd::Up { dir: LabDir { dir }, flake, trace_dir, workers, lab } => {
            let flake = match flake {
                Some(f) => f,
                None => flake::hello_flake(&dir.join("hello-flake"))?,
            };
            let st = control::up(&control::UpOpts { dir, flake, trace_dir, workers, config: lab.config() })?;
            eprintln!("evalbench lab: up ({}), API at {}", st.net.mode, st.base_url());
            print(format!("{}\n", serde_json::to_string_pretty(&st).expect("serializes")))
        }
        Cmd::Down { dir: LabDir { dir } } => control::down(&dir),
        Cmd::Prune { root, json } => print(prune(&root, json)?),
        Cmd::Restart { dir: LabDir { dir }, output } => control::restart(&dir, &output.into()).map(|_| ()),
        Cmd::Reset { dir: LabDir { dir }, output } => control::reset_cold(&dir, &output.into()).map(|_| ()),
        Cmd::Evaluate { dir: LabDir { dir }, timeout_s } => {
            let r = control::evaluate(&dir, Duration::from_secs(timeout_s), |s| eprintln!("evalbench lab: {s}"))?;
            print(format!("{}\n", serde_json::to_string_pretty(&r).expect("serializes")))?;
            if r["status"] == evalbench_bundle::contract::Status::Completed.as_str() {
                Ok(())
            } else {
                Err(LabError::Ended {
                    id: r["evaluation_id"].to_string(),
                    status: r["status"].to_string(),
                    error: r["error"].to_string(),
                })
            }
        }
        Cmd::Sql { dir: LabDir { dir }, query } => {
            let st = LabState::load(&dir)?;
            print(control::pg_of(&st)?.psql(pg::CI_ROLE, &query)?)
        }
        Cmd::Walk { dir: LabDir { dir }, form, explain, from } => print(walk(&dir, form, explain, &from)?),
        Cmd::Status { dir: LabDir { dir } } => {
            let st = LabState::load(&dir)?;
            print(format!("{}\n", serde_json::to_string_pretty(&st).expect("serializes")))
        }
        Cmd::GenFlake { out, packages, work, machines, shape, seed, json } => {
            match gen_flake(&out, (packages, work, machines, shape, seed), json)? {
                Some(text) => print(text),
                None => Ok(()),
            }
        }
        Cmd::Server { listen, proto_listen, database, provision, lab } => {
            let _g = evalbench_lab::init_tracing();
            Ok(server::serve(listen, proto_listen, &database, &provision, lab.settings().graph_walk)?)
        }
        Cmd::Worker { server, name, sources } => {
            let _g = evalbench_lab::init_tracing();
            Ok(evalbench_lab::work(&server, &name, &sources)?)
        }
        Cmd::Eval { flake, job, eval_workers, nix_stats_dir, count_calls, max_rss, nix_trace, count_instructions } => {
            let _g = evalbench_lab::init_tracing();
            let o = eval::EvalOpts {
                eval_workers,
                stats_dir: nix_stats_dir,
                count_calls,
                max_rss,
                trace: nix_trace,
                count_instructions,
            };
            Ok(eval::eval(&flake, &job, &o)?)
        }
    }
}

/// `lab prune`: what was removed under `root`, and what is in use.
fn prune(root: &std::path::Path, json: bool) -> Result<String, LabError> {
    let r = evalbench_lab::prune::prune(root)?;
    for (dir, what) in &r.running {
        eprintln!("evalbench lab prune: {} is in use, left alone: {}", dir.display(), what.join(", "));
    }
    if json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&r).expect("serializes")));
    }
    Ok(format!(
        "removed {} director{} under {}, {:.1} MB{}\n",
        r.removed.len(),
        if r.removed.len() == 1 { "y" } else { "ies" },
        root.display(),
        r.bytes as f64 / 1e6,
        if r.running.is_empty() { String::new() } else { format!("; {} in use left alone", r.running.len()) }
    ))
}

/// `lab walk`: the closure walk's statement (or its plan) from `from`, run.
fn walk(dir: &std::path::Path, form: Option<String>, explain: bool, from: &[String]) -> Result<String, LabError> {
    let st = LabState::load(dir)?;
    let mut settings = st.lab_settings;
    if let Some(f) = form {
        settings.set(&format!("graph_walk={f}")).map_err(LabError::Setting)?;
    }
    // Paths go into the statement as a literal: quotes doubled.
    let paths: Vec<String> = from.iter().map(|p| format!("'{}'", p.replace('\'', "''"))).collect();
    let walk = evalbench_lab::server::walks::closure_of_paths(settings.graph_walk)
        .replace("$1", &format!("ARRAY[{}]::text[]", paths.join(",")));
    let sql = if explain { format!("EXPLAIN (ANALYZE, BUFFERS OFF) {walk}") } else { walk };
    control::pg_of(&st)?.psql(pg::CI_ROLE, &sql)
}

/// `lab gen-flake`: the flake's files into `out`; the graph's figures as
/// JSON where asked (a machines flake has none).
fn gen_flake(
    out: &std::path::Path,
    (packages, work, machines, shape, seed): (u32, u32, Option<u32>, Shape, u64),
    json: bool,
) -> Result<Option<String>, LabError> {
    let graph = evalbench_lab::shape::generate(packages.max(1), seed);
    let files = match (machines, shape) {
        (Some(m), _) => vec![("flake.nix".to_string(), flake::machines_flake_text(m, packages, work))],
        (None, Shape::Flat) => vec![("flake.nix".to_string(), flake::flake_text(&graph, work, seed))],
        (None, Shape::Nixpkgs) => evalbench_lab::flake_nixpkgs::nixpkgs_flake_files(&graph, seed),
    };
    for (rel, text) in files {
        let p = out.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).map_err(|source| LabError::Io { path: d.to_path_buf(), source })?;
        }
        std::fs::write(&p, text).map_err(|source| LabError::Io { path: p.clone(), source })?;
    }
    if machines.is_some() {
        return Ok(None);
    }
    let f = graph.figures(5);
    eprintln!("evalbench lab gen-flake: {}", shape_line(&f));
    if json {
        return Ok(Some(format!("{}\n", serde_json::to_string_pretty(&f).expect("serializes"))));
    }
    Ok(None)
}

/// The generated graph in one line, beside what nixpkgs' is known to be.
fn shape_line(f: &evalbench_lab::shape::Figures) -> String {
    let top: Vec<String> = f.top_fan_in.iter().map(|(n, c)| format!("{n} {c}")).collect();
    format!(
        "{} packages, {} dependencies ({:.1} a package), depth {}; most depended on: {}; dependents p50 {}, p90 {}, \
            p99 {}; {:.0}% have none",
        f.packages,
        f.edges,
        f.mean_dependencies,
        f.depth,
        top.join(", "),
        f.fan_in_p50,
        f.fan_in_p90,
        f.fan_in_p99,
        100.0 * f.no_dependents
    )
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let mut w = evalbench_host::out::stdout();
    let r = dispatch(a, &mut w);
    // A write that failed is said first: the lab saw none fail.
    crate::done(w)?;
    r?;
    Ok(ExitCode::SUCCESS)
}
