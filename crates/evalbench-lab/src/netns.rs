//! Two hosts on one machine: the server (with PostgreSQL) and the worker each
//! in a network namespace, joined by a veth pair; a second pair joins the
//! server to the root namespace, where the runner is. Addresses are private
//! to these namespaces; nothing is routed anywhere else.

use crate::error::LabError;
use evalbench_host::run;
use std::process::Command;

pub struct Names {
    pub server_ns: String,
    pub worker_ns: String,
    /// root side / server side of the runner link; server side / worker side of /proto.
    pub runner_root_if: String,
    pub runner_srv_if: String,
    pub proto_srv_if: String,
    pub proto_wrk_if: String,
    pub subnet: u8,
}

impl Names {
    /// Names and a /24 derived from the lab directory, so two labs can coexist.
    pub fn for_dir(dir: &std::path::Path) -> Names {
        let h = evalbench_host::dir_hash(dir);
        let id = format!("{:05x}", h & 0xfffff);
        Names {
            server_ns: format!("eb{id}-srv"),
            worker_ns: format!("eb{id}-wrk"),
            runner_root_if: format!("eb{id}r0"),
            runner_srv_if: format!("eb{id}r1"),
            proto_srv_if: format!("eb{id}p0"),
            proto_wrk_if: format!("eb{id}p1"),
            subnet: (h >> 20) as u8 % 200 + 20,
        }
    }
    pub fn runner_root_addr(&self) -> String {
        format!("10.213.{}.1", self.subnet)
    }
    pub fn server_addr(&self) -> String {
        format!("10.213.{}.2", self.subnet)
    }
    pub fn server_proto_addr(&self) -> String {
        format!("10.214.{}.1", self.subnet)
    }
    pub fn worker_addr(&self) -> String {
        format!("10.214.{}.2", self.subnet)
    }
}

fn ip(args: &[&str]) -> Result<String, LabError> {
    Ok(run(Command::new("ip").args(args))?)
}

pub fn exists(ns: &str) -> bool {
    std::path::Path::new("/run/netns").join(ns).exists()
}

/// Creates both namespaces and links; idempotent (a half-made set is removed first).
pub fn create(n: &Names) -> Result<(), LabError> {
    if exists(&n.server_ns) && exists(&n.worker_ns) {
        return Ok(());
    }
    remove(n);
    ip(&["netns", "add", &n.server_ns])?;
    ip(&["netns", "add", &n.worker_ns])?;
    for ns in [&n.server_ns, &n.worker_ns] {
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
    }
    // Runner (root namespace) <-> server.
    ip(&["link", "add", &n.runner_root_if, "type", "veth", "peer", "name", &n.runner_srv_if])?;
    ip(&["link", "set", &n.runner_srv_if, "netns", &n.server_ns])?;
    ip(&["addr", "add", &format!("{}/30", n.runner_root_addr()), "dev", &n.runner_root_if])?;
    ip(&["link", "set", &n.runner_root_if, "up"])?;
    ip(&["-n", &n.server_ns, "addr", "add", &format!("{}/30", n.server_addr()), "dev", &n.runner_srv_if])?;
    ip(&["-n", &n.server_ns, "link", "set", &n.runner_srv_if, "up"])?;
    // Server <-> worker: the /proto link.
    ip(&["link", "add", &n.proto_srv_if, "type", "veth", "peer", "name", &n.proto_wrk_if])?;
    ip(&["link", "set", &n.proto_srv_if, "netns", &n.server_ns])?;
    ip(&["link", "set", &n.proto_wrk_if, "netns", &n.worker_ns])?;
    ip(&["-n", &n.server_ns, "addr", "add", &format!("{}/30", n.server_proto_addr()), "dev", &n.proto_srv_if])?;
    ip(&["-n", &n.server_ns, "link", "set", &n.proto_srv_if, "up"])?;
    ip(&["-n", &n.worker_ns, "addr", "add", &format!("{}/30", n.worker_addr()), "dev", &n.proto_wrk_if])?;
    ip(&["-n", &n.worker_ns, "link", "set", &n.proto_wrk_if, "up"])?;
    Ok(())
}

/// The pids in the set's namespaces.
pub fn pids(n: &Names) -> Vec<u32> {
    [&n.server_ns, &n.worker_ns]
        .into_iter()
        .filter(|ns| exists(ns))
        .filter_map(|ns| ip(&["netns", "pids", ns]).ok())
        .flat_map(|p| p.split_whitespace().filter_map(|x| x.parse::<u32>().ok()).collect::<Vec<_>>())
        .collect()
}

/// Removes what exists of the set; never fails.
pub fn remove(n: &Names) {
    let _ = ip(&["link", "del", &n.runner_root_if]);
    for ns in [&n.server_ns, &n.worker_ns] {
        if exists(ns) {
            // Anything still running in there would keep the namespace alive.
            if let Ok(pids) = ip(&["netns", "pids", ns]) {
                for pid in pids.split_whitespace().filter_map(|p| p.parse::<u32>().ok()) {
                    evalbench_host::stop(pid, std::time::Duration::from_secs(5));
                }
            }
            let _ = ip(&["netns", "del", ns]);
        }
    }
}
