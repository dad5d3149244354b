//! `evalbench summarize`: bundle in, summary and traces out.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use evalbench_bundle::{Bundle, Limits};
use evalbench_report::summarize::{summarize_bundle, SummarizeOpts};

#[derive(clap::Args)]
pub struct Args {
    /// The bundle: a directory, or a .tar.gz of one.
    pub bundle: PathBuf,
    /// Where to write summary.txt, summary.json and <run>/trace.json.
    /// Default: the bundle directory itself, or for an archive a directory
    /// named after it (evalbench.tar.gz -> evalbench/).
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

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let out = args.out.clone().unwrap_or_else(|| default_out(&args.bundle));
    let limits = args.unpack.limits();
    let bundle = Bundle::open(&args.bundle, limits)?;
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
