//! Which commit moved nix's counters: a bisection over a line of commits
//! whose every probe is exact. nix counts the same work the same every
//! time, so one evaluation settles a commit, and an interval whose two
//! ends count alike (within the threshold) holds no step worth naming.
//! The search splits every interval whose ends differ until each step sits
//! between two neighbouring commits, so a range that moved at several
//! commits gives each of them; a commit that cannot be evaluated is
//! skipped and named (as `git bisect skip`), and where only skipped
//! commits lie between two that differ, the step is said to lie among them.
//!
//! What the search cannot see, it says: a counter that rose and fell back
//! inside an interval whose ends agree is invisible to any bisection.
//!
//! A probe is judged by the threshold, on the counters that moved past it
//! from GOOD to BAD alone, each relative to GOOD's value: within the
//! threshold of the interval's lower end it is good, within it of the upper
//! end bad, and only a probe between both (two steps past the threshold)
//! splits the search in two. A single step so costs ⌈log2 N⌉ probes after
//! the ends (N intervals); the many exact changes under the threshold that
//! real history holds (14 of 31 weekly steps of nixpkgs' lib change some
//! counter) are listed where a probe meets them, never searched for: every
//! counter was judged before, and small ones (`nrOpUpdates` 38 → 40 is 5%)
//! had the search chase steps the output then did not report.

use std::collections::BTreeMap;

use serde::Serialize;

/// nix's counters of one evaluation.
pub type Counts = BTreeMap<String, f64>;

/// A commit of the line bisected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Commit {
    pub commit: String,
    pub subject: String,
    /// Author date, ISO 8601.
    pub date: String,
}

/// What a probe of a commit gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Probed {
    Counted(Counts),
    /// It could not be evaluated, or gave no counters: why.
    Skipped(String),
}

/// A counter that moved across a step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moved {
    pub counter: String,
    pub before: f64,
    pub after: f64,
    pub change_pct: f64,
}

/// A step: between the commit at `before` and the one at `at` (neighbours,
/// or with only skipped commits between them: `among`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub before: usize,
    pub at: usize,
    /// The skipped commits between `before` and `at`, any of which (or `at`) made the step.
    pub among: Vec<usize>,
    pub moved: Vec<Moved>,
}

/// An exact change under the threshold a probe met: between commits
/// `from` and `to` (not searched further), what moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Minor {
    pub from: usize,
    pub to: usize,
    pub moved: Vec<Moved>,
}

/// The outcome of a bisection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The counters compared (those GOOD and BAD both have, or the one asked for).
    pub counters: Vec<String>,
    /// Of those, the ones judged: moved past the threshold from GOOD to BAD.
    pub judged: Vec<String>,
    /// Exact changes under the threshold the probes met, between which commits.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub minor: Vec<Minor>,
    pub threshold_pct: f64,
    /// GOOD and BAD differ by more than the threshold in some counter.
    pub differ: bool,
    pub steps: Vec<Step>,
    /// Every probe, in the order made: (index, what it gave).
    pub probes: Vec<(usize, Probed)>,
}

/// How far `b` lies from `a`, percent of `a` (of 1 when `a` is 0).
fn pct(a: f64, b: f64) -> f64 {
    (b - a) / a.abs().max(1.0) * 100.0
}

/// The counters of `a` and `b` in `names` that moved past `threshold_pct`.
pub fn moved(a: &Counts, b: &Counts, names: &[String], threshold_pct: f64) -> Vec<Moved> {
    names
        .iter()
        .filter_map(|n| {
            let (x, y) = (*a.get(n)?, *b.get(n)?);
            let p = pct(x, y);
            (p.abs() > threshold_pct).then(|| Moved {
                counter: n.clone(),
                before: x,
                after: y,
                change_pct: evalbench_bundle::num::round_to(p, 3),
            })
        })
        .collect()
}

/// Bisects commits `0..n` (0 is GOOD, `n - 1` BAD) on `names` (None: every
/// exact counter both ends have), probing through `probe`. GOOD and BAD are
/// probed first; a skipped end is an error for the caller to say (Err with
/// the outcome so far).
pub fn bisect(
    n: usize,
    names: Option<&[String]>,
    threshold_pct: f64,
    probe: &mut dyn FnMut(usize) -> Probed,
) -> Result<Outcome, (usize, String)> {
    let mut s = Search { probe, known: BTreeMap::new(), order: Vec::new() };
    let good = match s.get(0) {
        Probed::Counted(c) => c,
        Probed::Skipped(why) => return Err((0, why)),
    };
    let bad = match s.get(n - 1) {
        Probed::Counted(c) => c,
        Probed::Skipped(why) => return Err((n - 1, why)),
    };
    let mut counters: Vec<String> = match names {
        Some(v) => v.to_vec(),
        None => good
            .keys()
            .filter(|k| bad.contains_key(*k) && !crate::counters::NOISY.contains(&k.as_str()))
            .cloned()
            .collect(),
    };
    // nix's headline counters first (nrFunctionCalls, nrThunks, ...): what a reader looks for.
    crate::counters::in_headline_order(&mut counters);
    let judged: Vec<String> = moved(&good, &bad, &counters, threshold_pct).into_iter().map(|m| m.counter).collect();
    let differ = !judged.is_empty();
    let mut found = Found { steps: Vec::new(), minor: Vec::new() };
    if differ {
        let j = Judge { judged: &judged, all: &counters, good: &good, t: threshold_pct };
        s.search((0, n - 1), (&good, &bad), &j, &mut found);
    }
    found.steps.sort_by_key(|st| st.at);
    found.minor.sort_by_key(|m| m.from);
    Ok(Outcome { counters, judged, minor: found.minor, threshold_pct, differ, steps: found.steps, probes: s.order })
}

/// What a probe is judged by: the counters that moved past the threshold
/// from GOOD to BAD, each relative to GOOD's value; and every counter, for
/// the exact changes under the threshold a probe meets.
struct Judge<'a> {
    judged: &'a [String],
    all: &'a [String],
    good: &'a Counts,
    t: f64,
}

impl Judge<'_> {
    /// How far `b` lies from `a` in `name`, percent of GOOD's value (of 1 when it is 0).
    fn apart(&self, name: &str, a: &Counts, b: &Counts) -> Option<f64> {
        let (x, y) = (*a.get(name)?, *b.get(name)?);
        Some((y - x) / self.good.get(name).copied().unwrap_or(x).abs().max(1.0) * 100.0)
    }

    /// Whether `p` lies within the threshold of `end` on every judged counter.
    fn near(&self, p: &Counts, end: &Counts) -> bool {
        self.judged.iter().all(|n| self.apart(n, end, p).is_some_and(|d| d.abs() <= self.t))
    }

    /// The judged counters that moved past the threshold from `a` to `b`.
    fn moved(&self, a: &Counts, b: &Counts) -> Vec<Moved> {
        self.changed(self.judged, a, b, |d| d.abs() > self.t)
    }

    /// Every counter that changed at all from `a` to `b` (an exact count changes or not).
    fn any_change(&self, a: &Counts, b: &Counts) -> Vec<Moved> {
        self.changed(self.all, a, b, |d| d != 0.0)
    }

    fn changed(&self, names: &[String], a: &Counts, b: &Counts, keep: impl Fn(f64) -> bool) -> Vec<Moved> {
        names
            .iter()
            .filter_map(|n| {
                let d = self.apart(n, a, b)?;
                keep(d).then(|| Moved {
                    counter: n.clone(),
                    before: a[n],
                    after: b[n],
                    change_pct: evalbench_bundle::num::round_to(d, 3),
                })
            })
            .collect()
    }
}

/// What the search found: the steps, and the changes under the threshold it met.
struct Found {
    steps: Vec<Step>,
    minor: Vec<Minor>,
}

struct Search<'a> {
    probe: &'a mut dyn FnMut(usize) -> Probed,
    known: BTreeMap<usize, Probed>,
    order: Vec<(usize, Probed)>,
}

impl Search<'_> {
    fn get(&mut self, i: usize) -> Probed {
        if let Some(p) = self.known.get(&i) {
            return p.clone();
        }
        let p = (self.probe)(i);
        self.known.insert(i, p.clone());
        self.order.push((i, p.clone()));
        p
    }

    fn counts(&mut self, i: usize) -> Option<Counts> {
        match self.get(i) {
            Probed::Counted(c) => Some(c),
            Probed::Skipped(_) => None,
        }
    }

    /// Between commits `lo` and `hi`, counts go from about `a` to about `b`
    /// (the ends' counts, or those a narrowed interval started from): every
    /// step between them goes to `found`.
    fn search(&mut self, (lo, hi): (usize, usize), (a, b): (&Counts, &Counts), j: &Judge<'_>, found: &mut Found) {
        if j.moved(a, b).is_empty() {
            return;
        }
        // The commit nearest the middle that can be counted; the skipped ones on the way are named.
        let middle = (lo + hi) / 2;
        let mut candidates: Vec<usize> = (lo + 1..hi).collect();
        candidates.sort_by_key(|&i| (i.abs_diff(middle), i));
        let Some((mid, c)) = candidates.into_iter().find_map(|i| self.counts(i).map(|c| (i, c))) else {
            // Neighbours (or only skipped commits between): the step, as its two commits count.
            let (x, y) = (self.counts(lo).unwrap_or_default(), self.counts(hi).unwrap_or_default());
            found.steps.push(Step {
                before: lo,
                at: hi,
                among: (lo + 1..hi).collect(),
                moved: j.changed(j.judged, &x, &y, |d| d != 0.0),
            });
            return;
        };
        // Near an end: the step lies on the other side; what changed under
        // the threshold on this side is listed, not searched.
        let minor = |from: usize, to: usize, x: &Counts, y: &Counts, found: &mut Found| {
            let moved = j.any_change(x, y);
            if !moved.is_empty() {
                found.minor.push(Minor { from, to, moved });
            }
        };
        if j.near(&c, a) {
            minor(lo, mid, &self.counts(lo).unwrap_or_default(), &c, found);
            self.search((mid, hi), (a, b), j, found);
        } else if j.near(&c, b) {
            minor(mid, hi, &c, &self.counts(hi).unwrap_or_default(), found);
            self.search((lo, mid), (a, b), j, found);
        } else {
            self.search((lo, mid), (a, &c), j, found);
            self.search((mid, hi), (&c, b), j, found);
        }
    }
}

/// What measuring a commit against the last known good one said
/// (`--measure`: compare's verdict on a time, interleaved in one session).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Not slower outside the noise: as the good commit.
    Good,
    /// Slower outside the noise.
    Bad,
    /// No verdict (too few runs, a busy machine, drift), or no evaluation: why.
    Undecided(String),
}

/// A bisection of a time: one step at most (times add no exactness that
/// would tell two steps apart), or nothing to find.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeOutcome {
    /// BAD measured slower than GOOD outside the noise.
    pub differ: bool,
    /// GOOD against BAD could not be decided: nothing is said of the commits between.
    pub undecided_ends: bool,
    /// The step: the last commit measured good and the first measured bad,
    /// with the undecided commits between them (any of which may be it).
    pub step: Option<Step>,
    /// Every measurement in the order made: (commit, against, what it said).
    pub probes: Vec<(usize, usize, Class)>,
}

/// Bisects a time over commits `0..n`: `measure(i, good)` measures commit
/// `i` against the commit `good` last known good. BAD against GOOD first:
/// not slower is nothing to find, never a commit.
pub fn bisect_time(n: usize, measure: &mut dyn FnMut(usize, usize) -> Class) -> TimeOutcome {
    let mut probes = Vec::new();
    let mut ask = |i: usize, good: usize, probes: &mut Vec<(usize, usize, Class)>| {
        let c = measure(i, good);
        probes.push((i, good, c.clone()));
        c
    };
    match ask(n - 1, 0, &mut probes) {
        Class::Bad => {}
        Class::Good => return TimeOutcome { differ: false, undecided_ends: false, step: None, probes },
        Class::Undecided(_) => return TimeOutcome { differ: false, undecided_ends: true, step: None, probes },
    }
    let (mut lo, mut hi) = (0usize, n - 1);
    let mut undecided: Vec<usize> = Vec::new();
    loop {
        let middle = (lo + hi) / 2;
        let mut candidates: Vec<usize> = (lo + 1..hi).filter(|i| !undecided.contains(i)).collect();
        candidates.sort_by_key(|&i| (i.abs_diff(middle), i));
        let Some(&mid) = candidates.first() else { break };
        match ask(mid, lo, &mut probes) {
            Class::Good => lo = mid,
            Class::Bad => hi = mid,
            Class::Undecided(_) => undecided.push(mid),
        }
    }
    undecided.retain(|&i| lo < i && i < hi);
    undecided.sort_unstable();
    TimeOutcome {
        differ: true,
        undecided_ends: false,
        step: Some(Step { before: lo, at: hi, among: undecided, moved: Vec::new() }),
        probes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line of commits whose counts step up at given commits, some commits
    /// unevaluable: `counts[i]` is None for a skipped one.
    fn line(n: usize, steps: &[(usize, f64)], skipped: &[usize], drift: f64) -> Vec<Option<Counts>> {
        (0..n)
            .map(|i| {
                if skipped.contains(&i) {
                    return None;
                }
                let mut calls = 100_000.0 + drift * i as f64;
                for &(at, by) in steps {
                    if i >= at {
                        calls *= 1.0 + by;
                    }
                }
                Some(Counts::from([
                    ("nrFunctionCalls".to_string(), calls.round()),
                    ("cpuTime".to_string(), 0.1 + i as f64),
                ]))
            })
            .collect()
    }

    fn run(c: &[Option<Counts>], threshold: f64) -> Outcome {
        let mut probe =
            |i: usize| c[i].clone().map_or_else(|| Probed::Skipped("does not evaluate".into()), Probed::Counted);
        bisect(c.len(), None, threshold, &mut probe).unwrap()
    }

    /// Seeded lines of 64 commits with one 3% step, harmless drift of a few
    /// calls a commit, and some skipped commits: the step is found at its
    /// commit (or among the skipped ones just before it) in at most 8
    /// probes when nothing is skipped; a time (cpuTime) is never judged.
    #[test]
    fn one_step_is_found_at_its_commit_in_log2_probes() {
        let mut r = crate::seeded::Seeded(0x00b1_5ec7);
        for round in 0..200 {
            let n = 64;
            let at = 1 + r.next(n as u64 - 1) as usize;
            let skip: Vec<usize> = if round % 2 == 0 {
                Vec::new()
            } else {
                (0..r.next(4)).map(|_| 1 + r.next(n as u64 - 2) as usize).collect()
            };
            let c = line(n, &[(at, 0.03)], &skip, 3.0);
            let o = run(&c, 1.0);
            assert_eq!(o.counters, ["nrFunctionCalls"], "round {round}");
            assert_eq!(o.steps.len(), 1, "round {round}: step at {at}, skipped {skip:?}: {:?}", o.steps);
            let st = &o.steps[0];
            assert!(st.at == at || st.among.contains(&at), "round {round}: step at {at}, found {st:?}");
            if skip.is_empty() {
                assert_eq!((st.before, st.at), (at - 1, at), "round {round}");
                assert!(o.probes.len() <= 8, "round {round}: {} probes", o.probes.len());
            }
            assert!(st.moved[0].change_pct > 2.5 && st.moved[0].change_pct < 3.5, "round {round}: {:?}", st.moved);
        }
    }

    /// Two steps (+3% then +5%): both named, in order; a step back down
    /// to where it started inside the range: nothing to find, said so.
    #[test]
    fn several_steps_are_each_named_and_equal_ends_find_nothing() {
        let mut r = crate::seeded::Seeded(0x0002_57e9);
        for round in 0..100 {
            let a = 1 + r.next(40) as usize;
            let b = a + 1 + r.next(20) as usize;
            let o = run(&line(64, &[(a, 0.03), (b, 0.05)], &[], 0.0), 1.0);
            let at: Vec<usize> = o.steps.iter().map(|s| s.at).collect();
            assert_eq!(at, [a, b], "round {round}");
        }
        let o = run(&line(64, &[], &[], 3.0), 1.0);
        assert!(!o.differ && o.steps.is_empty(), "harmless drift under the threshold: nothing to find");
        let o = run(&line(16, &[(5, 0.03), (9, -0.03 / 1.03)], &[], 0.0), 1.0);
        assert!(!o.differ && o.steps.is_empty() && o.probes.len() == 2, "{o:?}");
    }

    /// Seeded lines of 64 commits whose time steps at one commit, each
    /// measurement noisy: a commit a few commits from the step is sometimes
    /// undecided. The step is found at its commit (or among the undecided
    /// ones before it), in about log2 probes; with no step, nothing.
    #[test]
    fn a_time_step_is_found_and_a_flat_range_finds_nothing() {
        let mut r = crate::seeded::Seeded(0x7_1e5e);
        for round in 0..200 {
            let n = 64;
            let at = 1 + r.next(n as u64 - 1) as usize;
            let mut noise = crate::seeded::Seeded(round + 1);
            let mut measure = |i: usize, good: usize| {
                assert!(good < at, "round {round}: measured against {good}, which is bad");
                if round % 3 == 0 && noise.next(4) == 0 {
                    return Class::Undecided("too few runs".into());
                }
                if i >= at {
                    Class::Bad
                } else {
                    Class::Good
                }
            };
            let o = bisect_time(n, &mut measure);
            if matches!(o.probes[0].2, Class::Undecided(_)) {
                assert!(o.undecided_ends && o.step.is_none(), "round {round}");
                continue;
            }
            let st = o.step.unwrap();
            assert!(st.at == at || st.among.contains(&at), "round {round}: step at {at}, found {st:?}");
            if round % 3 != 0 {
                assert_eq!((st.before, st.at), (at - 1, at), "round {round}");
                assert!(o.probes.len() <= 7, "round {round}: {} probes", o.probes.len());
            }
        }
        let o = bisect_time(64, &mut |_, _| Class::Good);
        assert!(!o.differ && o.step.is_none() && o.probes.len() == 1);
    }

    /// History as real history is: weekly commits, one step past the
    /// threshold (+1.3% calls), and between the ends many exact changes
    /// under it (a few calls here, +2 of a small counter there, 5% of its
    /// value). The step is found in the ends plus ⌈log2 N⌉ probes (N the
    /// intervals), never chasing the small changes, which are listed where
    /// a probe met them.
    #[test]
    fn sub_threshold_changes_between_the_ends_cost_no_probe() {
        let mut r = crate::seeded::Seeded(0x5_0b7_4e5);
        for round in 0..300 {
            let n = 8 + r.next(57) as usize;
            let at = 1 + r.next(n as u64 - 1) as usize;
            let mut calls = 400_000.0;
            let mut updates = 38.0;
            let c: Vec<Option<Counts>> = (0..n)
                .map(|i| {
                    if i == at {
                        calls *= 1.013;
                    } else if i > 0 && r.next(31) < 14 {
                        // An exact change under the threshold, in one counter or the other.
                        if r.next(2) == 0 {
                            calls += 1.0 + r.next(5) as f64;
                        } else {
                            // 5% of a small counter, up and back down: the ends agree on it.
                            updates = if updates == 38.0 { 40.0 } else { 38.0 };
                        }
                    }
                    Some(Counts::from([
                        ("nrFunctionCalls".to_string(), calls.round()),
                        ("nrOpUpdates".to_string(), updates),
                    ]))
                })
                .collect();
            // Where the small counter ends up apart from GOOD it is judged, as it should be: not this case.
            if c[n - 1].as_ref().unwrap()["nrOpUpdates"] != 38.0 {
                continue;
            }
            let o = run(&c, 1.0);
            assert_eq!(o.judged, ["nrFunctionCalls"], "round {round}");
            assert_eq!(o.steps.len(), 1, "round {round}: {:?}", o.steps);
            assert_eq!((o.steps[0].before, o.steps[0].at), (at - 1, at), "round {round}");
            let want = 2 + (usize::BITS - (n - 2).leading_zeros()) as usize;
            assert!(
                o.probes.len() <= want,
                "round {round}: {} probes for {} intervals, at most {want}",
                o.probes.len(),
                n - 1
            );
            for m in &o.minor {
                assert!(m.to < at || m.from >= at, "round {round}: a listed change spans the step: {m:?}");
            }
        }
    }

    /// Only skipped commits between two that differ: the step lies among
    /// them, and they are named; a skipped end is the caller's error.
    #[test]
    fn a_step_among_skipped_commits_is_said_so() {
        let o = run(&line(16, &[(7, 0.03)], &[5, 6, 7], 0.0), 1.0);
        assert_eq!(o.steps.len(), 1, "{o:?}");
        assert_eq!((o.steps[0].before, o.steps[0].at, o.steps[0].among.clone()), (4, 8, vec![5, 6, 7]));
        let c = line(16, &[(7, 0.03)], &[0], 0.0);
        let mut probe = |i: usize| c[i].clone().map_or_else(|| Probed::Skipped("x".into()), Probed::Counted);
        assert_eq!(bisect(16, None, 1.0, &mut probe).unwrap_err().0, 0);
    }
}
