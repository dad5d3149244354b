//! `.tar.gz` in and out. Unpacking treats the archive as hostile: it is read
//! as one stream, every entry's path and link target is checked before
//! anything is written, and the unpacked size is capped.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

use crate::error::{io, BundleError, Refusal};

/// Caps on what an archive may unpack to.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_unpacked_bytes: u64,
    pub max_entries: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_unpacked_bytes: 16 << 30, max_entries: 1_000_000 }
    }
}

/// Counts compressed bytes consumed, so errors can say where the stream broke.
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A path inside the archive, made relative and checked: no root, no prefix,
/// no `..`. Returns the cleaned relative path.
fn safe_relative(p: &Path) -> Result<PathBuf, Refusal> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            Component::ParentDir => return Err(Refusal::ParentDir),
            Component::RootDir | Component::Prefix(_) => return Err(Refusal::Absolute),
        }
    }
    Ok(out)
}

/// A link may only point downward from its own directory: relative and with
/// no `..`. Such links, even chained, can never leave the tree.
fn safe_link_target(target: &Path) -> Result<(), Refusal> {
    for c in target.components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return Err(Refusal::LinkUp(target.to_path_buf())),
            Component::RootDir | Component::Prefix(_) => return Err(Refusal::LinkAbsolute(target.to_path_buf())),
        }
    }
    Ok(())
}

/// Unpacks `archive` (a `.tar.gz`) into `dest`, which must exist and be empty.
pub fn unpack(archive: &Path, dest: &Path, limits: Limits) -> Result<(), BundleError> {
    let file = File::open(archive).map_err(io(archive))?;
    let consumed = Arc::new(AtomicU64::new(0));
    let reader = Counting { inner: io::BufReader::new(file), read: consumed.clone() };
    let mut tar = tar::Archive::new(GzDecoder::new(reader));
    let stream_err = |entry: Option<String>, e: io::Error| BundleError::Archive {
        path: archive.to_path_buf(),
        entry,
        offset: consumed.load(Ordering::Relaxed),
        message: describe(&e),
    };
    let refused = |entry: &str, reason: Refusal| BundleError::Refused {
        path: archive.to_path_buf(),
        entry: entry.to_string(),
        reason,
    };
    let too_large = |limit: String| BundleError::TooLarge { path: archive.into(), limit };
    let bytes_limit = || too_large(format!("{} bytes unpacked", limits.max_unpacked_bytes));
    let mut total: u64 = 0;
    let mut count: u64 = 0;
    for entry in tar.entries().map_err(|e| stream_err(None, e))? {
        let mut entry = entry.map_err(|e| stream_err(None, e))?;
        count += 1;
        if count > limits.max_entries {
            return Err(too_large(format!("{} entries", limits.max_entries)));
        }
        let raw = entry.path().map_err(|e| stream_err(None, e))?.into_owned();
        let name = raw.display().to_string();
        let rel = safe_relative(&raw).map_err(|r| refused(&name, r))?;
        if rel.as_os_str().is_empty() {
            continue; // "./" itself
        }
        let out = dest.join(&rel);
        let kind = entry.header().entry_type();
        match kind {
            tar::EntryType::Directory => fs::create_dir_all(&out).map_err(io(&out))?,
            tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse => {
                make_parent(&out)?;
                remove_existing(&out)?;
                let mut f = File::options().write(true).create_new(true).open(&out).map_err(io(&out))?;
                let left = limits.max_unpacked_bytes.saturating_sub(total);
                let n = copy_limited(&mut entry, &mut f, left).map_err(|e| stream_err(Some(name.clone()), e))?;
                match n {
                    Some(n) => total += n,
                    None => {
                        drop(f);
                        let _ = fs::remove_file(&out);
                        return Err(bytes_limit());
                    }
                }
            }
            tar::EntryType::Symlink | tar::EntryType::Link => {
                let target = entry
                    .link_name()
                    .map_err(|e| stream_err(Some(name.clone()), e))?
                    .ok_or_else(|| refused(&name, Refusal::LinkWithoutTarget))?
                    .into_owned();
                if kind == tar::EntryType::Symlink {
                    safe_link_target(&target).map_err(|r| refused(&name, r))?;
                    make_parent(&out)?;
                    remove_existing(&out)?;
                    std::os::unix::fs::symlink(&target, &out).map_err(io(&out))?;
                } else {
                    let limit = (limits.max_unpacked_bytes, &bytes_limit as &dyn Fn() -> BundleError);
                    copy_hard_link((dest, &target, &out), &mut total, limit, &|r| refused(&name, r))?;
                }
            }
            tar::EntryType::XGlobalHeader
            | tar::EntryType::XHeader
            | tar::EntryType::GNULongName
            | tar::EntryType::GNULongLink => {}
            other => return Err(refused(&name, Refusal::EntryType(format!("{other:?}")))),
        }
    }
    Ok(())
}

/// A hard link names another entry of the archive: copied rather than
/// linked, so nothing outside can be reached, its bytes counted against the
/// limit (`over` is the error past it).
fn copy_hard_link(
    (dest, target, out): (&Path, &Path, &Path),
    total: &mut u64,
    (max, over): (u64, &dyn Fn() -> BundleError),
    refused: &dyn Fn(Refusal) -> BundleError,
) -> Result<(), BundleError> {
    let src = safe_relative(target).map_err(|r| refused(Refusal::HardLinkTarget(Box::new(r))))?;
    let src = dest.join(src);
    let meta = fs::symlink_metadata(&src).map_err(|_| refused(Refusal::HardLinkOutside(target.to_path_buf())))?;
    if !meta.is_file() {
        return Err(refused(Refusal::HardLinkNotAFile));
    }
    *total += meta.len();
    if *total > max {
        return Err(over());
    }
    make_parent(out)?;
    remove_existing(out)?;
    fs::copy(&src, out).map_err(io(out))?;
    Ok(())
}

fn describe(e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        "the archive ends early (truncated download?)".into()
    } else {
        e.to_string()
    }
}

fn make_parent(out: &Path) -> Result<(), BundleError> {
    match out.parent() {
        Some(p) => fs::create_dir_all(p).map_err(io(p)),
        None => Ok(()),
    }
}

/// A later entry of the same name replaces an earlier one; never write through a link.
fn remove_existing(out: &Path) -> Result<(), BundleError> {
    match fs::symlink_metadata(out) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(out).map_err(io(out)),
        Ok(_) => fs::remove_file(out).map_err(io(out)),
        Err(_) => Ok(()),
    }
}

/// Copies at most `limit` bytes; `None` when the entry holds more.
fn copy_limited(r: &mut impl Read, w: &mut impl Write, limit: u64) -> io::Result<Option<u64>> {
    let mut taken = r.take(limit.saturating_add(1));
    let n = io::copy(&mut taken, w)?;
    Ok(if n > limit { None } else { Some(n) })
}

/// Packs the directory `src` into `out` (`.tar.gz`), entries relative to
/// `src`, skipping `skip` names at the top level (the archive itself). The
/// archive is written to a temporary name and renamed, so a crash never
/// leaves a partial file under the final name.
pub fn pack_dir(src: &Path, out: &Path, skip: &[&str]) -> Result<(), BundleError> {
    let tmp = out.with_extension("partial");
    let result = (|| -> io::Result<()> {
        let file = File::create(&tmp)?;
        let gz = GzEncoder::new(io::BufWriter::new(file), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        tar.follow_symlinks(false);
        let mut names: Vec<_> = fs::read_dir(src)?.collect::<Result<Vec<_>, _>>()?;
        names.sort_by_key(|e| e.file_name());
        for e in names {
            let name = e.file_name();
            if skip.iter().any(|s| name == *s) || e.path() == tmp {
                continue;
            }
            if e.file_type()?.is_dir() {
                tar.append_dir_all(&name, e.path())?;
            } else {
                tar.append_path_with_name(e.path(), &name)?;
            }
        }
        let gz = tar.into_inner()?;
        let mut w = gz.finish()?;
        w.flush()?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(())
    })();
    match result {
        Ok(()) => fs::rename(&tmp, out).map_err(io(out)),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(BundleError::Io { path: out.to_path_buf(), source: e })
        }
    }
}
