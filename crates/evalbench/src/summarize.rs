//! `evalbench summarize`: bundle in, summary and traces out.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use evalbench_bundle::{layout, manifest, Bundle, Limits};
use evalbench_report::summary::write::SummarizeOpts;

#[derive(clap::Args)]
pub struct Args {
    /// The bundle: a directory, or a .tar.gz of one; or a Gradient diagnostic report
    /// (its SQLite file: the evaluation's stages, nix's counts, jobs and workers).
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

/// What summarize writes into its output directory (manifest entries).
fn entries(bundle: &Bundle, no_trace: bool) -> Vec<String> {
    let mut files = vec![layout::SUMMARY_TXT.to_string(), layout::SUMMARY_JSON.to_string()];
    if !no_trace {
        files.extend(
            bundle.passes.iter().chain(&bundle.incomplete).map(|p| format!("{}/{}", p.name, layout::TRACE_JSON)),
        );
    }
    files
}

/// Where summarize writes, claimed in its manifest before anything is
/// written: `-o` as given, refused where it would replace another's file;
/// by default the bundle (or, for an archive, the directory named after it,
/// which must be that archive's own output), unless that holds another
/// tool's summary or traces (Gradient's bundle has its own): then its
/// `evalbench/` directory.
fn out_dir(args: &Args, bundle: &Bundle) -> anyhow::Result<PathBuf> {
    let out = args.out.clone().unwrap_or_else(|| default_out(&args.bundle));
    let files = entries(bundle, args.no_trace);
    // An archive's default output directory is that archive's alone.
    let archive = (args.out.is_none() && !args.bundle.is_dir())
        .then(|| std::path::absolute(&args.bundle).unwrap_or_else(|_| args.bundle.clone()));
    if archive.is_some() || args.out.is_some() {
        manifest::claim(&out, &files, archive.as_deref())
            .map_err(|e| anyhow::anyhow!("{e} (give -o another directory)"))?;
        return Ok(out);
    }
    let theirs = match manifest::owner(&out, &files, None)? {
        manifest::Owner::Other(p) => p,
        _ => {
            manifest::claim(&out, &files, None)?;
            return Ok(out);
        }
    };
    let beside = out.join(OURS_BESIDE);
    if let manifest::Owner::Other(p) = manifest::owner(&beside, &files, None)? {
        anyhow::bail!(
            "{} and {}: not written by evalbench; refusing to replace them (give -o a directory)",
            theirs.display(),
            p.display()
        );
    }
    if !args.quiet {
        eprintln!("evalbench summarize: {} is another tool's: ours go to {}", theirs.display(), beside.display());
    }
    manifest::claim(&beside, &files, None)?;
    Ok(beside)
}

/// Where summarize's files go inside a bundle that holds another tool's.
pub const OURS_BESIDE: &str = "evalbench";

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if crate::production::is_report(&args.bundle) {
        return crate::production::summarize(&args);
    }
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
    let (_, json, text) = summarize(&bundle, &out, opts, &mut progress)?;
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
    let (_, _, text) = summarize(&bundle, dir, SummarizeOpts::default(), &mut |_| {})?;
    Ok(text)
}

/// The summary of `bundle` (analyze's, trace.json written as it is made),
/// written into `out`: the summary, summary.json's and summary.txt's text
/// (`opts.runs`: every run's section instead of the answer). `progress`
/// hears a line a pass and one at the end.
pub fn summarize(
    bundle: &Bundle,
    out: &Path,
    opts: SummarizeOpts,
    progress: &mut dyn FnMut(String),
) -> Result<(evalbench_analyze::summary::Summary, String, String), evalbench_report::ReportError> {
    use evalbench_report::summary::write::{no_summary, pass_done, write, TraceFiles};
    let started = std::time::Instant::now();
    let sink = TraceFiles { out, no_trace: opts.no_trace };
    let summary = evalbench_analyze::summary::summary(bundle, &sink, &mut |p| progress(pass_done(&p)))
        .map_err(|e| no_summary(bundle, e))?;
    let (json, text) = write(&summary, out, opts, started, progress)?;
    Ok((summary, json, text))
}
