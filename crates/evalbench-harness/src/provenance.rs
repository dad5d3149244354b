//! A run's provenance, gathered once before the first pass: what the
//! target evaluates (its `describe`), PostgreSQL's version, the machine the
//! evaluator runs on (read through the worker host's prefix, so a remote
//! worker is described, not the runner), and what the binary put in
//! `RunOpts` (evalbench's version, the plan, the time).

use evalbench_bundle::provenance::{Machine, Provenance};
use evalbench_host::HostExec;

use crate::capture::pgstat::Db;
use crate::target::Target;

/// Fills `base` (evalbench, plan, started) with what the target and its machine tell.
pub fn gather(base: &Provenance, target: &mut dyn Target) -> Provenance {
    let mut p = base.clone();
    let (workload, mut system) = target.describe();
    p.workload = workload;
    let cap = target.capture();
    system.target = Some(target.name().to_string());
    if let Ok(db) = Db::connect(&cap.admin_database_url) {
        system.postgres_version = db.server_version().ok();
        system.postgres_settings = db.settings().unwrap_or_default();
    }
    p.system = system;
    p.machine = machine(&cap.worker);
    p
}

/// The machine behind a host: one shell round trip, each line optional.
pub fn machine(host: &HostExec) -> Machine {
    let script = "cat /proc/sys/kernel/hostname; grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2-; nproc; \
                  grep -m1 '^MemTotal' /proc/meminfo | tr -s ' ' | cut -d' ' -f2; cat /proc/sys/kernel/osrelease";
    let out = host.run(host.sh(script)).unwrap_or_default();
    let mut l = out.lines().map(|s| s.trim().to_string());
    let mut next = || l.next().filter(|s| !s.is_empty());
    Machine {
        hostname: next(),
        cpu_model: next(),
        cores: next().and_then(|s| s.parse().ok()),
        memory_bytes: next().and_then(|s| s.parse::<u64>().ok()).map(|kib| kib * 1024),
        kernel: next(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_machine_is_described() {
        let m = super::machine(&evalbench_host::HostExec::default());
        assert!(m.hostname.is_some() && m.kernel.is_some(), "{m:?}");
        assert!(m.cores.unwrap_or(0) >= 1 && m.memory_bytes.unwrap_or(0) > 1 << 20, "{m:?}");
        assert_eq!(
            m.kernel.as_deref(),
            std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().as_deref().map(str::trim)
        );
    }
}
