//! The machine's state over a pass's window, read from /proc at its two
//! ends: CPU used by the pipeline and by everything else, steal, pressure
//! stall and dirty memory. A shared machine cannot be isolated; what it did
//! can be measured, so that `compare` names a busy side instead of calling
//! its times a change (docs/decisions.md, "Sessions").
//!
//! The pipeline's CPU is that of the runner's process tree and of the
//! target's daemons that left it (PostgreSQL's postmaster is started by
//! pg_ctl and adopted by init), each process's own time plus that of the
//! children it reaped. Summed at each end, the difference is the window's:
//! a child that ran and was reaped inside it moves its time into its
//! parent's, where the second sum finds it.

use std::collections::{HashMap, HashSet};

use evalbench_bundle::MachineState;

/// One reading of the machine.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    at: Option<std::time::Instant>,
    /// /proc/stat's first line: busy (user, nice, system, irq, softirq) and steal, ticks.
    busy: u64,
    steal: u64,
    /// The pipeline's processes: own and reaped children's time, ticks.
    lab: u64,
    /// PSI `some total=` per resource, µs.
    psi: [Option<u64>; 3],
    dirty_kib: u64,
    writeback_kib: u64,
}

/// Reads the machine now; `roots` are the target's processes outside the
/// runner's tree (their descendants count too). Never fails: what cannot be
/// read is left at zero or None.
pub fn take(roots: &[u32]) -> Snapshot {
    let (busy, steal) = std::fs::read_to_string("/proc/stat").ok().and_then(|t| cpu_line(&t)).unwrap_or((0, 0));
    let psi = ["cpu", "io", "memory"]
        .map(|r| std::fs::read_to_string(format!("/proc/pressure/{r}")).ok().and_then(|t| psi_some_total(&t)));
    let (dirty_kib, writeback_kib) = std::fs::read_to_string("/proc/meminfo").map(|t| meminfo(&t)).unwrap_or((0, 0));
    let mut all_roots = vec![std::process::id()];
    all_roots.extend_from_slice(roots);
    Snapshot {
        at: Some(std::time::Instant::now()),
        busy,
        steal,
        lab: tree_ticks(&processes(), &all_roots),
        psi,
        dirty_kib,
        writeback_kib,
    }
}

/// The window between two readings; None when either could not be taken.
pub fn between(a: &Snapshot, b: &Snapshot) -> Option<MachineState> {
    let secs = b.at?.checked_duration_since(a.at?)?.as_secs_f64();
    if secs <= 0.0 || a.busy == 0 || b.busy == 0 {
        return None;
    }
    let hz = ticks_per_second();
    let cores = |ticks: u64| evalbench_bundle::num::round_to(ticks as f64 / hz / secs, 3);
    let busy = b.busy.saturating_sub(a.busy);
    let lab = b.lab.saturating_sub(a.lab);
    let share = |i: usize| {
        Some(evalbench_bundle::num::round_to((b.psi[i]?.saturating_sub(a.psi[i]?) as f64 / 1e6 / secs).min(1.0), 3))
    };
    Some(MachineState {
        window_s: evalbench_bundle::num::s(secs),
        lab_cores: cores(lab),
        other_cores: cores(busy.saturating_sub(lab)),
        steal_cores: cores(b.steal.saturating_sub(a.steal)),
        psi_cpu: share(0),
        psi_io: share(1),
        psi_memory: share(2),
        dirty_kib: a.dirty_kib.max(b.dirty_kib),
        writeback_kib: a.writeback_kib.max(b.writeback_kib),
    })
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// `cpu  user nice system idle iowait irq softirq steal ...`: (busy, steal).
fn cpu_line(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).map(|x| x.parse().unwrap_or(0)).collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    // guest time is already inside user's.
    Some((at(0) + at(1) + at(2) + at(5) + at(6), at(7)))
}

fn psi_some_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace().find_map(|f| f.strip_prefix("total="))?.parse().ok()
}

fn meminfo(text: &str) -> (u64, u64) {
    let kib = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|r| r.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (kib("Dirty:"), kib("Writeback:"))
}

/// Every process: pid → (parent, own and reaped children's ticks).
fn processes() -> HashMap<u32, (u32, u64)> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if let Some(p) = std::fs::read_to_string(e.path().join("stat")).ok().and_then(|t| stat_line(&t)) {
            out.insert(pid, p);
        }
    }
    out
}

/// `/proc/PID/stat`: the command may hold spaces and parentheses, so the
/// fields are counted from the last ')'. (ppid, utime+stime+cutime+cstime).
fn stat_line(t: &str) -> Option<(u32, u64)> {
    let rest = &t[t.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
    let n = |i: usize| f.get(i).and_then(|x| x.parse::<i64>().ok()).map(|x| x.max(0) as u64);
    Some((n(1)? as u32, n(11)? + n(12)? + n(13)? + n(14)?))
}

/// The ticks of `roots` and all their descendants, each process once.
fn tree_ticks(procs: &HashMap<u32, (u32, u64)>, roots: &[u32]) -> u64 {
    let mut kids: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, &(ppid, _)) in procs {
        kids.entry(ppid).or_default().push(pid);
    }
    let mut seen = HashSet::new();
    let mut stack: Vec<u32> = roots.iter().copied().filter(|p| procs.contains_key(p)).collect();
    let mut sum = 0;
    while let Some(p) = stack.pop() {
        if !seen.insert(p) {
            continue;
        }
        sum += procs[&p].1;
        stack.extend(kids.get(&p).into_iter().flatten().copied());
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_lines_are_read_by_their_fields() {
        assert_eq!(cpu_line("cpu  914 3 1000 31077 67 5 14 20 0 0\ncpu0 1 2 3\n"), Some((914 + 3 + 1000 + 5 + 14, 20)));
        let psi =
            "some avg10=0.00 avg60=0.45 avg300=0.57 total=3112366\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(psi_some_total(psi), Some(3112366));
        assert_eq!(meminfo("MemFree: 5 kB\nDirty:                80 kB\nWriteback:             4 kB\n"), (80, 4));
        // A command with ") (" in it: fields count from the last ')'.
        let stat = "42 (a) (b c) S 7 42 42 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 1 0 5 6 7";
        assert_eq!(stat_line(stat), Some((7, 11 + 22 + 33 + 44)));
    }

    #[test]
    fn a_tree_counts_each_descendant_once() {
        let procs: HashMap<u32, (u32, u64)> =
            [(1, (0, 1000)), (10, (1, 5)), (11, (10, 7)), (12, (11, 3)), (20, (1, 100)), (30, (1, 9))].into();
        assert_eq!(tree_ticks(&procs, &[10]), 15);
        assert_eq!(tree_ticks(&procs, &[10, 11, 30]), 24, "a root inside another's tree is not counted twice");
        assert_eq!(tree_ticks(&procs, &[99]), 0, "a root that is gone counts nothing");
    }

    /// A real busy loop in the runner's tree counts as the pipeline's CPU;
    /// the same loop orphaned (adopted by init, as another user's job is
    /// not ours) counts as other processes'.
    #[test]
    fn a_busy_loop_is_placed_by_its_tree() {
        let measure = || {
            let a = take(&[]);
            std::thread::sleep(std::time::Duration::from_millis(800));
            between(&a, &take(&[])).unwrap()
        };
        let mut inside = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        let m = measure();
        inside.kill().unwrap();
        inside.wait().unwrap();
        assert!(m.lab_cores > 0.3, "{m:?}");
        let o = std::process::Command::new("sh")
            .args(["-c", "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!"])
            .output()
            .unwrap();
        let pid: i32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
        let m = measure();
        // SAFETY: kill has no memory preconditions; pid is the loop started above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        assert!(m.other_cores > 0.3 && m.other_cores > m.lab_cores, "{m:?}");
        assert!(
            m.window_s > 0.7 && m.psi_cpu.is_some() == std::path::Path::new("/proc/pressure/cpu").exists(),
            "{m:?}"
        );
    }
}
