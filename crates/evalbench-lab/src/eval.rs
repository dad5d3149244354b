//! The eval subprocess: a child of the worker that evaluates the flake with
//! the real `nix`, one attribute at a time so each has its own `resolve`
//! span, and prints one JSON line per derivation on stdout. Each `resolve`
//! is a `nix path-info --derivation`, which goes through nix's eval cache:
//! a warm evaluation is faster for the real reason.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use tracing::debug_span;

const E: &str = "gradient_eval";
const SYSTEM: &str = "x86_64-linux";

fn nix(args: &[&str]) -> Result<String, String> {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new("nix");
    // SAFETY: prctl is async-signal-safe. nix dies with the eval subprocess.
    unsafe {
        c.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let out = c
        .args(args)
        .env("NIX_CONFIG", crate::state::NIX_CONFIG)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("nix: {e} (install the Debian package nix-bin)"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        // nix's own message, without the trace noise.
        let msg: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("warning:")).collect();
        return Err(msg.join("\n"));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Files in nix's eval cache before we start: evidence of a warm evaluation.
fn eval_cache_entries() -> usize {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_default()
        .join("nix");
    std::fs::read_dir(&base)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("eval-cache-v"))
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().filter_map(|e| e.ok()))
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sqlite"))
        .count()
}

fn emit(out: &mut impl Write, v: serde_json::Value) {
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

fn rusage_kb(who: i32) -> i64 {
    // SAFETY: getrusage writes into the struct we give it.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut u);
        u.ru_maxrss
    }
}

pub fn eval(flake: &Path, job: &str, shards: usize) -> Result<(), String> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let flake_s = flake.to_string_lossy().to_string();
    let _open = debug_span!(target: E, "open", job, flake = flake_s.as_str()).entered();
    if !flake.join("flake.nix").is_file() {
        let msg = format!("{}: no flake.nix", flake.display());
        emit(&mut out, serde_json::json!({"error": msg}));
        return Err(msg);
    }
    let cached = eval_cache_entries();
    let locked = {
        let _l = debug_span!(target: E, "lock_flake", eval_cache_entries = cached).entered();
        match nix(&["flake", "metadata", "--json", "--no-write-lock-file", &flake_s]) {
            Ok(m) => m,
            Err(e) => {
                emit(&mut out, serde_json::json!({"error": e}));
                return Err(e);
            }
        }
    };
    let _ = locked;
    let attrs: Vec<String> = {
        let _d = debug_span!(target: E, "discover", attrs = tracing::field::Empty).entered();
        let listed = nix(&["eval", "--json", &format!("{flake_s}#packages.{SYSTEM}"), "--apply", "builtins.attrNames"]);
        match listed.and_then(|j| serde_json::from_str::<Vec<String>>(&j).map_err(|e| e.to_string())) {
            Ok(a) => {
                _d.record("attrs", a.len());
                a
            }
            Err(e) => {
                emit(&mut out, serde_json::json!({"error": e, "attr": format!("packages.{SYSTEM}")}));
                return Err(e);
            }
        }
    };
    let shards = shards.clamp(1, attrs.len().max(1));
    let plan: Vec<Vec<String>> = {
        let _p = debug_span!(target: E, "plan_shards", attrs = attrs.len(), shards).entered();
        let mut plan = vec![Vec::new(); shards];
        for (i, a) in attrs.iter().enumerate() {
            plan[i % shards].push(a.clone());
        }
        plan
    };
    for shard in plan {
        for attr in shard {
            let full = format!("packages.{SYSTEM}.{attr}");
            let _r = debug_span!(target: E, "resolve", attr = full.as_str()).entered();
            match nix(&["path-info", "--derivation", &format!("{flake_s}#{full}")]) {
                Ok(drv) => emit(&mut out, serde_json::json!({"attr": full, "drv": drv})),
                Err(e) => {
                    emit(&mut out, serde_json::json!({"attr": full, "error": e}));
                    return Err(format!("{full}: {e}"));
                }
            }
        }
    }
    let peak = rusage_kb(libc::RUSAGE_SELF).max(rusage_kb(libc::RUSAGE_CHILDREN));
    emit(&mut out, serde_json::json!({"done": {"attrs": attrs.len(), "eval_peak_rss_kb": peak, "eval_cache_entries": cached}}));
    Ok(())
}
