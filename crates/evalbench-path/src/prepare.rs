//! What the graph's edges are made of: every span flattened to a [`Flat`],
//! and the waits that the hand-offs' fields name, paired.
//!
//! A stream is flattened and its hand-offs' fields (job, kind, queue wait)
//! taken out in one go, so a caller that owns the streams lets each one's
//! spans go, a chunk at a time, as they are flattened ([`prepare_owned`]):
//! at 4.5M spans the loaded spans and their flattened copies side by side
//! were the graph's peak.

use std::collections::HashMap;

use evalbench_bundle::spans::IdMap;
use evalbench_bundle::{Span, Stream};

use super::graph::{wait_id, MESSAGES, WAITS_ON, WAIT_BEFORE, WAIT_IDLE, WAIT_STATUS};
use super::nested::Sent;
use super::nodes::{Flat, SpanId, NONE};
use crate::Clocks;

pub(super) struct Prepared {
    pub spans: Vec<Flat>,
    pub steps: Vec<(String, String)>,
    pub waits: Vec<String>,
    pub inner_wait: HashMap<SpanId, u32>,
    /// Per receiver root, the message it received.
    pub sent_by: HashMap<SpanId, Sent>,
    /// Where each stream's spans start among `spans`, and their end.
    pub first_of_stream: Vec<u32>,
}

/// What the pairing reads of one hand-off span.
struct HandOff {
    /// Its index among the pass's spans (its [`Flat`]'s).
    g: SpanId,
    job: Option<String>,
    /// A `job_event` of kind `eval_result`.
    eval_result: bool,
    queue_wait_us: i64,
}

/// The spans flattened so far, and what pairing needs of them.
struct Flattening {
    spans: Vec<Flat>,
    steps: Vec<(String, String)>,
    step_of: HashMap<(String, String), u32>,
    /// Per hand-off span name, its spans in the pass's order.
    hand_offs: HashMap<&'static str, Vec<HandOff>>,
    /// Per stream: its host, and where its spans start.
    hosts: Vec<Option<String>>,
    first_of_stream: Vec<u32>,
}

/// Every span name whose spans a hand-off pairs, once.
fn hand_off_names() -> Vec<&'static str> {
    let mut names: Vec<&str> =
        MESSAGES.iter().flat_map(|m| [m.0, m.1]).chain(WAITS_ON.iter().flat_map(|w| [w.0, w.1])).collect();
    names.sort_unstable();
    names.dedup();
    names
}

pub(super) fn prepare(streams: &[Stream], align: &dyn Clocks) -> Prepared {
    flatten(streams.iter().map(Held::Borrowed), streams.iter().map(|st| st.spans.len()).sum(), align)
}

/// [`prepare`], letting each stream go as it is flattened.
pub(super) fn prepare_owned(streams: Vec<Stream>, align: &dyn Clocks) -> Prepared {
    let spans = streams.iter().map(|st| st.spans.len()).sum();
    flatten(streams.into_iter().map(Held::Owned), spans, align)
}

/// Every stream flattened in turn, and each let go of as it is, where
/// owned; `spans` of them in all.
fn flatten<'a>(streams: impl IntoIterator<Item = Held<'a>>, spans: usize, align: &dyn Clocks) -> Prepared {
    // Sized once, and filled (so resident) only as the streams go.
    let mut f = Flattening::new(spans);
    for st in streams {
        f.add(st, align);
    }
    f.pair()
}

/// A stream to flatten: borrowed, or owned and given up as it is
/// flattened (its spans reversed, so that those flattened are the vector's
/// tail and go a chunk at a time: a vector cannot give up its head).
enum Held<'a> {
    Borrowed(&'a Stream),
    Owned(Stream),
}

impl Held<'_> {
    fn stream(&self) -> &Stream {
        match self {
            Held::Borrowed(st) => st,
            Held::Owned(st) => st,
        }
    }

    /// Span `i` of the stream's `n`, if still held.
    fn span(&self, i: usize, n: usize) -> Option<&Span> {
        match self {
            Held::Borrowed(st) => st.spans.get(i),
            Held::Owned(st) => st.spans.get(n - 1 - i),
        }
    }

    /// Gives spans `..=i` of the stream's `n` back to the allocator, where
    /// owned: a large vector shrinks in place (glibc's realloc of a mapped
    /// block).
    fn release_to(&mut self, i: usize, n: usize) {
        if let Held::Owned(st) = self {
            st.spans.truncate(n - 1 - i);
            st.spans.shrink_to_fit();
        }
    }
}

/// Spans flattened between two releases of an owned stream's spans.
pub(super) const RELEASE_EVERY: usize = 1 << 16;

impl Flattening {
    fn new(spans: usize) -> Flattening {
        Flattening {
            // Sized once: grown by doubling, the copy would briefly hold it twice.
            spans: Vec::with_capacity(spans),
            steps: Vec::new(),
            step_of: HashMap::new(),
            hand_offs: HashMap::new(),
            hosts: Vec::new(),
            first_of_stream: Vec::new(),
        }
    }

    /// Flattens stream `held`; an owned stream's spans go a chunk at a
    /// time as they are flattened: at 4.5M spans the server's 3.1M beside
    /// the spans flattened so far were the path's peak. Its steps (in the
    /// order their names first occur) and its hand-offs are taken first.
    fn add(&mut self, mut held: Held<'_>, align: &dyn Clocks) {
        let st = held.stream();
        let off = align.offset_for(st);
        let ids = IdMap::indices(st);
        let base = self.spans.len();
        let n = st.spans.len();
        let server = st.process == evalbench_bundle::layout::SERVER;
        let mut name_step = vec![NONE; st.names.len()];
        for s in &st.spans {
            let k = s.name as usize;
            if name_step.get(k) == Some(&NONE) {
                let key = (st.process.clone(), st.names[k].clone());
                let next = self.steps.len() as u32;
                let steps = &mut self.steps;
                name_step[k] = *self.step_of.entry(key.clone()).or_insert_with(|| {
                    steps.push(key);
                    next
                });
            }
        }
        for name in hand_off_names() {
            let Some(k) = st.names.iter().position(|x| x == name) else { continue };
            let receiver = MESSAGES.iter().any(|m| m.1 == name);
            let list = self.hand_offs.entry(name).or_default();
            for (i, s) in st.spans.iter().enumerate().filter(|(_, s)| s.name as usize == k) {
                list.push(hand_off(st, s, SpanId::at(base + i), receiver));
            }
        }
        self.hosts.push(st.host.clone());
        self.first_of_stream.push(base as u32);
        // A parent's start is read from its span while that is held, else
        // from its flattened copy: the same comparison unless adding the
        // offset saturates, and then the stream is held whole.
        let exact = st.spans.iter().all(|s| s.ts_us.checked_add(off).is_some());
        if let Held::Owned(st) = &mut held {
            st.spans.reverse();
        }
        for i in 0..n {
            if exact && i > 0 && i % RELEASE_EVERY == 0 {
                held.release_to(i - 1, n);
            }
            let s = held.span(i, n).expect("spans from i on are held");
            let start = s.ts_us.saturating_add(off);
            let up = held.stream().parent(s).and_then(|p| ids.get(p)).filter(|&p| {
                // A parent that starts after its child is not one (hostile files).
                let parent_starts_first = match held.span(p as usize, n) {
                    Some(ps) => ps.ts_us <= s.ts_us,
                    None => self.spans[base + p as usize].start <= start,
                };
                p as usize != i && parent_starts_first
            });
            let step = name_step.get(s.name as usize).copied().unwrap_or(0);
            self.spans.push(Flat::new(
                start,
                start.saturating_add(s.dur_us.max(0)),
                step,
                up.map(|p| SpanId::at(base + p as usize)),
                server,
            ));
        }
    }

    fn pair(self) -> Prepared {
        let Flattening { mut spans, steps, hand_offs, hosts, mut first_of_stream, .. } = self;
        first_of_stream.push(spans.len() as u32);
        let none = Vec::new();
        let named = |name: &str| hand_offs.get(name).unwrap_or(&none);
        let mut waits: Vec<String> = [WAIT_BEFORE, WAIT_IDLE, WAIT_STATUS].iter().map(|s| s.to_string()).collect();
        // Inner roots that wait inside an outer span of another thread or process.
        let mut inner_wait: HashMap<SpanId, u32> = HashMap::new();
        for (outer, inner, what, same_host) in WAITS_ON {
            let w = wait_id(&mut waits, what);
            let mut outers: Vec<&HandOff> = named(outer).iter().collect();
            outers.sort_by_key(|h| spans[h.g].start);
            for k in named(inner) {
                let kg = k.g;
                if spans[kg].up().is_some() {
                    continue;
                }
                let ks_start = spans[kg].start;
                let host = |g: SpanId| &hosts[super::graph::stream_of(&first_of_stream, g).index()];
                let upto = outers.partition_point(|h| spans[h.g].start <= ks_start);
                let found = outers[..upto].iter().rev().find(|o| {
                    spans[o.g].end >= ks_start
                        && (!same_host || host(o.g) == host(k.g))
                        && match (&k.job, &o.job) {
                            (Some(a), Some(b)) => a == b,
                            _ => true,
                        }
                });
                if let Some(o) = found {
                    spans[kg].set_up(o.g);
                    spans[kg].set_remote();
                    inner_wait.insert(k.g, w);
                }
            }
        }
        // Messages: receiver root -> (sender, wait, wait with the queue, queue µs).
        let mut sent_by: HashMap<SpanId, Sent> = HashMap::new();
        for (from, to, what, with_queue) in MESSAGES {
            let w = wait_id(&mut waits, what);
            let wq = wait_id(&mut waits, with_queue);
            let by_job = |name: &str, only_results: bool| -> HashMap<&str, Vec<&HandOff>> {
                let mut m: HashMap<&str, Vec<&HandOff>> = HashMap::new();
                for h in named(name) {
                    if only_results && !h.eval_result {
                        continue;
                    }
                    if let Some(j) = &h.job {
                        m.entry(j.as_str()).or_default().push(h);
                    }
                }
                for v in m.values_mut() {
                    v.sort_by_key(|h| (spans[h.g].start, h.g));
                }
                m
            };
            let senders = by_job(from, false);
            let receivers = by_job(to, to == evalbench_bundle::contract::span::JOB_EVENT);
            for (s, r) in evalbench_bundle::contract::pair_by_job(&senders, &receivers) {
                if spans[r.g].up().is_none() && spans[s.g].start <= spans[r.g].start {
                    sent_by.insert(r.g, Sent { sender: s.g, wait: w, wait_queued: wq, queue_us: r.queue_wait_us });
                }
            }
        }
        Prepared { spans, steps, waits, inner_wait, sent_by, first_of_stream }
    }
}

/// What pairing reads of span `s` (the pass's `g`-th): a receiver's kind
/// and queue wait besides every hand-off's job.
fn hand_off(st: &Stream, s: &Span, g: SpanId, receiver: bool) -> HandOff {
    let (eval_result, queue_wait_us) = if receiver {
        let kind = evalbench_bundle::contract::is_eval_result(st, s);
        (kind, st.field(s, evalbench_bundle::contract::QUEUE_WAIT_US).and_then(|v| v.as_i64()).unwrap_or(0).max(0))
    } else {
        (false, 0)
    };
    HandOff { g, job: evalbench_bundle::spans::job_key(st, s), eval_result, queue_wait_us }
}
