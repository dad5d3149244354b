//! `evalbench compare A B`: two bundles, pass by pass, with verdicts that
//! survive scrutiny: a change is "outside noise" only when the tests say so,
//! a pass with one run gives no verdict, and a cold pass is never set
//! against a warm one.

use std::path::PathBuf;
use std::process::ExitCode;

use evalbench_analyze::comparison::{compare, Opts};
use evalbench_analyze::gate::regressions;
use evalbench_bundle::Bundle;

/// The floors of "negligible", as `compare` takes them by default (their home is the verdict's rules).
pub use evalbench_analyze::verdict::{MIN_ABS_US, MIN_CHANGE_PCT};
use evalbench_report::compare::json::{json, regression_lines, HTML_TOP, TOP};

#[derive(clap::Args)]
pub struct Args {
    /// The baseline bundle (directory or .tar.gz), or a Gradient diagnostic report: nix's counts
    /// judged exactly, times side by side, one evaluation a side (B a report too, or a bundle of the
    /// same flake, of which one run of --pass-b, else cold-clean, is set beside it).
    pub a: PathBuf,
    /// The bundle to judge against it.
    pub b: PathBuf,
    /// Compare this pass of A (all its runs), or one run of it (PASS.N: cold-clean.2; a run the
    /// bundle lacks is refused) ...
    #[arg(long, requires = "pass_b")]
    pub pass_a: Option<String>,
    /// ... against this pass (or run) of B. Refused when one is cold and the other warm.
    #[arg(long, requires = "pass_a")]
    pub pass_b: Option<String>,
    /// Print every verdict as JSON on stdout (per pass: headline, spans, statements, counters, families); --format
    /// json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// text (for a terminal), json (for scripts) or markdown (GitHub tables, for a pull request comment or
    /// $GITHUB_STEP_SUMMARY).
    #[arg(long, value_enum, default_value = "text")]
    pub format: crate::Format,
    /// Text: under every row, its full verdict with the tests (Mann-Whitney p, Holm-adjusted p,
    /// the interval of the ratio of medians), as --json has them.
    #[arg(long, short)]
    pub verbose: bool,
    /// Exit 1 when a clean pass's evaluated time is slower outside noise by at least this many
    /// percent, or when one of nix's exact counters (nrFunctionCalls, nrThunks, gc.totalBytes,
    /// nrPrimOpCalls, nrLookups, envs.number, values.number) grew by more than this: counts need
    /// no repeats. Times that could not be judged are listed on stderr.
    #[arg(long, value_name = "PCT", value_parser = crate::percent::parse, allow_hyphen_values = true)]
    pub fail_on_regression: Option<f64>,
    /// With --fail-on-regression: judge what both sides have, and pass where a measure the gate
    /// judges (a pass, a counter of nix) is on one side only. Without it the gate fails closed
    /// there (exit 2, "cannot judge"): a counter that vanished is not a counter that held.
    #[arg(long, requires = "fail_on_regression")]
    pub allow_missing: bool,
    /// Exit 1 when a clean pass's evaluated time could not be judged (too few runs a side).
    #[arg(long)]
    pub fail_on_undecided: bool,
    /// Rows to show per list of a pass (counters, spans, statements, plans; each side's own rows
    /// apart): 15 unless given in text and Markdown, 100 on the --html page; the rest are counted.
    /// All are in --json.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// A change smaller than this percentage of A's median is "negligible".
    #[arg(long, default_value_t = MIN_CHANGE_PCT, value_name = "PCT", value_parser = crate::percent::parse,
        allow_hyphen_values = true)]
    pub min_change: f64,
    /// ... and so is a change of a span's or statement's total smaller than this many µs per run.
    #[arg(long, default_value_t = MIN_ABS_US, value_name = "US", value_parser = crate::percent::amount,
        allow_hyphen_values = true)]
    pub min_abs_us: f64,
    /// When A and B were measured in two sessions (two `run`s, not one `run --baseline`): a time
    /// change no larger than this percentage is "inside the drift between sessions", never a
    /// verdict or a gate. The default is what two sessions of one flake differed by on the
    /// machine it was measured on (docs/sessions.md); measure your own with bench/lab-aa.sh,
    /// 0 turns it off. Nix's exact counters are judged without it.
    #[arg(long, default_value_t = evalbench_analyze::comparison::BETWEEN_SESSIONS_PCT, value_name = "PCT",
        value_parser = crate::percent::parse, allow_hyphen_values = true)]
    pub between_sessions: f64,
    /// Also write the whole comparison as one self-contained page, DIR/index.html: passes,
    /// spans, statements, nix's counters and, for instrumented passes, both sides' plans.
    #[arg(long, value_name = "DIR")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub unpack: crate::size::MaxUnpacked,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    if crate::production::is_report(&a.a) || crate::production::is_report(&a.b) {
        return crate::production::compare(&a);
    }
    if let Some(dir) = &a.html {
        crate::claim(dir, &["index.html".into()])?;
    }
    let ba = Bundle::open(&a.a, a.unpack.limits())?;
    let bb = Bundle::open(&a.b, a.unpack.limits())?;
    let opts = Opts {
        pass_a: a.pass_a.clone(),
        pass_b: a.pass_b.clone(),
        min_change: a.min_change,
        min_abs_us: a.min_abs_us,
        between_sessions_pct: Some(a.between_sessions),
    };
    let (out, gate) = judged(&ba, &bb, &opts, a.fail_on_regression)?;
    let (na, nb) = (a.a.display().to_string(), a.b.display().to_string());
    let asked = a.fail_on_regression.map(|pct| (pct, gate.as_slice()));
    let text = match if a.json { crate::Format::Json } else { a.format } {
        crate::Format::Json => json(&a.a, &a.b, &out, a.fail_on_regression, &gate),
        crate::Format::Text => {
            evalbench_report::compare::text::text(&na, &nb, &out, a.top.unwrap_or(TOP), asked, a.verbose)
        }
        crate::Format::Markdown => {
            evalbench_report::compare::text::markdown(&na, &nb, &out, a.top.unwrap_or(TOP), asked)
        }
    };
    if let Some(dir) = &a.html {
        let w = evalbench_report::compare::html::render(&a.a, &a.b, &out, dir, a.top.unwrap_or(HTML_TOP), asked)?;
        eprintln!(
            "evalbench compare: {} ({} bytes, {} statements with a changed plan)",
            w.page.display(),
            w.page_bytes,
            w.plans_changed
        );
    }
    // What had to be read past comes first, each with its file and line.
    for w in evalbench_report::output::warnings::grouped(&out.warnings) {
        eprintln!("evalbench compare: warning: {w}");
    }
    crate::emit(&text)?;
    for line in evalbench_report::compare::text::undecided(&out) {
        eprintln!("evalbench compare: {line}");
    }
    if !out.differs.is_empty() {
        eprintln!("evalbench compare: A and B differ in {} (listed above)", out.differing_groups().join(", "));
    }
    if let Some(code) = gate_exit("evalbench compare", (a.fail_on_regression, a.allow_missing), &out, &gate) {
        return Ok(code);
    }
    if a.fail_on_undecided && !out.undecided.is_empty() {
        eprintln!("evalbench compare: {} time(s) could not be judged (--fail-on-undecided)", out.undecided.len());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The comparison of two bundles and, with a gate (`pct`), the regressions
/// past it as compare's lines: the one entry point of `compare` and of
/// `run --baseline`.
pub fn judged(
    ba: &Bundle,
    bb: &Bundle,
    opts: &Opts,
    pct: Option<f64>,
) -> Result<(evalbench_analyze::comparison::Comparison, Vec<String>), evalbench_analyze::compare_error::CompareError> {
    let c = compare(ba, bb, opts)?;
    let gate = pct.map(|pct| regression_lines(&regressions(&c, pct))).unwrap_or_default();
    Ok((c, gate))
}

/// The gate's exit, where it decides one: 1 when it fired (each regression
/// said), 2 when it cannot judge what one side lacks (unless allowed).
pub fn gate_exit(
    who: &str,
    (pct, allow_missing): (Option<f64>, bool),
    c: &evalbench_analyze::comparison::Comparison,
    gate: &[String],
) -> Option<ExitCode> {
    if gate_fired(who, pct, gate) {
        return Some(ExitCode::from(1));
    }
    gate_blind(who, pct, allow_missing, c)
}

/// The gate cannot judge what one side lacks: exit 2 naming it, unless
/// `--allow-missing` (then each is said, and the gate stands on the rest).
fn gate_blind(
    who: &str,
    pct: Option<f64>,
    allow: bool,
    c: &evalbench_analyze::comparison::Comparison,
) -> Option<ExitCode> {
    pct?;
    if c.missing.is_empty() {
        return None;
    }
    for m in &c.missing {
        let what = if allow { "not judged (--allow-missing)" } else { "cannot judge" };
        eprintln!("{who}: {what}: {}", evalbench_report::words::missing(m));
    }
    (!allow).then(|| {
        eprintln!("{who}: the gate fails closed on what one side lacks; --allow-missing judges what both sides have");
        ExitCode::from(2)
    })
}

/// Whether the gate fired; each regression on stderr, after `who`.
fn gate_fired(who: &str, pct: Option<f64>, gate: &[String]) -> bool {
    let Some(pct) = pct else { return false };
    for g in gate {
        eprintln!("{who}: regression past {pct}%: {g}");
    }
    !gate.is_empty()
}
