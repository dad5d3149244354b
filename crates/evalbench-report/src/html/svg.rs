//! SVG charts with a hover title on every bar. Pure functions from numbers
//! and labels to markup; every label is escaped here.

use std::fmt::Write;

use super::esc::esc;

/// A stable colour per name, so one span looks the same in every chart.
pub fn color(name: &str) -> String {
    let h = evalbench_bundle::fnv::hash32(name.as_bytes());
    format!("hsl({},{}%,{}%)", h % 360, 45 + (h >> 9) % 25, 55 + (h >> 17) % 15)
}

/// µs as milliseconds: one unit in every column of the page (a column had
/// mixed µs, ms and s), one place from 1 ms, three below it.
pub fn ms(us: f64) -> String {
    if us.abs() >= 1000.0 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{:.3} ms", us / 1e3)
    }
}

fn open(w: f64, h: f64, title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 \
            {w:.0} {h:.0}\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\"><title>{}</title>",
        esc(title)
    )
}

/// `<rect>` with its details as a hover title.
pub fn bar(s: &mut String, x: f64, y: f64, w: f64, h: f64, fill: &str, title: &str) {
    let _ = write!(
        s,
        "<rect class=\"bar\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{h:.1}\" \
            fill=\"{fill}\"><title>{}</title></rect>",
        w.max(0.5),
        esc(title)
    );
}

pub fn text(s: &mut String, x: f64, y: f64, anchor: &str, t: &str) {
    let _ = write!(s, "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\">{}</text>", esc(t));
}

/// Clips a label to about `px` pixels of 11px text.
pub fn clip(t: &str, px: f64) -> String {
    let n = (px / 6.5) as usize;
    if t.chars().count() <= n {
        t.to_string()
    } else if n > 1 {
        format!("{}…", t.chars().take(n.saturating_sub(1)).collect::<String>())
    } else {
        String::new()
    }
}

/// Horizontal bars: (label, value, hover title).
pub fn hbars(title: &str, rows: &[(String, f64, String)], unit: &dyn Fn(f64) -> String) -> String {
    let (w, label_w, row_h) = (900.0, 300.0, 18.0);
    let h = 24.0 + rows.len() as f64 * row_h;
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max).max(1e-9);
    let mut s = open(w, h, title);
    for (i, (label, v, t)) in rows.iter().enumerate() {
        let y = 8.0 + i as f64 * row_h;
        text(&mut s, label_w - 6.0, y + 12.0, "end", &clip(label, label_w - 10.0));
        let bw = (w - label_w - 110.0) * v / max;
        bar(&mut s, label_w, y + 2.0, bw, row_h - 4.0, &color(label), t);
        text(&mut s, label_w + bw + 4.0, y + 12.0, "start", &unit(*v));
    }
    s.push_str("</svg>");
    s
}

/// One item on a lane: start and end (µs), its label and hover title.
pub struct Item {
    pub start: f64,
    pub end: f64,
    pub label: String,
    pub title: String,
}

/// Lanes of bars on a common time axis from `t0` (µs); an axis in seconds.
pub fn lanes(title: &str, rows: &[(String, Vec<Item>)], t0: f64, t1: f64) -> String {
    let (w, label_w, row_h) = (1100.0, 220.0, 20.0);
    let h = 34.0 + rows.len() as f64 * row_h;
    let span = (t1 - t0).max(1.0);
    let px = (w - label_w - 10.0) / span;
    let mut s = open(w, h, title);
    // Axis: five ticks.
    for k in 0..=5 {
        let t = span * k as f64 / 5.0;
        let x = label_w + t * px;
        let _ = write!(s, "<line x1=\"{x:.1}\" y1=\"14\" x2=\"{x:.1}\" y2=\"{h:.0}\" stroke=\"#ddd\"/>");
        // The last label ends at the axis' end: centred there, half of it fell outside the picture.
        text(&mut s, x, 11.0, if k == 5 { "end" } else { "middle" }, &format!("{:.3} s", t / 1e6));
    }
    for (i, (lane, items)) in rows.iter().enumerate() {
        let y = 18.0 + i as f64 * row_h;
        text(&mut s, label_w - 6.0, y + 13.0, "end", &clip(lane, label_w - 10.0));
        for it in items {
            let x = label_w + (it.start - t0) * px;
            let bw = (it.end - it.start) * px;
            bar(&mut s, x, y + 2.0, bw, row_h - 4.0, &color(&it.label), &it.title);
            if bw > 40.0 {
                text(&mut s, x + 3.0, y + 13.0, "start", &clip(&it.label, bw - 6.0));
            }
        }
    }
    s.push_str("</svg>");
    s
}

/// A flame graph's tree: each frame's value, its children by name.
#[derive(Default)]
struct Node {
    value: f64,
    children: Vec<(String, Node)>,
}

/// The stacks folded into one tree, siblings by name.
fn fold(stacks: &[(Vec<String>, f64)]) -> Node {
    let mut root = Node::default();
    for (frames, v) in stacks {
        let mut n = &mut root;
        n.value += v;
        for f in frames {
            let i = match n.children.iter().position(|(name, _)| name == f) {
                Some(i) => i,
                None => {
                    n.children.push((f.clone(), Node::default()));
                    n.children.len() - 1
                }
            };
            n = &mut n.children[i].1;
            n.value += v;
        }
    }
    // Siblings by name, as inferno draws them: a render is a function of the
    // stacks, not of the order a hash map gave them in.
    fn order(n: &mut Node) {
        n.children.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, c) in &mut n.children {
            order(c);
        }
    }
    order(&mut root);
    root
}

fn depth(n: &Node) -> usize {
    1 + n.children.iter().map(|(_, c)| depth(c)).max().unwrap_or(0)
}

/// A flame graph (root at the bottom) of folded stacks: (frames, value).
/// Frames narrower than a pixel are merged into their parent's "(narrow)" share.
pub fn flame(title: &str, stacks: &[(Vec<String>, f64)], unit: &dyn Fn(f64) -> String) -> (String, usize) {
    let root = fold(stacks);
    let (w, row_h) = (1100.0, 16.0);
    let levels = depth(&root).min(60);
    let h = levels as f64 * row_h + 10.0;
    let total = root.value.max(1e-9);
    let mut s = open(w, h, title);
    /// What stays the same through the walk.
    struct Frame<'u> {
        levels: usize,
        w: f64,
        total: f64,
        row_h: f64,
        h: f64,
        unit: &'u dyn Fn(f64) -> String,
    }
    fn walk(s: &mut String, f: &Frame<'_>, n: &Node, name: &str, x: f64, level: usize, merged: &mut usize) {
        let bw = f.w * n.value / f.total;
        if level >= f.levels {
            return;
        }
        let y = f.h - 5.0 - (level as f64 + 1.0) * f.row_h;
        let label = if level == 0 { "all" } else { name };
        bar(
            s,
            x,
            y,
            bw,
            f.row_h - 1.0,
            &color(label),
            &format!("{label}: {} ({:.1}%)", (f.unit)(n.value), 100.0 * n.value / f.total),
        );
        if bw > 30.0 {
            text(s, x + 3.0, y + 11.0, "start", &clip(label, bw - 6.0));
        }
        let mut cx = x;
        for (cname, c) in &n.children {
            let cw = f.w * c.value / f.total;
            if cw < 0.5 {
                *merged += 1;
            } else {
                walk(s, f, c, cname, cx, level + 1, merged);
            }
            cx += cw;
        }
    }
    let mut merged = 0usize;
    walk(&mut s, &Frame { levels, w, total, row_h, h, unit }, &root, "all", 0.0, 0, &mut merged);
    s.push_str("</svg>");
    (s, merged)
}

/// Stacked columns over time: (time µs, [(key, count)]).
pub fn stacked(title: &str, columns: &[(f64, Vec<(String, f64)>)], t0: f64, t1: f64, what: &str) -> String {
    let (w, h, left) = (1100.0, 180.0, 40.0);
    let max = columns.iter().map(|(_, ks)| ks.iter().map(|k| k.1).sum::<f64>()).fold(0.0, f64::max).max(1.0);
    let span = (t1 - t0).max(1.0);
    let cw = ((w - left - 10.0) / columns.len().max(1) as f64).clamp(1.0, 20.0);
    let mut s = open(w, h + 20.0, title);
    text(&mut s, left - 4.0, 12.0, "end", &format!("{max:.0}"));
    text(&mut s, left - 4.0, h, "end", "0");
    for (t, keys) in columns {
        let x = left + (t - t0) / span * (w - left - 10.0 - cw);
        let mut y = h;
        for (k, v) in keys {
            let bh = (h - 10.0) * v / max;
            y -= bh;
            bar(&mut s, x, y, cw * 0.9, bh, &color(k), &format!("{:.3} s: {v:.0} {what} {k}", (t - t0) / 1e6));
        }
    }
    text(&mut s, left, h + 14.0, "start", "0 s");
    text(&mut s, w - 10.0, h + 14.0, "end", &format!("{:.2} s", span / 1e6));
    s.push_str("</svg>");
    s
}

/// A pass's runs in the order they ran, one dot each, the median as a
/// line: a drift or a warm-up is seen at a glance. `values` in seconds.
pub fn runs(title: &str, values: &[f64], median: f64) -> String {
    let (w, h, left, top) = (900.0, 160.0, 56.0, 10.0);
    let finite = values.iter().copied().filter(|v| v.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if lo.is_finite() { (lo.min(median), hi.max(median)) } else { (0.0, 1.0) };
    let pad = ((hi - lo) * 0.1).max(1e-6);
    let (lo, hi) = ((lo - pad).max(0.0), hi + pad);
    let y = |v: f64| top + (hi - v) / (hi - lo) * (h - top - 20.0);
    let n = values.len().max(1) as f64;
    let x = |i: usize| left + (i as f64 + 0.5) / n * (w - left - 10.0);
    let mut s = open(w, h, title);
    text(&mut s, left - 4.0, y(hi) + 4.0, "end", &format!("{hi:.3} s"));
    text(&mut s, left - 4.0, y(lo), "end", &format!("{lo:.3} s"));
    let _ = write!(
        s,
        "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#c33\" stroke-dasharray=\"4 \
            3\"><title>median {median:.3} s</title></line>",
        w - 10.0,
        y(median),
        y(median)
    );
    text(&mut s, w - 12.0, y(median) - 4.0, "end", &format!("median {median:.3} s"));
    for (i, v) in values.iter().enumerate().filter(|(_, v)| v.is_finite()) {
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#335\"><title>run {}: {v:.3} s</title></circle>",
            x(i),
            y(*v),
            i + 1
        );
    }
    text(&mut s, left, h - 4.0, "start", "run 1");
    text(&mut s, w - 10.0, h - 4.0, "end", &format!("run {} (in the order they ran)", values.len()));
    s.push_str("</svg>");
    s
}

/// A median path as one stacked bar: (step, median µs on the path, and the
/// runs' range), each segment's spread in its hover title.
/// `end` labels the bar's end: what its steps add up to, and what they do not.
pub fn path_bar(title: &str, steps: &[(String, f64, f64, f64)], end: &str) -> String {
    let (w, h, left) = (900.0, 64.0, 10.0);
    let total: f64 = steps.iter().map(|s| s.1).sum::<f64>().max(1.0);
    let mut s = open(w, h, title);
    let mut x = left;
    for (step, med, lo, hi) in steps {
        let bw = med / total * (w - 2.0 * left);
        bar(
            &mut s,
            x,
            8.0,
            bw,
            28.0,
            &color(step),
            &format!("{step}: median {} on the path ({} to {} over the runs)", ms(*med), ms(*lo), ms(*hi)),
        );
        if bw > 60.0 {
            text(&mut s, x + 3.0, 26.0, "start", &clip(step, bw - 6.0));
        }
        x += bw;
    }
    text(&mut s, left, h - 6.0, "start", "0");
    text(&mut s, w - left, h - 6.0, "end", end);
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    /// Every label's extent, at 11 px sans-serif (at most 7 px a character), inside the picture.
    #[test]
    fn no_axis_label_reaches_past_the_edge() {
        let rows = vec![(
            "server".to_string(),
            vec![super::Item { start: 0.0, end: 11_553_000.0, label: "job".into(), title: "job".into() }],
        )];
        let svg = super::lanes("t", &rows, 0.0, 11_553_000.0);
        let width: f64 = 1100.0;
        for t in svg.split("<text ").skip(1) {
            let attr = |k: &str| {
                t.split(&format!("{k}=\"")).nth(1).and_then(|r| r.split('"').next()).unwrap_or("").to_string()
            };
            let x: f64 = attr("x").parse().unwrap();
            let len = t.split('>').nth(1).and_then(|r| r.split('<').next()).unwrap_or("").chars().count() as f64 * 7.0;
            let (lo, hi) = match attr("text-anchor").as_str() {
                "end" => (x - len, x),
                "middle" => (x - len / 2.0, x + len / 2.0),
                _ => (x, x + len),
            };
            assert!(
                lo >= 0.0 && hi <= width,
                "a label from {lo:.0} to {hi:.0} px in a picture {width} px wide: <text {t}"
            );
        }
    }
}
