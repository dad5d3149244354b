//! The layer's clock: one wall-clock reading tied to a monotonic clock.
//!
//! Every process on a host stamps its spans from the same wall clock, and the
//! alignment (evalbench-analyze's `align`) relies on that: it finds one offset
//! per worker host, not per process. A process that reads its wall clock at
//! a different moment than its monotonic base would stamp every span off by
//! the gap, so the two are read as close together as the scheduler allows.

use std::cell::Cell;
use std::time::{Duration, Instant, SystemTime};

use crate::builder::unix_us;

/// Readings of the wall clock bracketed by monotonic readings at most this
/// far apart are taken at once.
const TIGHT: Duration = Duration::from_micros(2);
/// How many brackets are tried before the tightest is taken.
const TRIES: usize = 64;

/// The monotonic instant a wall-clock reading (µs since the epoch) belongs to.
///
/// A thread descheduled between its two reads would tie the wall reading to
/// an instant up to a time slice off (under load, 3,000 fresh processes
/// here showed gaps up to 22 µs; a time slice is 4 ms). So the wall clock is read between
/// two monotonic reads, the tightest bracket of a few tries is kept, and the
/// reading is tied to the bracket's middle: off by at most half its width.
fn anchor(mut mono: impl FnMut() -> Instant, mut wall: impl FnMut() -> i64) -> (Instant, i64) {
    let mut best: Option<(Duration, Instant, i64)> = None;
    for _ in 0..TRIES {
        let before = mono();
        let w = wall();
        let width = mono().saturating_duration_since(before);
        if best.is_none_or(|(b, ..)| width < b) {
            best = Some((width, before + width / 2, w));
        }
        if width <= TIGHT {
            break;
        }
    }
    let (_, at, w) = best.expect("at least one try");
    (at, w)
}

/// Timestamps come from one wall-clock reading plus a monotonic clock, so a
/// child's start and end lie inside its parent's to the microsecond.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    pub(crate) base_us: i64,
    base: Instant,
    skew_us: i64,
}

impl Clock {
    pub(crate) fn now(skew_us: i64) -> Clock {
        let (base, wall_us) = anchor(Instant::now, || unix_us(SystemTime::now()));
        Clock { base_us: wall_us + skew_us, base, skew_us }
    }
    pub(crate) fn ticks(&self) -> u64 {
        match PINNED.with(|p| p.get()) {
            Some(Pin::Wall(us)) => (us + self.skew_us - self.base_us).max(0) as u64,
            Some(Pin::Instant(at)) => at.saturating_duration_since(self.base).as_micros() as u64,
            None => Instant::now().saturating_duration_since(self.base).as_micros() as u64,
        }
    }
}

/// What this thread's spans are stamped with instead of now.
#[derive(Debug, Clone, Copy)]
enum Pin {
    Instant(Instant),
    /// A time of this machine's wall clock, µs since the epoch, read by
    /// another process (nix's own trace timestamps).
    Wall(i64),
}

thread_local! {
    /// The instant this thread's spans open and close at, inside
    /// [`at_one_instant`] or [`at_wall_us`].
    static PINNED: Cell<Option<Pin>> = const { Cell::new(None) };
}

fn pinned<R>(pin: Pin, f: impl FnOnce() -> R) -> R {
    struct Unpin(Option<Pin>);
    impl Drop for Unpin {
        fn drop(&mut self) {
            PINNED.with(|p| p.set(self.0));
        }
    }
    let _restore = Unpin(PINNED.with(|p| p.replace(Some(pin))));
    f()
}

/// Runs `f` with every span this thread closes or opens in it stamped with
/// `wall_us`, a time of this machine's wall clock (µs since the epoch) that
/// another process read: nix's own timestamp of a marker, when the reader
/// reaches the marker later than nix wrote it. The layer's clock skew
/// applies to it as to the layer's own readings.
pub fn at_wall_us<R>(wall_us: i64, f: impl FnOnce() -> R) -> R {
    pinned(Pin::Wall(wall_us), f)
}

/// Runs `f` with every span this thread closes or opens in it stamped with
/// one instant, the moment `f` starts. For spans that are back to back by
/// definition (one attribute ends where the next begins): without it, the
/// layer's own work and any descheduling between the close and the open
/// would show as a gap that belongs to neither.
pub fn at_one_instant<R>(f: impl FnOnce() -> R) -> R {
    pinned(Pin::Instant(Instant::now()), f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brackets made by hand: (monotonic before, wall, monotonic after), in µs.
    fn anchored(brackets: &[(u64, i64, u64)]) -> (u64, i64, usize) {
        let origin = Instant::now();
        let at = |us: u64| origin + Duration::from_micros(us);
        let mono: Vec<Instant> = brackets.iter().flat_map(|&(a, _, b)| [at(a), at(b)]).collect();
        let (mut m, mut w) = (mono.into_iter(), brackets.iter().map(|&(_, w, _)| w));
        let mut reads = 0;
        let (base, wall) = anchor(
            || m.next().expect("no more than asked"),
            || {
                reads += 1;
                w.next().expect("no more than asked")
            },
        );
        (base.duration_since(origin).as_micros() as u64, wall, reads)
    }

    #[test]
    fn a_descheduled_read_is_not_the_anchor() {
        // The first read is paused 600 µs after its wall reading; the second is tight.
        let (base, wall, reads) = anchored(&[(0, 1_000_000, 600), (700, 1_000_701, 701)]);
        assert_eq!((base, wall, reads), (700, 1_000_701, 2), "the tight bracket, at its middle");
    }

    #[test]
    fn with_no_tight_bracket_the_narrowest_middle_is_taken() {
        let mut brackets: Vec<(u64, i64, u64)> =
            (0..TRIES as u64).map(|i| (i * 100, 5_000 + i as i64 * 100, i * 100 + 50)).collect();
        brackets[17] = (1_700, 6_710, 1_720);
        let (base, wall, reads) = anchored(&brackets);
        assert_eq!((base, wall, reads), (1_710, 6_710, TRIES));
    }
}
