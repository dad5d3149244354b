//! The layer itself: remembers each span's start and fields, and hands the
//! closed span to the writer without waiting.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record as SpanRecord};
use tracing::{Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Filter, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::clock::Clock;
use crate::writer::Sink;

/// One field value, kept typed so integers stay integers in the JSON.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    I64(i64),
    U64(u64),
    I128(i128),
    F64(f64),
    Bool(bool),
    Str(String),
}

/// A closed span, as it travels to the writer thread.
pub(crate) struct Closed {
    pub name: &'static str,
    pub target: &'static str,
    pub ts_us: i64,
    pub dur_us: i64,
    pub id: u64,
    pub parent: u64,
    pub thread: u32,
    pub fields: Vec<(&'static str, Value)>,
}

/// Per-span state kept in the registry's extensions.
struct Open {
    id: u64,
    start: u64,
    thread: u32,
    fields: Vec<(&'static str, Value)>,
}

/// Writes closed spans; construct through [`crate::Builder`].
pub struct SpanLayer {
    sink: Option<Arc<Sink>>,
    clock: Clock,
    next_id: AtomicU64,
}

impl SpanLayer {
    pub(crate) fn new(sink: Option<Arc<Sink>>, clock: Clock) -> Self {
        SpanLayer { sink, clock, next_id: AtomicU64::new(1) }
    }
}

impl<S> Layer<S> for SpanLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if self.sink.is_none() {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Vec::with_capacity(attrs.fields().len());
        attrs.record(&mut FieldVisitor(&mut fields));
        let open = Open {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            start: self.clock.ticks(),
            thread: thread_id(),
            fields,
        };
        span.extensions_mut().insert(open);
    }

    fn on_record(&self, id: &Id, values: &SpanRecord<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut ext = span.extensions_mut();
        if let Some(open) = ext.get_mut::<Open>() {
            let mut added = Vec::new();
            values.record(&mut FieldVisitor(&mut added));
            for (k, v) in added {
                match open.fields.iter_mut().find(|(name, _)| *name == k) {
                    Some(slot) => slot.1 = v,
                    None => open.fields.push((k, v)),
                }
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(sink) = &self.sink else { return };
        let end = self.clock.ticks();
        let Some(span) = ctx.span(&id) else { return };
        let Some(open) = span.extensions_mut().remove::<Open>() else { return };
        let parent = span.parent().and_then(|p| p.extensions().get::<Open>().map(|o| o.id)).unwrap_or(0);
        let meta = span.metadata();
        sink.send(Closed {
            name: meta.name(),
            target: meta.target(),
            ts_us: self.clock.base_us + open.start as i64,
            dur_us: end.saturating_sub(open.start) as i64,
            id: open.id,
            parent,
            thread: open.thread,
            fields: open.fields,
        });
    }
}

/// Keeps spans whose target starts with the prefix, at DEBUG or above,
/// whatever the other layers' filters say. Decided per callsite, once.
#[derive(Debug, Clone)]
pub struct SpanFilter {
    prefix: String,
}

impl SpanFilter {
    pub(crate) fn new(prefix: String) -> Self {
        SpanFilter { prefix }
    }
    fn wants(&self, meta: &Metadata<'_>) -> bool {
        meta.is_span() && *meta.level() <= Level::DEBUG && meta.target().starts_with(&self.prefix)
    }
}

impl<S> Filter<S> for SpanFilter {
    fn enabled(&self, meta: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        self.wants(meta)
    }
    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        if self.wants(meta) {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::DEBUG)
    }
}

struct FieldVisitor<'a>(&'a mut Vec<(&'static str, Value)>);

impl Visit for FieldVisitor<'_> {
    fn record_i64(&mut self, f: &Field, v: i64) {
        self.0.push((f.name(), Value::I64(v)));
    }
    fn record_u64(&mut self, f: &Field, v: u64) {
        self.0.push((f.name(), Value::U64(v)));
    }
    fn record_i128(&mut self, f: &Field, v: i128) {
        self.0.push((f.name(), Value::I128(v)));
    }
    fn record_u128(&mut self, f: &Field, v: u128) {
        match i128::try_from(v) {
            Ok(v) => self.0.push((f.name(), Value::I128(v))),
            Err(_) => self.0.push((f.name(), Value::Str(v.to_string()))),
        }
    }
    fn record_f64(&mut self, f: &Field, v: f64) {
        self.0.push((f.name(), Value::F64(v)));
    }
    fn record_bool(&mut self, f: &Field, v: bool) {
        self.0.push((f.name(), Value::Bool(v)));
    }
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0.push((f.name(), Value::Str(v.to_string())));
    }
    fn record_debug(&mut self, f: &Field, v: &dyn fmt::Debug) {
        self.0.push((f.name(), Value::Str(format!("{v:?}"))));
    }
}

thread_local! {
    static TID: Cell<u32> = const { Cell::new(0) };
}

/// The kernel's thread id, so a span's thread matches strace's per-thread files.
fn thread_id() -> u32 {
    TID.with(|t| {
        let mut v = t.get();
        if v == 0 {
            // SAFETY: gettid has no preconditions and cannot fail.
            v = unsafe { libc::gettid() } as u32;
            t.set(v);
        }
        v
    })
}
