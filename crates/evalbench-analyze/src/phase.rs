//! Where a command's memory goes: with `EVALBENCH_PHASES=1` in the
//! environment, each phase an analysis marks prints its name, the seconds
//! since the first mark, and the process's resident and peak memory (Linux's
//! VmRSS and VmHWM) on stderr. How the README's figures of where the memory
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
    let kib = |key: &str| status.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok());
    let mib = |v: Option<u64>| v.map_or_else(|| "?".to_string(), |k| format!("{} MiB", k / 1024));
    eprintln!("evalbench phase: {t:8.2} s  {label:<24} rss {:>9}  peak {:>9}", mib(kib("VmRSS:")), mib(kib("VmHWM:")));
}
