//! `evalbench decode KIND FILE`: one decoder on one file, for a person's own captures.

use evalbench_host::outln;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// PostgreSQL wire protocol from a pcap/pcapng (pg.pcap).
    Pg,
    /// WebSocket /proto traffic from a pcap/pcapng (proto.pcap).
    Proto,
    /// perf.data: folded stacks per process.
    Perf,
    /// strace -ff output: one file, or a directory of worker.<pid> files.
    Strace,
    /// PostgreSQL log with auto_explain plans (text or JSON format).
    AutoExplain,
    /// nix's function trace (nix 2.8 `--trace-function-calls` on stderr), folded into self time per
    /// stack of call sites; or Nix 2.30's `--eval-profiler flamegraph` stacks.
    NixTrace,
}

#[derive(clap::Args)]
pub struct Args {
    /// What the file holds.
    #[arg(value_enum)]
    pub kind: Kind,
    /// The capture file (for strace, a file or a directory of worker.<pid> files).
    pub file: PathBuf,
    /// JSON lines: one record per line, then {"summary": {...}}.
    #[arg(long)]
    pub json: bool,
    /// The server's TCP port, when the capture's filter is not enough to tell.
    #[arg(long)]
    pub port: Option<u16>,
    /// nix-trace: call sites a stack keeps (the lab's depth unless given); deeper calls count in
    /// a frame "[deeper than N call sites]" under the deepest kept (0: all). A deep recursion
    /// otherwise makes as many stacks as it is deep, each as long.
    #[arg(long, default_value_t = evalbench_decode::nix_trace::PROFILE_DEPTH)]
    pub max_depth: usize,
    /// nix-trace: name positions by the input of this flake they are in (`alpha:lib/default.nix:1:3`),
    /// as nix lists its inputs (`nix flake archive --json`). Without it, a nix-inputs.json beside
    /// the file (a pass's eval/) names them.
    #[arg(long, value_name = "DIR")]
    pub flake: Option<PathBuf>,
}

/// The inputs that name a trace's positions: the flake's, asked of nix, or
/// those kept beside the file.
fn trace_inputs(a: &Args) -> anyhow::Result<Option<evalbench_bundle::inputs::Inputs>> {
    use anyhow::Context;
    use evalbench_bundle::inputs::Inputs;
    use evalbench_bundle::layout::{file_name, NIX_INPUTS_JSON};
    let Some(flake) = &a.flake else {
        let beside = a.file.with_file_name(file_name(NIX_INPUTS_JSON));
        return Ok(std::fs::read(&beside).ok().and_then(|t| serde_json::from_slice::<Inputs>(&t).ok()));
    };
    let inputs = evalbench_lab::eval::flake_inputs(&flake.to_string_lossy()).with_context(|| format!("--flake {}", flake.display()))?;
    Ok(Some(inputs))
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let mut w = evalbench_host::out::stdout();
    match a.kind {
        Kind::Pg => {
            let mut table = evalbench_analyze::LatencyTable::default();
            let (file, port) = (&a.file, a.port);
            let summary = pipelined(
                |out| evalbench_decode::pg::decode_file(file, port, out),
                |x| {
                    if a.json {
                        json_line(&mut w, &x);
                    } else {
                        table.add(&x);
                    }
                },
            )?;
            // Connections, and not one statement in them: another protocol
            // (a capture joined mid-connection is not always told apart).
            if summary.statements == 0 && summary.connections > 0 {
                anyhow::bail!(
                    "{}: expected PostgreSQL's wire protocol, but none of its {} TCP connections carried a statement{}",
                    a.file.display(),
                    summary.connections,
                    if a.port.is_none() { " (proto.pcap? decode proto; or give the server's --port)" } else { "" }
                );
            }
            if a.json {
                outln!(w, "{}", serde_json::json!({ "summary": summary }));
            } else {
                w.bytes(evalbench_report::output::decode::pg(&table.finish(), &summary).as_bytes());
            }
        }
        Kind::Proto => {
            let summary = evalbench_decode::ws::decode_file(&a.file, a.port, &mut |m| {
                if a.json {
                    json_line(&mut w, m);
                }
            })?;
            if summary.frames_from_worker + summary.frames_from_server == 0 && summary.not_websocket_connections > 0 {
                anyhow::bail!(
                    "{}: expected WebSocket /proto traffic, but none of its {} TCP connections carries it{}",
                    a.file.display(),
                    summary.connections,
                    if a.port.is_none() { " (pg.pcap? decode pg; or give the server's --port)" } else { "" }
                );
            }
            if a.json {
                outln!(w, "{}", serde_json::json!({ "summary": summary }));
            } else {
                outln!(w, "{}", serde_json::to_string_pretty(&summary).expect("serializes"));
            }
        }
        Kind::Strace => {
            let summary = evalbench_decode::strace::decode(&a.file)?;
            if summary.calls == 0 && summary.signals == 0 && summary.exits == 0 && summary.unparsed_lines > 0 {
                let what = if a.file.is_file() {
                    evalbench_decode::sniff::looks_like(&evalbench_decode::sniff::head(&a.file, 4096)?)
                } else {
                    "a directory of files with no strace line in them"
                };
                anyhow::bail!(
                    "{}: expected strace -ff output (`12:00:01.000001 read(3, ...) = 5 <0.000010>`), but none of its {} lines is a call; it looks like {what}",
                    a.file.display(),
                    summary.unparsed_lines
                );
            }
            if a.json {
                for c in &summary.slowest {
                    json_line(&mut w, c);
                }
                outln!(w, "{}", serde_json::json!({ "summary": summary }));
            } else {
                w.bytes(evalbench_report::output::decode::strace(&summary).as_bytes());
            }
        }
        Kind::AutoExplain => {
            let summary = evalbench_decode::explain::decode(&a.file, &mut |p| {
                if a.json {
                    json_line(&mut w, p);
                }
            })?;
            if a.json {
                outln!(
                    w,
                    "{}",
                    serde_json::json!({ "summary": { "plans": summary.plans, "malformed": summary.malformed, "by_statement": summary.by_statement } })
                );
            } else {
                w.bytes(evalbench_report::output::decode::auto_explain(&summary).as_bytes());
            }
        }
        Kind::NixTrace => match evalbench_decode::nix_trace::read(&a.file, (a.max_depth > 0).then_some(a.max_depth), trace_inputs(&a)?)? {
            evalbench_decode::nix_trace::Profile::Traced(fold) => {
                if a.json {
                    for s in fold.stacks() {
                        json_line(&mut w, &s);
                    }
                    // The same record as a pass's nix-profile.json.
                    json_line(&mut w, &serde_json::json!({ "summary": evalbench_decode::nix_profile::NixProfile::of(&[&fold]) }));
                } else {
                    w.bytes(fold.folded().as_bytes());
                }
            }
            evalbench_decode::nix_trace::Profile::Sampled { stacks, lines } => {
                // One format, two units: Nix's --eval-profiler counts samples;
                // evalbench's own nix-profile.folded (a pass's eval/) weighs
                // stacks in µs of self time.
                use evalbench_bundle::layout::{file_name, NIX_PROFILE_FOLDED, NIX_PROFILE_JSON};
                let ours = a.file.file_name().is_some_and(|n| n == file_name(NIX_PROFILE_FOLDED))
                    || a.file.with_file_name(file_name(NIX_PROFILE_JSON)).is_file();
                let (key, format) =
                    if ours { ("self_us", "evalbench nix-profile.folded (µs of self time)") } else { ("samples", "nix eval-profiler flamegraph") };
                if a.json {
                    for (stack, n) in &stacks {
                        json_line(&mut w, &serde_json::json!({ "stack": stack, key: n }));
                    }
                    let total: u64 = stacks.iter().map(|s| s.1).sum();
                    json_line(&mut w, &serde_json::json!({ "summary": { "lines": lines, key: total, "format": format } }));
                } else {
                    for (stack, samples) in &stacks {
                        outln!(w, "{} {samples}", stack.join(";"));
                    }
                }
            }
        },
        Kind::Perf => {
            let folded = evalbench_decode::perf::fold(&a.file)?;
            let summary = evalbench_decode::perf::summarize(&folded);
            if a.json {
                // One record per folded stack (process first, leaf last), then the summary.
                for line in String::from_utf8_lossy(&folded.stacks).lines() {
                    if let Some((stack, n)) = line.rsplit_once(' ').and_then(|(s, n)| Some((s, n.parse::<u64>().ok()?))) {
                        json_line(&mut w, &serde_json::json!({ "stack": stack.split(';').collect::<Vec<_>>(), "samples": n }));
                    }
                }
                outln!(w, "{}", serde_json::json!({ "summary": summary }));
            } else {
                w.bytes(&folded.stacks);
            }
        }
    }
    crate::done(w)?;
    Ok(ExitCode::SUCCESS)
}

/// One JSON record and a newline.
fn json_line<W: std::io::Write>(w: &mut evalbench_host::out::Out<W>, x: &impl serde::Serialize) {
    if let Err(e) = serde_json::to_writer(&mut *w, x) {
        w.fail(std::io::Error::other(e));
    }
    w.bytes(b"\n");
}

/// Runs `decode` on a thread of its own and hands what it emits, in
/// batches, to `each` on this one: decoding a capture and formatting its
/// records take turns on one core otherwise.
fn pipelined<T: Send, R: Send>(decode: impl FnOnce(&mut dyn FnMut(T)) -> R + Send, mut each: impl FnMut(T)) -> R {
    const BATCH: usize = 1024;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<T>>(4);
    std::thread::scope(|s| {
        let decoder = s.spawn(move || {
            let mut batch = Vec::with_capacity(BATCH);
            let r = decode(&mut |x| {
                batch.push(x);
                if batch.len() == BATCH {
                    let _ = tx.send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)));
                }
            });
            let _ = tx.send(batch);
            r
        });
        for batch in rx {
            batch.into_iter().for_each(&mut each);
        }
        decoder.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}
