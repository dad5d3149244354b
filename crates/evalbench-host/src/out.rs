//! Standard output, checked. `println!` panics when a write fails and a
//! `let _ = writeln!` loses the output without a word; both were here. A
//! command writes through [`Out`], which keeps the first error (callbacks
//! that cannot return one write through it too), skips what follows it, and
//! hands it back from [`Out::finish`] after the final flush. The binary
//! turns a closed pipe (`| head`) into a quiet end, as Unix tools do, and any
//! other write error into exit status 2 with a message.

use std::fmt;
use std::io::{self, BufWriter, Write};

/// A checked, buffered writer; see the module doc.
pub struct Out<W: Write> {
    inner: BufWriter<W>,
    err: Option<io::Error>,
}

/// Standard output, buffered and checked.
pub fn stdout() -> Out<io::StdoutLock<'static>> {
    Out::new(io::stdout().lock())
}

impl<W: Write> Out<W> {
    pub fn new(w: W) -> Out<W> {
        Out { inner: BufWriter::with_capacity(64 * 1024, w), err: None }
    }

    /// Writes formatted text; an error is kept for [`Out::finish`].
    pub fn fmt(&mut self, args: fmt::Arguments<'_>) {
        if self.err.is_none() {
            if let Err(e) = self.inner.write_fmt(args) {
                self.err = Some(e);
            }
        }
    }

    /// Writes bytes; an error is kept for [`Out::finish`].
    pub fn bytes(&mut self, b: &[u8]) {
        if self.err.is_none() {
            if let Err(e) = self.inner.write_all(b) {
                self.err = Some(e);
            }
        }
    }

    /// Keeps an error that happened while producing output (a serializer's).
    pub fn fail(&mut self, e: io::Error) {
        self.err.get_or_insert(e);
    }

    /// Whether a write failed: long producers stop early.
    pub fn failed(&self) -> bool {
        self.err.is_some()
    }

    /// Flushes; the first error of any write or of the flush.
    pub fn finish(mut self) -> io::Result<()> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.inner.flush()
    }
}

/// `Write` for serializers (`serde_json::to_writer`): errors are kept, never returned.
impl<W: Write> Write for Out<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `outln!(out, "...", args)`: a line through an [`Out`].
#[macro_export]
macro_rules! outln {
    ($out:expr) => { $out.bytes(b"\n") };
    ($out:expr, $($arg:tt)*) => {{ $out.fmt(format_args!($($arg)*)); $out.bytes(b"\n"); }};
}

/// `out!(out, "...", args)`: text through an [`Out`], no newline.
#[macro_export]
macro_rules! out {
    ($out:expr, $($arg:tt)*) => { $out.fmt(format_args!($($arg)*)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Full(usize);
    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.0 < buf.len() {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "no space"));
            }
            self.0 -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_first_error_comes_back_from_finish() {
        let mut o = Out::new(Full(10));
        outln!(o, "{}", "x".repeat(100_000));
        assert!(o.failed());
        outln!(o, "more");
        assert_eq!(o.finish().unwrap_err().kind(), io::ErrorKind::StorageFull);
        let mut ok = Out::new(Full(100));
        outln!(ok, "fits");
        assert!(ok.finish().is_ok());
        let mut late = Out::new(Full(3));
        outln!(late, "buffered until the flush");
        assert!(!late.failed());
        assert!(late.finish().is_err(), "the flush's error is returned too");
    }
}
