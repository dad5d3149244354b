//! Files written whole or not at all: a temporary file beside the output,
//! then one atomic step puts it in place, so a reader never sees half of it.
//!
//! After a crash of evalbench, every output is its old version or its new
//! one, never part of one. After a crash of the machine (power lost before
//! the kernel wrote the data out) that holds only for a run's records,
//! `run.json` and the gate's state, which [`write_record`] syncs to disk
//! before and after the swap; the rest (traces, reports, captures, which a
//! rerun remakes) is not synced, since an fsync of a 250 MB trace.json
//! would cost more than the summary it belongs to.

use std::path::Path;

use crate::error::{io, BundleError};

/// A temporary file beside the output, created with mode 0666 less the
/// umask (0644 under 022) as any other file the user writes: the outputs
/// are served by Hydra or Gradient as another user. (tempfile's default is
/// 0600, right for secrets, wrong for a report.)
pub fn readable_temp(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new().permissions(std::fs::Permissions::from_mode(0o666)).tempfile_in(dir)
}

/// Puts the finished temporary file at `path`. An existing file is swapped
/// with it in one step (renameat2's RENAME_EXCHANGE) and then removed under
/// the temporary name: renaming over it instead makes ext4 write all of the
/// new file out at once (its auto_da_alloc), which was a quarter of
/// `summarize`'s time when it replaced a 250 MB trace.json. Where the swap
/// is not supported, or nothing is there yet, a plain rename.
pub fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> std::io::Result<()> {
    // A link where the file goes points at someone else's: never replaced.
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(std::io::Error::other(
            "a symbolic link stands where the file goes: refusing to replace it or write through it",
        ));
    }
    let regular = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file());
    if regular {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        if renameat_with(CWD, tmp.path(), CWD, path, RenameFlags::EXCHANGE).is_ok() {
            // The temporary name now holds the old file; dropping it removes it.
            return tmp.close();
        }
    }
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// The directory `path` goes in (created if missing) and a temporary file
/// in it: the one setup every writer here shares.
fn temp_beside(path: &Path) -> Result<(&Path, tempfile::NamedTempFile), BundleError> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // The directory it goes in, a link: written through, the file would land in someone else's.
    crate::manifest::refuse_link(dir)?;
    crate::manifest::refuse_link(path)?;
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    Ok((dir, readable_temp(dir).map_err(io(path))?))
}

/// As [`write_atomic`], and on disk when it returns: the file's data before
/// the swap, the directory's entry after it.
pub fn write_record(path: &Path, bytes: &[u8]) -> Result<(), BundleError> {
    use std::io::Write;
    let (dir, mut tmp) = temp_beside(path)?;
    tmp.write_all(bytes).map_err(io(path))?;
    tmp.as_file().sync_all().map_err(io(path))?;
    persist(tmp, path).map_err(io(path))?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// Copies `src` to `dest` whole or not at all.
pub fn copy_atomic(src: &Path, dest: &Path) -> Result<(), BundleError> {
    let (_, mut tmp) = temp_beside(dest)?;
    let mut from = std::fs::File::open(src).map_err(io(src))?;
    std::io::copy(&mut from, &mut tmp).map_err(io(dest))?;
    persist(tmp, dest).map_err(io(dest))
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BundleError> {
    use std::io::Write;
    let (_, mut tmp) = temp_beside(path)?;
    tmp.write_all(bytes).map_err(io(path))?;
    persist(tmp, path).map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn a_file_is_created_then_replaced_whole_with_nothing_left_beside_it() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("trace.json");
        write_atomic(&p, b"first").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        // A reader holding the old file keeps reading the old bytes.
        let old = std::fs::File::open(&p).unwrap();
        write_atomic(&p, b"second, longer").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second, longer");
        assert_eq!(std::io::read_to_string(old).unwrap(), "first");
        assert_eq!(names(d.path()), vec!["trace.json"]);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o044, 0o044, "readable by others: {mode:o}");
    }

    #[test]
    fn records_and_copies_are_whole_too() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("run.json");
        write_record(&p, b"{}").unwrap();
        write_record(&p, b"{\"a\": 1}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"a\": 1}");
        let c = d.path().join("sub/copy.json");
        copy_atomic(&p, &c).unwrap();
        assert_eq!(std::fs::read(&c).unwrap(), b"{\"a\": 1}");
        assert!(copy_atomic(&d.path().join("missing"), &c).is_err());
        assert_eq!(std::fs::read(&c).unwrap(), b"{\"a\": 1}", "a failed copy leaves the old file");
        assert_eq!(names(d.path()), vec!["run.json", "sub"]);
        assert_eq!(names(&d.path().join("sub")), vec!["copy.json"]);
    }

    #[test]
    fn a_directory_in_the_way_is_an_error_not_swapped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("keep"), b"x").unwrap();
        assert!(write_atomic(&p, b"file").is_err());
        assert!(p.join("keep").is_file());
        assert_eq!(names(d.path()), vec!["out"]);
    }
}
