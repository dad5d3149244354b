//! The assignment walk of each job, as lanes and a table of waits.

use std::fmt::Write;

use evalbench_analyze::view::PassView;

use super::super::esc::{esc, file_safe};
use super::super::svg::{self, ms, Item};
use super::super::Page;

pub fn assignment(page: &mut Page, p: &PassView) {
    page.h3(&p.name, "assignment", "Assignment");
    if p.assignment.jobs == 0 {
        page.body
            .push_str("<p class=\"missing\">No assign_job span in this pass: the assignment path cannot be drawn.</p>");
        return;
    }
    for w in &p.assignment.walks {
        let job = &w.job;
        let t0 = w.steps.first().map(|s| s.start).unwrap_or(0.0);
        let t1 = w.steps.iter().map(|s| s.end.max(s.start)).fold(t0, f64::max);
        let mut rows = Vec::new();
        let mut table =
            String::from("<table><tr><th>step</th><th>starts at</th><th>wait before</th><th>duration</th></tr>");
        for st in &w.steps {
            let (label, s, e) = (&st.label, st.start, st.end);
            let wait_s = match st.wait {
                Some(w) if w >= 0.0 => ms(w),
                Some(_) => "inside the previous step".into(),
                None => "–".into(),
            };
            let title = format!("{label}: at +{}, waited {wait_s}, took {}", ms(s - t0), ms(e - s));
            rows.push((label.clone(), vec![Item { start: s, end: e.max(s + 1.0), label: label.clone(), title }]));
            let _ = write!(
                table,
                "<tr><td>{}</td><td class=\"n\">+{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                esc(label),
                esc(&ms(s - t0)),
                esc(&wait_s),
                esc(&ms(e - s))
            );
        }
        table.push_str("</table>");
        let _ = write!(page.body, "<h4>Job <code>{}</code></h4>", esc(job));
        let chart = svg::lanes(&format!("{} assignment of job {job}", p.name), &rows, t0, t1);
        page.chart(&p.name, &format!("assignment-{}", file_safe(job)), chart);
        page.body.push_str(&table);
    }
    if p.assignment.jobs > p.assignment.walks.len() {
        let _ = write!(
            page.body,
            "<p class=\"note\">{} more jobs not drawn.</p>",
            p.assignment.jobs - p.assignment.walks.len()
        );
    }
}
