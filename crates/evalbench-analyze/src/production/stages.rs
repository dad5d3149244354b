//! The evaluation's stages from its own timeline: each `*_started_at` is
//! when it entered that status, so a stage lasts until the next one that
//! happened (a stage an evaluation skipped has no start and is left out).

use evalbench_diagnostic::Evaluation;
use serde::Serialize;

use super::between_s;

/// One stage of the evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    pub name: &'static str,
    pub from_us: i64,
    pub to_us: i64,
    pub seconds: f64,
    /// Of the evaluation's whole time, 0-1.
    pub share: f64,
    /// The stage had not ended when the report was made (it ends at the last update).
    pub open: bool,
}

/// The stages in timeline order.
pub fn of(e: &Evaluation) -> Vec<Stage> {
    let points = [
        ("queued", e.created_at),
        ("fetching", e.fetch_started_at),
        ("evaluating the flake", e.eval_flake_started_at),
        ("evaluating derivations", e.eval_drv_started_at),
        ("building", e.building_started_at),
    ];
    let (end, open) = match e.finished_at {
        Some(f) => (Some(f), false),
        None => (e.updated_at, true),
    };
    let total = between_s(e.created_at, end).filter(|t| *t > 0.0);
    let mut out = Vec::new();
    for (i, (name, from)) in points.iter().enumerate() {
        let Some(from) = *from else { continue };
        let next = points[i + 1..].iter().find_map(|(_, t)| *t);
        let (to, is_open) = match next {
            Some(t) => (t, false),
            None => match end {
                Some(t) => (t, open),
                None => continue,
            },
        };
        let seconds = to.saturating_sub(from) as f64 / 1e6;
        out.push(Stage {
            name,
            from_us: from,
            to_us: to,
            seconds,
            share: total.map_or(0.0, |t| seconds / t),
            open: is_open,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_lasts_until_the_next_that_happened() {
        let s = 1_000_000;
        let e = Evaluation {
            created_at: Some(0),
            fetch_started_at: Some(2 * s),
            eval_flake_started_at: None,
            eval_drv_started_at: Some(10 * s),
            building_started_at: None,
            finished_at: Some(20 * s),
            ..Evaluation::default()
        };
        let got: Vec<_> = of(&e).iter().map(|x| (x.name, x.seconds, x.share)).collect();
        assert_eq!(got, vec![("queued", 2.0, 0.1), ("fetching", 8.0, 0.4), ("evaluating derivations", 10.0, 0.5)]);
        let unfinished = Evaluation { finished_at: None, updated_at: Some(15 * s), ..e };
        let last = of(&unfinished).pop().unwrap();
        assert!(last.open && last.seconds == 5.0, "{last:?}");
    }
}
