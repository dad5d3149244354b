//! `evalbench inspect`: a bundle (directory or .tar.gz) to one HTML page.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use evalbench_bundle::Bundle;

#[derive(clap::Args)]
pub struct Args {
    /// The bundle: a directory, or a .tar.gz of one; or a Gradient diagnostic report
    /// (its SQLite file: a page with the evaluation's timeline).
    pub bundle: PathBuf,
    /// Where to write index.html, one .svg per chart, and <run>/trace.json;
    /// a page or trace there that evalbench did not write is never replaced (exit 2).
    #[arg(short, long, default_value = "report")]
    pub out: PathBuf,
    #[command(flatten)]
    pub unpack: crate::size::MaxUnpacked,
    /// Print what was written as JSON (with `warnings`: what reading the bundle went past).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    if crate::production::is_report(&a.bundle) {
        return crate::production::inspect(&a);
    }
    let t = Instant::now();
    let bundle = Bundle::open(&a.bundle, a.unpack.limits())?;
    // The page, its charts and the traces beside it replace only what evalbench wrote.
    let mut ours = vec!["index.html".to_string()];
    for p in bundle.passes.iter().chain(&bundle.incomplete) {
        let safe = evalbench_report::html::file_safe(&p.name);
        ours.push(format!("{safe}/{}", evalbench_bundle::layout::TRACE_JSON));
        ours.push(format!("{safe}/{}", evalbench_bundle::layout::FLAME_SVG));
        ours.push(format!("{safe}/{}", evalbench_bundle::layout::WORKER_FLAME_SVG));
        ours.push(format!("{safe}/{}", evalbench_bundle::layout::NIX_FLAME_SVG));
        ours.push(format!("{safe}-*.svg"));
    }
    crate::claim(&a.out, &ours)?;
    let mut traces = evalbench_report::html::Traces::new(&a.out)?;
    let page = evalbench_analyze::view::page::page(&bundle, &mut |p, layout| traces.spans(p, layout));
    let r = evalbench_report::html::render(&page, &a.out, traces)?;
    // What reading went past (an unreadable run.json, malformed span lines), first, file and line named.
    let warnings: Vec<String> =
        page.passes.iter().flat_map(|p| p.data.warnings.iter().map(|w| w.to_string())).collect();
    for w in evalbench_report::output::warnings::grouped(&warnings) {
        eprintln!("evalbench inspect: warning: {w}");
    }
    if a.json {
        let mut v = serde_json::to_value(&r).expect("serializes");
        v["warnings"] = warnings.into();
        crate::emit(&format!("{}\n", serde_json::to_string_pretty(&v).expect("serializes")))?;
    } else {
        eprintln!(
            "evalbench inspect: {} ({} bytes, {} charts, {} spans) in {:.2} s",
            r.page.display(),
            r.page_bytes,
            r.charts,
            r.spans,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}
