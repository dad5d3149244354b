//! Where a command's memory goes: with `EVALBENCH_PHASES=1` in the
//! environment, each phase an analysis marks prints its name, the seconds
//! since the first mark, the process's resident memory (Linux's VmRSS) and
//! its peak during the phase on stderr (VmHWM, reset after each mark
//! through /proc/self/clear_refs; the peak since the start where the
//! kernel refuses). The reset is the process's: `/usr/bin/time`'s peak is
//! then the last phase's, so measure a command's peak without it. How docs/'s figures of where the memory
//! goes were taken; silent, and nearly free, otherwise.

use std::sync::OnceLock;
use std::time::Instant;

/// Marks the end of a phase (see the module's doc).
pub fn phase(label: &str) {
    static ON: OnceLock<bool> = OnceLock::new();
    if !*ON.get_or_init(|| std::env::var_os("EVALBENCH_PHASES").is_some()) {
        return;
    }
    static T0: OnceLock<Instant> = OnceLock::new();
    let t = T0.get_or_init(Instant::now).elapsed().as_secs_f64();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
    };
    let mib = |v: Option<u64>| v.map_or_else(|| "?".to_string(), |k| format!("{} MiB", k / 1024));
    eprintln!("evalbench phase: {t:8.2} s  {label:<24} rss {:>9}  peak {:>9}", mib(kib("VmRSS:")), mib(kib("VmHWM:")));
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
