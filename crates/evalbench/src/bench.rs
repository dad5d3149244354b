//! `evalbench bench`: commands measured run by run, compared with verdicts.

use std::io::IsTerminal;

use evalbench_report::output::bench::{CommandCounters, CommandResult, Comparison, Report};
use std::path::PathBuf;
use std::process::ExitCode;

use evalbench_analyze::counters::judge_counters;
use evalbench_analyze::verdict::{judge, spread, Measured, Rules, Verdict, AMOUNT, TIME};
use evalbench_harness::cmdbench::{memory_source, run_many, MemorySource, NixStats, Run};

#[derive(clap::Args)]
#[command(
    after_help = "Example: evalbench bench --runs 10 --prepare 'rm -rf ~/.cache/nix/eval-cache-v*' -- nix eval .#a -- \
        nix eval .#b\nA command given as one quoted word runs through `sh -c`; several words run directly."
)]
pub struct Args {
    /// Run before every run (not timed), e.g. to empty a cache for cold runs.
    #[arg(long)]
    pub prepare: Option<String>,
    /// Runs before the measured ones, not recorded.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Measured runs of each command (at least 2 for a spread; 6 a side for a verdict at 5%).
    #[arg(long, default_value_t = 10)]
    pub runs: usize,
    /// Runs of one command at once: throughput and latency are both reported.
    #[arg(long, short, default_value_t = 1, alias = "parallel")]
    pub jobs: usize,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON to this file.
    #[arg(long)]
    pub export_json: Option<PathBuf>,
    /// Show the commands' own output.
    #[arg(long)]
    pub show_output: bool,
    /// No peak memory (no cgroup, no sampling): the leanest timing, for very short commands.
    #[arg(long)]
    pub no_memory: bool,
    /// Have nix count its work in every run (NIX_SHOW_STATS) and judge the counts: an exact
    /// count is the same or more/less by exactly its change. A command that runs nix several
    /// times keeps the counts of the last one to exit.
    #[arg(long)]
    pub nix_stats: bool,
    /// A change smaller than this percentage of the first command's median is "negligible".
    #[arg(long, default_value_t = evalbench_analyze::verdict::MIN_CHANGE_PCT, value_name = "PCT", value_parser =
        crate::percent::parse, allow_hyphen_values = true)]
    pub min_change: f64,
    /// The commands, separated by `--`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub commands: Vec<String>,
}

/// Wall times are read from a monotonic clock in ns; peak memory in pages.
const WALL_RESOLUTION_S: f64 = 1e-6;
const MEMORY_RESOLUTION_BYTES: f64 = 4096.0;

fn split(words: &[String]) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    for w in words {
        if w == "--" {
            out.push(Vec::new());
        } else {
            out.last_mut().expect("non-empty").push(w.clone());
        }
    }
    out.retain(|c| !c.is_empty());
    out
}

/// Each command judged against the first: wall times and peak memories,
/// each a family (Holm), and with --nix-stats nix's counters.
fn judged(results: Vec<CommandResult<Run>>, a: &Args) -> Report<Run, MemorySource> {
    let base = &results[0];
    let rules = Rules { min_change_pct: a.min_change, ..Rules::default() };
    let walls = |c: &CommandResult<Run>| -> Vec<f64> { c.runs.iter().map(|x| x.wall_s).collect() };
    let peaks =
        |c: &CommandResult<Run>| -> Vec<f64> { c.runs.iter().filter_map(|x| x.peak_bytes.map(|p| p as f64)).collect() };
    let others = &results[1..];
    let wall_items = others
        .iter()
        .map(|r| Measured { what: r.command.clone(), a: walls(base), b: walls(r), floor_abs: WALL_RESOLUTION_S })
        .collect();
    let mut wall_family = judge("wall time", wall_items, "s", TIME, rules);
    // Commands may repeat (an A/A run): verdicts are matched by position.
    let with_memory: Vec<usize> =
        (0..others.len()).filter(|&i| !peaks(base).is_empty() && !peaks(&others[i]).is_empty()).collect();
    let mem_items = with_memory
        .iter()
        .map(|&i| Measured {
            what: others[i].command.clone(),
            a: peaks(base),
            b: peaks(&others[i]),
            floor_abs: MEMORY_RESOLUTION_BYTES,
        })
        .collect();
    let mut mem_family = judge("peak memory", mem_items, "bytes", AMOUNT, rules);
    let mut mem: Vec<Option<Verdict>> = vec![None; others.len()];
    for (&i, (_, v)) in with_memory.iter().zip(std::mem::take(&mut mem_family.verdicts)) {
        mem[i] = Some(v);
    }
    let comparisons = std::mem::take(&mut wall_family.verdicts)
        .into_iter()
        .zip(mem)
        .map(|((command, wall), m)| Comparison { a: base.command.clone(), b: command, wall, peak_memory: m })
        .collect();
    let mut families = vec![wall_family, mem_family];
    let per_run = |c: &CommandResult<Run>| -> std::collections::BTreeMap<String, Vec<f64>> {
        let mut m: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
        for (k, v) in c.runs.iter().filter_map(|r| r.nix_stats.as_ref()).flatten() {
            m.entry(k.clone()).or_default().push(*v);
        }
        m
    };
    let mut counters = Vec::new();
    if a.nix_stats {
        for o in others {
            let (v, f) = judge_counters(&o.command, &per_run(base), &per_run(o), rules);
            if !v.is_empty() {
                counters.push(CommandCounters { a: base.command.clone(), b: o.command.clone(), counters: v });
                families.push(f);
            }
        }
    }
    Report { memory_source: memory_source(), commands: results, comparisons, families, counters }
}

/// Every command's runs, after its warm-up, and each command's wall time
/// over its whole batch (what throughput is of).
fn measure(
    a: &Args,
    commands: &[Vec<String>],
    stats: Option<&NixStats<'_>>,
    tty: bool,
) -> anyhow::Result<(Vec<Vec<Run>>, Vec<f64>)> {
    // Warm-up, then the measured runs. With one run at a time, the commands
    // take turns (A B A B ...), so a machine whose load drifts during the
    // bench weighs on every command alike instead of on whichever ran last.
    for argv in commands {
        if a.warmup > 0 {
            run_many(argv, a.prepare.as_deref(), a.warmup, a.jobs, !a.show_output, !a.no_memory, stats, &|_| {})?;
        }
    }
    let total = (a.runs * commands.len()) as u64;
    let bar = tty.then(|| {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} runs {msg}").expect("a valid template"),
        );
        b
    });
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); commands.len()];
    let mut batch_wall = vec![0.0f64; commands.len()];
    if a.jobs <= 1 {
        for round in 0..a.runs {
            for k in 0..commands.len() {
                // Alternate the order too, so no command always goes first.
                let k = if round % 2 == 0 { k } else { commands.len() - 1 - k };
                let (mut r, w) =
                    run_many(&commands[k], a.prepare.as_deref(), 1, 1, !a.show_output, !a.no_memory, stats, &|_| {})?;
                batch_wall[k] += w;
                runs[k].append(&mut r);
                if let Some(b) = &bar {
                    b.inc(1);
                    b.set_message(commands[k].join(" "));
                }
            }
        }
    } else {
        for (k, argv) in commands.iter().enumerate() {
            let done = std::sync::atomic::AtomicUsize::new(0);
            let progress = |_: usize| {
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if let Some(b) = &bar {
                    b.inc(1);
                }
            };
            let (r, w) =
                run_many(argv, a.prepare.as_deref(), a.runs, a.jobs, !a.show_output, !a.no_memory, stats, &progress)?;
            runs[k] = r;
            batch_wall[k] = w;
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok((runs, batch_wall))
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let commands = split(&a.commands);
    if commands.is_empty() {
        anyhow::bail!("no command given: evalbench bench [options] -- CMD [-- CMD2 ...]");
    }
    if a.runs == 0 {
        anyhow::bail!("--runs must be at least 1");
    }
    let tty = std::io::stderr().is_terminal() && !a.json;
    let stats_dir =
        if a.nix_stats { Some(tempfile::Builder::new().prefix("evalbench-nix-stats.").tempdir()?) } else { None };
    let stats = stats_dir.as_ref().map(|d| NixStats { dir: d.path() });
    let stats = stats.as_ref();
    let (mut runs, batch_wall) = measure(&a, &commands, stats, tty)?;
    let mut results = Vec::new();
    for (k, argv) in commands.iter().enumerate() {
        let runs = std::mem::take(&mut runs[k]);
        let walls: Vec<f64> = runs.iter().map(|r| r.wall_s).collect();
        let peaks: Vec<f64> = runs.iter().filter_map(|r| r.peak_bytes.map(|p| p as f64 / 1048576.0)).collect();
        results.push(CommandResult {
            command: argv.join(" "),
            wall_s: spread(&walls).rounded(6),
            user_s: spread(&runs.iter().map(|r| r.user_s).collect::<Vec<_>>()).rounded(6),
            sys_s: spread(&runs.iter().map(|r| r.sys_s).collect::<Vec<_>>()).rounded(6),
            peak_mib: (!peaks.is_empty()).then(|| spread(&peaks).rounded(3)),
            failed_runs: runs.iter().filter(|r| r.exit != Some(0)).count(),
            parallel: a.jobs,
            throughput_per_s: evalbench_bundle::num::round_to(runs.len() as f64 / batch_wall[k].max(1e-9), 3),
            latency_s: evalbench_bundle::num::s(spread(&walls).median),
            cold: a.prepare.is_some(),
            runs,
        });
    }
    let report = judged(results, &a);
    let json = serde_json::to_string_pretty(&report).expect("serializes");
    if let Some(p) = &a.export_json {
        evalbench_bundle::write_atomic(p, json.as_bytes())?;
    }
    if a.json {
        crate::emit(&format!("{json}\n"))?;
    } else {
        crate::emit(&evalbench_report::output::bench::text(&report, report.memory_source == MemorySource::CgroupV1))?;
    }
    let failed = report.commands.iter().any(|c| c.failed_runs > 0);
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
