//! `evalbench summarize`: bundle in, summary and traces out.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use evalbench_bundle::{layout, ownership, Bundle, Limits};
use evalbench_report::summarize::{summarize_bundle, SummarizeOpts};

#[derive(clap::Args)]
pub struct Args {
    /// The bundle: a directory, or a .tar.gz of one.
    pub bundle: PathBuf,
    /// Where to write summary.txt, summary.json and <run>/trace.json; a
    /// file there that evalbench did not write is never replaced (exit 2).
    /// Default: the bundle directory itself, or for an archive a directory
    /// named after it (evalbench.tar.gz -> evalbench/); where that holds
    /// another tool's summary or traces (a bundle Gradient wrote), its
    /// evalbench/ directory.
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Print summary.json on stdout instead of summary.txt.
    #[arg(long)]
    pub json: bool,
    /// Print every run's own section (alignment, window, critical path,
    /// span table), in the order the runs were made, instead of the answer
    /// over each pass's runs that summary.txt holds.
    #[arg(long, conflicts_with = "json")]
    pub runs: bool,
    #[command(flatten)]
    pub unpack: crate::size::MaxUnpacked,
    /// Do not write <run>/trace.json.
    #[arg(long)]
    pub no_trace: bool,
    /// No progress lines on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

fn default_out(bundle: &Path) -> PathBuf {
    if bundle.is_dir() {
        return bundle.to_path_buf();
    }
    let name = bundle.file_name().and_then(|n| n.to_str()).unwrap_or("bundle");
    let stem = name.trim_end_matches(".tar.gz").trim_end_matches(".tgz");
    bundle.with_file_name(if stem.is_empty() || stem == name { "evalbench-summary" } else { stem })
}

/// What summarize would write into `out` that another tool wrote first.
fn foreign_in(out: &Path, bundle: &Bundle, no_trace: bool) -> Vec<PathBuf> {
    let mut files = vec![out.join(layout::SUMMARY_TXT), out.join(layout::SUMMARY_JSON)];
    if !no_trace {
        files.extend(bundle.passes.iter().map(|p| out.join(&p.name).join(layout::TRACE_JSON)));
    }
    files.into_iter().filter(|f| ownership::foreign(f)).collect()
}

/// Where summarize writes: `-o` as given, refused where it would replace
/// another tool's file; by default the bundle (or the directory named
/// after its archive), unless that holds another tool's summary or traces
/// (Gradient's bundle has its own): then its `evalbench/` directory.
fn out_dir(args: &Args, bundle: &Bundle) -> anyhow::Result<PathBuf> {
    let out = args.out.clone().unwrap_or_else(|| default_out(&args.bundle));
    let theirs = foreign_in(&out, bundle, args.no_trace);
    if theirs.is_empty() {
        return Ok(out);
    }
    let named = theirs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    if args.out.is_some() {
        anyhow::bail!("{named}: not written by evalbench; refusing to replace it (give -o another directory)");
    }
    let beside = out.join(OURS_BESIDE);
    if !foreign_in(&beside, bundle, args.no_trace).is_empty() {
        anyhow::bail!("{named} and {}: not written by evalbench; refusing to replace them (give -o a directory)", beside.display());
    }
    if !args.quiet {
        eprintln!("evalbench summarize: {named} are another tool's: ours go to {}", beside.display());
    }
    Ok(beside)
}

/// Where summarize's files go inside a bundle that holds another tool's.
pub const OURS_BESIDE: &str = "evalbench";

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let limits = args.unpack.limits();
    let bundle = Bundle::open(&args.bundle, limits)?;
    let out = out_dir(&args, &bundle)?;
    let quiet = args.quiet;
    let mut progress = |msg: String| {
        if !quiet {
            eprintln!("evalbench summarize: {msg}");
        }
    };
    let opts = SummarizeOpts { no_trace: args.no_trace, runs: args.runs };
    let (json, text) = summarize_bundle(&bundle, &out, opts, &mut progress)?;
    if args.json {
        crate::emit(&format!("{json}\n"))?;
    } else {
        crate::emit(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// For `gate`: summarize a bundle directory into itself, quietly.
pub fn summarize_dir(dir: &Path) -> anyhow::Result<String> {
    let bundle = Bundle::open(dir, Limits::default())?;
    let (_, text) = summarize_bundle(&bundle, dir, SummarizeOpts::default(), &mut |_| {})?;
    Ok(text)
}
