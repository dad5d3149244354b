//! The span line, formatted by hand: the writer thread is the layer's only
//! cost centre, and the format is small and fixed.

use std::io::Write;

use crate::layer::{Closed, Value};

/// The parts of a line that are the same for every span of this process.
pub(crate) struct LineHead {
    pub pid: u32,
    /// `"process":"…"` and, when set, `,"host":"…"`, already escaped.
    pub process_and_host: String,
}

impl LineHead {
    pub(crate) fn new(pid: u32, process: &str, host: Option<&str>) -> Self {
        let mut s = Vec::new();
        s.extend_from_slice(b"\"process\":");
        write_str(&mut s, process);
        if let Some(h) = host {
            s.extend_from_slice(b",\"host\":");
            write_str(&mut s, h);
        }
        LineHead { pid, process_and_host: String::from_utf8(s).expect("escaped JSON is UTF-8") }
    }
}

pub(crate) fn write_span(out: &mut Vec<u8>, head: &LineHead, s: &Closed) {
    out.extend_from_slice(b"{\"name\":");
    write_str(out, s.name);
    out.extend_from_slice(b",\"target\":");
    write_str(out, s.target);
    let _ = write!(out, ",\"ts_us\":{},\"dur_us\":{},\"pid\":{},", s.ts_us, s.dur_us, head.pid);
    out.extend_from_slice(head.process_and_host.as_bytes());
    let _ = write!(out, ",\"id\":{}", s.id);
    if s.parent != 0 {
        let _ = write!(out, ",\"parent\":{}", s.parent);
    }
    let _ = write!(out, ",\"thread\":{},\"fields\":{{", s.thread);
    for (i, (k, v)) in s.fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        write_value(out, v);
    }
    out.extend_from_slice(b"}}\n");
}

pub(crate) fn write_dropped(out: &mut Vec<u8>, head: &LineHead, dropped: u64) {
    let _ = write!(out, "{{\"dropped_spans\":{dropped},\"pid\":{},", head.pid);
    out.extend_from_slice(head.process_and_host.as_bytes());
    out.extend_from_slice(b"}\n");
}

fn write_value(out: &mut Vec<u8>, v: &Value) {
    let _ = match v {
        Value::I64(n) => write!(out, "{n}"),
        Value::U64(n) => write!(out, "{n}"),
        Value::I128(n) => write!(out, "{n}"),
        Value::Bool(b) => write!(out, "{b}"),
        // JSON has no NaN or infinity: those become strings rather than invalid lines.
        Value::F64(f) if f.is_finite() => write!(out, "{f}"),
        Value::F64(f) => {
            write_str(out, &f.to_string());
            Ok(())
        }
        Value::Str(s) => {
            write_str(out, s);
            Ok(())
        }
    };
}

pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                let _ = write!(out, "\\u{:04x}", b);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}
