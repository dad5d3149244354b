//! `evalbench lab up|down|restart|reset|evaluate`: the lab's life cycle.
//! Every step is idempotent: `up` twice is one lab, `down` twice is none.

use crate::error::LabError;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::netns::{self, Names};
use crate::pg::{self, Pg};
use crate::state::{LabState, Net, PassOutput, NIX_CONFIG};
use evalbench_api::{left_evaluation_us, terminal, Client, Follow};
use evalbench_host::{alive, free_port, is_root, now_us, spawn_detached, stop_ours, HostExec};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NetMode {
    /// Two network namespaces when root, loopback otherwise.
    Auto,
    On,
    Off,
}

pub use crate::config::LabConfig;

#[derive(Debug, Clone)]
pub struct UpOpts {
    pub dir: PathBuf,
    pub flake: PathBuf,
    pub trace_dir: Option<PathBuf>,
    pub workers: u32,
    pub config: LabConfig,
}

fn hosts(st: &LabState) -> (HostExec, HostExec) {
    let on = |ns: &Option<String>| ns.as_deref().map_or_else(HostExec::local, HostExec::netns);
    (on(&st.net.server_ns), on(&st.net.worker_ns))
}

pub fn pg_of(st: &LabState) -> Result<Pg, LabError> {
    Ok(Pg {
        dir: st.pg_dir(),
        port: st.pg_port,
        host: hosts(st).0,
        user: pg::ensure_user()?,
        bin: pg::bin_dir()?,
        admin_addr: (st.net.mode == "netns").then(|| st.net.server_addr.clone()),
        settings: st.pg_settings.clone(),
        password: st.pg_password.clone(),
        ci_password: st.ci_password.clone(),
    })
}

pub fn up(o: &UpOpts) -> Result<LabState, LabError> {
    std::fs::create_dir_all(&o.dir).map_err(crate::LabError::io(&o.dir))?;
    // The flake first: a lab that cannot evaluate it is not started at all
    // (no namespace, no PostgreSQL left behind by a typo).
    if !o.flake.join("flake.nix").is_file() {
        return Err(LabError::NoFlake(o.flake.clone()));
    }
    let dir = o.dir.canonicalize().map_err(crate::LabError::io(&o.dir))?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755));
    }
    // A lab.json that does not read may name processes still running: say so
    // rather than start a second lab beside them.
    let mut st = if LabState::path(&dir).exists() {
        LabState::load(&dir).map_err(|e| LabError::Stale(Box::new(e)))?
    } else {
        LabState::default()
    };
    if st.server_pid.is_some_and(alive) {
        stop_services(&mut st);
    }
    st.dir = dir.clone();
    st.workers = o.workers.max(1);
    let c = &o.config;
    st.eval_workers = c.eval_workers.max(1);
    st.eval_max_rss = c.eval_max_rss;
    st.nix = c.nix.clone();
    st.lab_settings = c.lab_settings;
    st.worker_clock_skew_ms = c.worker_clock_skew_ms;
    if st.pg_settings != c.pg_settings {
        // The server takes its settings when it starts: start it afresh.
        if let Ok(old) = pg_of(&st) {
            old.stop();
        }
        st.pg_settings = c.pg_settings.clone();
    }
    st.set_output(&PassOutput::spans_to(o.trace_dir.clone()));
    network(&mut st, &dir, c.net)?;
    pg::check_reachable(&st.pg_dir())?;
    // The lab's secrets, made once; a lab made before they were kept has none yet.
    for s in [&mut st.pg_password, &mut st.ci_password, &mut st.proto_token] {
        if s.is_empty() {
            *s = pg::secret();
        }
    }
    let pg = pg_of(&st)?;
    pg.init()?;
    pg.check_settings()?;
    pg.start()?;
    st.pg_settings_shown = match pg.applied_settings() {
        Ok(v) => v,
        Err(e) => {
            // Not left running with a setting it did not take.
            pg.stop();
            return Err(e);
        }
    };
    pg.create_ci()?;
    st.repository = crate::flake::prepare_repo(&o.flake, &dir)?;
    st.organization = "lab".into();
    st.project = "hello".into();
    if st.api_key.is_empty() {
        st.api_key = format!("lab-{}", uuid::Uuid::new_v4().simple());
    }
    write_provision(&st)?;
    st.save()?;
    start_services(&mut st)?;
    st.save()?;
    Ok(st)
}

/// The lab's network: its own namespaces with a veth pair (root), or
/// loopback with free ports; PostgreSQL stopped where it listened in the
/// other mode.
fn network(st: &mut LabState, dir: &std::path::Path, net: NetMode) -> Result<(), LabError> {
    let use_netns = match net {
        NetMode::On => true,
        NetMode::Off => false,
        NetMode::Auto => is_root(),
    };
    if use_netns && !is_root() {
        return Err(LabError::Needs("network namespaces need root; use --net off"));
    }
    let mut names = Names::for_dir(dir);
    let mode = if use_netns { "netns" } else { "loopback" };
    if !st.net.mode.is_empty() && st.net.mode != mode {
        // PostgreSQL listens where the last mode put it: start it afresh.
        if let Ok(old) = pg_of(st) {
            old.stop();
        }
    }
    if use_netns {
        netns::create(&mut names)?;
        st.net = Net {
            mode: "netns".into(),
            server_ns: Some(names.server_ns.clone()),
            worker_ns: Some(names.worker_ns.clone()),
            runner_if: Some(names.runner_root_if.clone()),
            proto_if: Some(names.proto_srv_if.clone()),
            server_addr: names.server_addr(),
            server_addr_for_worker: names.server_proto_addr(),
        };
        st.pg_port = 5432;
        st.server_port = 8080;
        st.proto_port = 8080;
    } else {
        netns::remove(&names);
        st.net = Net {
            mode: "loopback".into(),
            server_addr: "127.0.0.1".into(),
            server_addr_for_worker: "127.0.0.1".into(),
            ..Net::default()
        };
        if st.pg_port == 0 || st.pg_port == 5432 {
            st.pg_port = free_port()?;
        }
        st.server_port = free_port()?;
        st.proto_port = free_port()?;
    }
    Ok(())
}

/// What the server provisions when it starts: the organization, the
/// project and its repository, the API key.
fn write_provision(st: &LabState) -> Result<(), LabError> {
    let provision = crate::server::db::Provision {
        organization: st.organization.clone(),
        project: st.project.clone(),
        repository: st.repository.to_string_lossy().into_owned(),
        api_key: st.api_key.clone(),
        proto_token: st.proto_token.clone(),
    };
    let pfile = st.dir.join("provision.json");
    // The API key and the workers' token: its owner's alone.
    crate::pg::write_private(
        &pfile,
        &String::from_utf8(serde_json::to_vec_pretty(&provision).expect("serializes")).expect("JSON is UTF-8"),
    )
}

/// From the next start of the server on (a cold reset), the project's
/// repository is `flake`'s, committed into the lab's repository number
/// `slot` (0: `repo`, the flake it was brought up with). An interleaved
/// session crosses its two labs this way, so that a difference between the
/// labs themselves falls on both sides. Each repository has its own fetched
/// checkout in the worker, kept across resets, as the first one's is.
pub fn serve(dir: &Path, flake: &Path, slot: usize, prepare: bool) -> Result<(), LabError> {
    let mut st = LabState::load(dir)?;
    let repo = if slot == 0 { dir.join("repo") } else { dir.join(format!("repo-{}", slot + 1)) };
    st.repository = if prepare { crate::flake::prepare_repo_in(flake, &repo)? } else { repo };
    write_provision(&st)?;
    st.save()
}

fn trace_env(cmd: &mut std::process::Command, st: &LabState, process: &str, host: &str) {
    cmd.env(evalbench_trace::ENV_PROCESS, process).env(evalbench_trace::ENV_HOST, host).env("NIX_CONFIG", NIX_CONFIG);
    match &st.trace_dir {
        Some(t) => cmd.env(evalbench_trace::ENV_TRACE_DIR, t),
        None => cmd.env_remove(evalbench_trace::ENV_TRACE_DIR),
    };
}

/// Starts the server and the workers and waits until they are connected.
pub fn start_services(st: &mut LabState) -> Result<(), LabError> {
    let exe = std::env::current_exe()
        .map_err(|source| LabError::Spawn { command: "evalbench itself (current_exe)".into(), source })?;
    let (srv, wrk) = hosts(st);
    if let Some(t) = &st.trace_dir {
        std::fs::create_dir_all(t).map_err(crate::LabError::io(t))?;
    }
    let listen = if st.net.mode == "netns" {
        format!("0.0.0.0:{}", st.server_port)
    } else {
        format!("127.0.0.1:{}", st.server_port)
    };
    let mut c = srv.command(&exe);
    // The database URL holds a password: in the environment, not on the command line.
    c.args(["lab", "server", "--listen", &listen, "--provision"]).arg(st.dir.join("provision.json"));
    c.env(crate::server::ENV_DATABASE, st.database_url());
    for (name, value) in st.lab_settings.pairs() {
        c.arg("--lab-setting").arg(format!("{name}={value}"));
    }
    if st.proto_port != st.server_port && st.proto_port != 0 {
        c.args(["--proto-listen", &format!("127.0.0.1:{}", st.proto_port)]);
    }
    trace_env(&mut c, st, "server", "server");
    c.env_remove(evalbench_trace::ENV_CLOCK_SKEW_US);
    let pid = spawn_detached(c, &st.logs().join("server.log"))?;
    st.server_pid = Some(pid);
    st.server_started = evalbench_host::start_time(pid);
    wait_for(st, |h| h.is_some(), "the server to answer")?;
    st.worker_pids.clear();
    st.worker_started.clear();
    for k in 0..st.workers {
        let mut c = wrk.command(&exe);
        let port = if st.proto_port == 0 { st.server_port } else { st.proto_port };
        c.args([
            "lab",
            "worker",
            "--server",
            &format!("{}:{}", st.net.server_addr_for_worker, port),
            "--name",
            &format!("worker-{k}"),
            "--sources",
        ])
        .arg(st.sources());
        trace_env(&mut c, st, "worker", &format!("worker-{k}"));
        c.env(crate::worker::ENV_PROTO_TOKEN, &st.proto_token);
        c.env(evalbench_trace::ENV_CLOCK_SKEW_US, (st.worker_clock_skew_ms * 1000).to_string())
            .env("XDG_CACHE_HOME", st.eval_cache())
            .env(crate::eval::ENV_EVAL_WORKERS, st.eval_workers.max(1).to_string());
        match &st.nix {
            Some(n) => c.env(crate::eval::ENV_NIX, n),
            None => c.env_remove(crate::eval::ENV_NIX),
        };
        match &st.nix_stats_dir {
            Some(d) => {
                std::fs::create_dir_all(d).map_err(crate::LabError::io(d))?;
                c.env(crate::eval::ENV_NIX_STATS_DIR, d);
            }
            None => {
                c.env_remove(crate::eval::ENV_NIX_STATS_DIR);
            }
        }
        c.env(crate::eval::ENV_COUNT_CALLS, if st.count_calls { "true" } else { "false" });
        c.env(crate::eval::ENV_NIX_TRACE, if st.nix_trace { "true" } else { "false" });
        c.env(crate::eval::ENV_COUNT_INSTRUCTIONS, if st.count_instructions { "true" } else { "false" });
        match st.eval_max_rss {
            Some(b) => c.env(crate::eval::ENV_EVAL_MAX_RSS, b.to_string()),
            None => c.env_remove(crate::eval::ENV_EVAL_MAX_RSS),
        };
        let pid = spawn_detached(c, &st.logs().join(format!("worker-{k}.log")))?;
        st.worker_pids.push(pid);
        st.worker_started.push(evalbench_host::start_time(pid).unwrap_or(0));
    }
    let n = st.workers as u64;
    wait_for(st, |h| h.and_then(|v| v["message"]["workers"].as_u64()).is_some_and(|w| w >= n), "the workers to connect")
}

fn client(st: &LabState, timeout: Duration) -> Client {
    Client::new(st.endpoint(), timeout)
}

fn wait_for(st: &LabState, ok: impl Fn(Option<&Value>) -> bool, what: &str) -> Result<(), LabError> {
    let mut alive_check = || {
        if !st.server_pid.is_some_and(alive) {
            return Err(LabError::Exited { what: "the lab server".into(), log: st.logs().join("server.log") });
        }
        if let Some(dead) = st.worker_pids.iter().find(|p| !alive(**p)) {
            return Err(LabError::Exited { what: format!("a lab worker (pid {dead})"), log: st.logs() });
        }
        Ok(())
    };
    client(st, Duration::from_secs(10))
        .wait_healthy(Duration::from_secs(60), &ok, &mut alive_check)
        .map_err(|e| e.unwrap_or_else(|| LabError::Timeout { what: what.to_string(), logs: st.logs() }))
}

/// Stops the workers, then the server (SIGTERM: they flush their spans).
/// Only a recorded pid that is still the process we started is signalled.
pub fn stop_services(st: &mut LabState) {
    let started = std::mem::take(&mut st.worker_started);
    for (k, pid) in st.worker_pids.drain(..).enumerate() {
        stop_ours(pid, started.get(k).copied().filter(|&t| t != 0), Duration::from_secs(10));
    }
    if let Some(pid) = st.server_pid.take() {
        stop_ours(pid, st.server_started.take(), Duration::from_secs(10));
    }
}

/// Processes whose command line names the lab's directory (server, workers,
/// PostgreSQL), and those in its namespaces: what a lab without a readable
/// lab.json may have left running.
pub fn still_running(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let mut pids: std::collections::BTreeSet<u32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
        .collect();
    pids.extend(netns::pids(&Names::for_dir(dir)));
    pids.into_iter()
        .map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd: String = String::from_utf8_lossy(&cmd).replace('\0', " ").trim().chars().take(100).collect();
            format!("pid {pid} ({cmd})")
        })
        .collect()
}

pub fn down(dir: &Path) -> Result<(), LabError> {
    let dir = match dir.canonicalize() {
        Ok(d) => d,
        // Never made: nothing to stop.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(LabError::Io { path: dir.to_path_buf(), source }),
    };
    if !LabState::path(&dir).exists() {
        netns::remove(&Names::for_dir(&dir));
        return Ok(());
    }
    let mut st = match LabState::load(&dir) {
        Ok(s) => s,
        Err(e) => {
            // Nothing is stopped blind: say what is running, for the user to stop.
            let running = still_running(&dir);
            let what = if running.is_empty() {
                "nothing of the lab is running".to_string()
            } else {
                format!(
                    "still running: {}; stop them (kill PID) and run `evalbench lab down` again",
                    running.join(", ")
                )
            };
            return Err(LabError::NotStopped { error: Box::new(e), running: what });
        }
    };
    stop_services(&mut st);
    if let Ok(pg) = pg_of(&st) {
        pg.stop();
    }
    netns::remove(&Names::for_dir(&dir));
    st.save()
}

/// Restarts server and workers, e.g. to write spans to another directory.
pub fn restart(dir: &Path, out: &PassOutput) -> Result<LabState, LabError> {
    let mut st = LabState::load(dir)?;
    stop_services(&mut st);
    st.set_output(out);
    start_services(&mut st)?;
    st.save()?;
    Ok(st)
}

/// The cold reset: database dropped and recreated (the server restarted
/// re-provisions it), eval cache emptied; fetched sources kept.
pub fn reset_cold(dir: &Path, out: &PassOutput) -> Result<LabState, LabError> {
    let mut st = LabState::load(dir)?;
    stop_services(&mut st);
    pg_of(&st)?.recreate_ci_db()?;
    let cache = st.eval_cache();
    if cache.exists() {
        std::fs::remove_dir_all(&cache).map_err(crate::LabError::io(&cache))?;
    }
    st.set_output(out);
    start_services(&mut st)?;
    st.save()?;
    Ok(st)
}

/// Requests an evaluation and follows it to the end: status changes as the
/// runner saw them (its clock), and the seconds until it left EvaluatingDerivation.
pub fn evaluate(dir: &Path, timeout: Duration, mut progress: impl FnMut(&str)) -> Result<Value, LabError> {
    let st = LabState::load(dir)?;
    let api = client(&st, Duration::from_secs(10));
    let requested_us = now_us();
    let id = api.evaluate()?;
    let (mut seen, mut last) = (Vec::new(), Value::Null);
    let mut on_poll = |status: &str, changed: bool| {
        if changed {
            progress(status);
        }
        Ok(())
    };
    let mut f = Follow {
        poll: Duration::from_millis(20),
        started: std::time::Instant::now(),
        timeout,
        timeout_hint: "",
        on_poll: &mut on_poll,
    };
    api.follow(&id, &terminal, &mut seen, &mut last, &mut f)?;
    // The server's own timeline has every change, even those between two polls.
    let timeline = last["statuses"].as_array().cloned().unwrap_or_default();
    let left = left_evaluation_us(&timeline);
    let statuses: Vec<Value> =
        seen.into_iter().map(|(status, ts_us)| json!({"status": status, "ts_us": ts_us})).collect();
    Ok(json!({
        "evaluation_id": id,
        "status": last["status"],
        "error": last["error"],
        "statuses": statuses,
        "server_statuses": last["statuses"],
        "requested_us": requested_us,
        "evaluated_s": left.map(|t| (t - requested_us) as f64 / 1e6),
    }))
}

/// A process of the lab that is gone, how it ended, and what it said last.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Dead {
    /// `PostgreSQL`, `the lab server`, `lab worker 0`, `an eval subprocess`.
    pub component: String,
    pub pid: Option<u32>,
    /// `killed by signal 9 (SIGKILL)`, `exit status 1`, or `gone` when
    /// another process reaped it (PostgreSQL's postmaster, an eval subprocess's status as its worker reported it).
    pub how: String,
    pub log: PathBuf,
    pub last_lines: Vec<String>,
}

impl std::fmt::Display for Dead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pid = self.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
        write!(f, "{}{pid} {}", self.component, self.how)?;
        if !self.last_lines.is_empty() {
            write!(f, "; the last lines of {}:", self.log.display())?;
            for l in &self.last_lines {
                write!(f, "\n    {l}")?;
            }
        }
        Ok(())
    }
}

/// The lab's PostgreSQL postmaster, from its postmaster.pid: pg_ctl starts
/// it detached, so it is no child of the runner.
pub fn postmaster_pid(dir: &Path) -> Option<u32> {
    let st = LabState::load(dir).ok()?;
    std::fs::read_to_string(st.pg_dir().join("data").join("postmaster.pid")).ok()?.lines().next()?.trim().parse().ok()
}

/// Which of the lab's processes died: PostgreSQL, the server, the workers,
/// and an eval subprocess whose worker reported it killed. Read after a
/// pass failed, before anything is stopped.
pub fn autopsy(dir: &Path, evaluation_error: Option<&str>) -> Vec<Dead> {
    let Ok(st) = LabState::load(dir) else { return Vec::new() };
    let mut out = Vec::new();
    let how = |pid: u32| evalbench_host::ended(pid).unwrap_or_else(|| "is gone".into());
    {
        // postmaster.pid and /proc, not `pg_ctl status`: this runs once a
        // second during a pass, and must not spawn processes beside it.
        let pidfile = st.pg_dir().join("data").join("postmaster.pid");
        let pid: Option<u32> =
            std::fs::read_to_string(pidfile).ok().and_then(|t| t.lines().next()?.trim().parse().ok());
        if !pid.is_some_and(alive) {
            let log = st.postgres_log();
            out.push(Dead {
                component: "PostgreSQL".into(),
                pid,
                how: "is not running (its postmaster is gone)".into(),
                last_lines: evalbench_host::log_tail(&log, 5),
                log,
            });
        }
    }
    if let Some(pid) = st.server_pid.filter(|p| !alive(*p)) {
        let log = st.logs().join("server.log");
        out.push(Dead {
            component: "the lab server".into(),
            pid: Some(pid),
            how: how(pid),
            last_lines: evalbench_host::log_tail(&log, 5),
            log,
        });
    }
    for (k, &pid) in st.worker_pids.iter().enumerate() {
        if !alive(pid) {
            let log = st.logs().join(format!("worker-{k}.log"));
            out.push(Dead {
                component: format!("lab worker {k}"),
                pid: Some(pid),
                how: how(pid),
                last_lines: evalbench_host::log_tail(&log, 5),
                log,
            });
        }
    }
    // The eval subprocess is the worker's child: its end is what the worker reported.
    if let Some(e) = evaluation_error.filter(|e| e.contains("the eval subprocess ended: killed by signal")) {
        let log = st.logs().join("worker-0.log");
        out.push(Dead {
            component: "an eval subprocess".into(),
            pid: None,
            how: e.split("the eval subprocess ended: ").nth(1).map_or_else(
                || e.to_string(),
                |h| format!("{} (as its worker reported)", h.split(['\n', ';']).next().unwrap_or(h).trim()),
            ),
            last_lines: evalbench_host::log_tail(&log, 5),
            log,
        });
    }
    out
}
