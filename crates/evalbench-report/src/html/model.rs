//! What the report reads of a pass, loaded once: spans on the server clock,
//! run.json as written, and the Postgres files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use evalbench_analyze::{align_pass, load_pass, Alignment, PassData};
use evalbench_bundle::{layout, PassDir};
use serde_json::Value;

pub struct Pass {
    pub name: String,
    pub dir: PathBuf,
    pub data: PassData,
    pub align: Alignment,
    pub run: Value,
    pub clean: bool,
    pub cold: bool,
}

/// A span on the server clock.
pub struct S<'a> {
    pub stream: usize,
    pub idx: usize,
    pub start: f64,
    pub end: f64,
    pub name: &'a str,
    pub process: &'a str,
}

impl Pass {
    pub fn load(p: &PassDir) -> Pass {
        let data = load_pass(p);
        let align = align_pass(&data.streams);
        let run = read_json(&p.file(layout::RUN_JSON)).unwrap_or(Value::Null);
        Pass { name: p.name.clone(), dir: p.path.clone(), clean: layout::is_clean(&p.name), cold: layout::is_cold(&p.name), data, align, run }
    }

    pub fn file(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    pub fn spans(&self) -> impl Iterator<Item = S<'_>> {
        self.data.streams.iter().enumerate().flat_map(move |(si, st)| {
            let off = self.align.offset_for(st) as f64;
            st.spans.iter().enumerate().map(move |(i, s)| S {
                stream: si,
                idx: i,
                start: s.ts_us as f64 + off,
                end: s.end_us() as f64 + off,
                name: st.name(s),
                process: &st.process,
            })
        })
    }

    /// First span start and last span end, server clock.
    pub fn extent(&self) -> Option<(f64, f64)> {
        let mut r: Option<(f64, f64)> = None;
        for s in self.spans() {
            r = Some(match r {
                None => (s.start, s.end),
                Some((a, b)) => (a.min(s.start), b.max(s.end)),
            });
        }
        r
    }

    pub fn field(&self, stream: usize, idx: usize, key: &str) -> Option<Value> {
        let st = &self.data.streams[stream];
        st.field(&st.spans[idx], key)
    }

    /// Span names by process, for lookups.
    pub fn by_name(&self) -> HashMap<(&str, &str), Vec<S<'_>>> {
        let mut m: HashMap<(&str, &str), Vec<S<'_>>> = HashMap::new();
        for s in self.spans() {
            m.entry((s.process, s.name)).or_default().push(s);
        }
        for v in m.values_mut() {
            v.sort_by(|a, b| a.start.total_cmp(&b.start));
        }
        m
    }
}

pub fn read_json(p: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(p).ok()?;
    serde_json::from_str(&text).ok()
}
