//! The lab as a target: started, reset and stopped by the runner itself.

use crate::error::HarnessError;
use std::path::{Path, PathBuf};

use evalbench_lab::control::{self, LabConfig, UpOpts};
use evalbench_lab::{LabState, PassOutput};

use evalbench_api::Endpoint;
use evalbench_bundle::provenance::{System, Workload};

use super::{CaptureInfo, PassPlace, Served, Target};
use crate::capture::tcpdump::Nudge;
use evalbench_host::HostExec;

pub struct Lab {
    pub dir: PathBuf,
    pub flake: PathBuf,
    /// How the lab is set up, as `lab up` takes it.
    pub config: LabConfig,
    /// The flake as the user gave it, for provenance (default: its path).
    pub flake_label: Option<String>,
    state: Option<LabState>,
    /// Flakes other than its own it was asked to serve, in slots 1, 2, ... (`serve`).
    served: Vec<PathBuf>,
}

impl Lab {
    pub fn new(dir: PathBuf, flake: PathBuf, config: LabConfig) -> Lab {
        Lab { dir, flake, config, flake_label: None, state: None, served: Vec::new() }
    }
    fn st(&self) -> &LabState {
        self.state.as_ref().expect("the lab is started before use")
    }
}

impl Target for Lab {
    fn name(&self) -> &str {
        "lab"
    }
    fn pipeline_here(&self) -> bool {
        true
    }
    fn start(&mut self) -> Result<(), HarnessError> {
        let st = control::up(&UpOpts {
            dir: self.dir.clone(),
            flake: self.flake.clone(),
            trace_dir: None,
            workers: 1,
            config: self.config.clone(),
        })?;
        self.state = Some(st);
        Ok(())
    }
    fn prepare(&mut self, cold: bool, place: &PassPlace<'_>) -> Result<(), HarnessError> {
        let out = PassOutput {
            trace_dir: Some(place.trace_dir.to_path_buf()),
            nix_stats_dir: Some(place.eval_dir.to_path_buf()),
            count_calls: place.instrumented,
            nix_trace: place.nix_trace,
            count_instructions: place.counted,
        };
        let st = if cold { control::reset_cold(&self.dir, &out)? } else { control::restart(&self.dir, &out)? };
        self.state = Some(st);
        Ok(())
    }
    fn collect_spans(&mut self, _trace_dir: &Path) -> Result<(), HarnessError> {
        // Stopping the services flushes their span writers; the next pass starts them again.
        let mut st = LabState::load(&self.dir)?;
        control::stop_services(&mut st);
        st.save()?;
        self.state = Some(st);
        Ok(())
    }
    fn endpoint(&self) -> Endpoint {
        self.st().endpoint()
    }
    fn capture(&self) -> CaptureInfo {
        let st = self.st();
        let netns = st.net.mode == "netns";
        let server = st.net.server_ns.as_deref().map(HostExec::netns).unwrap_or_default();
        let worker = st.net.worker_ns.as_deref().map(HostExec::netns).unwrap_or_default();
        let proto_port = if st.proto_port != 0 { st.proto_port } else { st.server_port };
        // A packet on each captured link after the window: from the worker's
        // side to /proto (as the worker reaches it), and from the server's
        // side to PostgreSQL on its loopback (as the server reaches it).
        let proto_nudge = Nudge { from: worker.clone(), to: st.net.server_addr_for_worker.clone(), port: proto_port };
        let pg_nudge = Nudge { from: server.clone(), to: "127.0.0.1".into(), port: st.pg_port };
        CaptureInfo {
            server,
            worker,
            proto_iface: if netns { st.net.proto_if.clone().unwrap_or_else(|| "lo".into()) } else { "lo".into() },
            proto_port,
            pg_iface: "lo".into(),
            pg_port: st.pg_port,
            pg_log: Some(st.postgres_log().to_string_lossy().into_owned()),
            admin_database_url: st.admin_database_url(),
            ci_role: evalbench_lab::pg::CI_ROLE.into(),
            pg_settings: st.pg_settings_shown.clone(),
            proto_nudge: Some(proto_nudge),
            pg_nudge: Some(pg_nudge),
        }
    }
    fn server_pid(&self) -> Result<u32, HarnessError> {
        self.st().server_pid.ok_or(HarnessError::Absent("the lab server is not running"))
    }
    fn worker_pids(&self) -> Result<Vec<u32>, HarnessError> {
        Ok(self.st().worker_pids.clone())
    }
    fn describe(&mut self) -> (Workload, System) {
        let (nar_hash, nix_version) = evalbench_lab::eval::describe(&self.flake, self.config.nix.as_deref());
        // The flake's own revision where it is a git checkout: the lab's
        // repository is a copy committed afresh per lab directory, so its
        // revision would differ between two runs of one flake.
        let git = |args: &[&str]| {
            let o = std::process::Command::new("git").arg("-C").arg(&self.flake).args(args).output().ok()?;
            o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let rev = git(&["rev-parse", "HEAD"]).map(|r| {
            let dirty =
                git(&["status", "--porcelain", "--untracked-files=no", "--", "."]).is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{r}-dirty")
            } else {
                r
            }
        });
        let flake = self.flake_label.clone().unwrap_or_else(|| self.flake.display().to_string());
        let server_version = super::server_version(self.endpoint());
        let lab_settings = self.config.lab_settings.pairs().into_iter().collect();
        (
            Workload { flake: Some(flake), rev, nar_hash },
            System { server_version, nix_version, lab_settings, ..System::default() },
        )
    }
    fn autopsy(&mut self, evaluation_error: Option<&str>) -> Vec<String> {
        control::autopsy(&self.dir, evaluation_error).iter().map(ToString::to_string).collect()
    }
    fn finish(&mut self) {
        let _ = control::down(&self.dir);
    }
    fn own_pids(&self) -> Vec<u32> {
        control::postmaster_pid(&self.dir).into_iter().collect()
    }
    fn workload(&self) -> Option<Served> {
        Some(Served { flake: self.flake.clone(), lab_settings: self.config.lab_settings })
    }
    fn serve(&mut self, served: &Served) -> Result<(), HarnessError> {
        // The settings go with the side: the server takes them at the next reset.
        let mut st = LabState::load(&self.dir)?;
        if st.lab_settings != served.lab_settings {
            st.lab_settings = served.lab_settings;
            st.save()?;
        }
        let workload = served.flake.as_path();
        // Its own flake in slot 0; any other in the next free slot, committed once.
        let slot = match self.served.iter().position(|f| f == workload) {
            Some(i) => i + 1,
            None if workload == self.flake => 0,
            None => {
                self.served.push(workload.to_path_buf());
                control::serve(&self.dir, workload, self.served.len(), true)?;
                return Ok(());
            }
        };
        control::serve(&self.dir, workload, slot, false)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lab_runs_its_pipeline_here() {
        // Which tools are checked before the first pass follows from this, not from the target's name.
        let config = LabConfig { net: evalbench_lab::control::NetMode::Off, ..LabConfig::default() };
        let lab = Lab::new("/nonexistent/lab".into(), "/nonexistent/flake".into(), config);
        assert!(lab.pipeline_here());
        assert_eq!(lab.name(), "lab");
    }
}
