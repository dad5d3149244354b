//! The path by construction: pipelines whose waits are known, and seeded
//! random ones whose path must tile the window.

use evalbench_bundle::{Span, Stream};

use super::graph;

/// A span as a test writes it: (id, parent, name, start, end, fields).
type Line<'a> = (u64, Option<u64>, &'a str, i64, i64, &'a str);

fn stream(process: &str, spans: &[Line<'_>]) -> Stream {
    let mut st = Stream { process: process.into(), host: Some(process.into()), ..Default::default() };
    for &(id, parent, name, a, b, fields) in spans {
        let n = match st.names.iter().position(|x| x == name) {
            Some(i) => i,
            None => {
                st.names.push(name.into());
                st.names.len() - 1
            }
        };
        st.push(Span::new(n as u32, 0, a, b - a).with_ids(Some(id), parent, Some(1)), fields, "");
    }
    st
}

pub(super) fn pipeline(job_work: i64) -> Vec<Stream> {
    vec![
        stream(
            "server",
            &[
                (1, None, "assign_job", 0, 10, r#"{"job":"j"}"#),
                (
                    2,
                    None,
                    "job_event",
                    75 + job_work,
                    95 + job_work,
                    r#"{"job":"j","kind":"eval_result","queue_wait_us":0}"#,
                ),
                (3, None, "tick", 20, 30, "{}"),
            ],
        ),
        stream(
            "worker",
            &[
                (1, None, "job", 15, 80 + job_work, r#"{"job":"j"}"#),
                (2, Some(1), "report_eval_result", 70 + job_work, 72 + job_work, r#"{"job":"j"}"#),
                (3, None, "heartbeat", 40, 90 + job_work, "{}"),
            ],
        ),
    ]
}

pub(super) fn on_path(p: &super::CriticalPath, label: &str) -> i64 {
    p.steps.iter().find(|s| s.label() == label).map_or(0, |s| s.on_path_us)
}

#[test]
fn a_hand_off_across_processes_is_followed() {
    let streams = pipeline(0);
    let g = graph::build(&streams, &crate::SameClock, 0, 95);
    let p = g.path(0, &|_| 1.0, &crate::SameClock).unwrap();
    assert_eq!(p.total_us, 95);
    assert_eq!(p.to_us, 95);
    let names: Vec<(String, i64, i64)> =
        p.segments.iter().map(|s| (s.name().to_string(), s.from_us, s.to_us)).collect();
    assert_eq!(
        names,
        vec![
            ("assign_job".into(), 0, 10),
            ("network (assign_job → job)".into(), 10, 15),
            ("job".into(), 15, 70),
            ("report_eval_result".into(), 70, 72),
            ("network (report_eval_result → job_event)".into(), 72, 75),
            ("job_event".into(), 75, 95),
        ]
    );
    // The worker's job ran 8 µs past its report: off the path, and said so.
    let job = p.steps.iter().find(|s| s.label() == "worker job").unwrap();
    assert_eq!((job.own_us, job.off_path_us), (Some(63), Some(8)));
    assert_eq!(on_path(&p, "worker heartbeat"), 0, "concurrent work is not on the path");
    assert_eq!(on_path(&p, "server tick"), 0);
}

#[test]
fn the_schedule_reproduces_the_pass_and_whatif_shortens_it() {
    let streams = pipeline(100);
    let g = graph::build(&streams, &crate::SameClock, 0, 195);
    let t = g.schedule(&|_| 1.0).unwrap();
    assert_eq!(t, times(&g), "measured weights give measured times");
    // The job's own time halved: 155 µs on the path become 77.5.
    let job: Vec<u32> = g.select("worker:job");
    let faster = g.path(0, &|s| if job.contains(&s) { 0.5 } else { 1.0 }, &crate::SameClock).unwrap();
    assert_eq!(faster.total_us, 195 - 155 + 78, "{:?}", faster.segments);
    // The heartbeat is not on the path: halving it changes nothing.
    let hb = g.select("heartbeat");
    assert_eq!(g.path(0, &|s| if hb.contains(&s) { 0.5 } else { 1.0 }, &crate::SameClock).unwrap().total_us, 195);
}

#[test]
fn a_queue_at_the_receiver_binds_to_the_span_before_it() {
    // The report came at 30, but the server was busy until 60 (its previous event).
    let streams = vec![
        stream(
            "server",
            &[
                (1, None, "assign_job", 0, 5, r#"{"job":"j"}"#),
                (2, None, "busy", 10, 60, "{}"),
                (3, None, "job_event", 61, 70, r#"{"job":"j","kind":"eval_result","queue_wait_us":31}"#),
            ],
        ),
        stream(
            "worker",
            &[(1, None, "job", 6, 31, r#"{"job":"j"}"#), (2, Some(1), "report_eval_result", 29, 30, r#"{"job":"j"}"#)],
        ),
    ];
    let g = graph::build(&streams, &crate::SameClock, 0, 70);
    let p = g.path(0, &|_| 1.0, &crate::SameClock).unwrap();
    assert_eq!(p.total_us, 70);
    assert_eq!(on_path(&p, "server busy"), 50);
    assert_eq!(on_path(&p, "worker job"), 0, "the report was not what the event waited for");
}

#[test]
fn a_queue_nothing_in_its_process_explains_is_no_cue_for_another_process() {
    // The report came at 30 and the event queued 20 µs with its server idle;
    // a thread of the worker unrelated to the job ended at 49, just before.
    let streams = vec![
        stream(
            "server",
            &[
                (1, None, "assign_job", 0, 5, r#"{"job":"j"}"#),
                (2, None, "job_event", 50, 60, r#"{"job":"j","kind":"eval_result","queue_wait_us":20}"#),
            ],
        ),
        stream(
            "worker",
            &[
                (1, None, "job", 6, 31, r#"{"job":"j"}"#),
                (2, Some(1), "report_eval_result", 29, 30, r#"{"job":"j"}"#),
                (3, None, "upload_logs", 7, 49, "{}"),
            ],
        ),
    ];
    let g = graph::build(&streams, &crate::SameClock, 0, 60);
    assert_eq!(g.schedule(&|_| 1.0).unwrap(), times(&g), "measured weights give measured times");
    let p = g.path(0, &|_| 1.0, &crate::SameClock).unwrap();
    assert_eq!(p.total_us, 60);
    assert_eq!(on_path(&p, "worker upload_logs"), 0, "{:?}", p.segments);
    assert!(on_path(&p, "worker job") > 0, "{:?}", p.segments);
    let waited: Vec<&str> = p.segments.iter().filter(|s| s.process().is_none()).map(|s| s.name()).collect();
    assert!(waited.contains(&"network and queue (report_eval_result → job_event)"), "{waited:?}");
    // The job 10 µs faster: the event comes 10 µs sooner, the queue as measured.
    let job = g.select("worker:job");
    let k = 1.0 - 10.0 / 23.0;
    assert_eq!(g.path(0, &|s| if job.contains(&s) { k } else { 1.0 }, &crate::SameClock).unwrap().total_us, 50);
    let up = g.select("upload_logs");
    assert_eq!(g.path(0, &|s| if up.contains(&s) { 0.5 } else { 1.0 }, &crate::SameClock).unwrap().total_us, 60);
}

/// A small seeded generator (no dependency for a test's randomness).
pub(super) struct Lcg(pub(super) u64);
impl Lcg {
    pub(super) fn next(&mut self, n: i64) -> i64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n.max(1) as u64) as i64
    }
}

/// Roots with kids nested inside them, on one to three processes, and an
/// evaluated window; seeded.
pub(super) fn random_pipeline(seed: u64) -> (Vec<Stream>, i64, i64) {
    let mut r = Lcg(seed);
    let mut streams = Vec::new();
    for p in 0..1 + r.next(3) {
        let mut spans: Vec<(u64, Option<u64>, String, i64, i64)> = Vec::new();
        let mut id = 1;
        for _ in 0..1 + r.next(6) {
            let a = r.next(1000);
            let b = a + r.next(300);
            let root = id;
            spans.push((root, None, format!("r{}", r.next(4)), a, b));
            id += 1;
            for _ in 0..r.next(4) {
                let ka = a + r.next(b - a + 1);
                let kb = ka + r.next(b - ka + 1);
                spans.push((id, Some(root), format!("k{}", r.next(3)), ka, kb));
                id += 1;
            }
        }
        let refs: Vec<Line<'_>> = spans.iter().map(|(i, p, n, a, b)| (*i, *p, n.as_str(), *a, *b, "{}")).collect();
        streams.push(stream(if p == 0 { "server" } else { "worker" }, &refs));
    }
    let (t0, t1) = (r.next(200), 200 + r.next(1200));
    (streams, t0, t1)
}

#[test]
fn random_pipelines_tile_the_window() {
    for seed in 0..200u64 {
        let (streams, t0, t1) = random_pipeline(seed);
        let g = graph::build(&streams, &crate::SameClock, t0, t1);
        let p = g.path(t0, &|_| 1.0, &crate::SameClock).unwrap();
        assert_eq!(g.schedule(&|_| 1.0).unwrap(), times(&g), "seed {seed}: measured weights give measured times");
        assert_eq!(p.to_us, t1, "seed {seed}");
        assert_eq!(p.total_us, t1 - t0, "seed {seed}: {:?}", p.segments);
        for w in p.segments.windows(2) {
            assert_eq!(w[0].to_us, w[1].from_us, "seed {seed}: segments are contiguous");
        }
        assert_eq!(p.steps.iter().map(|s| s.on_path_us).sum::<i64>(), t1 - t0);
        for s in &p.steps {
            assert!(s.off_path_us.unwrap_or(0) >= 0, "seed {seed}: {s:?}");
        }
    }
}

/// Parents that are themselves, each other, missing or later; zero and
/// negative durations; many spans at one instant; link names that pair
/// with nothing sensible; seeded.
pub(super) fn hostile_pipeline(seed: u64) -> (Vec<Stream>, i64, i64) {
    let names =
        ["assign_job", "job", "report_eval_result", "job_event", "record", "flush", "evaluate_flake", "open", "x"];
    let mut r = Lcg(seed ^ 0x5eed);
    let mut streams = Vec::new();
    for p in 0..1 + r.next(3) {
        let n = 1 + r.next(12) as u64;
        let mut st = Stream {
            process: ["server", "worker", "eval"][p as usize].into(),
            host: Some(format!("h{p}")),
            ..Default::default()
        };
        st.names = names.iter().map(|s| s.to_string()).collect();
        for id in 1..=n {
            let parent = match r.next(4) {
                0 => None,
                1 => Some(id),
                2 => Some(1 + r.next(n as i64 + 3) as u64),
                _ => Some(1 + (id % n)),
            };
            let a = r.next(3) * 50;
            let d = r.next(4) * 40 - 20;
            let fields =
                format!(r#"{{"job":"j{}","kind":"eval_result","queue_wait_us":{}}}"#, r.next(2), r.next(300) - 100);
            st.push(
                Span::new(r.next(names.len() as i64) as u32, 0, a, d).with_ids(Some(id), parent, Some(1)),
                &fields,
                "",
            );
        }
        streams.push(st);
    }
    let (t0, t1) = (r.next(60), 60 + r.next(200));
    (streams, t0, t1)
}

#[test]
fn hostile_nesting_never_panics_and_what_it_gives_still_tiles() {
    for seed in 0..300u64 {
        let (streams, t0, t1) = hostile_pipeline(seed);
        let g = graph::build(&streams, &crate::SameClock, t0, t1);
        if let Ok(p) = g.path(t0, &|_| 1.0, &crate::SameClock) {
            assert_eq!(p.total_us, p.to_us - t0, "seed {seed}: {:?}", p.segments);
            for w in p.segments.windows(2) {
                assert_eq!(w[0].to_us, w[1].from_us, "seed {seed}");
            }
            let _ = g.path(t0, &|_| 0.5, &crate::SameClock);
        }
    }
}

/// Every node's measured time, in node order.
fn times(g: &graph::Graph) -> Vec<i64> {
    (0..g.nodes()).map(|v| g.time(graph::Node::at(v))).collect()
}

/// Arbitrary edges as the order reads them: `m` nodes, each with its
/// predecessors in the order given.
struct Listed(Vec<Vec<graph::Node>>);

impl Listed {
    fn new(m: usize, edges: &[(u32, u32, i64)]) -> Listed {
        let mut preds = vec![Vec::new(); m];
        for &(from, to, _) in edges {
            preds[to as usize].push(graph::Node::at(from as usize));
        }
        Listed(preds)
    }
}

impl crate::order::Predecessors for Listed {
    fn nodes(&self) -> usize {
        self.0.len()
    }
    fn each_pred(&self, v: graph::Node, f: &mut dyn FnMut(graph::Node)) {
        self.0[v.index()].iter().for_each(|&u| f(u));
    }
}

/// The longest path to every node of `edges`, taken along the order; None
/// when it refuses them.
fn longest_by_order(m: usize, edges: &[(u32, u32, i64)]) -> Option<Vec<i64>> {
    let mut order = Vec::new();
    if !crate::order::depth_first(&Listed::new(m, edges), &mut |v| order.push(v.index() as u32)) {
        return None;
    }
    assert_eq!(order.len(), m, "every node placed once");
    let mut t = vec![0i64; m];
    for v in order {
        for &(a, _, w) in edges.iter().filter(|e| e.1 == v) {
            t[v as usize] = t[v as usize].max(t[a as usize] + w);
        }
    }
    Some(t)
}

#[test]
fn the_order_puts_every_node_after_its_predecessors_and_refuses_a_cycle() {
    // Seeded DAGs (edges from a lower to a higher label, labels shuffled):
    // the longest path found through the order equals one found by
    // relaxing every edge until nothing changes.
    for seed in 0..300u64 {
        let mut r = Lcg(seed ^ 0x0dde);
        let m = 2 + r.next(40) as usize;
        let mut label: Vec<u32> = (0..m as u32).collect();
        for i in (1..m).rev() {
            label.swap(i, r.next(i as i64 + 1) as usize);
        }
        let mut edges = Vec::new();
        for _ in 0..r.next(4 * m as i64) {
            let (a, b) = (r.next(m as i64) as usize, r.next(m as i64) as usize);
            if a < b {
                edges.push((label[a], label[b], r.next(100)));
            }
        }
        let t = longest_by_order(m, &edges).unwrap_or_else(|| panic!("seed {seed}: a DAG has an order"));
        let mut truth = vec![0i64; m];
        loop {
            let mut changed = false;
            for &(a, b, w) in &edges {
                if truth[a as usize] + w > truth[b as usize] {
                    truth[b as usize] = truth[a as usize] + w;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        assert_eq!(t, truth, "seed {seed}");
        // A cycle anywhere, even off every path from the origin, has no order.
        let (a, b) = (r.next(m as i64) as u32, r.next(m as i64) as u32);
        let mut cyclic = edges.clone();
        cyclic.push((a, b, 1));
        cyclic.push((b, a, 1));
        assert!(longest_by_order(m, &cyclic).is_none(), "seed {seed}: {a} <-> {b}");
    }
}

/// Timestamps and durations at the ends of i64 (a hostile or corrupt file)
/// never overflow: in a debug build an overflow is a panic.
#[test]
fn extreme_timestamps_never_overflow() {
    let names = ["assign_job", "job", "report_eval_result", "job_event", "x"];
    let extremes = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX];
    for seed in 0..200u64 {
        let mut r = Lcg(seed ^ 0xe4);
        let mut streams = Vec::new();
        for p in 0..2 {
            let mut st =
                Stream { process: ["server", "worker"][p].into(), host: Some(format!("h{p}")), ..Default::default() };
            st.names = names.iter().map(|s| s.to_string()).collect();
            for id in 1..=6u64 {
                let ts = extremes[r.next(extremes.len() as i64) as usize];
                let dur = extremes[r.next(extremes.len() as i64) as usize];
                let parent = (r.next(2) == 0).then(|| 1 + r.next(6) as u64);
                let fields = format!(
                    r#"{{"job":"j{}","kind":"eval_result","queue_wait_us":{}}}"#,
                    r.next(2),
                    extremes[r.next(7) as usize]
                );
                st.push(
                    Span::new(r.next(names.len() as i64) as u32, 0, ts, dur).with_ids(Some(id), parent, Some(1)),
                    &fields,
                    "",
                );
            }
            streams.push(st);
        }
        let (t0, t1) = (extremes[r.next(7) as usize], extremes[r.next(7) as usize]);
        let g = graph::build(&streams, &crate::SameClock, t0, t1);
        let _ = g.path(t0, &|_| 1.0, &crate::SameClock);
        let _ = g.path(t0, &|_| 0.5, &crate::SameClock);
        let _ = g.own_us();
        let half = super::Shorten::steps(&g, &|_| 0.5);
        assert_eq!(g.end_by(&half, &mut Vec::new()), g.schedule_by(&half).map(|t| t[g.end.index()]), "seed {seed}");
    }
}

/// The measured path read from the spans' times (no schedule) is the one
/// the schedule gives, segment for segment, wherever the graph allows it;
/// it is allowed on every well-nested pipeline, and a hostile one that
/// does not allow it is scheduled as before (a cycle is still refused).
#[test]
fn the_measured_walk_without_a_schedule_is_the_scheduled_walk() {
    let walk = |g: &graph::Graph, t0: i64, measured: bool| {
        let mut segs = Vec::new();
        let end = if measured {
            g.walk_measured_each(t0, &mut |s| segs.push(s))
        } else {
            g.walk_each(t0, &super::Shorten::none(g), &mut |s| segs.push(s))
        };
        end.map(|e| (e, segs))
    };
    let mut fast = 0;
    for seed in 0..300u64 {
        for (hostile, (streams, t0, t1)) in [(false, random_pipeline(seed)), (true, hostile_pipeline(seed))] {
            let g = graph::build(&streams, &crate::SameClock, t0, t1);
            assert!(
                hostile || g.measured_is_time(),
                "seed {seed}: a well-nested pipeline reads its times from the spans"
            );
            fast += usize::from(hostile && g.measured_is_time());
            assert_eq!(walk(&g, t0, true), walk(&g, t0, false), "seed {seed}, hostile {hostile}");
        }
    }
    // Some hostile pipelines take each way.
    assert!(fast > 0 && fast < 300, "{fast} of 300 hostile pipelines read their times from the spans");
}

/// The path holds one per stretch (2M at 4.5M spans), the graph one edge
/// per wait and one span per span: their sizes are what the memory
/// figures assume.
#[test]
fn a_stretch_an_edge_and_a_span_are_packed() {
    assert_eq!(std::mem::size_of::<super::Segment>(), 32);
    assert_eq!(std::mem::size_of::<graph::Edge>(), 8);
    assert_eq!(std::mem::size_of::<graph::Flat>(), 24);
}

/// A process or span name with a colon in it is still selected by
/// `--faster` (it was split at the first colon), and a span name with an
/// `=` is still parsed (it was split at the first `=`).
#[test]
fn a_colon_or_an_equals_sign_in_a_name_is_no_obstacle() {
    let mut g = graph::build(&[], &crate::SameClock, 0, 0);
    g.steps = [("a:b", "c"), ("a", "b:c"), ("a", "c"), ("x", "a:b:c")]
        .iter()
        .map(|&(p, n)| (std::sync::Arc::from(p), std::sync::Arc::from(n)))
        .collect();
    assert_eq!(g.select("a:b:c"), vec![0, 1, 3]);
    assert_eq!(g.select("c"), vec![0, 2]);
    assert_eq!(g.select("a:c"), vec![2]);
    assert_eq!(g.select("b:c"), vec![1]);
    assert!(g.select("a").is_empty() && g.select("a:b").is_empty());
    assert_eq!((g.step("a:b", "c"), g.step("a", "b:c"), g.step("a", "a:b:c")), (Some(0), Some(1), None));
    assert_eq!(super::whatif::parse_faster("k=v=50"), Ok(("k=v".to_string(), 50.0)));
    assert_eq!(super::whatif::parse_faster("job=12.5%"), Ok(("job".to_string(), 12.5)));
    assert!(
        super::whatif::parse_faster("job").is_err()
            && super::whatif::parse_faster("=5").is_err()
            && super::whatif::parse_faster("job=101").is_err()
    );
}

/// An owned stream gives its spans up a chunk at a time as it is
/// flattened, its parents' starts read from their flattened copies once
/// their spans are gone; the spans come out as from borrowed streams,
/// which are held whole: parents before and after their kids, missing,
/// the span itself, and starting after the kid (no parent then).
#[test]
fn a_stream_given_up_in_chunks_flattens_as_one_held_whole() {
    let n = 3 * super::prepare::RELEASE_EVERY as u64 + 123;
    let mut r = Lcg(0x5eed);
    let mut streams = Vec::new();
    for process in ["server", "worker"] {
        let mut st = Stream { process: process.into(), host: Some(process.into()), ..Default::default() };
        st.names = vec!["a".into(), "b".into(), "c".into()];
        for id in 1..=n {
            let parent = match r.next(4) {
                0 => None,
                1 => Some(id),
                _ => Some(1 + r.next(n as i64 + 10) as u64),
            };
            st.push(
                Span::new(r.next(3) as u32, 0, r.next(1_000_000), r.next(5_000)).with_ids(Some(id), parent, Some(1)),
                "{}",
                "",
            );
        }
        streams.push(st);
    }
    let flat = |f: &graph::Flat| (f.start, f.end, f.step(), f.up(), f.remote(), f.server());
    let a = crate::SameClock;
    let whole = super::prepare::prepare(&streams, &a);
    let chunked = super::prepare::prepare_owned(streams, &a);
    assert_eq!(whole.spans.len(), 2 * n as usize);
    assert!(whole.spans.iter().any(|f| f.up().is_some()) && whole.spans.iter().any(|f| f.up().is_none()));
    assert!(whole.spans.iter().map(flat).eq(chunked.spans.iter().map(flat)));
    assert_eq!((whole.steps, whole.first_of_stream), (chunked.steps, chunked.first_of_stream));
}
