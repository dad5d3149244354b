//! A capture cut to a pass's window. tcpdump is started before the
//! evaluation is requested and stopped after it has left
//! EvaluatingDerivation; what it saw outside `[start, stop]` (a scheduler
//! polling an idle database) is not the evaluation's, and must not count in
//! any statistic (docs/decisions.md, "Passes"). The runner cuts the file
//! once, so every reader after it (decode, the report, compare) sees the
//! window alone.
//!
//! Only the classic pcap format is read here: it is what `tcpdump -w`
//! writes, and the runner cuts only its own captures. Both byte orders and
//! both timestamp resolutions (µs, ns) are read; the records are copied
//! byte for byte.

use std::io::{Read, Write};

use crate::error::DecodeError;

const MAGIC_US: u32 = 0xa1b2_c3d4;
const MAGIC_NS: u32 = 0xa1b2_3c4d;
const GLOBAL_HEADER: usize = 24;
const RECORD_HEADER: usize = 16;

/// What a classic pcap's global header says about its records.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Format {
    pub big_endian: bool,
    pub nanos: bool,
}

impl Format {
    /// Reads the global header's magic; None for anything but classic pcap.
    pub fn of(header: &[u8]) -> Option<Format> {
        let m: [u8; 4] = header.get(..4)?.try_into().ok()?;
        for (big_endian, v) in [(false, u32::from_le_bytes(m)), (true, u32::from_be_bytes(m))] {
            match v {
                MAGIC_US => return Some(Format { big_endian, nanos: false }),
                MAGIC_NS => return Some(Format { big_endian, nanos: true }),
                _ => {}
            }
        }
        None
    }

    fn u32(self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        if self.big_endian {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    }

    /// A record header's timestamp (Unix µs) and captured length.
    fn record(self, h: &[u8]) -> (i64, usize) {
        let secs = self.u32(&h[0..4]) as i64;
        let frac = self.u32(&h[4..8]) as i64;
        let us = if self.nanos { frac / 1000 } else { frac };
        (secs * 1_000_000 + us, self.u32(&h[8..12]) as usize)
    }
}

/// Follows a pcap file that is still being written, record by record: the
/// timestamp of the last whole record so far. Feed it the bytes appended
/// since the last call.
#[derive(Debug, Default)]
pub struct Tail {
    format: Option<Format>,
    pending: Vec<u8>,
    /// Bytes of the current record's data still to skip.
    skip: usize,
    pub last_ts_us: Option<i64>,
    pub records: u64,
}

impl Tail {
    pub fn feed(&mut self, mut bytes: &[u8]) {
        loop {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                if self.skip > 0 {
                    return;
                }
            }
            let need = if self.format.is_none() { GLOBAL_HEADER } else { RECORD_HEADER };
            let take = (need - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < need {
                return;
            }
            match self.format {
                None => match Format::of(&self.pending) {
                    Some(f) => self.format = Some(f),
                    // Not a pcap: nothing to follow; the caller's quiet timer ends the wait.
                    None => {
                        self.skip = usize::MAX;
                        self.pending.clear();
                        return;
                    }
                },
                Some(f) => {
                    let (ts, len) = f.record(&self.pending);
                    self.last_ts_us = Some(ts);
                    self.records += 1;
                    self.skip = len;
                }
            }
            self.pending.clear();
        }
    }
}

/// What a cut kept and left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cut {
    pub kept: u64,
    /// Records before the window's start, and after its end.
    pub before: u64,
    pub after: u64,
}

const READ_BUFFER: usize = 1 << 20;

/// Copies the records of `input` whose timestamps lie in `[start_us,
/// stop_us]` to `out`, with the global header. `name` names the input in
/// errors. A record cut short at the end of the file is an error (the
/// capture was not stopped cleanly), never silently dropped.
pub fn cut(name: &str, input: impl Read, out: impl Write, start_us: i64, stop_us: i64) -> Result<Cut, DecodeError> {
    let mut r = std::io::BufReader::with_capacity(READ_BUFFER, input);
    let mut w = std::io::BufWriter::with_capacity(1 << 20, out);
    let werr = |e: std::io::Error| DecodeError::Line { name: name.to_string(), line: 0, source: e };
    let mut header = [0u8; GLOBAL_HEADER];
    let got = read_full(&mut r, &mut header).map_err(werr)?;
    if got < GLOBAL_HEADER {
        return Err(DecodeError::format(
            name,
            "byte 0: ",
            format!("a pcap global header of {GLOBAL_HEADER} bytes, found {got} bytes"),
        ));
    }
    let f = Format::of(&header).ok_or_else(|| {
        DecodeError::format(
            name,
            "byte 0: ",
            format!("classic pcap (magic a1b2c3d4 or a1b23c4d), found {:02x?}", &header[..4]),
        )
    })?;
    w.write_all(&header).map_err(werr)?;
    let mut c = Cut::default();
    let mut offset = GLOBAL_HEADER as u64;
    let mut rec = [0u8; RECORD_HEADER];
    let mut data = Vec::new();
    loop {
        let got = read_full(&mut r, &mut rec).map_err(werr)?;
        if got == 0 {
            break;
        }
        if got < RECORD_HEADER {
            return Err(DecodeError::format(
                name,
                format!("byte {offset}: "),
                format!("a {RECORD_HEADER}-byte record header, found {got} bytes"),
            ));
        }
        let (ts, len) = f.record(&rec);
        if len > 256 << 20 {
            return Err(DecodeError::format(
                name,
                format!("byte {offset}: "),
                format!("a record of at most 256 MiB, found {len} bytes"),
            ));
        }
        // Sized by the length field only up to the reader's own buffer, and
        // beyond it grown with the bytes that are there: a file of a few
        // kilobytes may claim a 256 MiB record.
        let got = if len <= READ_BUFFER {
            data.resize(len, 0);
            read_full(&mut r, &mut data)
        } else {
            data.clear();
            (&mut r).take(len as u64).read_to_end(&mut data)
        }
        .map_err(werr)?;
        if got < len {
            return Err(DecodeError::format(
                name,
                format!("byte {}: ", offset + 16),
                format!("{len} bytes of packet data, found {got}"),
            ));
        }
        offset += (RECORD_HEADER + len) as u64;
        if ts < start_us {
            c.before += 1;
        } else if ts > stop_us {
            c.after += 1;
        } else {
            c.kept += 1;
            w.write_all(&rec).map_err(werr)?;
            w.write_all(&data).map_err(werr)?;
        }
    }
    w.flush().map_err(werr)?;
    Ok(c)
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pcap of records at these times (µs), little-endian; a corrupt-input helper only.
    fn pcap(times: &[i64]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&MAGIC_US.to_le_bytes());
        v.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0]);
        for &t in times {
            v.extend_from_slice(&((t / 1_000_000) as u32).to_le_bytes());
            v.extend_from_slice(&((t % 1_000_000) as u32).to_le_bytes());
            v.extend_from_slice(&3u32.to_le_bytes());
            v.extend_from_slice(&3u32.to_le_bytes());
            v.extend_from_slice(b"abc");
        }
        v
    }

    #[test]
    fn keeps_the_window_and_counts_the_rest() {
        let input = pcap(&[1_000_000, 2_000_000, 3_000_000, 4_000_000]);
        let mut out = Vec::new();
        let c = cut("t.pcap", &input[..], &mut out, 2_000_000, 3_000_000).unwrap();
        assert_eq!(c, Cut { kept: 2, before: 1, after: 1 });
        assert_eq!(out, pcap(&[2_000_000, 3_000_000]));
    }

    #[test]
    fn the_tail_follows_a_file_fed_in_pieces() {
        let input = pcap(&[5, 7_000_001, 9_000_002]);
        let mut t = Tail::default();
        for chunk in input.chunks(5) {
            t.feed(chunk);
        }
        assert_eq!((t.last_ts_us, t.records), (Some(9_000_002), 3));
    }

    #[test]
    fn a_record_cut_short_or_another_format_is_an_error_naming_the_byte() {
        let mut input = pcap(&[1, 2]);
        input.truncate(input.len() - 2);
        let e = cut("t.pcap", &input[..], Vec::new(), 0, 10).unwrap_err().to_string();
        assert!(e.contains("t.pcap: byte 59: 3 bytes of packet data, found 1"), "{e}");
        let e = cut("x", &b"\x0a\x0d\x0d\x0a0123456789012345678901234"[..], Vec::new(), 0, 1).unwrap_err().to_string();
        assert!(e.contains("classic pcap"), "{e}");
    }

    /// A reader that remembers the largest read asked of it.
    struct Watched<'a>(&'a [u8], usize);
    impl Read for Watched<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.1 = self.1.max(buf.len());
            self.0.read(buf)
        }
    }

    #[test]
    fn a_record_that_claims_more_than_the_file_holds_allocates_what_is_there() {
        // The fuzzer's find: 3 bytes of data under a header that claims 200 MiB.
        let mut input = pcap(&[1]);
        let at = input.len() - 3 - 8;
        input[at..at + 8].copy_from_slice(&[0, 0, 0x80, 0x0c, 0, 0, 0x80, 0x0c]);
        let mut r = Watched(&input, 0);
        let e = cut("t.pcap", &mut r, Vec::new(), 0, 10).unwrap_err().to_string();
        assert!(e.contains("t.pcap: byte 40: 209715200 bytes of packet data, found 3"), "{e}");
        assert!(r.1 <= READ_BUFFER, "a read of {} bytes was asked for 3 bytes of data", r.1);
    }
}
