//! nix's own sampled profile (Nix >= 2.30) beside evalbench's exact one
//! from the function trace: the first call sites of each, each one's rank
//! in the other, and where they disagree, with why.

use std::fmt::Write;

use evalbench_analyze::view::{Position, Sampled};

use super::super::esc::esc;
use super::super::svg::ms;
use super::super::Page;

/// Rows set side by side, and how far down the other list a call site may
/// be before the two are said to disagree on it.
const ROWS: usize = 10;
const NEAR: usize = 10;

/// Why the two views rank call sites apart, in the page's words.
pub const WHY: &str = "nix samples the stack when a function is entered, at most 999 times a second: a call site is \
    charged when calls start there, and time spent between calls falls on the last call entered. evalbench's trace \
    charges every call its exact self time, so a call site entered often but briefly ranks higher in nix's view and \
    one whose calls run long without calling higher in evalbench's. Where nix knows no call site (a lambda called by a \
    primop such as foldl') its profiler shows the lambda's own definition, where the trace shows «none»:0; so one \
    view's first row can be missing from the other's list. Samples are few: a rank by a handful of samples is chance.";

/// Where `name` is among `names`, from 0.
fn rank<'a>(mut names: impl Iterator<Item = &'a str>, name: &str) -> Option<usize> {
    names.position(|n| n == name)
}

pub fn beside(page: &mut Page, exact: Option<&[Position]>, s: &Sampled) {
    let _ = write!(
        page.body,
        "<h4>nix's own sampled profile beside evalbench's exact one</h4><p class=\"note\">{} samples from nix's \
         <code>--eval-profiler flamegraph</code> (<code>eval/nix-eval-profiler.folded</code>), taken in the same \
         evaluation as the trace. {}</p>",
        s.samples,
        esc(WHY)
    );
    let exact = exact.unwrap_or(&[]);
    side_by_side(page, exact, s);
    disagreements(page, exact, s);
    if let Some(f) = s.by_function.first() {
        let _ = write!(
            page.body,
            "<p>nix's first function by self samples: <code>{}</code> ({} of {}).</p>",
            esc(&f.name),
            f.self_samples,
            s.samples
        );
    }
}

/// Both views' first call sites, row by row, each with its rank in the other.
fn side_by_side(page: &mut Page, exact: &[Position], s: &Sampled) {
    let show = |r: Option<usize>| r.map(|r| (r + 1).to_string()).unwrap_or_else(|| "–".to_string());
    page.body.push_str(
        "<table><tr><th>#</th><th>evalbench: call site by self time</th><th>self time</th><th>in nix's</th>\
         <th>nix: call site by self samples</th><th>samples</th><th>in evalbench's</th></tr>",
    );
    for i in 0..ROWS.min(exact.len().max(s.by_position.len())) {
        let _ = write!(page.body, "<tr><td class=\"n\">{}</td>", i + 1);
        match exact.get(i) {
            Some(e) => {
                let r = rank(s.by_position.iter().map(|p| p.name.as_str()), &e.position);
                let _ = write!(
                    page.body,
                    "<td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                    esc(&e.position),
                    esc(&ms(e.self_us as f64)),
                    show(r)
                );
            }
            None => page.body.push_str("<td></td><td></td><td></td>"),
        }
        match s.by_position.get(i) {
            Some(n) => {
                let r = rank(exact.iter().map(|p| p.position.as_str()), &n.name);
                let _ = write!(
                    page.body,
                    "<td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                    esc(&n.name),
                    n.self_samples,
                    show(r)
                );
            }
            None => page.body.push_str("<td></td><td></td><td></td>"),
        }
        page.body.push_str("</tr>");
    }
    page.body.push_str("</table>");
}

/// Where one view's first five are far down the other's list, or not in it.
fn disagreements(page: &mut Page, exact: &[Position], s: &Sampled) {
    let mut apart = Vec::new();
    for (i, e) in exact.iter().take(5).enumerate() {
        if rank(s.by_position.iter().map(|p| p.name.as_str()), &e.position).is_none_or(|r| r >= NEAR) {
            apart.push(format!(
                "<code>{}</code> is {} by evalbench's self time, not in nix's first {NEAR}",
                esc(&e.position),
                i + 1
            ));
        }
    }
    for (i, n) in s.by_position.iter().take(5).enumerate() {
        if rank(exact.iter().map(|p| p.position.as_str()), &n.name).is_none_or(|r| r >= NEAR) {
            apart.push(format!(
                "<code>{}</code> is {} by nix's samples, not in evalbench's first {NEAR}",
                esc(&n.name),
                i + 1
            ));
        }
    }
    if apart.is_empty() {
        let _ = write!(
            page.body,
            "<p>Where they disagree: nowhere in either's first five; each is in the other's first {NEAR}.</p>"
        );
    } else {
        let _ = write!(page.body, "<p>Where they disagree: {}.</p>", apart.join("; "));
    }
}
