//! A stretch of the critical path, and what it was. A path through
//! millions of spans has millions of stretches, so each is packed and
//! shares its label with every other stretch of the same step, wait or
//! statement.

use std::sync::Arc;

use serde::Serialize;

use super::graph;

/// A stretch of the path: a span's own time or a wait. 32 bytes: a path
/// through millions of spans has millions of stretches, so what it was is
/// a [`Label`] shared with every other stretch of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub from_us: i64,
    pub to_us: i64,
    label: Arc<Label>,
    /// The span as (stream, index in the stream); [`graph::NONE`] for none
    /// (raw, as a path of a million segments holds a million of them).
    at: (u32, u32),
}

/// What a stretch was: a span of a process, or a wait.
#[derive(Debug, PartialEq)]
pub struct Label {
    /// The span's process; None for a wait.
    pub process: Option<Arc<str>>,
    /// The span's name, or what was waited for.
    pub name: Arc<str>,
}

impl Label {
    pub fn new(process: Option<&str>, name: &str) -> Arc<Label> {
        Arc::new(Label { process: process.map(Arc::from), name: Arc::from(name) })
    }
}

impl Segment {
    pub fn new(from_us: i64, to_us: i64, label: Arc<Label>, at: Option<(graph::StreamId, u32)>) -> Segment {
        Segment { from_us, to_us, label, at: at.map_or((graph::NONE, graph::NONE), |(st, k)| (st.index() as u32, k)) }
    }

    /// The same stretch over another time.
    pub fn over(&self, from_us: i64, to_us: i64) -> Segment {
        Segment { from_us, to_us, ..self.clone() }
    }

    /// The span's process; None for a wait.
    pub fn process(&self) -> Option<&str> {
        self.label.process.as_deref()
    }

    /// The span's name, or what was waited for.
    pub fn name(&self) -> &str {
        &self.label.name
    }

    pub fn label(&self) -> &Arc<Label> {
        &self.label
    }

    /// The span as (stream, index in the stream), for trace.json's flows.
    pub fn at(&self) -> Option<(graph::StreamId, u32)> {
        (self.at.0 != graph::NONE).then_some((graph::StreamId::at(self.at.0 as usize), self.at.1))
    }
}

/// Its keys in sorted order, as `whatif --json` has always written them
/// (through a `serde_json::Value`, which sorts).
impl Serialize for Segment {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = ser.serialize_struct("Segment", 4)?;
        s.serialize_field("from_us", &self.from_us)?;
        s.serialize_field("name", &self.label.name)?;
        s.serialize_field("process", &self.label.process)?;
        s.serialize_field("to_us", &self.to_us)?;
        s.end()
    }
}
