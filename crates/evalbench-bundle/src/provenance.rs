//! What a bundle measured, and where: the workload (the flake as given, its
//! locked revision and narHash), the system (nix, PostgreSQL, the target
//! and its server), evalbench itself, the machine, the run's plan and its
//! time. Written into every pass's run.json by the runner, so a bundle
//! carried to another machine still says what it is; `compare` and
//! `history` set two results side by side only after saying how their
//! provenance differs (as Bencher keys results by benchmark and testbed).
//!
//! Every field is optional: a bundle written before provenance was kept,
//! or by another tool, reads as "unknown", never as an error.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Provenance {
    #[serde(default)]
    pub workload: Workload,
    #[serde(default)]
    pub system: System,
    #[serde(default)]
    pub evalbench: Evalbench,
    #[serde(default)]
    pub machine: Machine,
    #[serde(default)]
    pub plan: Plan,
    /// When the run started, RFC 3339 (UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// One id per `evalbench run`: bundles that share it were measured in
    /// one session, their passes interleaved (`run --baseline`), so the
    /// machine's drift fell on both alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The other side's flake, in an interleaved run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleaved_with: Option<String>,
}

/// What was evaluated.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Workload {
    /// The flake as the user gave it (`--flake`), or `hello-flake (embedded)`;
    /// for a Gradient target, `<organization>/<project>`. History keys its
    /// series by this (the benchmark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flake: Option<String>,
    /// The flake's git revision where it is a git checkout (`-dirty` with
    /// uncommitted changes to tracked files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    /// nix's narHash of the locked source: the content, whatever its path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nar_hash: Option<String>,
}

/// What evaluated it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct System {
    /// `lab` or `gradient`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The server's version, where its health endpoint tells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// `nix --version` where the evaluator runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nix_version: Option<String>,
    /// PostgreSQL's `server_version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_version: Option<String>,
    /// Every PostgreSQL setting not at its built-in default (set on the
    /// command line or in the configuration file), as the server shows it:
    /// the lab's own (fsync=off, autovacuum_naptime=1s, ...), `--pg-setting`s
    /// and a deployment's tuning alike. Ports and paths are left out.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub postgres_settings: std::collections::BTreeMap<String, String>,
    /// The lab's own settings (`--lab-setting`), every one at its value:
    /// how the lab's server does its work (e.g. `graph_walk`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub lab_settings: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Evalbench {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The git revision it was built from (`-dirty` with uncommitted changes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_rev: Option<String>,
}

/// The machine the evaluator ran on.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Machine {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

/// The run as planned.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passes: Vec<String>,
    /// Runs of each clean pass, and of each instrumented pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_clean: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_instrumented: Option<usize>,
    /// Runs of each counted pass (`--repeat-counted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_counted: Option<usize>,
    /// Warm-up runs of each clean pass before its counted ones (`--warmup`),
    /// kept under `warmup/` and left out of every statistic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_clean: Option<usize>,
    /// Captures switched off for the whole run (`--no-perf`, `--bare`, ...):
    /// `[]` when none was, absent when not recorded (a bundle from before it
    /// was, or another tool's), so that "none" and "unknown" are told apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub captures_off: Option<Vec<String>>,
    /// The lab's evaluator subprocesses (`--eval-workers`); None for other targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_workers: Option<u32>,
}

/// How provenance is grouped when two are set side by side.
pub const GROUPS: &[&str] = &["workload", "system", "evalbench", "machine", "plan"];

/// One field that differs between two provenances (or is unknown on one side).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Difference {
    /// The group: workload, system, evalbench, machine, plan.
    pub group: &'static str,
    /// The field, as run.json names it.
    pub field: String,
    pub a: String,
    pub b: String,
}

/// The field's value for people, `unknown` when absent.
fn text(v: Option<&serde_json::Value>) -> String {
    match v {
        None | Some(serde_json::Value::Null) => "unknown".into(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(a)) if a.is_empty() => "none".into(),
        Some(serde_json::Value::Array(a)) => {
            a.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), String::from)).collect::<Vec<_>>().join(", ")
        }
        Some(serde_json::Value::Object(m)) if m.is_empty() => "none".into(),
        Some(serde_json::Value::Object(m)) => m
            .iter()
            .map(|(k, x)| format!("{k}={}", x.as_str().map_or_else(|| x.to_string(), String::from)))
            .collect::<Vec<_>>()
            .join(", "),
        Some(other) => other.to_string(),
    }
}

impl Provenance {
    /// Its fields as (group, field, value) rows, `unknown` where absent, in a fixed order.
    pub fn rows(&self) -> Vec<(&'static str, String, String)> {
        let v = serde_json::to_value(self).expect("provenance serializes");
        let mut out = Vec::new();
        for g in GROUPS {
            let fields: &[&str] = match *g {
                "workload" => &["flake", "rev", "nar_hash"],
                "system" => &[
                    "target",
                    "server_version",
                    "nix_version",
                    "postgres_version",
                    "postgres_settings",
                    "lab_settings",
                ],
                "evalbench" => &["version", "git_rev"],
                "machine" => &["hostname", "cpu_model", "cores", "memory_bytes", "kernel"],
                _ => &["passes", "repeat_clean", "repeat_instrumented", "warmup_clean", "captures_off", "eval_workers"],
            };
            for f in fields {
                out.push((*g, f.to_string(), text(v[g].get(*f))));
            }
        }
        out.push(("run", "started".into(), text(v.get("started"))));
        // Only an interleaved run has a partner; a session alone says nothing to a reader.
        if let Some(other) = &self.interleaved_with {
            out.push(("run", "interleaved_with".into(), other.clone()));
            out.push(("run", "session".into(), text(v.get("session"))));
        }
        out
    }

    /// Whether `other` was measured in the same session (one `run`) as this.
    pub fn same_session(&self, other: &Provenance) -> bool {
        self.session.is_some() && self.session == other.session
    }

    /// Whether `other` was measured interleaved with this, pass by pass, in
    /// one session (`run --baseline`: each side names the other): not two
    /// sets of runs of one `run`, which share a session and nothing more.
    pub fn interleaved(&self, other: &Provenance) -> bool {
        self.same_session(other) && self.interleaved_with.is_some() && other.interleaved_with.is_some()
    }

    /// Every field that differs from `other`, the run's start, session and
    /// partner left out (two runs always differ in them). Unknown against known is a difference.
    pub fn differs(&self, other: &Provenance) -> Vec<Difference> {
        self.rows()
            .into_iter()
            .zip(other.rows())
            .filter(|((g, _, _), _)| *g != "run")
            .filter(|((_, _, a), (_, _, b))| a != b)
            .map(|((group, field, a), (_, _, b))| Difference { group, field, a, b })
            .collect()
    }

    /// Whether nothing at all is known (a bundle from before provenance).
    pub fn is_unknown(&self) -> bool {
        *self == Provenance::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_without_provenance_reads_as_unknown_and_differs_from_a_known_one() {
        let old: Provenance = serde_json::from_str("{}").unwrap();
        assert!(old.is_unknown());
        assert!(old.rows().iter().all(|(_, _, v)| v == "unknown" || v == "none"));
        let mut known = Provenance::default();
        known.workload.flake = Some("./f".into());
        known.started = Some("2026-12-01T00:00:00Z".into());
        let d = old.differs(&known);
        assert_eq!(
            d,
            vec![Difference { group: "workload", field: "flake".into(), a: "unknown".into(), b: "./f".into() }]
        );
        assert!(known.differs(&known.clone()).is_empty());
    }
}
