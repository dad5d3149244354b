//! The gate's steps: every machine toplevel and every check of the flake,
//! each its own nix process.

use crate::error::HarnessError;
use std::process::{Command, Stdio};

use super::{nix_config, GateOpts, Step, SYSTEM};

fn nix_json(flake: &str, attr: &str, eval_cache: bool) -> Result<Option<Vec<String>>, HarnessError> {
    let out = Command::new("nix")
        .args(["eval", "--json", &format!("{flake}#{attr}"), "--apply", "builtins.attrNames"])
        .env("NIX_CONFIG", nix_config(eval_cache))
        .stdin(Stdio::null())
        .output()
        .map_err(|source| HarnessError::Tool { tool: "nix", install: "apt-get install nix-bin", source })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("does not provide attribute") {
            return Ok(None);
        }
        return Err(HarnessError::Listing { attr: attr.to_string(), message: err.trim().to_string() });
    }
    serde_json::from_slice(&out.stdout)
        .map(Some)
        .map_err(|e| HarnessError::Listing { attr: attr.to_string(), message: e.to_string() })
}

/// Machines and checks of the flake, each a step.
pub fn discover(o: &GateOpts) -> Result<Vec<Step>, HarnessError> {
    let flake = o.flake.to_string_lossy().to_string();
    let mut steps = Vec::new();
    // `nix path-info --derivation` forces the toplevel's drvPath through nix's
    // eval cache; Debian's nix 2.8 answers `nix eval ....drvPath` without it.
    let (set, suffix) = match &o.machines {
        Some(attr) => (attr.clone(), String::new()),
        None => ("nixosConfigurations".to_string(), ".config.system.build.toplevel".to_string()),
    };
    match nix_json(&flake, &set, o.eval_cache)? {
        Some(names) => {
            for m in names {
                let mut attr_path: Vec<String> = set.split('.').map(String::from).collect();
                attr_path.push(m.clone());
                attr_path.extend(suffix.split('.').filter(|x| !x.is_empty()).map(String::from));
                steps.push(Step {
                    attr_path,
                    name: format!("machine {m}"),
                    kind: "machine",
                    argv: vec![
                        "nix".into(),
                        "path-info".into(),
                        "--derivation".into(),
                        format!("{flake}#{set}.\"{m}\"{suffix}"),
                    ],
                });
            }
        }
        None if o.machines.is_some() => {
            return Err(HarnessError::NoAttribute { flake: flake.to_string(), set: set.to_string() })
        }
        None => {}
    }
    let checks = o.checks.clone().unwrap_or_else(|| format!("checks.{SYSTEM}"));
    if let Some(names) = nix_json(&flake, &checks, o.eval_cache)? {
        for c in names {
            let mut attr_path: Vec<String> = checks.split('.').map(String::from).collect();
            attr_path.push(c.clone());
            steps.push(Step {
                attr_path,
                name: format!("check {c}"),
                kind: "check",
                argv: vec!["nix".into(), "build".into(), "--no-link".into(), format!("{flake}#{checks}.\"{c}\"")],
            });
        }
    }
    if steps.is_empty() {
        return Err(HarnessError::NothingToGate { flake: flake.to_string() });
    }
    Ok(steps)
}
