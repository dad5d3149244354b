//! `evalbench whatif`: a pass's critical path, and what shortening some
//! spans would buy (a prediction from the measured pass).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use evalbench_analyze::path::{critical_path_owned, whatif, CriticalPath, OverRuns};
use evalbench_bundle::Bundle;
use serde::ser::SerializeMap;
use serde::Serialize;

#[derive(clap::Args)]
pub struct Args {
    /// The bundle: a directory, or a .tar.gz of one.
    pub bundle: PathBuf,
    /// The run whose path is printed (a directory of the bundle, e.g. cold-clean or
    /// warm-clean.2). With --faster, the prediction is also made on every run of its pass,
    /// each on its own path, and given as a median and range.
    #[arg(long, default_value = "cold-clean")]
    pub pass: String,
    /// Shorten the step NAME by PCT percent (with or without %) of its time as the path table counts it:
    /// a span's own time less the PostgreSQL round trips inside it, a statement's round trips, or a wait.
    /// NAME as the table prints it ("server record_one", "postgres SELECT …", "wait: network (…)"),
    /// PROCESS:NAME, or the name alone; repeatable. Without it, the measured critical path is printed.
    #[arg(long, value_name = "NAME=PCT", value_parser = whatif::parse_faster)]
    pub faster: Vec<(String, f64)>,
    /// Steps listed (the rest are counted).
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// Print JSON (the path, and the prediction when --faster is given).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub unpack: crate::size::MaxUnpacked,
    /// No timing line on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let bundle = Bundle::open(&a.bundle, a.unpack.limits())?;
    let Some(pass) = bundle.passes.iter().find(|p| p.name == a.pass) else {
        let have: Vec<&str> = bundle.passes.iter().map(|p| p.name.as_str()).collect();
        anyhow::bail!("{}: no pass {:?}; {}", a.bundle.display(), a.pass, evalbench_analyze::suggest::pass_hint(&a.pass, &have));
    };
    let t = std::time::Instant::now();
    // The path reads no span's fields but the hand-offs'.
    let (data, align) = evalbench_analyze::load_aligned_lean(pass);
    // What reading went past comes first (an unreadable run.json, malformed span lines).
    for w in &data.warnings {
        eprintln!("evalbench whatif: warning: {w}");
    }
    let distorted = (!evalbench_bundle::layout::is_clean(&a.pass)).then(|| {
        format!("{}: an instrumented pass: perf, strace and auto_explain distort its timings, so its path and any prediction are shapes, not durations (a clean pass's are)", a.pass)
    });
    if let Some(d) = &distorted {
        eprintln!("evalbench whatif: warning: {d}");
    }
    let loaded = t.elapsed().as_secs_f64();
    let spans = data.span_count();
    // The spans are given up to the graph: nothing below reads them.
    let (g, path) = critical_path_owned(data, &align).1.with_context(|| format!("{}: pass {}", a.bundle.display(), a.pass))?;
    let found = t.elapsed().as_secs_f64() - loaded;
    let predicted = if a.faster.is_empty() { None } else { Some(whatif::whatif(&g, &path, &a.faster, &align)?) };
    drop(g);
    // The same prediction on every run of the pass, each on its own path.
    let base = evalbench_bundle::layout::base_name(&a.pass);
    let runs: Vec<&evalbench_bundle::PassDir> = bundle.passes.iter().filter(|p| evalbench_bundle::layout::base_name(&p.name) == base).collect();
    let over = match &predicted {
        Some(_) if runs.len() > 1 => {
            let mut each = Vec::new();
            for r in &runs {
                let (data, align) = evalbench_analyze::load_aligned_lean(r);
                let (g, p) = critical_path_owned(data, &align).1.with_context(|| format!("{}: pass {}", a.bundle.display(), r.name))?;
                each.push(whatif::whatif(&g, &p, &a.faster, &align).with_context(|| r.name.clone())?);
            }
            Some(OverRuns::of(&each))
        }
        _ => None,
    };
    if !a.quiet {
        eprintln!(
            "evalbench whatif: {}: {} spans loaded in {loaded:.2} s; path in {found:.2} s{}",
            a.pass,
            spans,
            if predicted.is_some() { format!(", prediction in {:.2} s", t.elapsed().as_secs_f64() - loaded - found) } else { String::new() }
        );
    }
    if a.json {
        let mut w = evalbench_host::out::stdout();
        let doc = Doc { pass: &a.pass, path: &path, whatif: predicted.as_ref(), over_runs: over.as_ref() };
        if let Err(e) = serde_json::to_writer_pretty(&mut w, &doc) {
            w.fail(e.into());
        }
        w.bytes(b"\n");
        crate::done(w)?;
    } else {
        let mut t = distorted.map(|d| format!("{d}\n")).unwrap_or_default();
        t.push_str(&evalbench_report::output::path::path_text(&a.pass, &path, a.top));
        if let Some(w) = &predicted {
            t.push_str(&evalbench_report::output::path::whatif_text(&a.pass, w, &path, over.as_ref(), a.top));
        }
        crate::emit(&t)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The JSON, written as it is serialized: built as one `serde_json::Value`
/// first, the path's 2M stretches at 4.5M spans took 3 GB. Every object's
/// keys are in sorted order, as that Value wrote them.
struct Doc<'a> {
    pass: &'a str,
    path: &'a CriticalPath,
    whatif: Option<&'a whatif::WhatIf>,
    over_runs: Option<&'a OverRuns>,
}

impl Serialize for Doc<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut m = ser.serialize_map(Some(4))?;
        m.serialize_entry("over_runs", &self.over_runs)?;
        m.serialize_entry("pass", self.pass)?;
        m.serialize_entry("path", &Path(self.path))?;
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
