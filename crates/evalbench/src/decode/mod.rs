//! `evalbench decode KIND FILE`: one decoder on one file, for a person's own
//! captures. Each format is a [`Decoder`] in a file of its own, as inferno
//! keeps one `Collapse` per format; [`run`] drives whichever was asked for:
//! records to stdout as they are decoded (`--json`) or into the format's
//! text view, then the file refused if it held nothing of that format, then
//! the summary.

mod auto_explain;
mod eval_profiler;
mod nix_trace;
mod perf;
mod pg;
mod proto;
mod strace;

use evalbench_host::out::Out;
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
    /// stack of call sites; or Nix 2.30's `--eval-profiler flamegraph` stacks as they are.
    NixTrace,
    /// Nix ≥ 2.30's own sampled profile (`--eval-profiler flamegraph`, `--eval-profile-file`):
    /// positions and functions ranked by samples; --json: each stack, summed.
    NixProfile,
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
    /// nix-trace and nix-profile: name positions by the input of this flake they are in (`alpha:lib/default.nix:1:3`),
    /// as nix lists its inputs (`nix flake archive --json`). Without it, a nix-inputs.json beside
    /// the file (a pass's eval/) names them.
    #[arg(long, value_name = "DIR")]
    pub flake: Option<PathBuf>,
}

/// One capture format.
trait Decoder: Sync {
    /// One line of `--json`, handed on as soon as it is decoded.
    type Record: serde::Serialize + Send;
    /// What the whole file came to.
    type Summary: Send;
    /// The text view's state, fed each record (pg's latency table); `()`
    /// where the summary alone is the view.
    type Text: Default;

    /// Reads the file, handing each record to `emit` as it goes.
    fn decode(&self, a: &Args, emit: &mut dyn FnMut(Self::Record)) -> anyhow::Result<Self::Summary>;
    /// Refuses a file in which nothing of this format was found, saying what
    /// it looks like instead; a file that only decoded to nothing passes.
    fn detect(&self, _a: &Args, _summary: &Self::Summary) -> anyhow::Result<()> {
        Ok(())
    }
    fn text_record(_text: &mut Self::Text, _record: &Self::Record) {}
    /// `--json`'s state across records (pg's escaped statements); `()`
    /// where each record is written on its own.
    type Json: Default;
    /// One record as `--json` writes it (without the newline) to `out`.
    fn json_record(_json: &mut Self::Json, record: &Self::Record, out: &mut Vec<u8>) {
        serde_json::to_writer(out, record).expect("a record serializes");
    }
    /// The text view, written for a person.
    fn text(&self, text: Self::Text, summary: &Self::Summary) -> Vec<u8>;
    /// The value of `--json`'s last line, `{"summary": ...}`.
    fn json_summary(&self, summary: &Self::Summary) -> serde_json::Value;
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    // An empty file holds nothing of any format: said, never decoded to nothing.
    if a.file.is_file() && std::fs::metadata(&a.file).is_ok_and(|m| m.len() == 0) {
        anyhow::bail!("{}: an empty file, nothing to decode", a.file.display());
    }
    let mut w = evalbench_host::out::stdout();
    match a.kind {
        Kind::Pg => drive(&pg::Pg, &a, &mut w)?,
        Kind::Proto => drive(&proto::Proto, &a, &mut w)?,
        Kind::Strace => drive(&strace::Strace, &a, &mut w)?,
        Kind::AutoExplain => drive(&auto_explain::AutoExplain, &a, &mut w)?,
        Kind::NixTrace => drive(&nix_trace::NixTrace, &a, &mut w)?,
        Kind::NixProfile => drive(&eval_profiler::EvalProfiler, &a, &mut w)?,
        Kind::Perf => drive(&perf::Perf, &a, &mut w)?,
    }
    crate::done(w)?;
    Ok(ExitCode::SUCCESS)
}

fn drive<D: Decoder, W: std::io::Write>(d: &D, a: &Args, w: &mut Out<W>) -> anyhow::Result<()> {
    let mut text = D::Text::default();
    let (mut json, mut line) = (D::Json::default(), Vec::new());
    let summary = pipelined(
        |emit| d.decode(a, emit),
        |r| {
            if a.json {
                line.clear();
                D::json_record(&mut json, &r, &mut line);
                line.push(b'\n');
                w.bytes(&line);
            } else {
                D::text_record(&mut text, &r);
            }
        },
    )?;
    d.detect(a, &summary)?;
    if a.json {
        json_line(w, &serde_json::json!({ "summary": d.json_summary(&summary) }));
    } else {
        w.bytes(&d.text(text, &summary));
    }
    Ok(())
}

/// One JSON record and a newline.
fn json_line<W: std::io::Write>(w: &mut Out<W>, x: &impl serde::Serialize) {
    if let Err(e) = serde_json::to_writer(&mut *w, x) {
        w.fail(std::io::Error::other(e));
    }
    w.bytes(b"\n");
}

/// A summary as JSON; every summary here is plain data.
fn to_json(x: &impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(x).expect("a summary serializes")
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
