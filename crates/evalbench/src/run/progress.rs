//! `run`'s progress on stderr: one line a run (`cold-clean run 7/32  0.41 s
//! (about 52 s left)`), with the setup's and the teardown's; in a terminal,
//! one line that updates; with `-v`, every step of every run as it happens
//! (its status as it changes), as before. A run of 32 runs a pass with a
//! baseline printed 439 lines and never said how far it was.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use evalbench_harness::Progress as Event;

pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    verbose: bool,
    last_line: String,
    /// When the first run began, for the time left.
    began: Option<Instant>,
}

/// What a step's line says, less the seconds a poll adds at its end
/// (`EvaluatingFlake 1.2 s`): lines that differ only in those are one line
/// in a log. The run stays whole: `cold-clean.2` is not `cold-clean.3`.
fn step_key(run: &str, what: &str) -> String {
    let what = what
        .strip_suffix(" s")
        .and_then(|m| m.rsplit_once(' '))
        .filter(|(_, secs)| secs.parse::<f64>().is_ok())
        .map_or(what, |(head, _)| head);
    format!("{run}: {what}")
}

/// `cold-clean run 7/32  0.41 s  (about 52 s left)`.
pub fn run_line(e: &Event<'_>, elapsed: Duration) -> Option<String> {
    let Event::RunDone { side, pass, number, of, warmup, evaluated_s, done, total } = *e else { return None };
    let side = if side.is_empty() { String::new() } else { format!("{side}: ") };
    let what = if warmup { format!("warm-up {pass} {number}/{of}") } else { format!("{pass} run {number}/{of}") };
    let evaluated = evaluated_s.map_or_else(|| "evaluated unknown".to_string(), |s| format!("{s:.2} s"));
    let left = match total.saturating_sub(done) {
        0 => "(the last run)".to_string(),
        n => format!("(about {} left)", human(elapsed.as_secs_f64() / done.max(1) as f64 * n as f64)),
    };
    Some(format!("{side}{what}  {evaluated}  {left}"))
}

/// The test-only hook of docs/faults.md: with `EVALBENCH_STOP_AT=STAGE`, the
/// run interrupts itself (SIGINT, as Ctrl-C) at that stage, so that a test
/// reaches it by name rather than by timing. Stages: `setup` (the targets
/// starting), `warm-up` (a warm-up run begun), `run` (the second run of the
/// first pass begun), `captures` (the first run's captures stopping), and
/// `summarizing` (`run::stop_at_stage`, after the last run).
pub const ENV_STOP_AT: &str = "EVALBENCH_STOP_AT";

fn stop_at(e: &Event<'_>) {
    let Event::Step { run, what } = *e else { return };
    let stage = if run.ends_with("setup") && what.starts_with("starting") {
        "setup"
    } else if run.contains("warm-up ") && what == "arming captures" {
        "warm-up"
    } else if run.ends_with(".2") && what == "arming captures" {
        "run"
    } else if !run.contains("warm-up ") && what == "stopping captures" {
        "captures"
    } else {
        return;
    };
    stop_at_stage(stage);
}

/// Interrupts the run here when `EVALBENCH_STOP_AT` names `stage`.
pub fn stop_at_stage(stage: &str) {
    if std::env::var(ENV_STOP_AT).is_ok_and(|s| s == stage) {
        // SAFETY: raise has no memory preconditions; the handler only stores to an atomic.
        unsafe { libc::raise(libc::SIGINT) };
    }
}

fn human(secs: f64) -> String {
    match secs {
        s if s < 90.0 => format!("{s:.0} s"),
        s if s < 5400.0 => format!("{:.0} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    }
}

impl Progress {
    pub fn new(verbose: bool) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_style(
                indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                    .expect("a valid template"),
            );
            b.enable_steady_tick(Duration::from_millis(120));
            b
        });
        Progress { bar, verbose, last_line: String::new(), began: None }
    }

    pub fn say(&mut self, e: Event<'_>) {
        stop_at(&e);
        match e {
            Event::Step { run, what } => {
                let setup = run.ends_with("setup") || run.ends_with("teardown");
                if !setup && self.began.is_none() {
                    self.began = Some(Instant::now());
                }
                let line = format!("{run}: {what}");
                match &self.bar {
                    Some(b) => b.set_message(line),
                    None if self.verbose || setup => {
                        let key = step_key(run, what);
                        if key != self.last_line {
                            eprintln!("evalbench run: {line}");
                            self.last_line = key;
                        }
                    }
                    None => {}
                }
            }
            Event::RunDone { .. } => {
                let elapsed = self.began.map_or(Duration::ZERO, |b| b.elapsed());
                let Some(line) = run_line(&e, elapsed) else { return };
                match &self.bar {
                    Some(b) if self.verbose => b.println(format!("evalbench run: {line}")),
                    Some(b) => b.set_message(line),
                    None => eprintln!("evalbench run: {line}"),
                }
            }
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_lines_differ_by_run_and_status_not_by_seconds() {
        assert_eq!(
            step_key("cold-clean.2", "EvaluatingFlake 1.2 s"),
            step_key("cold-clean.2", "EvaluatingFlake 3.4 s")
        );
        assert_ne!(
            step_key("cold-clean.2", "EvaluatingFlake 1.2 s"),
            step_key("cold-clean.3", "EvaluatingFlake 1.2 s")
        );
        assert_ne!(step_key("cold-clean", "Queued 0.1 s"), step_key("cold-clean", "Fetching 0.2 s"));
        assert_eq!(step_key("warm-clean", "arming captures"), "warm-clean: arming captures");
        assert_eq!(step_key("p", "waiting 2 workers"), "p: waiting 2 workers", "a number inside a message is kept");
    }

    #[test]
    fn a_run_is_one_line_with_its_place_and_the_time_left() {
        let done = |number, done, warmup| Event::RunDone {
            side: "",
            pass: "cold-clean",
            number,
            of: 32,
            warmup,
            evaluated_s: Some(0.4123),
            done,
            total: 40,
        };
        assert_eq!(
            run_line(&done(7, 8, false), Duration::from_secs(16)).unwrap(),
            "cold-clean run 7/32  0.41 s  (about 64 s left)"
        );
        assert_eq!(
            run_line(&done(32, 40, false), Duration::from_secs(80)).unwrap(),
            "cold-clean run 32/32  0.41 s  (the last run)"
        );
        let w = Event::RunDone {
            side: "a",
            pass: "cold-clean",
            number: 1,
            of: 1,
            warmup: true,
            evaluated_s: None,
            done: 1,
            total: 1000,
        };
        assert_eq!(
            run_line(&w, Duration::from_secs(2)).unwrap(),
            "a: warm-up cold-clean 1/1  evaluated unknown  (about 33 min left)"
        );
    }
}
