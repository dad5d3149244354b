//! The captures of one pass: armed before the evaluation is requested,
//! stopped newest first (the two packet captures together) when it leaves
//! EvaluatingDerivation, each writing its file into the pass directory. A
//! capture that fails to stop or write is a problem recorded in run.json,
//! not the end of the pass.

use crate::error::HarnessError;
use std::path::Path;

use evalbench_bundle::{layout, write_atomic, OutsideWindow};

use super::files::write_json;
use crate::capture::{perf, pgstat::Db, strace::Strace, tcpdump::Tcpdump, Captures};
use crate::target::{CaptureInfo, Target};

/// Running captures, stopped in reverse order.
#[derive(Default)]
pub(super) struct Armed {
    tcpdumps: Vec<Tcpdump>,
    perfs: Vec<perf::Perf>,
    strace: Option<Strace>,
    sampler: Option<crate::capture::pgstat::WaitSampler>,
    log_start: Option<u64>,
}

fn file_size(host: &evalbench_host::HostExec, path: &str) -> Result<u64, HarnessError> {
    let out = host.run(host.sh(&format!("stat -c %s '{path}'")))?;
    out.trim().parse().map_err(|_| HarnessError::Stat { path: path.to_string(), printed: out.clone() })
}

impl Armed {
    /// Starts every capture `c` asks for; on an error the ones started so
    /// far stay in `self`, to be stopped.
    pub(super) fn arm(
        &mut self,
        c: Captures,
        target: &mut dyn Target,
        cap: &CaptureInfo,
        db: &Db,
        dir: &Path,
    ) -> Result<(), HarnessError> {
        if c.pg_stats {
            db.reset_statements()?;
        }
        if c.auto_explain {
            if let Some(log) = &cap.pg_log {
                self.log_start = Some(file_size(&cap.server, log)?);
            }
            db.auto_explain(true)?;
        }
        if c.pcap {
            self.tcpdumps.push(Tcpdump::start(
                &cap.server,
                &cap.proto_iface,
                cap.proto_port,
                &dir.join(layout::PROTO_PCAP),
            )?);
            self.tcpdumps.push(Tcpdump::start(&cap.server, &cap.pg_iface, cap.pg_port, &dir.join(layout::PG_PCAP))?);
        }
        if c.wait_samples {
            self.sampler = Some(db.start_wait_samples(&cap.ci_role)?);
        }
        if c.perf {
            self.perfs.push(perf::Perf::start(
                &cap.server,
                target.server_pid()?,
                &dir.join(layout::PERF_DATA),
                perf::Unwind::FramePointers,
            )?);
            let w = *target.worker_pids()?.first().ok_or(HarnessError::Absent("no worker to profile"))?;
            self.perfs.push(perf::Perf::start(
                &cap.worker,
                w,
                &dir.join(layout::WORKER_PERF_DATA),
                perf::Unwind::Dwarf,
            )?);
        }
        if c.strace {
            let w = *target.worker_pids()?.first().ok_or(HarnessError::Absent("no worker to trace"))?;
            let mut pids = vec![w];
            pids.extend(target.eval_pids()?.into_iter().filter(|p| *p != w));
            self.strace = Some(Strace::start(&cap.worker, &pids, &dir.join(layout::WORKER_STRACE_DIR))?);
        }
        Ok(())
    }

    /// Stops the captures, newest first, and writes what each captured.
    /// Packet captures are cut to `window` (runner clock, Unix µs); returns
    /// what each cut left out, by file name.
    pub(super) fn disarm(
        mut self,
        c: Captures,
        cap: &CaptureInfo,
        db: &Db,
        dir: &Path,
        window: (i64, i64),
        problems: &mut Vec<String>,
    ) -> std::collections::BTreeMap<String, OutsideWindow> {
        let mut outside = std::collections::BTreeMap::new();
        if let Some(s) = self.strace.take() {
            s.stop().unwrap_or_else(|e| problems.push(e.to_string()));
        }
        for p in self.perfs.drain(..) {
            p.stop().unwrap_or_else(|e| problems.push(e.to_string()));
        }
        if let Some(s) = self.sampler.take() {
            match s.stop() {
                Ok(v) => {
                    write_json(&dir.join(layout::WAIT_SAMPLES), &v).unwrap_or_else(|e| problems.push(e.to_string()))
                }
                Err(e) => problems.push(format!("wait samples: {e}")),
            }
        }
        // Both packet captures stopped at once: each waits until its file
        // holds a packet from after the window, or 400 ms of silence, and one
        // after the other the second waited after the first (a cold run's
        // turnaround to the next warm one, median of three runs of four
        // pairs: 1.47 s before, 1.39 s after).
        let tcpdumps: Vec<Tcpdump> = self.tcpdumps.drain(..).collect();
        let stopped: Vec<_> = std::thread::scope(|s| {
            let nudges = [cap.proto_nudge.as_ref(), cap.pg_nudge.as_ref()];
            let stopping: Vec<_> =
                tcpdumps.into_iter().zip(nudges).map(|(t, n)| s.spawn(move || t.stop(window.0, window.1, n))).collect();
            stopping.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
        });
        for (stopped, file) in stopped.into_iter().zip([layout::PROTO_PCAP, layout::PG_PCAP]) {
            match stopped {
                Ok(stopped) => {
                    outside.insert(
                        file.to_string(),
                        OutsideWindow { before: stopped.cut.before, after: stopped.cut.after },
                    );
                    if let Some(lost) = stopped.lost {
                        problems.push(lost.to_string());
                    }
                }
                Err(e) => problems.push(e.to_string()),
            }
        }
        if c.auto_explain {
            db.auto_explain(false).unwrap_or_else(|e| problems.push(e.to_string()));
            if let (Some(log), Some(start)) = (&cap.pg_log, self.log_start) {
                let cut = cap.server.run(cap.server.sh(&format!("tail -c +{} '{log}'", start + 1)));
                match cut {
                    Ok(text) => write_atomic(&dir.join(layout::AUTO_EXPLAIN), text.as_bytes())
                        .unwrap_or_else(|e| problems.push(e.to_string())),
                    Err(e) => problems.push(e.to_string()),
                }
            }
        }
        if c.pg_stats {
            match db.statements(&cap.ci_role) {
                Ok(v) => write_json(&dir.join(layout::PG_STAT_STATEMENTS), &v)
                    .unwrap_or_else(|e| problems.push(e.to_string())),
                Err(e) => problems.push(e.to_string()),
            }
        }
        outside
    }
}
