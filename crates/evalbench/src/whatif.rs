//! `evalbench whatif`: a pass's critical path, and what shortening some
//! spans would buy (a prediction from the measured pass).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use evalbench_analyze::path::{critical_path, whatif, CriticalPath, OverRuns};
use evalbench_bundle::Bundle;
use serde::ser::SerializeMap;
use serde::Serialize;

#[derive(clap::Args)]
pub struct Args {
    /// The bundle: a directory, or a .tar.gz of one.
    pub bundle: PathBuf,
    /// The pass (all its runs: the answer over them, and the run nearest their median in
    /// full), or one run of it as PASS.N (cold-clean.1 is the directory cold-clean; a run the
    /// pass lacks is refused). With --faster, the prediction is made on every run of the pass,
    /// each on its own path, and given as a median and range.
    #[arg(long, default_value = "cold-clean")]
    pub pass: String,
    /// Shorten the step NAME by PCT percent (with or without %) of its time as the path table counts it:
    /// a span's own time (less its children and the spans it waited on) less the PostgreSQL round trips
    /// inside it, a statement's round trips, or a wait. NAME as the tables print it ("server record_one",
    /// "postgres SELECT …", "wait: network (…)"), PROCESS:NAME, or the name alone; repeatable.
    /// Without it, the pass's critical path is printed.
    #[arg(long, value_name = "NAME=PCT", value_parser = whatif::parse_faster)]
    pub faster: Vec<(String, f64)>,
    /// Steps listed (the rest are counted).
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// Print JSON (the answer over the runs, the shown run's path, and the prediction when --faster is given).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub unpack: crate::size::MaxUnpacked,
    /// No timing line on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// One run walked: what the answer reads of it.
struct Walked {
    name: String,
    evaluated_s: Option<f64>,
    path: Option<(Vec<evalbench_analyze::path::PathStep>, Vec<evalbench_analyze::path::ByProcess>, Vec<whatif::Buys>)>,
    predicted: Option<whatif::WhatIf>,
}

/// The runs walked, the one shown whole if known, and the spans read.
struct Walk {
    walked: Vec<Walked>,
    shown: Option<(String, CriticalPath)>,
    spans: usize,
}

/// Every run of the pass walked: its evaluated seconds, its critical path,
/// what shortening each step buys (and, with --faster, the prediction); and
/// the run nearest the median, whole, where run.json said which it is;
/// with the spans read.
fn walk_runs(a: &Args, runs: &[&evalbench_bundle::PassDir]) -> anyhow::Result<Walk> {
    // The run shown in full is the one nearest the median: its evaluated
    // seconds are read first, from run.json, or its spans where it has none.
    let mut spans = 0usize;
    let mut walked: Vec<Walked> = Vec::new();
    let mut shown: Option<(String, CriticalPath)> = None;
    // Where every run.json gives the evaluated seconds, the median run is
    // known before walking, and only its path is kept (at 4.5M spans a path
    // holds 2M stretches: not one per run).
    let pre: Option<Vec<f64>> = runs
        .iter()
        .map(|r| {
            let info = evalbench_bundle::RunInfo::read(&r.file(evalbench_bundle::layout::RUN_JSON)).ok();
            evalbench_analyze::evaluated(info.as_ref()).map(evalbench_bundle::num::s)
        })
        .collect();
    let keep = pre.map(|v| evalbench_analyze::over_runs::median_index(&v));
    let mut warned: Vec<String> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        // The path reads no span's fields but the hand-offs'.
        let (data, align) = evalbench_analyze::load(r, evalbench_analyze::Fields::Read);
        // What reading went past (an unreadable run.json, malformed span lines), said once the runs are read.
        warned.extend(data.warnings.iter().map(ToString::to_string));
        spans += data.span_count();
        let evaluated_s = evalbench_analyze::over_runs::evaluated_of(&data);
        // The spans are given up to the graph: nothing below reads them.
        let (_, found) = critical_path(data, &align);
        let mut w = Walked { name: r.name.clone(), evaluated_s, path: None, predicted: None };
        match found {
            Ok((g, p)) => {
                if !a.faster.is_empty() {
                    w.predicted = Some(
                        whatif::whatif(&g, &p, &a.faster, &align)
                            .with_context(|| format!("{}: run {}", a.bundle.display(), r.name))?,
                    );
                }
                w.path =
                    Some((p.steps.clone(), p.by_process(), whatif::buys(&g, &p, evalbench_analyze::over_runs::BUYS)));
                walked.push(w);
                if keep == Some(i) || runs.len() == 1 {
                    shown = Some((r.name.clone(), p));
                }
            }
            Err(e) if runs.len() == 1 => {
                say_warnings(&warned);
                return Err(anyhow::Error::new(e).context(format!("{}: run {}", a.bundle.display(), r.name)));
            }
            Err(e) => {
                warned.push(format!("{}: run {}: no critical path: {e}", a.bundle.display(), r.name));
                walked.push(w);
            }
        }
    }
    say_warnings(&warned);
    Ok(Walk { walked, shown, spans })
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    crate::production::no_spans_in_a_report(&a.bundle)?;
    let bundle = Bundle::open(&a.bundle, a.unpack.limits())?;
    let base = evalbench_bundle::layout::base_name(&a.pass).to_string();
    let mut grouped = evalbench_analyze::runs::group(&bundle);
    if !grouped.contains_key(&base) {
        let have: Vec<&str> = grouped.keys().map(String::as_str).collect();
        anyhow::bail!(
            "{}: no pass {:?}; {}",
            a.bundle.display(),
            a.pass,
            evalbench_analyze::suggest::pass_hint(&a.pass, &have)
        );
    }
    // A pass name is the pass, all its runs; PASS.N is one run, or an error.
    evalbench_analyze::runs::select_run(&mut grouped, &a.pass, &a.bundle)?;
    let runs: Vec<&evalbench_bundle::PassDir> = grouped.remove(&base).unwrap_or_default();
    let t = std::time::Instant::now();
    let distorted = distorted(&a.pass, &base);
    if let Some(d) = &distorted {
        eprintln!("evalbench whatif: warning: {d}");
    }
    let Walk { walked, shown, spans } = walk_runs(&a, &runs)?;
    let answer = evalbench_analyze::over_runs::answer(
        &base,
        &walked
            .iter()
            .map(|w| evalbench_analyze::over_runs::RunPath {
                name: &w.name,
                evaluated_s: w.evaluated_s,
                path: w.path.as_ref().map(|(s, p, b)| (s.as_slice(), p.as_slice(), b.as_slice())),
            })
            .collect::<Vec<_>>(),
    );
    let at = answer.median_run_number - 1;
    // The median run's path; walked again only where it was not known before.
    let (shown_name, path) = match shown.filter(|(n, _)| *n == answer.median_run) {
        Some(s) => s,
        None => {
            let r = runs[at];
            let (data, align) = evalbench_analyze::load(r, evalbench_analyze::Fields::Read);
            let (_, p) =
                critical_path(data, &align).1.with_context(|| format!("{}: run {}", a.bundle.display(), r.name))?;
            (r.name.clone(), p)
        }
    };
    let predicted = walked.get(at).and_then(|w| w.predicted.clone());
    let each: Vec<whatif::WhatIf> = walked.iter().filter_map(|w| w.predicted.clone()).collect();
    let over = (each.len() > 1).then(|| OverRuns::of(&each));
    if !a.quiet {
        eprintln!(
            "evalbench whatif: {}: {} runs, {spans} spans, walked in {:.2} s",
            a.pass,
            runs.len(),
            t.elapsed().as_secs_f64()
        );
    }
    if a.json {
        let mut w = evalbench_host::out::stdout();
        let doc = Doc {
            pass: &a.pass,
            answer: &answer,
            run: &shown_name,
            path: &path,
            whatif: predicted.as_ref(),
            over_runs: over.as_ref(),
        };
        if let Err(e) = serde_json::to_writer_pretty(&mut w, &doc) {
            w.fail(e.into());
        }
        w.bytes(b"\n");
        crate::done(w)?;
    } else {
        let runs = runs.len();
        let shown =
            Shown { name: &shown_name, at, runs, path: &path, predicted: predicted.as_ref(), over: over.as_ref() };
        print_text(&a, &bundle, (&base, distorted), &answer, shown)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Why a pass's path and predictions are shapes, not durations, where they are.
fn distorted(pass: &str, base: &str) -> Option<String> {
    (!evalbench_bundle::layout::is_clean(base)).then(|| {
        let why = if evalbench_bundle::layout::is_counted(base) {
            "a counted pass: nix ran under Valgrind, 15-30 times slower"
        } else {
            "an instrumented pass: perf, strace and auto_explain distort its timings"
        };
        format!("{}: {why}, so its path and any prediction are shapes, not durations (a clean pass's are)", pass)
    })
}

/// The run whose path is shown, and what was predicted on it and over the runs.
struct Shown<'a> {
    name: &'a str,
    at: usize,
    runs: usize,
    path: &'a CriticalPath,
    predicted: Option<&'a whatif::WhatIf>,
    over: Option<&'a OverRuns>,
}

/// The answer, the shown run's path and its prediction, as text.
fn print_text(
    a: &Args,
    bundle: &Bundle,
    (base, distorted): (&str, Option<String>),
    answer: &evalbench_analyze::over_runs::PassAnswer,
    s: Shown<'_>,
) -> anyhow::Result<()> {
    let mut t = distorted.map(|d| format!("{d}\n")).unwrap_or_default();
    // A pass whose runs did not all complete says so first: the answer is over those that did.
    if let Some(st) = evalbench_analyze::outcomes::of_bundle(bundle).iter().find(|st| st.pass == base) {
        if let Some(word) = evalbench_report::words::pass_status(st) {
            t.push_str(&format!("{base}: {word}: the answer is over those\n"));
        }
    }
    t.push_str(&evalbench_report::output::path::answer_text(answer));
    let label = if s.runs > 1 {
        format!("{} (run {}, nearest the median of {} runs)", s.name, s.at + 1, s.runs)
    } else {
        s.name.to_string()
    };
    t.push_str(&evalbench_report::output::path::path_text(&label, s.path, a.top));
    if let Some(w) = s.predicted {
        t.push_str(&evalbench_report::output::path::whatif_text(&label, w, s.path, s.over, a.top));
    }
    crate::emit(&t)?;
    Ok(())
}

/// The JSON, written as it is serialized: built as one `serde_json::Value`
/// first, the path's 2M stretches at 4.5M spans took 3 GB. Every object's
/// keys are in sorted order, as that Value wrote them.
struct Doc<'a> {
    pass: &'a str,
    answer: &'a evalbench_analyze::over_runs::PassAnswer,
    run: &'a str,
    path: &'a CriticalPath,
    whatif: Option<&'a whatif::WhatIf>,
    over_runs: Option<&'a OverRuns>,
}

impl Serialize for Doc<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut m = ser.serialize_map(Some(6))?;
        m.serialize_entry("answer", self.answer)?;
        m.serialize_entry("over_runs", &self.over_runs)?;
        m.serialize_entry("pass", self.pass)?;
        m.serialize_entry("path", &Path(self.path))?;
        m.serialize_entry("run", self.run)?;
        m.serialize_entry("whatif", &self.whatif.map(sorted).transpose().map_err(serde::ser::Error::custom)?)?;
        m.end()
    }
}

/// The path: its small fields through a Value (which sorts their keys),
/// its stretches one at a time (`Segment` writes its keys sorted too).
struct Path<'a>(&'a CriticalPath);

impl Serialize for Path<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let head = CriticalPath {
            from_us: p.from_us,
            to_us: p.to_us,
            total_us: p.total_us,
            bound_us: p.bound_us,
            steps: Vec::new(),
            segments: Vec::new(),
            note: p.note.clone(),
        };
        let serde_json::Value::Object(fields) = sorted(&head).map_err(serde::ser::Error::custom)? else {
            return Err(serde::ser::Error::custom("a path is an object"));
        };
        let mut m = ser.serialize_map(Some(fields.len()))?;
        for (k, v) in &fields {
            match k.as_str() {
                "segments" => m.serialize_entry(k, &p.segments)?,
                "steps" => m.serialize_entry(k, &sorted(&p.steps).map_err(serde::ser::Error::custom)?)?,
                _ => m.serialize_entry(k, v)?,
            }
        }
        m.end()
    }
}

fn sorted<T: Serialize>(v: &T) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(v)
}

/// What reading the runs went past, first on stderr: a problem every run has is one line.
fn say_warnings(warned: &[String]) {
    for w in evalbench_report::output::warnings::grouped(warned) {
        eprintln!("evalbench whatif: warning: {w}");
    }
}
