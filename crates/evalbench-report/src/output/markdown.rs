//! Markdown that shows what it says and nothing more: every string from a
//! bundle goes into a table cell escaped, so a statement's `|`, `<`, `*` or a
//! URL cannot break the table, add markup or make a link.

/// One table cell: on one line, Markdown and HTML characters escaped, URLs
/// kept from being turned into links.
pub fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            '|' | '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c => out.push(c),
        }
    }
    // GitHub links `http://…` and `www.…` by itself: break the pattern.
    out.replace("://", ":\\/\\/").replace("www.", "www\\.")
}

/// A table: a header row, the alignment row, then the rows, each cell escaped.
pub fn table(out: &mut String, head: &[&str], align: &[super::Align], rows: &[Vec<String>]) {
    use std::fmt::Write;
    let _ = writeln!(out, "| {} |", head.iter().map(|h| cell(h)).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(
        out,
        "|{}|",
        align.iter().map(|a| if *a == super::Align::Right { "---:" } else { "---" }).collect::<Vec<_>>().join("|")
    );
    for r in rows {
        let _ = writeln!(out, "| {} |", r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | "));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    #[test]
    fn cells_cannot_break_out() {
        assert_eq!(super::cell("a|b\nc <x> *y* `z`"), "a\\|b c &lt;x&gt; \\*y\\* \\`z\\`");
        assert_eq!(super::cell("see https://example.org"), "see https:\\/\\/example.org");
    }
}
