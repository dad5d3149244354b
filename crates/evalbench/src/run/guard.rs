//! `run --out D` takes D for itself before anything starts, and gives it
//! back when it ends: one run at a time (a lock file with its pid, held
//! with flock, so a run that died leaves a lock the next one takes over),
//! and nothing of anyone else's in it (D's manifest lists what evalbench
//! made; anything else there refuses the run, named). What an earlier
//! run left, by its manifest, is removed, so that an old `cold-clean.7/`
//! never reads as a run of this bundle.

use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::Context;
use evalbench_bundle::{layout, manifest};

/// The lock file's name, in the output directory.
pub const LOCK: &str = "evalbench.lock";

/// What a run makes at the top of its output directory: its entries in
/// the manifest (each owning what lies below it).
fn entries(passes: &[String], sides: bool) -> Vec<String> {
    let mut e: Vec<String> = [
        LOCK,
        layout::WARMUP_DIR,
        layout::SUMMARY_TXT,
        layout::SUMMARY_JSON,
        layout::ARCHIVE,
        layout::REPORT_DIR,
        layout::NIX_SUPPORT_DIR,
        "compare.txt",
        "compare.json",
    ]
    .map(String::from)
    .to_vec();
    for p in passes {
        e.push(p.clone());
        e.push(format!("{p}.*"));
    }
    if sides {
        e.extend(["a".to_string(), "b".to_string()]);
    }
    e
}

/// The output directory, held: released (its lock file removed) when dropped.
pub struct OutDir {
    lock: std::fs::File,
    path: PathBuf,
    /// The run made the directory: one it leaves with nothing but its
    /// manifest in it (stopped before the first run) is removed.
    created: bool,
}

impl Drop for OutDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.path.join(LOCK));
        let only_manifest =
            std::fs::read_dir(&self.path).is_ok_and(|r| r.flatten().all(|e| e.file_name() == manifest::MANIFEST));
        if self.created && only_manifest {
            let _ = std::fs::remove_file(self.path.join(manifest::MANIFEST));
            let _ = std::fs::remove_dir(&self.path);
        }
        // SAFETY: flock on a descriptor this value owns.
        unsafe { libc::flock(self.lock.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Whether the run captured anything into `dir`: a run's or a warm-up's directory.
pub fn captured(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|r| {
        r.flatten().any(|e| {
            e.path().is_dir()
                && (e.file_name() == layout::WARMUP_DIR
                    || layout::KNOWN_PASSES.contains(&layout::base_name(&e.file_name().to_string_lossy())))
        })
    })
}

/// Takes `out` for a run of `passes` (`sides`: with a baseline, a/ and b/).
pub fn take(out: &Path, passes: &[String], sides: bool) -> anyhow::Result<OutDir> {
    manifest::refuse_link(out)?;
    let created = !out.exists();
    std::fs::create_dir_all(out).with_context(|| format!("{}: creating the output directory", out.display()))?;
    let held = hold(out, passes, sides).map(|mut d| {
        d.created = created;
        d
    });
    if held.is_err() && created {
        // Refused: nothing left behind.
        let _ = std::fs::remove_dir_all(out);
    }
    held
}

fn hold(out: &Path, passes: &[String], sides: bool) -> anyhow::Result<OutDir> {
    let lock_path = out.join(LOCK);
    let existed = lock_path.exists();
    let mut lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .with_context(|| format!("{}: opening the output directory's lock", lock_path.display()))?;
    let mut before = String::new();
    let _ = lock.read_to_string(&mut before);
    let pid = before.trim().parse::<u32>().ok();
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let who = pid.map_or_else(|| "another evalbench run".to_string(), |p| format!("evalbench run (pid {p})"));
        anyhow::bail!("{} is in use by {who}; give --out another directory, or wait for it to end", out.display());
    }
    let guard = OutDir { lock, path: out.to_path_buf(), created: false };
    let theirs: Vec<PathBuf> =
        manifest::foreign_entries(out)?.into_iter().filter(|p| existed || !p.ends_with(LOCK)).collect();
    if let Some(first) = theirs.first() {
        drop(guard);
        let more = if theirs.len() > 1 { format!(" (and {} more)", theirs.len() - 1) } else { String::new() };
        anyhow::bail!(
            "{}{more}: not written by evalbench (no manifest of its lists it); refusing to run into {}: give --out a \
                new or empty directory",
            first.display(),
            out.display()
        );
    }
    if existed && pid.is_some_and(|p| !alive(p)) {
        eprintln!(
            "evalbench run: took over the lock of evalbench run (pid {}), which is no longer running",
            pid.unwrap_or(0)
        );
    }
    let mut f = &guard.lock;
    f.set_len(0)?;
    f.rewind()?;
    write!(f, "{}", std::process::id())?;
    clear_earlier(out)?;
    // Everything here is evalbench's (just checked, under the lock).
    manifest::record(out, &entries(passes, sides), None)?;
    Ok(guard)
}

/// A side's bundle directory (`run --baseline`'s a/ and b/): its own
/// manifest, so that the bundle carried elsewhere says what evalbench made.
pub fn claim_side(dir: &Path, passes: &[String]) -> anyhow::Result<()> {
    let mut e = entries(passes, false);
    e.retain(|x| x != LOCK && !x.starts_with("compare."));
    Ok(manifest::claim(dir, &e, None)?)
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// What an earlier run listed in the manifest, removed (the lock and the
/// manifest kept), and said.
fn clear_earlier(out: &Path) -> anyhow::Result<()> {
    let Some(m) = manifest::Manifest::read(out)? else { return Ok(()) };
    let mut removed = 0usize;
    for e in std::fs::read_dir(out)?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == LOCK || name == manifest::MANIFEST || !m.owns(&name) {
            continue;
        }
        let p = e.path();
        let gone = if p.is_dir() && !p.is_symlink() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        gone.with_context(|| format!("{}: removing what an earlier run left", p.display()))?;
        removed += 1;
    }
    if removed > 0 {
        eprintln!(
            "evalbench run: {} held an earlier bundle of evalbench's ({removed} entries, by its manifest); removed it \
                to start clean",
            out.display()
        );
    }
    Ok(())
}
