//! What whatif shortens: a step's time as the path table counts it, with
//! the server's statements cut out of its own time and named apart.

use super::graph;
use super::tests::{on_path, pipeline};

/// The hand-off pipeline with the server's statements in flight: two
/// inside `job_event` (on the path) and one inside `tick` (off it).
fn with_statements() -> (graph::Graph, super::CriticalPath) {
    let g = graph::build(&pipeline(0), &crate::SameClock, 0, 95);
    let s = |n: &str| super::Label::new(Some(super::POSTGRES), n);
    let trips = vec![(22, 26, s("SELECT a")), (78, 86, s("SELECT a")), (88, 90, s("UPDATE b"))];
    super::measured_with(g, 0, &crate::SameClock, super::database::Refiner::of(trips), None).unwrap()
}

#[test]
fn what_is_shortened_is_the_steps_time_as_the_table_counts_it() {
    let (g, p) = with_statements();
    assert_eq!(p.total_us, 95);
    // job_event's 20 µs: 10 its own, 8 and 2 the statements'.
    assert_eq!(
        (on_path(&p, "server job_event"), on_path(&p, "postgres SELECT a"), on_path(&p, "postgres UPDATE b")),
        (10, 8, 2)
    );
    let a = p.steps.iter().find(|s| s.label() == "postgres SELECT a").unwrap();
    assert_eq!(a.own_us, Some(12), "4 µs of it were inside tick, off the path");
    let al = crate::SameClock;
    let predict = |name: &str, pct: f64| super::whatif::whatif(&g, &p, &[(name.to_string(), pct)], &al).unwrap();
    // Half of job_event's own 10 µs, not half of its 20.
    let w = predict("server job_event", 50.0);
    assert_eq!(((w.measured_s - w.predicted_s) * 1e6).round(), 5.0);
    assert_eq!(w.faster[0].matched, vec!["server job_event"]);
    // A statement named as the table prints it: half of its 8 µs on the
    // path, not of its 12 µs own time; its stretch stays a step of its own.
    let w = predict("postgres SELECT a", 50.0);
    assert_eq!(((w.measured_s - w.predicted_s) * 1e6).round(), 4.0);
    let s = w.predicted.iter().find(|s| s.label() == "postgres SELECT a").unwrap();
    assert_eq!(s.on_path_us, 4, "{:?}", w.predicted);
    assert_eq!(
        w.predicted.iter().map(|s| s.on_path_us).sum::<i64>(),
        91,
        "the predicted steps tile the predicted time"
    );
    // A wait, named as printed.
    let w = predict("wait: network (assign_job → job)", 100.0);
    assert_eq!(((w.measured_s - w.predicted_s) * 1e6).round(), 5.0);
    // Shortening nothing gives the measured path's steps back.
    let same = g.path_by(0, &super::Shorten::none(&g), &al).unwrap();
    assert_eq!(same.steps, p.steps);
    // The report's table predicts the same numbers.
    let b = super::whatif::buys(&g, &p, 8);
    let of = |l: &str| b.iter().find(|x| x.step == l).map(|x| x.saved_50_us);
    assert_eq!((of("server job_event"), of("postgres SELECT a"), of("postgres UPDATE b")), (Some(5), Some(4), Some(1)));
    assert!(b.iter().all(|x| !x.step.starts_with("wait")), "waits are no work to make faster");
    // A statement typed wrong gets the nearest names.
    let e = super::whatif::whatif(&g, &p, &[("postgres SELECT aa".into(), 50.0)], &al).unwrap_err();
    assert!(
        matches!(&e, super::PathError::NoSuchStep { near, .. } if near.contains(&"postgres SELECT a".to_string())),
        "{e:?}"
    );
    assert!(e.to_string().contains("did you mean \"postgres SELECT a\""), "{e}");
}

/// The laid-out edges ([`super::plan::Plan`]) predict the end's time as
/// the schedule does, under any shortening: steps, waits and statements
/// (the server stretches they split), on well-nested, hostile and extreme
/// pipelines (those that do not fit its 32 bits are scheduled instead; a
/// cycle has no end time either way).
#[test]
fn the_laid_out_edges_predict_the_end_as_the_schedule_does() {
    use super::tests::{hostile_pipeline, random_pipeline, Lcg};
    let check = |g: &graph::Graph, seed: u64, what: &str| {
        let mut r = Lcg(seed ^ 0x91a);
        let mut scratch = Vec::new();
        for round in 0..4 {
            let mut sh = super::Shorten::none(g);
            for s in 0..g.steps.len() as u32 {
                if r.next(3) == 0 {
                    sh.step(s, r.next(101) as f64 / 100.0);
                }
            }
            for w in 0..g.waits.len() as u32 {
                if r.next(4) == 0 {
                    sh.wait(w, r.next(101) as f64 / 100.0);
                }
            }
            for n in g.trips.names() {
                if r.next(2) == 0 {
                    sh.statement(&n, 0.5);
                }
            }
            let scheduled = g.schedule_by(&sh).map(|t| t[g.end.index()]);
            assert_eq!(g.end_by(&sh, &mut scratch), scheduled, "{what} seed {seed} round {round}");
        }
    };
    for seed in 0..300u64 {
        for (what, (streams, t0, t1)) in [("random", random_pipeline(seed)), ("hostile", hostile_pipeline(seed))] {
            check(&graph::build(&streams, &crate::SameClock, t0, t1), seed, what);
        }
    }
    let (g, _) = with_statements();
    for seed in 0..50 {
        check(&g, seed, "statements");
    }
}
