//! nix's instructions on the page, after the answer: per counted pass its
//! count (median and spread over its runs), per phase, the dynamic
//! loader's share, and the top functions by instructions, the figures
//! summary.txt gives (`analyze::instructions`). Every name is escaped: a
//! function's name comes from the bundle.

use std::fmt::Write;

use evalbench_analyze::instructions::CountedPass;

use super::super::esc::esc;
use super::super::Page;
use crate::figures::grouped;

pub fn instructions(page: &mut Page, passes: &[CountedPass]) {
    if passes.is_empty() {
        return;
    }
    page.h2("instructions", "nix's instructions (counted passes)");
    page.body.push_str(
        "<p class=\"note\">Counted under Valgrind (cachegrind, no cache simulation): the instructions every nix \
            process of the evaluation executed, exact to a few parts in a million on a busy machine. These passes' \
            times are Valgrind's, never summarized; their sections below show them as shapes only.</p>",
    );
    page.body.push_str(
        "<table class=\"answer\"><tr><th>pass</th><th>instructions (median)</th><th>spread</th><th>per \
            phase</th><th>starting (dynamic loader)</th></tr>",
    );
    for c in passes {
        let spread = if c.runs.len() > 1 {
            format!("{:.4}% over {} runs", c.spread_pct, c.runs.len())
        } else {
            "one run".to_string()
        };
        let _ = write!(
            page.body,
            "<tr><td>{}</td><td class=\"n\"><b>{}</b></td><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
            esc(&c.pass),
            esc(&grouped(c.median.round())),
            esc(&spread),
            esc(&crate::summary::instructions::phases(c)),
            esc(&grouped(c.loader.round()))
        );
    }
    page.body.push_str("</table>");
    for c in passes {
        let _ =
            write!(page.body, "<p>Top functions of {} by instructions (cachegrind's self counts):</p>", esc(&c.pass));
        page.body.push_str("<table><tr><th>function</th><th>from</th><th>instructions</th><th>share</th></tr>");
        for f in &c.top {
            let _ = write!(
                page.body,
                "<tr><td><code>{}</code></td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}%</td></tr>",
                esc(&f.function),
                esc(f.from.as_str()),
                esc(&grouped(f.instructions.round())),
                f.share_pct
            );
        }
        page.body.push_str("</table>");
    }
}
