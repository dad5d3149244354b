//! What a file looks like, from its first bytes: so that a decoder handed
//! the wrong file (`decode perf pg.pcap`, `decode nix-trace run.json`) says
//! what it was given instead of printing nothing or zeros.

use std::io::Read;
use std::path::Path;

use crate::DecodeError;

/// The first `n` bytes of a file (fewer if it is shorter).
pub fn head(path: &Path, n: usize) -> Result<Vec<u8>, DecodeError> {
    let mut f = std::fs::File::open(path).map_err(DecodeError::io(path))?;
    let mut buf = Vec::with_capacity(n);
    f.by_ref().take(n as u64).read_to_end(&mut buf).map_err(DecodeError::io(path))?;
    Ok(buf)
}

/// What these first bytes are, in a few words a person knows.
pub fn looks_like(head: &[u8]) -> &'static str {
    let text = match std::str::from_utf8(head) {
        Ok(t) => Some(t),
        // A head cut inside a multi-byte character is still text.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok(),
        Err(_) => None,
    };
    let first = text.map(|t| t.trim_start()).unwrap_or("");
    match head {
        [] => "an empty file",
        [0xd4, 0xc3, 0xb2, 0xa1, ..]
        | [0xa1, 0xb2, 0xc3, 0xd4, ..]
        | [0x4d, 0x3c, 0xb2, 0xa1, ..]
        | [0xa1, 0xb2, 0x3c, 0x4d, ..] => "a pcap capture (pg.pcap or proto.pcap: decode pg or proto)",
        [0x0a, 0x0d, 0x0d, 0x0a, ..] => "a pcapng capture (decode pg or proto)",
        [b'P', b'E', b'R', b'F', b'I', b'L', b'E', b'2', ..] => "perf.data (decode perf)",
        [0x1f, 0x8b, ..] => "a gzip file (a bundle's .tar.gz is opened by summarize, inspect and compare)",
        _ if text.is_none() || head.contains(&0) => "binary data",
        _ if first.starts_with('{') || first.starts_with('[') => "JSON (run.json, summary.json or a span file?)",
        _ if first.starts_with("function-trace ") => "nix's function trace (decode nix-trace)",
        _ if first.contains(" LOG:  ") || first.contains("duration: ") => "a PostgreSQL log (decode auto-explain)",
        _ => "text",
    }
}

/// The error for a file that is not what the decoder reads.
pub fn wrong(path: &Path, expected: &str, head: &[u8]) -> DecodeError {
    DecodeError::format(
        path.display().to_string(),
        "",
        format!("expected {expected}, but this looks like {}", looks_like(head)),
    )
}

/// Each line of a text file that is not blank, with its number (from 1),
/// trailing white space cut, to `each`; the number of lines read.
pub fn each_line(path: &Path, mut each: impl FnMut(u64, &str) -> Result<(), DecodeError>) -> Result<u64, DecodeError> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).map_err(DecodeError::io(path))?;
    let mut r = std::io::BufReader::new(file);
    let (mut buf, mut n) = (Vec::new(), 0u64);
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf).map_err(DecodeError::io(path))? == 0 {
            return Ok(n);
        }
        n += 1;
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end();
        if !line.is_empty() {
            each(n, line)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::looks_like;

    #[test]
    fn files_are_told_apart_by_their_first_bytes() {
        assert!(looks_like(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0]).starts_with("a pcap capture"));
        assert!(looks_like(b"PERFILE2\x68\0\0\0").starts_with("perf.data"));
        assert!(looks_like(b"  {\"pass\": \"cold-clean\"}").starts_with("JSON"));
        assert!(looks_like(b"function-trace entered undefined position at 1\n").starts_with("nix's function trace"));
        assert_eq!(looks_like(b""), "an empty file");
        assert_eq!(looks_like(&[0xff, 0xfe, 0, 1]), "binary data");
        assert_eq!(looks_like("12:00:01.5 read(3, \"é".as_bytes()), "text");
        // Cut inside a multi-byte character: still text.
        assert_eq!(looks_like(&"ab é".as_bytes()[..4]), "text");
    }
}
