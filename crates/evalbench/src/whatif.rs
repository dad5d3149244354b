//! `evalbench whatif`: a pass's critical path, and what shortening some
//! spans would buy (a prediction from the measured pass).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use evalbench_analyze::path::{critical_path, whatif};
use evalbench_bundle::Bundle;

#[derive(clap::Args)]
pub struct Args {
    /// The bundle: a directory, or a .tar.gz of one.
    pub bundle: PathBuf,
    /// The pass (a directory of the bundle, e.g. cold-clean or warm-clean.2).
    #[arg(long, default_value = "cold-clean")]
    pub pass: String,
    /// Shorten every span of NAME (or PROCESS:NAME) by PCT percent of its own time; repeatable.
    /// Without it, the measured critical path is printed.
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
        anyhow::bail!("{}: no pass {:?} (it has {})", a.bundle.display(), a.pass, have.join(", "));
    };
    let t = std::time::Instant::now();
    let (data, align) = evalbench_analyze::load_aligned(pass);
    let loaded = t.elapsed().as_secs_f64();
    let (g, path) = critical_path(&data, &align).map_err(anyhow::Error::msg).with_context(|| format!("{}: pass {}", a.bundle.display(), a.pass))?;
    let found = t.elapsed().as_secs_f64() - loaded;
    let predicted = if a.faster.is_empty() { None } else { Some(whatif::whatif(&g, &path, &a.faster, &align).map_err(anyhow::Error::msg)?) };
    if !a.quiet {
        eprintln!(
            "evalbench whatif: {}: {} spans loaded in {loaded:.2} s; path in {found:.2} s{}",
            a.pass,
            data.span_count(),
            if predicted.is_some() { format!(", prediction in {:.2} s", t.elapsed().as_secs_f64() - loaded - found) } else { String::new() }
        );
    }
    if a.json {
        let v = serde_json::json!({ "pass": a.pass, "path": path, "whatif": predicted });
        crate::emit(&format!("{}\n", serde_json::to_string_pretty(&v).expect("serializes")))?;
    } else {
        let mut t = evalbench_report::output::path::path_text(&a.pass, &path, a.top);
        if let Some(w) = &predicted {
            t.push_str(&evalbench_report::output::path::whatif_text(&a.pass, w, a.top));
        }
        crate::emit(&t)?;
    }
    Ok(ExitCode::SUCCESS)
}
