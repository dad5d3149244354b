//! The gate's self-test: a flake with one broken machine and one failing
//! check among good ones. A gate that is red and names both, each with its
//! error, and passes the rest, does what it says.

use super::StepResult;

/// A flake with one broken machine and one failing check, among good ones.
pub const SELF_TEST_FLAKE: &str = r#"{
  outputs = { self }:
    let
      system = "x86_64-linux";
      drv = name: ok: builtins.derivation {
        inherit name system;
        builder = "/bin/sh";
        args = [ "-c" (if ok then "echo ok > $out" else "echo this check fails on purpose >&2; exit 1") ];
      };
    in
    {
      machines = {
        good = drv "good-toplevel" true;
        broken = throw "machine broken on purpose: a missing option";
        other = drv "other-toplevel" true;
      };
      checks.${system} = {
        passes = drv "passing-check" true;
        fails = drv "failing-check" false;
      };
    };
}
"#;

/// The attribute set of machines in [`SELF_TEST_FLAKE`].
pub const SELF_TEST_MACHINES: &str = "machines";

/// Whether a gate's results on [`SELF_TEST_FLAKE`] are what a working gate gives.
pub fn self_test_passed(results: &[StepResult]) -> bool {
    let failed: Vec<&StepResult> = results.iter().filter(|r| !r.ok).collect();
    let named = |n: &str| failed.iter().any(|r| r.step.name == n);
    failed.len() == 2
        && named("machine broken")
        && named("check fails")
        && failed.iter().all(|r| r.error.as_deref().is_some_and(|e| e.contains("on purpose")))
}
