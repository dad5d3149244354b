//! What a faster step would buy, as `whatif --faster` predicts it: for the
//! top steps of the run shown in full, the evaluated time saved with the
//! step 10% and 50% faster, predicted on every run of the pass on its own
//! path and given as a median and range, as `whatif` gives it.

use std::fmt::Write;

use evalbench_analyze::view::PassView;

use super::super::esc::esc;
use super::super::svg::ms;
use super::super::Page;

/// One run's figure for `step`: its time on the path and the two savings.
/// A step off the run's path saves nothing (the path stays the longest);
/// None where the run did not predict it (not among its own top steps).
fn of_run(r: &PassView, step: &str) -> Option<(i64, i64, i64)> {
    if let Some(b) = r.buys.iter().find(|b| b.step == step) {
        return Some((b.on_path_us, b.saved_10_us, b.saved_50_us));
    }
    let path = r.critical.as_ref().ok()?;
    (!path.steps.iter().any(|s| s.label() == step)).then_some((0, 0, 0))
}

/// Median and range of microseconds, as the table prints them.
fn cell(v: &[i64]) -> String {
    let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    let s = evalbench_analyze::spread::spread(&f);
    if v.len() < 2 || s.min == s.max {
        ms(s.median)
    } else {
        format!("{} ({}..{})", ms(s.median), ms(s.min), ms(s.max))
    }
}

/// Steps listed.
const SHOWN: usize = 5;

pub fn buys(page: &mut Page, shown: &PassView, runs: &[&PassView]) {
    if shown.buys.is_empty() {
        return;
    }
    let runs: Vec<&PassView> = if runs.is_empty() { vec![shown] } else { runs.to_vec() };
    let mut t = String::from(
        "<table><tr><th>step made faster</th><th>on the path</th><th>10% faster saves</th><th>50% faster \
            saves</th></tr>",
    );
    let mut partial = false;
    let each_run: Vec<(&[evalbench_analyze::path::PathStep], &[evalbench_analyze::path::whatif::Buys])> =
        runs.iter().filter_map(|r| Some((r.critical.as_ref().ok()?.steps.as_slice(), r.buys.as_slice()))).collect();
    for b in shown.buys.iter().take(SHOWN) {
        let each: Vec<(i64, i64, i64)> = runs.iter().filter_map(|r| of_run(r, &b.step)).collect();
        partial |= each.len() < runs.len();
        // The savings as the answer computes them (`over_runs::lever`), so
        // that the first screen's figure and this table's are one.
        let Some(l) = evalbench_analyze::over_runs::lever(&b.step, &each_run) else { continue };
        let saved = |s: &evalbench_analyze::spread::Spread| {
            if l.counted < 2 || s.min == s.max {
                ms(s.median)
            } else {
                format!("{} ({}..{})", ms(s.median), ms(s.min), ms(s.max))
            }
        };
        let _ = write!(
            t,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&b.step),
            esc(&cell(&each.iter().map(|x| x.0).collect::<Vec<_>>())),
            esc(&saved(&l.saved_10_us)),
            esc(&saved(&l.saved_50_us))
        );
    }
    t.push_str("</table>");
    // Only numbers and our own words between the tags.
    let over = if runs.len() > 1 {
        format!(
            "Predicted on each of the pass's {} runs on its own path (median and range){}, as <code>whatif --faster \
                STEP=PCT</code> predicts it. ",
            runs.len(),
            if partial { "; a run whose own top steps left a step out is not counted for it" } else { "" }
        )
    } else {
        String::from("As <code>whatif --faster STEP=PCT</code> predicts it. ")
    };
    let _ = write!(
        page.body,
        "<h4>What a faster step would buy (predicted)</h4>{t}<p class=\"note\">{over}{}.</p>",
        esc(evalbench_analyze::path::whatif::ASSUMPTION)
    );
}
