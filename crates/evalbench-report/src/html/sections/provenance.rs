//! What the bundle measured and where: the flake, nix, the machine and the
//! plan. After the answer and the passes side by side (it had been first,
//! 25 rows above any number), linked from the answer's table of contents.

use std::fmt::Write;

use evalbench_analyze::view::PassView;

use super::super::esc::esc;
use super::super::Page;

pub fn provenance(page: &mut Page, passes: &[PassView]) {
    page.h2("provenance", "What was measured");
    let p = passes.iter().find_map(|p| p.run()?.provenance.clone());
    let Some(p) = p else {
        page.body.push_str(
            "<p class=\"missing\">Provenance unknown: this bundle was written before evalbench recorded it, or by \
                another tool.</p>",
        );
        return;
    };
    page.body.push_str("<table><tr><th>group</th><th>field</th><th>value</th></tr>");
    for (group, field, value) in p.rows() {
        let _ = write!(page.body, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", esc(group), esc(&field), esc(&value));
    }
    page.body.push_str("</table>");
}
