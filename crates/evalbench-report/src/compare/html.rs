//! `evalbench compare A B --html DIR`: the whole comparison as one
//! self-contained page (inline CSS, no script, the Content-Security-Policy
//! of `inspect`): the passes' evaluated seconds, then per pass nix's
//! counters, its spans, its statements and, for instrumented passes, its
//! plans. A changed plan is drawn as both trees side by side, the nodes the
//! other side lacks marked, every node's details in its hover title.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use evalbench_analyze::comparison::{Comparison, PassComparison};
use evalbench_analyze::plans::{Change, PlanRow, Side};
use evalbench_analyze::verdict::Kind;

use crate::compare::plans::{count, list, moved, statement_change, tally};
use crate::compare::tables::{self as tables, Align, Table};
use crate::compare::text::capitalized;
use crate::html::{escape as esc, file_safe, shell_head};
use crate::ReportError;

const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1400px;padding:8px 24px \
    48px;color:#222}h1{font-size:20px}table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid \
    #ddd;padding:3px \
    6px;vertical-align:top}th{background:#f0f0f4;text-align:left}td.n{text-align:right;white-space:nowrap;\
    font-variant-numeric:tabular-nums}.note{color:#556;font-size:12px}td.slower,td.more{color:#a21}td.faster,\
    td.less{color:#164}code{white-space:pre-wrap;word-break:break-word;font-size:12px}.plans{display:grid;\
    grid-template-columns:1fr 1fr;gap:12px;margin:6px 0 18px}.tree{border:1px solid \
    #ddd;padding:6px;overflow-x:auto}.tree h4{margin:0 0 4px;font-size:12px;color:#445}.node{font:12px/1.6 \
    ui-monospace,monospace;white-space:nowrap}.node.differs{background:#fde8c8;outline:1px solid #e8a040}.node \
    .rl{color:#778;margin-left:8px}.node .role{color:#558}.change{margin-top:18px;border-top:1px solid \
    #eee;padding-top:6px}";

/// What was written.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Written {
    pub page: PathBuf,
    pub page_bytes: u64,
    pub passes: usize,
    /// Statements whose most frequent plan changed, over all passes.
    pub plans_changed: usize,
}

/// A table as HTML: a heading when asked, every group's
/// rows in one table (verdicts coloured, their sentence as hover title).
fn html_table(body: &mut String, table: &Table, heading: bool) {
    if heading {
        let _ = write!(body, "<h3>{}</h3>", esc(&capitalized(&table.title)));
    }
    body.push_str("<table><tr>");
    for (head, _) in &table.columns {
        let _ = write!(body, "<th>{}</th>", esc(head));
    }
    body.push_str("</tr>");
    for r in table.rows() {
        body.push_str("<tr>");
        for (cell, (_, align)) in r.cells.iter().zip(&table.columns) {
            let mut class = if *align == Align::Right { "n" } else { "" };
            let mut title = String::new();
            if let Some((kind, sentence)) = &cell.verdict {
                class = kind_class(*kind);
                title = format!(" title=\"{}\"", esc(sentence));
            }
            let class = if class.is_empty() { String::new() } else { format!(" class=\"{class}\"") };
            let mut text = esc(&cell.text);
            if cell.code {
                text = format!("<code>{text}</code>");
            }
            if let Some(a) = &cell.anchor {
                text = format!("<a href=\"#{}\">{text}</a>", esc(&file_safe(a)));
            }
            let _ = write!(body, "<td{class}{title}>{text}</td>");
        }
        body.push_str("</tr>");
    }
    body.push_str("</table>");
    let more: usize = table.groups.iter().map(|g| g.more).sum();
    if more > 0 {
        let _ = write!(body, "<p class=\"note\">{more} more rows in compare's --json.</p>");
    }
}

fn kind_class(k: Kind) -> &'static str {
    match k {
        Kind::Slower => "slower",
        Kind::Faster => "faster",
        Kind::More => "more",
        Kind::Less => "less",
        _ => "",
    }
}

/// One side's tree: a line per node, indented by depth, details in the title.
fn tree(body: &mut String, who: &str, s: Option<&Side>) {
    let _ = write!(body, "<div class=\"tree\">");
    let Some(s) = s else {
        let _ = write!(body, "<h4>{who}: not run</h4></div>");
        return;
    };
    let _ = write!(body, "<h4>{who}: plan {} in {} of {} runs</h4>", esc(&s.fingerprint), s.count, s.of);
    for (n, differs) in s.nodes.iter().zip(&s.differs) {
        let mut title = n.label();
        if let Some(r) = &n.role {
            title = format!("{r}\n{title}");
        }
        for d in &n.details {
            title.push('\n');
            title.push_str(d);
        }
        let actual = match (n.rows, n.loops) {
            (Some(r), Some(l)) => format!("<span class=\"rl\">rows={} × loops={}</span>", count(r), count(l)),
            _ => String::new(),
        };
        let role = n.role.as_deref().map(|r| format!("<span class=\"role\">[{}]</span> ", esc(r))).unwrap_or_default();
        let _ = write!(
            body,
            "<div class=\"node{}\" style=\"padding-left:{}em\" title=\"{}\">{}{role}{}{actual}</div>",
            if *differs { " differs" } else { "" },
            (n.depth as f64 * 1.5).min(60.0),
            esc(&title),
            if n.depth > 0 { "→ " } else { "" },
            esc(&n.label())
        );
    }
    body.push_str("</div>");
}

fn plans(body: &mut String, c: &PassComparison, rows: &[PlanRow]) {
    let _ = write!(
        body,
        "<h3 id=\"{}-plans\">Plans</h3><p class=\"note\">From auto_explain in each run; a statement's plan is its most \
            frequent one. Marked nodes are not in the other side's plan. Hover a node for its details.</p><p>{}</p>",
        esc(&file_safe(&c.pass_a)),
        esc(&tally(rows))
    );
    for n in &c.plan_notes {
        let _ = write!(body, "<p class=\"note\">{}</p>", esc(n));
    }
    for r in rows.iter().filter(|r| r.change != Change::Same) {
        let _ = write!(
            body,
            "<div class=\"change\" data-change=\"{}\"><b>{}</b> ({}): <code>{}</code><br><span \
                class=\"note\">{}</span>",
            r.change.key(),
            esc(r.change.as_str()),
            esc(&moved(r)),
            esc(&r.statement),
            esc(&statement_change(r, c))
        );
        if !r.gained.is_empty() || !r.lost.is_empty() {
            let _ = write!(
                body,
                "<br><span class=\"note\">plans only in B: {}; only in A: {}</span>",
                esc(&list(&r.gained)),
                esc(&list(&r.lost))
            );
        }
        body.push_str("<div class=\"plans\">");
        tree(body, "A", r.a.as_ref());
        tree(body, "B", r.b.as_ref());
        body.push_str("</div></div>");
    }
}

/// Writes `out/index.html`, with at most `top` rows a list.
pub fn render(
    a: &Path,
    b: &Path,
    cmp: &Comparison,
    out: &Path,
    top: usize,
    gate: crate::compare::headline::Gate<'_>,
) -> Result<Written, ReportError> {
    let out_passes: &[PassComparison] = &cmp.passes;
    std::fs::create_dir_all(out).map_err(ReportError::io(out))?;
    let title = format!("evalbench compare: A → B ({} → {})", a.display(), b.display());
    let mut body = shell_head(&title, CSS);
    let _ = write!(
        body,
        "<h1>{}</h1><p>A: <code>{}</code><br>B: <code>{}</code></p>",
        esc(&title),
        esc(&a.display().to_string()),
        esc(&b.display().to_string())
    );
    answer(&mut body, cmp, gate);
    passes(&mut body, cmp);
    let mut changed = 0;
    for c in out_passes {
        changed += pass(&mut body, c, top);
    }
    crate::instructions::html(&mut body, cmp, html_table);
    body.push_str("<h2>Verdicts</h2><ul class=\"note\">");
    for l in tables::legend_lines(tables::words(cmp), cmp) {
        let _ = write!(body, "<li>{}</li>", esc(&l));
    }
    body.push_str("</ul></body></html>\n");
    let page = out.join("index.html");
    evalbench_bundle::write_atomic(&page, body.as_bytes())?;
    Ok(Written { page, page_bytes: body.len() as u64, passes: out_passes.len(), plans_changed: changed })
}

/// Runs that did not complete and what cannot be judged, before any
/// verdict, as text has them; then the answer, as text and Markdown have it.
fn answer(body: &mut String, cmp: &Comparison, gate: crate::compare::headline::Gate<'_>) {
    // Runs that did not complete and what cannot be judged, before any verdict, as text has them.
    for s in crate::words::sides_status(cmp) {
        let _ = write!(body, "<p class=\"warn\">{}</p>", esc(&s));
    }
    for m in &cmp.missing {
        let _ = write!(body, "<p class=\"warn\">cannot judge: {}</p>", esc(&crate::words::missing(m)));
    }
    // The answer first, as text and Markdown have it.
    let h = crate::compare::headline::headline(cmp, gate);
    body.push_str(
        "<h2>Answer</h2><p class=\"note\">Each clean pass's primary measures, fixed before looking; the tables below \
            are exploratory.</p><ul class=\"answer\">",
    );
    for p in &h.passes {
        let _ = write!(body, "<li><b>{}</b> ({} A, {} B)<ul>", esc(&p.pass), p.runs_a, p.runs_b);
        for l in &p.lines {
            let _ = write!(body, "<li>{}</li>", esc(l));
        }
        body.push_str("</ul></li>");
    }
    if let Some(g) = &h.gate {
        let _ = write!(body, "<li>{}</li>", esc(g));
    }
    body.push_str("</ul>");
}

/// What differs between A and B (or what they measured alike), the
/// sessions, and the passes' table.
fn passes(body: &mut String, cmp: &Comparison) {
    match tables::differs(cmp) {
        None => {
            let _ = write!(body, "<p>{}</p>", esc(&crate::words::alike(cmp)));
        }
        Some(d) => {
            body.push_str("<h2>What differs</h2>");
            html_table(body, &d, false);
        }
    }
    if let Some(n) = crate::words::session_note(cmp) {
        let _ = write!(body, "<p>{}</p>", esc(&n));
    }
    body.push_str("<h2>Passes</h2>");
    html_table(body, &tables::passes(cmp), false);
    for p in crate::words::headline_notes(cmp) {
        let _ = write!(body, "<p class=\"note\">{}</p>", esc(&p));
    }
}

/// One pass compared: its settings, nix's time on the path, conditions,
/// counters, plans and lists; the statements whose plan changed, counted.
fn pass(body: &mut String, c: &PassComparison, top: usize) -> usize {
    let mut changed = 0;
    let instrumented = c.kind == evalbench_bundle::layout::PassKind::Instrumented;
    let _ = write!(
        body,
        "<h2 id=\"{}\">{}{}</h2>",
        esc(&file_safe(&c.pass_a)),
        esc(&c.pass_a),
        if instrumented {
            " <small>(instrumented: timings distorted by perf, strace and auto_explain)</small>"
        } else {
            ""
        }
    );
    if let Some(set) = tables::pg_settings(c) {
        let _ = write!(body, "<p>{}</p>", esc(&set));
    }
    if let Some(v) = &c.nix_on_path {
        let _ = write!(
            body,
            "<p>nix's time on the path (primary, <code>{}</code>): {}</p>",
            esc(evalbench_analyze::comparison::NIX_STEP),
            esc(&crate::words::verdict(v))
        );
    }
    for n in crate::condition_notes::notes(&c.conditions) {
        let _ = write!(body, "<p class=\"note\">{}</p>", esc(&n));
    }
    let pt = tables::pass(c, top);
    if let Some(counters) = &pt.counters {
        html_table(body, counters, true);
    }
    // Plans before the spans: an instrumented pass's timings are shapes only.
    if let Some(rows) = &c.plans {
        changed += rows.iter().filter(|r| r.change == Change::Changed).count();
        plans(body, c, rows);
    }
    for (_, list) in &pt.lists {
        html_table(body, list, true);
    }
    changed
}
