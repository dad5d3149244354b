//! Two hosts on one machine: the server (with PostgreSQL) and the worker each
//! in a network namespace, joined by a veth pair; a second pair joins the
//! server to the root namespace, where the runner is. Addresses are private
//! to these namespaces; nothing is routed anywhere else.

use crate::error::LabError;
use evalbench_host::run;
use std::process::Command;

#[derive(Clone)]
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

/// The N of the 10.213.N.1 address an interface of the root namespace holds.
fn subnet_of(addrs: &str, ifname: Option<&str>) -> Vec<u8> {
    addrs
        .lines()
        .filter(|l| ifname.is_none_or(|i| l.split_whitespace().nth(1) == Some(i)))
        .filter_map(|l| {
            l.split_whitespace()
                .skip_while(|w| *w != "inet")
                .nth(1)?
                .strip_prefix("10.213.")?
                .split('.')
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// Creates both namespaces and links; idempotent (a half-made set is removed
/// first). The runner's side of the link is 10.213.N.1: N starts from the
/// directory's hash and moves on past any N another lab's link holds, for
/// two labs on one N route each other's packets astray (seen when ten labs
/// of the test suite ran at once). `n.subnet` is set to the N in use.
pub fn create(n: &mut Names) -> Result<(), LabError> {
    if exists(&n.server_ns) && exists(&n.worker_ns) {
        if let Some(&s) = subnet_of(&ip(&["-4", "-o", "addr", "show"])?, Some(&n.runner_root_if)).first() {
            n.subnet = s;
            return Ok(());
        }
    }
    remove(n);
    // Choosing N and taking it are one step for every lab on the machine:
    // two labs starting together both saw N free and both took it (seen in
    // CI, where one lab's runner then reached the other's server).
    let _choosing = choosing_lock()?;
    let used = subnet_of(&ip(&["-4", "-o", "addr", "show"])?, None);
    n.subnet = (0..200u16)
        .map(|k| ((u16::from(n.subnet) - 20 + k) % 200 + 20) as u8)
        .find(|s| !used.contains(s))
        .ok_or(LabError::NoSubnet)?;
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
    drop(_choosing);
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

/// An exclusive lock, held while a lab picks its subnet and takes it; let go
/// when dropped (or when the process ends).
fn choosing_lock() -> Result<std::fs::File, LabError> {
    let path = std::path::Path::new("/run/lock/evalbench-netns.lock");
    let _ = std::fs::create_dir_all("/run/lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(crate::LabError::io(path))?;
    f.lock().map_err(|source| LabError::Lock { path: path.to_path_buf(), source })?;
    Ok(f)
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

#[cfg(test)]
mod subnet_tests {
    #[test]
    fn the_subnets_in_use_are_read_from_ip_addr() {
        let out = "1: lo    inet 127.0.0.1/8 scope host lo\n7: ebabcder0    inet 10.213.57.1/30 scope global \
            ebabcder0\n9: eth0    inet 10.213.99.7/24 brd x\n";
        assert_eq!(super::subnet_of(out, None), vec![57, 99]);
        assert_eq!(super::subnet_of(out, Some("ebabcder0")), vec![57]);
        assert!(super::subnet_of(out, Some("nonesuch")).is_empty());
    }

    /// Labs created at the same moment, all starting from one N, each get
    /// an N of their own (real namespaces and links; needs root, as the
    /// lab does).
    #[test]
    fn labs_started_together_take_distinct_subnets() {
        let sets: Vec<super::Names> = (0..6)
            .map(|k| {
                let mut n = super::Names::for_dir(
                    &std::env::temp_dir().join(format!("evalbench-subnet-race-{}-{k}", std::process::id())),
                );
                n.subnet = 120;
                n
            })
            .collect();
        let taken: Vec<Result<u8, String>> = std::thread::scope(|s| {
            let handles: Vec<_> = sets
                .iter()
                .map(|n| {
                    s.spawn(move || {
                        let mut mine = n.clone();
                        super::create(&mut mine).map(|_| mine.subnet).map_err(|e| e.to_string())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for n in &sets {
            super::remove(n);
        }
        let mut got: Vec<u8> = taken.into_iter().map(|r| r.expect("namespaces created")).collect();
        got.sort_unstable();
        let before = got.len();
        got.dedup();
        assert_eq!(got.len(), before, "two labs share a subnet: {got:?}");
    }
}
