//! Escaping: every string from a bundle (span names and fields, SQL text,
//! file and pass names) comes from another machine and is shown as text.

/// For element content and attribute values alike.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // Control characters have no business in a report; show their code.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

/// A relative link to a file of the bundle: always `./`-prefixed and
/// percent-encoded, so no name can become a `javascript:` or absolute URL.
pub fn href(path: &str) -> String {
    let mut o = String::from("./");
    for seg in path.split('/') {
        if o.len() > 2 {
            o.push('/');
        }
        for b in seg.bytes() {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                o.push(b as char);
            } else {
                o.push_str(&format!("%{b:02X}"));
            }
        }
    }
    o
}

/// A file name made from a pass name: only a safe alphabet.
pub fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' })
        .collect::<String>()
        .trim_start_matches('.')
        .to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn hostile_strings_stay_text() {
        assert_eq!(super::esc("<script>\"'&"), "&lt;script&gt;&quot;&#39;&amp;");
        assert_eq!(super::href("javascript:alert(1)/trace.json"), "./javascript%3Aalert%281%29/trace.json");
        assert_eq!(super::file_safe("../x</svg>"), "_x__svg_");
    }
}
