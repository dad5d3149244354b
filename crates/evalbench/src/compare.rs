//! `evalbench compare A B`: two bundles, pass by pass, with verdicts that
//! survive scrutiny: a change is "outside noise" only when the tests say so,
//! a pass with one run gives no verdict, and a cold pass is never set
//! against a warm one.

use std::path::PathBuf;
use std::process::ExitCode;

use evalbench_analyze::comparison::{compare, Opts};
use evalbench_analyze::verdict::Kind;
use evalbench_bundle::Bundle;

#[derive(clap::Args)]
pub struct Args {
    /// The baseline bundle (directory or .tar.gz).
    pub a: PathBuf,
    /// The bundle to judge against it.
    pub b: PathBuf,
    /// Compare this pass of A (with its repeats) ...
    #[arg(long, requires = "pass_b")]
    pub pass_a: Option<String>,
    /// ... against this pass of B. Refused when one is cold and the other warm.
    #[arg(long, requires = "pass_a")]
    pub pass_b: Option<String>,
    /// Print every verdict as JSON on stdout (per pass: headline, spans, statements, counters, families); --format json.
    #[arg(long)]
    pub json: bool,
    /// text (for a terminal), json (for scripts) or markdown (GitHub tables, for a pull request comment or $GITHUB_STEP_SUMMARY).
    #[arg(long, value_enum, default_value = "text")]
    pub format: crate::Format,
    /// Exit 1 when a pass's wall time is slower outside noise by at least this many percent.
    #[arg(long)]
    pub fail_on_regression: Option<f64>,
    /// Span and statement rows to print per pass (all are in --json).
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// A change smaller than this percentage of A's median is "negligible".
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub min_change: f64,
    /// ... and so is a change of a span's or statement's total smaller than this many µs per run.
    #[arg(long, default_value_t = 50.0, value_name = "US")]
    pub min_abs_us: f64,
    /// Also write the whole comparison as one self-contained page, DIR/index.html: passes,
    /// spans, statements, nix's counters and, for instrumented passes, both sides' plans.
    #[arg(long, value_name = "DIR")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub unpack: crate::size::MaxUnpacked,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let ba = Bundle::open(&a.a, a.unpack.limits())?;
    let bb = Bundle::open(&a.b, a.unpack.limits())?;
    let opts = Opts { pass_a: a.pass_a.clone(), pass_b: a.pass_b.clone(), min_change: a.min_change, min_abs_us: a.min_abs_us };
    let out = compare(&ba, &bb, &opts).map_err(anyhow::Error::msg)?;
    let text = match if a.json { crate::Format::Json } else { a.format } {
        crate::Format::Json => {
            format!("{}\n", serde_json::to_string_pretty(&serde_json::json!({ "a": a.a, "b": a.b, "passes": out })).expect("serializes"))
        }
        crate::Format::Text => evalbench_report::output::compare::text(&out, a.top),
        crate::Format::Markdown => evalbench_report::output::compare::markdown(&a.a.display().to_string(), &a.b.display().to_string(), &out, a.top),
    };
    if let Some(dir) = &a.html {
        let w = evalbench_report::comparison::render(&a.a, &a.b, &out, dir)?;
        eprintln!("evalbench compare: {} ({} bytes, {} statements with a changed plan)", w.page.display(), w.page_bytes, w.plans_changed);
    }
    crate::emit(&text)?;
    if let Some(pct) = a.fail_on_regression {
        if out.iter().any(|c| c.wall.kind == Kind::Slower && c.wall.change_pct >= pct) {
            eprintln!("evalbench compare: a pass is slower by {pct}% or more, outside noise");
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}
