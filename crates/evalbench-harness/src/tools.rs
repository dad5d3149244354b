//! Before the first pass: every tool the chosen captures need, on the host
//! that runs it. A missing one stops the run with the Debian package to install.

use crate::capture::Captures;
use crate::error::HarnessError;
use evalbench_host::HostExec;

fn has(host: &HostExec, tool: &str) -> bool {
    host.run(host.sh(&format!("command -v {tool}"))).is_ok()
}

pub fn check(
    captures_any: &Captures,
    server: &HostExec,
    worker: &HostExec,
    pipeline_here: bool,
) -> Result<(), HarnessError> {
    let mut missing: Vec<String> = Vec::new();
    let mut need = |host: &HostExec, where_: &str, tool: &str, pkg: &str| {
        if !has(host, tool) {
            missing.push(format!("{tool} on the {where_} host (apt-get install {pkg})"));
        }
    };
    if captures_any.pcap {
        need(server, "server", "tcpdump", "tcpdump");
    }
    if captures_any.perf {
        need(server, "server", "perf", "linux-perf");
        need(worker, "worker", "perf", "linux-perf");
    }
    if captures_any.strace {
        need(worker, "worker", "strace", "strace");
    }
    if captures_any.instructions {
        need(worker, "worker", "valgrind", "valgrind");
    }
    need(&HostExec::local(), "runner", "tar", "tar");
    if pipeline_here {
        need(worker, "worker", "nix", "nix-bin");
        need(worker, "worker", "git", "git");
        if evalbench_lab::pg::bin_dir().is_err() {
            missing.push("PostgreSQL server binaries (apt-get install postgresql)".into());
        } else if !std::path::Path::new("/usr/share/postgresql").exists()
            || std::fs::read_dir("/usr/share/postgresql")
                .map(|d| !d.flatten().any(|v| v.path().join("extension/pg_stat_statements.control").exists()))
                .unwrap_or(true)
        {
            missing.push("the pg_stat_statements extension (apt-get install postgresql-contrib)".into());
        }
    }
    if !missing.is_empty() {
        return Err(HarnessError::Missing(missing));
    }
    if captures_any.perf {
        let probe = server.run({
            let mut c = server.command("perf");
            c.args(["record", "-q", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"]);
            c
        });
        if let Err(e) = probe {
            return Err(HarnessError::PerfCannot(e.to_string()));
        }
    }
    Ok(())
}
