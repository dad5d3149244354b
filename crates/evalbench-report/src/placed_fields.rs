//! Span fields read back from their span file, for trace.json.
//!
//! A pass loaded with its fields left in place
//! (`evalbench_analyze::Fields::Placed`) holds each span at its 56
//! bytes and where its fields are in the file: at 4.5M spans that is
//! 200 MB of text never held. The trace writer copies the fields out as
//! they are, so it reads them back here, a window of the file at a time:
//! a stream's spans are in file order, so one read serves a run of them.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use evalbench_bundle::{Span, Stream};

/// How much of a file one read takes in at most: a segment's spans' lines
/// are a few megabytes, less where another stream's lines lie between.
const WINDOW: u64 = 8 << 20;

/// One stream's file, and the bytes last read from it.
pub(crate) struct PlacedFields<'a> {
    stream: &'a Stream,
    file: Option<File>,
    /// Where `bytes` start in the file.
    from: u64,
    bytes: Vec<u8>,
}

impl<'a> PlacedFields<'a> {
    pub(crate) fn new(stream: &'a Stream) -> PlacedFields<'a> {
        PlacedFields { stream, file: None, from: 0, bytes: Vec::new() }
    }

    /// The fields `len` bytes at `at` in the stream's file; `ahead` are the
    /// spans from this one on, whose fields the same read may take in too.
    /// An error names the file and the bytes when they are not fields
    /// (the file changed after it was read).
    pub(crate) fn read(&mut self, ahead: &[Span], at: u64, len: usize) -> io::Result<&str> {
        let end = at + len as u64;
        if at < self.from || end > self.from + self.bytes.len() as u64 {
            // Up to WINDOW past `at`, as far as the next spans' fields reach.
            let upto = ahead
                .iter()
                .filter_map(|s| self.stream.fields_in_file(s))
                .map(|(a, l)| a + l as u64)
                .take_while(|&e| e <= at + WINDOW)
                .fold(end, u64::max);
            let path = &self.stream.file;
            if self.file.is_none() {
                self.file = Some(File::open(path).map_err(|e| named(path, e))?);
            }
            let file = self.file.as_ref().expect("opened above");
            self.bytes.resize((upto - at) as usize, 0);
            let got = read_at_most(file, &mut self.bytes, at).map_err(|e| named(path, e))?;
            self.bytes.truncate(got);
            self.from = at;
            if got < len {
                return Err(changed(path, at, end, &format!("the file ends at byte {}", at + got as u64)));
            }
        }
        let raw = &self.bytes[(at - self.from) as usize..(end - self.from) as usize];
        let text = std::str::from_utf8(raw).map_err(|_| changed(&self.stream.file, at, end, "not UTF-8"))?;
        if !looks_like_value(raw) {
            return Err(changed(&self.stream.file, at, end, "not a JSON value"));
        }
        Ok(text)
    }
}

/// Fills `buf` from `at` on, or as far as the file goes; how far that was.
fn read_at_most(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The bytes open and close as the one JSON value the reader took them
/// for: the cheap check that the file is still the one read.
fn looks_like_value(raw: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (raw.first(), raw.last()) else { return false };
    match first {
        b'{' => last == b'}',
        b'[' => last == b']',
        b'"' => last == b'"' && raw.len() >= 2,
        b'-' | b'0'..=b'9' => last.is_ascii_digit(),
        b't' => raw == b"true",
        b'f' => raw == b"false",
        b'n' => raw == b"null",
        _ => false,
    }
}

fn named(path: &std::path::Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn changed(path: &std::path::Path, at: u64, end: u64, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{}: bytes {at}..{end} are no longer a span's fields ({why}): the file changed after it was read",
            path.display()
        ),
    )
}
