//! The rows of docs/faults.md that start no lab: outputs that are someone
//! else's, archives, flags and words. Each sets up its scene in a temporary
//! directory, runs its command, and returns what was printed with the exit
//! status; [`check`] holds the row to it and to the scene's own assertions.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{digests, Named, Row};
use crate::common::*;

/// The fault ids the scenes here know (with their command).
pub const IDS: &[(&str, &str)] = &[
    ("out:foreign-file", "run"),
    ("out:gradient-bundle", "run"),
    ("out:symlink", "run"),
    ("out:in-use", "run"),
    ("out:stale-lock", "run"),
    ("out:foreign-summary", "summarize"),
    ("out:symlink", "summarize"),
    ("out:symlink", "inspect"),
    ("out:pass-symlink", "summarize"),
    ("out:read-only", "summarize"),
    ("out:full-disk", "summarize"),
    ("archive:other-beside", "summarize"),
    ("archive:own-beside", "summarize"),
    ("archive:traversal", "summarize"),
    ("archive:bomb", "summarize"),
    ("bundle:warmup-only", "summarize"),
    ("flag:timeout-zero", "run"),
    ("flag:flake-missing", "run"),
    ("flag:flake-file", "run"),
    ("flag:flake-no-nix", "run"),
    ("flag:negative-pct", "compare"),
    ("flag:negative-runs", "run"),
    ("pass:unknown", "compare"),
    ("pass:unknown", "whatif"),
    ("decode:empty-dir", "decode"),
    ("bisect:no-such-rev", "bisect"),
    ("bench:too-few-runs", "bench"),
    ("provenance:none", "compare"),
    ("plural:one", "summarize"),
    ("gate:counters-on-one-side", "compare"),
    ("gate:counters-missing", "compare"),
    ("gate:allow-missing", "compare"),
];

pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// A copy of a committed bundle.
pub fn copy(name: &str, to: &Path) -> PathBuf {
    assert!(Command::new("cp").arg("-r").arg(data(name)).arg(to).status().unwrap().success());
    to.to_path_buf()
}

/// What a command did: its exit status and all it printed.
pub struct Seen {
    pub exit: i32,
    pub said: String,
}

pub fn seen(c: &mut Command) -> Seen {
    let o = c.output().unwrap();
    Seen { exit: o.status.code().unwrap_or(-1), said: format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)) }
}

/// `mount -t tmpfs -o OPTS` on `dir`, unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path, opts: &str) -> Mount {
        std::fs::create_dir_all(dir).unwrap();
        assert!(Command::new("mount").args(["-t", "tmpfs", "-o", opts, "tmpfs"]).arg(dir).status().unwrap().success(), "mount needs root");
        Mount(dir.to_path_buf())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Runs the scene of `row`: what it printed, the file it must name (if
/// any), and the files that must be byte-identical after.
pub fn check(row: &Row) -> Result<(), String> {
    let tmp = reachable_tmp("evalbench-faults-scene.");
    let t = tmp.path();
    // What must be byte-identical after: each directory with its digests before the command.
    let mut untouched: Vec<(PathBuf, Vec<(PathBuf, u64)>)> = Vec::new();
    let mut named = String::new();
    let mut extra: Vec<(bool, String)> = Vec::new();
    let ev = || evalbench();
    let s: Seen = match (row.fault.as_str(), row.command.as_str()) {
        ("out:foreign-file", _) => {
            let out = t.join("out");
            std::fs::create_dir(&out).unwrap();
            std::fs::write(out.join("notes.txt"), "mine").unwrap();
            untouched.push((out.clone(), digests(&out)));
            named = "notes.txt".into();
            let s = seen(ev().args(["run", "--passes", "cold-clean", "--out"]).arg(&out));
            extra.push((!out.join("evalbench.lock").exists() && !out.join("evalbench-manifest.json").exists(), "nothing left in OUT".into()));
            s
        }
        ("out:gradient-bundle", _) => {
            let out = copy("gradient-bundle", &t.join("gb"));
            untouched.push((out.clone(), digests(&out)));
            named = "gb/".into();
            seen(ev().args(["run", "--passes", "cold-clean", "--out"]).arg(&out))
        }
        ("out:symlink", cmd) => {
            let target = t.join("target");
            std::fs::create_dir(&target).unwrap();
            std::fs::write(target.join("keep"), "x").unwrap();
            std::os::unix::fs::symlink(&target, t.join("link")).unwrap();
            untouched.push((target.clone(), digests(&target)));
            named = "link".into();
            let s = match cmd {
                "run" => seen(ev().args(["run", "--passes", "cold-clean", "--out"]).arg(t.join("link"))),
                "summarize" => seen(ev().args(["summarize", "-q", "-o"]).arg(t.join("link")).arg(data("lab-a"))),
                _ => seen(ev().args(["inspect", "-o"]).arg(t.join("link")).arg(data("lab-a"))),
            };
            extra.push((s.said.contains("symbolic link"), "says it is a symbolic link".into()));
            s
        }
        ("out:in-use", _) => {
            use std::os::fd::AsRawFd;
            let out = t.join("out");
            std::fs::create_dir(&out).unwrap();
            let lock = std::fs::File::create(out.join("evalbench.lock")).unwrap();
            std::fs::write(out.join("evalbench.lock"), std::process::id().to_string()).unwrap();
            // SAFETY: flock on a descriptor this test owns.
            assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
            untouched.push((out.clone(), digests(&out)));
            let s = seen(ev().args(["run", "--passes", "cold-clean", "--out"]).arg(&out));
            extra.push((s.said.contains(&format!("is in use by evalbench run (pid {})", std::process::id())), "names the holder".into()));
            drop(lock);
            s
        }
        ("out:stale-lock", _) => {
            let out = t.join("out");
            std::fs::create_dir(&out).unwrap();
            std::fs::write(out.join("evalbench-manifest.json"), r#"{"written_by": "evalbench 0.1.0", "entries": ["evalbench.lock"]}"#).unwrap();
            std::fs::write(out.join("evalbench.lock"), "999999999").unwrap();
            let s = seen(ev().args(["run", "--target", "gradient", "--target-config"]).arg(t.join("none.json")).arg("--out").arg(&out));
            extra.push((
                s.said.contains("took over the lock of evalbench run (pid 999999999), which is no longer running"),
                "takes the stale lock over".into(),
            ));
            extra.push((!out.join("evalbench.lock").exists(), "and gives it back".into()));
            s
        }
        ("out:foreign-summary", _) => {
            let out = t.join("out");
            std::fs::create_dir(&out).unwrap();
            std::fs::write(out.join("summary.txt"), "my own notes\n").unwrap();
            untouched.push((out.clone(), digests(&out)));
            named = "summary.txt".into();
            seen(ev().args(["summarize", "-q", "-o"]).arg(&out).arg(data("lab-a")))
        }
        ("out:pass-symlink", _) => {
            let (out, target) = (t.join("out"), t.join("elsewhere"));
            std::fs::create_dir_all(&out).unwrap();
            std::fs::create_dir_all(&target).unwrap();
            std::fs::write(target.join("trace.json"), "someone's").unwrap();
            std::os::unix::fs::symlink(&target, out.join("cold-clean")).unwrap();
            untouched.push((target.clone(), digests(&target)));
            named = "cold-clean".into();
            seen(ev().args(["summarize", "-q", "-o"]).arg(&out).arg(data("lab-a")))
        }
        ("out:read-only", _) => {
            let m = Mount::tmpfs(&t.join("ro"), "ro,size=1m");
            named = "ro/".into();
            let s = seen(ev().args(["summarize", "-q", "-o"]).arg(&m.0).arg(data("lab-a")));
            drop(m);
            s
        }
        ("out:full-disk", _) => {
            let m = Mount::tmpfs(&t.join("full"), "size=64k");
            named = "full/".into();
            let s = seen(ev().args(["summarize", "-q", "-o"]).arg(&m.0).arg(data("lab-a")));
            extra.push((s.said.contains("No space left on device"), "says the disk is full".into()));
            let left: Vec<String> = walk(&m.0).into_iter().filter(|p| p.contains(".tmp")).collect();
            extra.push((left.is_empty(), format!("no temporary file left: {left:?}")));
            drop(m);
            s
        }
        ("archive:other-beside" | "archive:own-beside", _) => {
            let src = copy("lab-a", &t.join("x"));
            assert!(Command::new("tar").arg("-C").arg(t).arg("-czf").arg(t.join("x.tar.gz")).arg("x").status().unwrap().success());
            std::fs::remove_dir_all(&src).unwrap();
            if row.fault == "archive:other-beside" {
                copy("lab-b", &t.join("x"));
                untouched.push((t.join("x"), digests(&t.join("x"))));
                named = "x: exists and was not made from this archive".into();
            } else {
                run_ok(ev().args(["summarize", "-q"]).arg(t.join("x.tar.gz")));
            }
            seen(ev().args(["summarize", "-q"]).arg(t.join("x.tar.gz")))
        }
        ("archive:traversal" | "archive:bomb", _) => {
            let a = t.join("a.tar.gz");
            let (name, size) = if row.fault == "archive:traversal" { ("../evil", 10) } else { ("b/zeros", 20 << 20) };
            let py = format!(
                "import tarfile,io\nt=tarfile.open('{}','w:gz')\ni=tarfile.TarInfo('{name}')\ni.size={size}\nt.addfile(i,io.BytesIO(bytes({size})))\nt.close()",
                a.display()
            );
            assert!(Command::new("python3").args(["-c", &py]).status().unwrap().success());
            named = if size == 10 { "../evil".into() } else { "a.tar.gz".into() };
            let s = seen(ev().args(["summarize", "-q", "--max-unpacked", "1M"]).arg(&a));
            extra.push((!t.join("evil").exists(), "nothing written outside".into()));
            s
        }
        ("bundle:warmup-only", _) => {
            let b = t.join("b");
            std::fs::create_dir_all(b.join("warmup")).unwrap();
            let run = b.join("warmup/cold-clean");
            assert!(Command::new("cp").arg("-r").arg(data("lab-a/cold-clean")).arg(&run).status().unwrap().success());
            let mut v = read_json(&run.join("run.json"));
            v["status"] = "Failed".into();
            v["outcome"] = "failed".into();
            v["failure"] = "the evaluation ended Failed".into();
            v["error"] = "boom".into();
            v["provenance"] = serde_json::json!({"plan": {"passes": ["cold-clean"], "repeat_clean": 1}});
            std::fs::write(run.join("run.json"), v.to_string()).unwrap();
            let s = seen(ev().args(["summarize", "-q", "--no-trace", "-o"]).arg(t.join("o")).arg(&b));
            let text = std::fs::read_to_string(t.join("o/summary.txt")).unwrap_or_default();
            let second = text.lines().nth(1).unwrap_or("").to_string();
            extra.push((second.starts_with("cold-clean  FAILED (0 of 1 run completed): no figure"), format!("line 2: {second}")));
            extra.push((!text.contains("evaluated median"), "no figure from the warm-up".into()));
            s
        }
        ("flag:timeout-zero", _) => seen(ev().args(["run", "--timeout-s", "0", "--out"]).arg(t.join("o"))),
        ("flag:flake-missing" | "flag:flake-file" | "flag:flake-no-nix", _) => {
            let flake = match row.fault.as_str() {
                "flag:flake-missing" => t.join("nonexistent"),
                "flag:flake-file" => {
                    std::fs::write(t.join("file"), "x").unwrap();
                    t.join("file")
                }
                _ => {
                    std::fs::create_dir(t.join("dir")).unwrap();
                    t.join("dir")
                }
            };
            named = flake.file_name().unwrap().to_string_lossy().into_owned();
            let s = seen(ev().args(["run", "--flake"]).arg(&flake).arg("--out").arg(t.join("o")));
            extra.push((!t.join("o").exists(), "no output directory made".into()));
            s
        }
        ("flag:negative-pct", _) => {
            let s = seen(ev().args(["compare", "--fail-on-regression", "-5"]).arg(data("lab-a")).arg(data("lab-b")));
            extra.push((
                s.said.contains("expected a percentage of 0 or more") && !s.said.contains("-- -5"),
                "the parser's words, no wrong tip".into(),
            ));
            s
        }
        ("flag:negative-runs", _) => seen(ev().args(["run", "--repeat", "-1", "--out"]).arg(t.join("o"))),
        ("pass:unknown", "compare") => {
            let s = seen(ev().args(["compare", "--pass-a", "bogus", "--pass-b", "cold-clean"]).arg(data("lab-a")).arg(data("lab-b")));
            extra
                .push((s.said.contains("no pass \"bogus\"") && !s.said.contains("refusing"), "names the unknown pass, not cold against warm".into()));
            s
        }
        ("pass:unknown", _) => {
            let s = seen(ev().args(["whatif", "--pass", "bogus"]).arg(data("lab-a")));
            extra.push((s.said.contains("no pass \"bogus\""), "names the unknown pass".into()));
            s
        }
        ("decode:empty-dir", _) => {
            std::fs::create_dir(t.join("empty")).unwrap();
            named = "empty".into();
            seen(ev().args(["decode", "strace"]).arg(t.join("empty")))
        }
        ("bisect:no-such-rev", _) => {
            let repo = t.join("repo");
            std::fs::create_dir(&repo).unwrap();
            std::fs::write(repo.join("flake.nix"), "{ outputs = { self }: { }; }\n").unwrap();
            for args in [&["init", "-q"][..], &["add", "."], &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]] {
                assert!(Command::new("git").arg("-C").arg(&repo).args(args).status().unwrap().success());
            }
            let s = seen(ev().args(["bisect", "--flake"]).arg(&repo).args(["nosuchrev", "HEAD"]));
            extra.push((!s.said.trim_end().ends_with(':'), "no dangling \": \"".into()));
            s
        }
        ("bench:too-few-runs", _) => {
            let s = seen(ev().args(["bench", "--runs", "3", "--", "sleep 0.01", "--", "sleep 0.05"]));
            extra.push((s.said.contains("too few runs to call it") && !s.said.contains("inside run-to-run noise"), "too few runs, not noise".into()));
            s
        }
        ("provenance:none", _) => {
            let s = seen(ev().arg("compare").arg(data("gradient-bundle")).arg(copy("gradient-bundle", &t.join("g2"))));
            extra.push((
                s.said.contains("not recorded on both sides") && !s.said.contains("measured the same workload"),
                "no claim on what was not recorded".into(),
            ));
            s
        }
        ("plural:one", _) => {
            let s = seen(ev().args(["summarize", "--no-trace", "-o"]).arg(t.join("o")).arg(data("gradient-bundle")));
            let text = std::fs::read_to_string(t.join("o/summary.txt")).unwrap_or_default();
            extra.push((text.contains("1 malformed line skipped") && !text.contains("1 malformed lines"), "one line, singular".into()));
            s
        }
        ("gate:counters-on-one-side" | "gate:counters-missing" | "gate:allow-missing", _) => {
            let (a, b) = (copy("gradient-bundle", &t.join("a")), copy("gradient-bundle", &t.join("b")));
            if row.fault == "gate:counters-on-one-side" {
                std::fs::write(a.join("cold-clean/run.json"), "{\"eval_id\": tr").unwrap();
                for p in ["cold-clean", "warm-clean", "cold-instrumented", "warm-instrumented"] {
                    let f = b.join(p).join("evaluation_metric.json");
                    let mut v = read_json(&f);
                    for k in ["fn_calls", "total_thunks", "primop_calls", "lookups"] {
                        v[0][k] = (v[0][k].as_f64().unwrap() * 3.0).into();
                    }
                    std::fs::write(&f, v.to_string()).unwrap();
                }
            } else {
                std::fs::remove_file(b.join("cold-clean/evaluation_metric.json")).unwrap();
            }
            let mut c = ev();
            c.args(["compare", "--fail-on-regression", "5"]).arg(&a).arg(&b);
            if row.fault == "gate:allow-missing" {
                c.arg("--allow-missing");
            }
            let s = seen(&mut c);
            let want = match row.fault.as_str() {
                "gate:counters-on-one-side" => "regression past 5%: cold-clean nrFunctionCalls",
                "gate:counters-missing" => "cannot judge: cold-clean nrFunctionCalls missing in B",
                _ => "not judged (--allow-missing): cold-clean nrFunctionCalls missing in B",
            };
            extra.push((s.said.contains(want), format!("says {want:?}")));
            s
        }
        (f, c) => return Err(format!("docs/faults.md:{}: no scene for `{f}` `{c}`", row.line)),
    };
    let mut wrong: Vec<String> = Vec::new();
    if s.exit != row.exit {
        wrong.push(format!("exit {}, the table says {}", s.exit, row.exit));
    }
    if row.named == Named::Yes && !s.said.contains(&named) {
        wrong.push(format!("{named:?} is not named"));
    }
    if s.said.contains("panicked") {
        wrong.push("a panic".into());
    }
    wrong.extend(extra.into_iter().filter(|(ok, _)| !ok).map(|(_, what)| what));
    for (d, before) in &untouched {
        if &digests(d) != before {
            wrong.push(format!("{}: its files changed", d.display()));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "docs/faults.md:{} `{}` `{}`: {}\n{}",
            row.line,
            row.fault,
            row.command,
            wrong.join("; "),
            s.said.chars().take(1500).collect::<String>()
        ))
    }
}

/// Every file under `dir`, as strings.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            } else {
                out.push(e.path().display().to_string());
            }
        }
    }
    out
}
