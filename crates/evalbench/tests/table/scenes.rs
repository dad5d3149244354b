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
    Seen {
        exit: o.status.code().unwrap_or(-1),
        said: format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
    }
}

/// `mount -t tmpfs -o OPTS` on `dir`, unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path, opts: &str) -> Mount {
        std::fs::create_dir_all(dir).unwrap();
        assert!(
            Command::new("mount").args(["-t", "tmpfs", "-o", opts, "tmpfs"]).arg(dir).status().unwrap().success(),
            "mount needs root"
        );
        Mount(dir.to_path_buf())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// What a scene sets up beside running its command: the directories that
/// must be byte-identical after (with their digests before), the words
/// that name the file at fault, and its own assertions.
#[derive(Default)]
pub struct Scene {
    untouched: Vec<(PathBuf, Vec<(PathBuf, u64)>)>,
    named: String,
    extra: Vec<(bool, String)>,
}

type SceneFn = fn(&Path, &Row, &mut Scene) -> Seen;

/// The scene of `row`, by its fault and command.
fn scene_of(row: &Row) -> Option<SceneFn> {
    Some(match (row.fault.as_str(), row.command.as_str()) {
        ("out:foreign-file", _) => scene_out_foreign_file,
        ("out:gradient-bundle", _) => scene_out_gradient_bundle,
        ("out:symlink", _) => scene_out_symlink,
        ("out:in-use", _) => scene_out_in_use,
        ("out:stale-lock", _) => scene_out_stale_lock,
        ("out:foreign-summary", _) => scene_out_foreign_summary,
        ("out:pass-symlink", _) => scene_out_pass_symlink,
        ("out:read-only", _) => scene_out_read_only,
        ("out:full-disk", _) => scene_out_full_disk,
        ("archive:other-beside" | "archive:own-beside", _) => scene_archive_other_beside,
        ("archive:traversal" | "archive:bomb", _) => scene_archive_traversal,
        ("bundle:warmup-only", _) => scene_bundle_warmup_only,
        ("flag:timeout-zero", _) => scene_flag_timeout_zero,
        ("flag:flake-missing" | "flag:flake-file" | "flag:flake-no-nix", _) => scene_flag_flake_missing,
        ("flag:negative-pct", _) => scene_flag_negative_pct,
        ("flag:negative-runs", _) => scene_flag_negative_runs,
        ("pass:unknown", "compare") => scene_pass_unknown_compare,
        ("pass:unknown", _) => scene_pass_unknown,
        ("decode:empty-dir", _) => scene_decode_empty_dir,
        ("bisect:no-such-rev", _) => scene_bisect_no_such_rev,
        ("bench:too-few-runs", _) => scene_bench_too_few_runs,
        ("provenance:none", _) => scene_provenance_none,
        ("plural:one", _) => scene_plural_one,
        ("gate:counters-on-one-side" | "gate:counters-missing" | "gate:allow-missing", _) => {
            scene_gate_counters_on_one_side
        }
        _ => return None,
    })
}

/// Runs the scene of `row`, and holds what it did to the row.
pub fn check(row: &Row) -> Result<(), String> {
    let tmp = reachable_tmp("evalbench-faults-scene.");
    let Some(scene) = scene_of(row) else { return Err(format!("{}: no scene for it", row.at())) };
    let mut sc = Scene::default();
    let s = scene(tmp.path(), row, &mut sc);
    let mut wrong: Vec<String> = Vec::new();
    if s.exit != row.exit {
        wrong.push(format!("exit {}, the table says {}", s.exit, row.exit));
    }
    if row.named == Named::Yes && !s.said.contains(&sc.named) {
        wrong.push(format!("{:?} is not named", sc.named));
    }
    if s.said.contains("panicked") {
        wrong.push("a panic".into());
    }
    wrong.extend(sc.extra.into_iter().filter(|(ok, _)| !ok).map(|(_, what)| what));
    for (d, before) in &sc.untouched {
        if &digests(d) != before {
            wrong.push(format!("{}: its files changed", d.display()));
        }
    }
    row.verdict(&wrong, None, &s.said, 1500)
}

fn scene_out_foreign_file(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let out = t.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    sc.untouched.push((out.clone(), digests(&out)));
    sc.named = "notes.txt".into();
    let s = seen(evalbench().args(["run", "--passes", "cold-clean", "--out"]).arg(&out));
    sc.extra.push((
        !out.join("evalbench.lock").exists() && !out.join("evalbench-manifest.json").exists(),
        "nothing left in OUT".into(),
    ));
    s
}

fn scene_out_gradient_bundle(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let out = copy("gradient-bundle", &t.join("gb"));
    sc.untouched.push((out.clone(), digests(&out)));
    sc.named = "gb/".into();
    seen(evalbench().args(["run", "--passes", "cold-clean", "--out"]).arg(&out))
}

fn scene_out_symlink(t: &Path, row: &Row, sc: &mut Scene) -> Seen {
    let target = t.join("target");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep"), "x").unwrap();
    std::os::unix::fs::symlink(&target, t.join("link")).unwrap();
    sc.untouched.push((target.clone(), digests(&target)));
    sc.named = "link".into();
    let s = match row.command.as_str() {
        "run" => seen(evalbench().args(["run", "--passes", "cold-clean", "--out"]).arg(t.join("link"))),
        "summarize" => seen(evalbench().args(["summarize", "-q", "-o"]).arg(t.join("link")).arg(data("lab-a"))),
        _ => seen(evalbench().args(["inspect", "-o"]).arg(t.join("link")).arg(data("lab-a"))),
    };
    sc.extra.push((s.said.contains("symbolic link"), "says it is a symbolic link".into()));
    s
}

fn scene_out_in_use(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    use std::os::fd::AsRawFd;
    let out = t.join("out");
    std::fs::create_dir(&out).unwrap();
    let lock = std::fs::File::create(out.join("evalbench.lock")).unwrap();
    std::fs::write(out.join("evalbench.lock"), std::process::id().to_string()).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
    sc.untouched.push((out.clone(), digests(&out)));
    let s = seen(evalbench().args(["run", "--passes", "cold-clean", "--out"]).arg(&out));
    sc.extra.push((
        s.said.contains(&format!("is in use by evalbench run (pid {})", std::process::id())),
        "names the holder".into(),
    ));
    drop(lock);
    s
}

fn scene_out_stale_lock(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let out = t.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(
        out.join("evalbench-manifest.json"),
        r#"{"written_by": "evalbench 0.1.0", "entries": ["evalbench.lock"]}"#,
    )
    .unwrap();
    std::fs::write(out.join("evalbench.lock"), "999999999").unwrap();
    let s = seen(
        evalbench()
            .args(["run", "--target", "gradient", "--target-config"])
            .arg(t.join("none.json"))
            .arg("--out")
            .arg(&out),
    );
    sc.extra.push((
        s.said.contains("took over the lock of evalbench run (pid 999999999), which is no longer running"),
        "takes the stale lock over".into(),
    ));
    sc.extra.push((!out.join("evalbench.lock").exists(), "and gives it back".into()));
    s
}

fn scene_out_foreign_summary(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let out = t.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("summary.txt"), "my own notes\n").unwrap();
    sc.untouched.push((out.clone(), digests(&out)));
    sc.named = "summary.txt".into();
    seen(evalbench().args(["summarize", "-q", "-o"]).arg(&out).arg(data("lab-a")))
}

fn scene_out_pass_symlink(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let (out, target) = (t.join("out"), t.join("elsewhere"));
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("trace.json"), "someone's").unwrap();
    std::os::unix::fs::symlink(&target, out.join("cold-clean")).unwrap();
    sc.untouched.push((target.clone(), digests(&target)));
    sc.named = "cold-clean".into();
    seen(evalbench().args(["summarize", "-q", "-o"]).arg(&out).arg(data("lab-a")))
}

fn scene_out_read_only(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let m = Mount::tmpfs(&t.join("ro"), "ro,size=1m");
    sc.named = "ro/".into();
    let s = seen(evalbench().args(["summarize", "-q", "-o"]).arg(&m.0).arg(data("lab-a")));
    drop(m);
    s
}

fn scene_out_full_disk(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let m = Mount::tmpfs(&t.join("full"), "size=64k");
    sc.named = "full/".into();
    let s = seen(evalbench().args(["summarize", "-q", "-o"]).arg(&m.0).arg(data("lab-a")));
    sc.extra.push((s.said.contains("No space left on device"), "says the disk is full".into()));
    let left: Vec<String> = walk(&m.0).into_iter().filter(|p| p.contains(".tmp")).collect();
    sc.extra.push((left.is_empty(), format!("no temporary file left: {left:?}")));
    drop(m);
    s
}

fn scene_archive_other_beside(t: &Path, row: &Row, sc: &mut Scene) -> Seen {
    let src = copy("lab-a", &t.join("x"));
    assert!(Command::new("tar")
        .arg("-C")
        .arg(t)
        .arg("-czf")
        .arg(t.join("x.tar.gz"))
        .arg("x")
        .status()
        .unwrap()
        .success());
    std::fs::remove_dir_all(&src).unwrap();
    if row.fault == "archive:other-beside" {
        copy("lab-b", &t.join("x"));
        sc.untouched.push((t.join("x"), digests(&t.join("x"))));
        sc.named = "x: exists and was not made from this archive".into();
    } else {
        run_ok(evalbench().args(["summarize", "-q"]).arg(t.join("x.tar.gz")));
    }
    seen(evalbench().args(["summarize", "-q"]).arg(t.join("x.tar.gz")))
}

fn scene_archive_traversal(t: &Path, row: &Row, sc: &mut Scene) -> Seen {
    let a = t.join("a.tar.gz");
    let (name, size) = if row.fault == "archive:traversal" { ("../evil", 10) } else { ("b/zeros", 20 << 20) };
    let py = format!(
        "import tarfile,io\nt=tarfile.open('{}','w:gz')\ni=tarfile.TarInfo('{name}')\ni.size={size}\nt.addfile(i,\
            io.BytesIO(bytes({size})))\nt.close()",
        a.display()
    );
    assert!(Command::new("python3").args(["-c", &py]).status().unwrap().success());
    sc.named = if size == 10 { "../evil".into() } else { "a.tar.gz".into() };
    let s = seen(evalbench().args(["summarize", "-q", "--max-unpacked", "1M"]).arg(&a));
    sc.extra.push((!t.join("evil").exists(), "nothing written outside".into()));
    s
}

fn scene_bundle_warmup_only(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
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
    let s = seen(evalbench().args(["summarize", "-q", "--no-trace", "-o"]).arg(t.join("o")).arg(&b));
    let text = std::fs::read_to_string(t.join("o/summary.txt")).unwrap_or_default();
    let second = text.lines().nth(1).unwrap_or("").to_string();
    sc.extra.push((
        second.starts_with("cold-clean  FAILED (0 of 1 run completed): no figure"),
        format!("line 2: {second}"),
    ));
    sc.extra.push((!text.contains("evaluated median"), "no figure from the warm-up".into()));
    s
}

fn scene_flag_timeout_zero(t: &Path, _row: &Row, _sc: &mut Scene) -> Seen {
    seen(evalbench().args(["run", "--timeout-s", "0", "--out"]).arg(t.join("o")))
}

fn scene_flag_flake_missing(t: &Path, row: &Row, sc: &mut Scene) -> Seen {
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
    sc.named = flake.file_name().unwrap().to_string_lossy().into_owned();
    let s = seen(evalbench().args(["run", "--flake"]).arg(&flake).arg("--out").arg(t.join("o")));
    sc.extra.push((!t.join("o").exists(), "no output directory made".into()));
    s
}

fn scene_flag_negative_pct(_t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let s = seen(evalbench().args(["compare", "--fail-on-regression", "-5"]).arg(data("lab-a")).arg(data("lab-b")));
    sc.extra.push((
        s.said.contains("expected a percentage of 0 or more") && !s.said.contains("-- -5"),
        "the parser's words, no wrong tip".into(),
    ));
    s
}

fn scene_flag_negative_runs(t: &Path, _row: &Row, _sc: &mut Scene) -> Seen {
    seen(evalbench().args(["run", "--repeat", "-1", "--out"]).arg(t.join("o")))
}

fn scene_pass_unknown_compare(_t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let s = seen(
        evalbench()
            .args(["compare", "--pass-a", "bogus", "--pass-b", "cold-clean"])
            .arg(data("lab-a"))
            .arg(data("lab-b")),
    );
    sc.extra.push((
        s.said.contains("no pass \"bogus\"") && !s.said.contains("refusing"),
        "names the unknown pass, not cold against warm".into(),
    ));
    s
}

fn scene_pass_unknown(_t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let s = seen(evalbench().args(["whatif", "--pass", "bogus"]).arg(data("lab-a")));
    sc.extra.push((s.said.contains("no pass \"bogus\""), "names the unknown pass".into()));
    s
}

fn scene_decode_empty_dir(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    std::fs::create_dir(t.join("empty")).unwrap();
    sc.named = "empty".into();
    seen(evalbench().args(["decode", "strace"]).arg(t.join("empty")))
}

fn scene_bisect_no_such_rev(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let repo = t.join("repo");
    std::fs::create_dir(&repo).unwrap();
    std::fs::write(repo.join("flake.nix"), "{ outputs = { self }: { }; }\n").unwrap();
    for args in
        [&["init", "-q"][..], &["add", "."], &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]]
    {
        assert!(Command::new("git").arg("-C").arg(&repo).args(args).status().unwrap().success());
    }
    let s = seen(evalbench().args(["bisect", "--flake"]).arg(&repo).args(["nosuchrev", "HEAD"]));
    sc.extra.push((!s.said.trim_end().ends_with(':'), "no dangling \": \"".into()));
    s
}

fn scene_bench_too_few_runs(_t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let s = seen(evalbench().args(["bench", "--runs", "3", "--", "sleep 0.01", "--", "sleep 0.05"]));
    sc.extra.push((
        s.said.contains("too few runs to call it") && !s.said.contains("inside run-to-run noise"),
        "too few runs, not noise".into(),
    ));
    s
}

fn scene_provenance_none(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let s = seen(evalbench().arg("compare").arg(data("gradient-bundle")).arg(copy("gradient-bundle", &t.join("g2"))));
    sc.extra.push((
        s.said.contains("not recorded on both sides") && !s.said.contains("measured the same workload"),
        "no claim on what was not recorded".into(),
    ));
    s
}

fn scene_plural_one(t: &Path, _row: &Row, sc: &mut Scene) -> Seen {
    let s = seen(evalbench().args(["summarize", "--no-trace", "-o"]).arg(t.join("o")).arg(data("gradient-bundle")));
    let text = std::fs::read_to_string(t.join("o/summary.txt")).unwrap_or_default();
    sc.extra.push((
        text.contains("1 malformed line skipped") && !text.contains("1 malformed lines"),
        "one line, singular".into(),
    ));
    s
}

fn scene_gate_counters_on_one_side(t: &Path, row: &Row, sc: &mut Scene) -> Seen {
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
    let mut c = evalbench();
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
    sc.extra.push((s.said.contains(want), format!("says {want:?}")));
    s
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
