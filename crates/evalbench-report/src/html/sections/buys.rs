//! What a faster step would buy, as `whatif --faster` predicts it: for the
//! top steps of the run shown in full, the evaluated time saved with the
//! step 10% and 50% faster, predicted on every run of the pass on its own
//! path and given as a median and range, as `whatif` gives it.

use std::fmt::Write;

use evalbench_analyze::spread::Spread;
use evalbench_analyze::view::page::Levers;
use evalbench_analyze::view::PassView;

use super::super::esc::esc;
use super::super::svg::ms;
use super::super::Page;

/// A spread of microseconds as the table prints it: the median, and the
/// range where there are two or more that differ.
fn cell(s: &Spread, n: usize) -> String {
    if n < 2 || s.min == s.max {
        ms(s.median)
    } else {
        format!("{} ({}..{})", ms(s.median), ms(s.min), ms(s.max))
    }
}

pub fn buys(page: &mut Page, shown: &PassView, levers: &Levers) {
    if shown.buys.is_empty() {
        return;
    }
    let mut t = String::from(
        "<table><tr><th>step made faster</th><th>on the path</th><th>10% faster saves</th><th>50% faster \
            saves</th></tr>",
    );
    for r in &levers.rows {
        let _ = write!(
            t,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&r.step),
            esc(&cell(&r.on_path_us, r.on_path_us.n)),
            esc(&cell(&r.lever.saved_10_us, r.lever.counted)),
            esc(&cell(&r.lever.saved_50_us, r.lever.counted))
        );
    }
    t.push_str("</table>");
    // Only numbers and our own words between the tags.
    let (runs, partial) = (levers.runs, levers.partial);
    let over = if runs > 1 {
        format!(
            "Predicted on each of the pass's {} runs on its own path (median and range){}, as <code>whatif --faster \
                STEP=PCT</code> predicts it. ",
            runs,
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
