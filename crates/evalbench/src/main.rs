//! The one binary: parses options once and hands them to the stage that
//! does the work. Each subcommand is a module of its own.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod baseline_rev;
mod bench;
mod bisect;
mod bisect_push;
mod bisect_time;
mod compare;
mod decode;
mod gate;
mod history;
mod history_import;
mod inspect;
mod lab;
mod percent;
mod production;
mod run;
mod sample;
mod size;
mod summarize;
mod whatif;

#[derive(Parser)]
#[command(
    name = "evalbench",
    version,
    about = "Where does a Nix CI evaluation spend its time, and did a change really make it faster?",
    long_about = "evalbench runs an evaluation through a CI pipeline in passes (cold/warm x clean/instrumented), \
captures spans, Postgres statistics, packets, CPU profiles and syscalls, aligns the machines' clocks, \
and writes a bundle: summary, Perfetto trace and an HTML report.\n\n\
A bundle is a directory or a .tar.gz of one, with one directory per pass (cold-clean, warm-clean, \
cold-instrumented, warm-instrumented), each holding run.json and trace/<process>-<pid>.jsonl.",
    after_help = "Exit status: 0 success; 1 a verdict against you (a regression past --fail-on-regression, \
a red gate, failed bench runs, a failed evaluation); 2 an error (unreadable input, bad flags, a crash of a child, \
a gate that cannot judge what one side lacks); 130 interrupted (Ctrl-C), what was captured kept."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the passes (cold/warm x clean/instrumented) against the lab or a Gradient deployment and write the bundle.
    Run(run::Args),
    /// Measure commands run by run (wall, user, sys, peak memory of the process tree) and compare them with verdicts.
    Bench(bench::Args),
    /// Which commit moved nix's counters: a bisection of a flake's git history, one evaluation a probe.
    Bisect(bisect::Args),
    /// Compare two bundles pass by pass, span by span, statement by statement, with noise-aware verdicts.
    Compare(compare::Args),
    /// A deploy gate: every machine toplevel and check of a flake, each failure named, each step measured.
    Gate(gate::Args),
    /// Decode one capture file (pg, proto, perf, strace, auto-explain, nix-trace) and print what it holds.
    Decode(decode::Args),
    /// Render a bundle as one self-contained HTML page with SVG charts (and each chart as its own .svg).
    Inspect(inspect::Args),
    /// Summarize a bundle: summary.txt and summary.json (clean passes), and <run>/trace.json for every pass.
    Summarize(summarize::Args),
    /// Run the small instrumented three-process pipeline (server, worker, eval) and write a bundle of its spans.
    Sample(sample::Args),
    /// Every run kept under its commit (SQLite or a shared PostgreSQL): add bundles, show the series and its changes,
    /// write a page.
    History(history::Args),
    /// A pass's critical path (what the evaluated seconds waited on, across processes) and what making spans faster
    /// would buy.
    Whatif(whatif::Args),
    /// The lab: a reference Nix CI pipeline (PostgreSQL, server, workers, nix eval subprocesses).
    Lab(lab::Args),
}

fn main() -> ExitCode {
    large_blocks_back_on_free();
    let cli = parse();
    let result = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Summarize(a) => summarize::run(a),
        Command::Inspect(a) => inspect::run(a),
        Command::Decode(a) => decode::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Bisect(a) => bisect::run(a),
        Command::Gate(a) => gate::run(a),
        Command::History(a) => history::run(a),
        Command::Sample(a) => sample::run(a),
        Command::Lab(a) => lab::run(a),
        Command::Whatif(a) => whatif::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // A reader that went away (`| head`) ends the command quietly, as Unix tools do.
            if e.downcast_ref::<StdoutError>().is_some_and(|s| s.0.kind() == std::io::ErrorKind::BrokenPipe) {
                return ExitCode::SUCCESS;
            }
            eprintln!("evalbench: {}", chain(&e));
            // 1 is kept for verdicts against the user (see --help).
            ExitCode::from(2)
        }
    }
}

/// The command line, with every option's value allowed to look like a
/// negative number: `--repeat -1` is then refused by the option's own
/// parser ("expected ..."), where clap took it for a flag and suggested
/// `-- -1`, which would make it an argument.
fn parse() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    fn negatives(c: clap::Command) -> clap::Command {
        c.allow_negative_numbers(true).mut_subcommands(negatives)
    }
    let matches = negatives(Cli::command()).get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// How a command prints what it found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Markdown,
}

/// A failed write to standard output (see `evalbench_host::out`): `main`
/// tells a closed pipe, a quiet end, from a real error.
#[derive(Debug)]
pub struct StdoutError(std::io::Error);

impl std::fmt::Display for StdoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "writing to standard output: {}", self.0)
    }
}

impl std::error::Error for StdoutError {}

pub fn stdout_error(e: std::io::Error) -> anyhow::Error {
    StdoutError(e).into()
}

/// Claims `entries` of `dir` for a command's outputs, in its manifest,
/// before anything is written: refused where another's file stands there
/// (evalbench replaces only what it wrote, `bundle::manifest`).
pub fn claim(dir: &std::path::Path, entries: &[String]) -> anyhow::Result<()> {
    evalbench_bundle::manifest::claim(dir, entries, None)
        .map_err(|e| anyhow::anyhow!("{e} (give -o another directory)"))
}

/// Writes `text` to standard output, checked and flushed.
pub fn emit(text: &str) -> anyhow::Result<()> {
    let mut w = evalbench_host::out::stdout();
    w.bytes(text.as_bytes());
    w.finish().map_err(stdout_error)
}

/// Flushes a command's output; its first write error, if any.
pub fn done<W: std::io::Write>(w: evalbench_host::out::Out<W>) -> anyhow::Result<()> {
    w.finish().map_err(stdout_error)
}

/// The error and its causes, outermost first ("what we were doing: why it
/// failed"); a cause the message above already quotes is not repeated.
pub fn chain(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if !text.contains(&c) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&c);
        }
    }
    text
}

/// Blocks of a megabyte or more are mapped, and unmapped when freed, at a
/// fixed threshold: glibc raises its threshold to the largest block freed
/// (up to 32 MiB), after which the span tables of the next run compared are
/// carved from the heap around the freed ones, and `compare` of a 4.5M-span
/// pass against itself peaked at 1,633 MiB where one load peaks at 1,230
/// (1,213 with this; `bench/analysis.sh`). Time unchanged.
fn large_blocks_back_on_free() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every flag and argument a user can see says what it does.
    #[test]
    fn every_visible_flag_has_a_help_line() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if a.is_hide_set() || id == "help" || id == "version" {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if !sub.is_hide_set() {
                    walk(sub, &format!("{path} {}", sub.get_name()), missing);
                }
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "evalbench", &mut missing);
        assert!(missing.is_empty(), "flags without help: {missing:?}");
    }
}
