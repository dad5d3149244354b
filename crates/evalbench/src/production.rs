//! Gradient's diagnostic report wherever a bundle is taken: `summarize`,
//! `inspect`, `compare` and `history add` ask [`is_report`] of the path and
//! come here for a SQLite file. Read by `evalbench-diagnostic`, made a
//! production evaluation by analyze, worded by the report crate.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use evalbench_analyze::production::{self, Production};

/// Whether a path is a diagnostic report (a SQLite file) rather than a bundle.
pub fn is_report(path: &Path) -> bool {
    evalbench_diagnostic::is_sqlite(path)
}

/// For the commands that walk spans (whatif): a report is refused, saying why.
pub fn no_spans_in_a_report(path: &Path) -> anyhow::Result<()> {
    if is_report(path) {
        anyhow::bail!(
            "{}: a Gradient diagnostic report holds no spans, and what-if walks a pass's spans: give a bundle \
             (summarize and compare read the report)",
            path.display()
        );
    }
    Ok(())
}

/// The production evaluation in a report, its warnings said on stderr.
pub fn read(path: &Path, max_bytes: u64, command: &str) -> anyhow::Result<Production> {
    let limits = evalbench_diagnostic::Limits { max_bytes, ..Default::default() };
    let d = evalbench_diagnostic::read(path, limits)?;
    let p = production::of_report(&d);
    for w in &p.warnings {
        eprintln!("evalbench {command}: warning: {w}");
    }
    Ok(p)
}

/// Where a report's outputs go by default: a directory named after it
/// (`gradient-report-01a05a38-2026-11-24.db` -> `gradient-report-01a05a38-2026-11-24/`).
fn beside(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("report");
    let stem = name.strip_suffix(".db").or_else(|| name.strip_suffix(".sqlite")).unwrap_or(name);
    path.with_file_name(if stem == name || stem.is_empty() { format!("{name}.summary") } else { stem.to_string() })
}

fn write(dir: &Path, files: &[(&str, &str)]) -> anyhow::Result<()> {
    let names: Vec<String> = files.iter().map(|(n, _)| n.to_string()).collect();
    crate::claim(dir, &names)?;
    for (name, text) in files {
        evalbench_bundle::write_atomic(&dir.join(name), text.as_bytes())?;
    }
    Ok(())
}

/// `summarize REPORT`: summary.txt and summary.json into `-o` (default: a
/// directory named after the report), the text (or JSON) on stdout.
pub fn summarize(a: &crate::summarize::Args) -> anyhow::Result<ExitCode> {
    let p = read(&a.bundle, a.unpack.bytes, "summarize")?;
    let text = evalbench_report::production::summary_text(&p);
    let json = evalbench_report::production::summary_json(&p);
    let out = a.out.clone().unwrap_or_else(|| beside(&a.bundle));
    write(&out, &[(evalbench_bundle::layout::SUMMARY_TXT, &text), (evalbench_bundle::layout::SUMMARY_JSON, &json)])?;
    if !a.quiet {
        eprintln!(
            "evalbench summarize: {} and {} in {}",
            evalbench_bundle::layout::SUMMARY_TXT,
            evalbench_bundle::layout::SUMMARY_JSON,
            out.display()
        );
    }
    crate::emit(&if a.json { format!("{json}\n") } else { text })?;
    Ok(ExitCode::SUCCESS)
}

/// `inspect REPORT`: index.html with the evaluation's timeline into `-o`.
pub fn inspect(a: &crate::inspect::Args) -> anyhow::Result<ExitCode> {
    let p = read(&a.bundle, a.unpack.bytes, "inspect")?;
    let text = evalbench_report::production::summary_text(&p);
    let page = evalbench_report::production::html::page(&p, &text);
    write(&a.out, &[("index.html", &page)])?;
    let path = a.out.join("index.html");
    if a.json {
        let v = serde_json::json!({"page": path, "page_bytes": page.len(), "warnings": p.warnings});
        crate::emit(&format!("{}\n", serde_json::to_string_pretty(&v).expect("serializes")))?;
    } else {
        eprintln!("evalbench inspect: {} ({} bytes)", path.display(), page.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// A side of `compare`: a report, or one run of a bundle's pass (`pass`, or
/// its first clean pass), said on stderr.
fn side(path: &Path, pass: Option<&str>, a: &crate::compare::Args) -> anyhow::Result<Production> {
    if is_report(path) {
        return read(path, a.unpack.bytes, "compare");
    }
    let bundle = evalbench_bundle::Bundle::open(path, a.unpack.limits())?;
    let clean = |p: &&evalbench_bundle::PassDir| evalbench_bundle::layout::is_clean(&p.name);
    let chosen = match pass {
        Some(name) => bundle.passes.iter().find(|p| p.name == name),
        None => bundle.passes.iter().find(|p| p.name == "cold-clean").or_else(|| bundle.passes.iter().find(clean)),
    };
    let Some(run) = chosen else {
        anyhow::bail!(
            "{}: no run {} to set beside a diagnostic report",
            path.display(),
            pass.unwrap_or("of a clean pass")
        );
    };
    eprintln!(
        "evalbench compare: {}: its run {} beside the report (one evaluation a side; its derivations are not counted, \
         its workers not sampled)",
        path.display(),
        run.name
    );
    production::bundle::of_pass(run).map_err(|e| anyhow::anyhow!("{}: {e}", run.path.display()))
}

/// `compare A B` where either is a report: the other a report too, or one
/// run of a bundle's pass (of the same flake).
pub fn compare(a: &crate::compare::Args) -> anyhow::Result<ExitCode> {
    let pa = side(&a.a, a.pass_a.as_deref(), a)?;
    let pb = side(&a.b, a.pass_b.as_deref(), a)?;
    let c = production::compare::compare(&pa, &pb);
    let gate = a.fail_on_regression.map(|pct| evalbench_report::production::compare::regression_lines(&c, pct));
    let json = a.json || a.format == crate::Format::Json;
    let text = if json {
        evalbench_report::production::compare::json(&c, gate.as_deref().unwrap_or_default())
    } else {
        evalbench_report::production::compare::text(&c)
    };
    crate::emit(&text)?;
    let Some(lines) = gate else { return Ok(ExitCode::SUCCESS) };
    if !c.missing.is_empty() && !a.allow_missing {
        let names: Vec<&str> = c.missing.iter().map(|(n, _)| n.as_str()).collect();
        eprintln!(
            "evalbench compare: cannot judge {} (on one side only; --allow-missing passes them)",
            names.join(", ")
        );
        return Ok(ExitCode::from(2));
    }
    for l in &lines {
        eprintln!("evalbench compare: regression: {l}");
    }
    Ok(if lines.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
