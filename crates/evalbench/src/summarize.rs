//! `evalbench summarize`: bundle in, summary and traces out.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use evalbench_analyze::{align_pass, load_pass, Warning};
use evalbench_bundle::{layout, write_atomic, Bundle, Limits};
use evalbench_report::summary::NotSummarized;
use evalbench_report::{write_trace, PassSummary, Summary};

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
    /// Refuse archives that unpack to more than this (e.g. 512M, 16G).
    #[arg(long, default_value = "16G", value_parser = crate::size::parse_size)]
    pub max_unpacked: u64,
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

pub fn run(args: Args) -> Result<ExitCode, String> {
    let out = args.out.clone().unwrap_or_else(|| default_out(&args.bundle));
    let (json, text) = summarize_bundle(&args.bundle, &out, args.max_unpacked, args.no_trace, args.quiet)?;
    if args.json {
        println!("{json}");
    } else {
        print!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads a bundle, writes summary.txt, summary.json and the traces into
/// `out`; returns the two summaries' text.
pub fn summarize_bundle(bundle_path: &Path, out: &Path, max_unpacked: u64, no_trace: bool, quiet: bool) -> Result<(String, String), String> {
    let t0 = Instant::now();
    let limits = Limits { max_unpacked_bytes: max_unpacked, ..Limits::default() };
    let bundle = Bundle::open(bundle_path, limits).map_err(|e| e.to_string())?;
    let out = out.to_path_buf();
    let progress = |msg: String| {
        if !quiet {
            eprintln!("evalbench summarize: {msg}");
        }
    };
    let mut summary = Summary {
        evalbench_version: env!("CARGO_PKG_VERSION"),
        bundle: bundle_path.display().to_string(),
        passes: Vec::new(),
        repeats: Vec::new(),
        not_summarized: Vec::new(),
        warnings: Vec::new(),
    };
    let mut usable = 0usize;
    for pass in &bundle.passes {
        let t = Instant::now();
        let data = load_pass(pass);
        let alignment = align_pass(&data.streams);
        let spans = data.span_count();
        // Warnings name files inside the bundle as the bundle names them.
        summary.warnings.extend(data.warnings.iter().cloned().map(|w| relative(w, &bundle.root)));
        if spans > 0 || data.run.is_some() {
            usable += 1;
        }
        // The statistics are computed while the trace is written: both only read the spans.
        let wants_summary = layout::is_clean(&pass.name) && !(spans == 0 && data.run.is_none());
        let (traced, pass_summary) = std::thread::scope(|s| {
            let stats = s.spawn(|| wants_summary.then(|| PassSummary::new(&data, &alignment)));
            let traced = if spans > 0 && !no_trace {
                let path = out.join(&pass.name).join(layout::TRACE_JSON);
                write_trace(&path, &pass.name, &data.streams, &alignment).map(|_| ()).map_err(|e| format!("{}: {e}", path.display()))
            } else {
                Ok(())
            };
            (traced, stats.join().unwrap_or(None))
        });
        traced?;
        if layout::is_clean(&pass.name) {
            match pass_summary {
                Some(p) => summary.passes.push(p),
                None => summary.not_summarized.push(NotSummarized { pass: pass.name.clone(), reason: "no spans and no run.json".into() }),
            }
        } else {
            summary.not_summarized.push(NotSummarized {
                pass: pass.name.clone(),
                reason: "instrumented pass: perf, strace and auto_explain distort its timings (trace.json written)".into(),
            });
        }
        progress(format!("{}: {spans} spans from {} processes in {:.2} s", pass.name, data.streams.len(), t.elapsed().as_secs_f64()));
    }
    if usable == 0 {
        for w in &summary.warnings {
            eprintln!("evalbench summarize: {w}");
        }
        return Err(format!("{}: nothing usable: no pass has spans or a readable run.json", bundle_path.display()));
    }
    summary.repeats = evalbench_report::summary::RepeatGroup::group(&summary.passes);
    let json = summary.to_json();
    let text = summary.to_text();
    write_atomic(&out.join(layout::SUMMARY_JSON), json.as_bytes()).map_err(|e| e.to_string())?;
    write_atomic(&out.join(layout::SUMMARY_TXT), text.as_bytes()).map_err(|e| e.to_string())?;
    progress(format!("wrote {} and {} in {:.2} s", out.join(layout::SUMMARY_TXT).display(), layout::SUMMARY_JSON, t0.elapsed().as_secs_f64()));
    Ok((json, text))
}

fn relative(mut w: Warning, root: &Path) -> Warning {
    if let Some(f) = &w.file {
        if let Ok(r) = f.strip_prefix(root) {
            w.file = Some(r.to_path_buf());
        }
    }
    w
}
