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

/// `bytes` as a `data:` URI of `mime`, base64: the page's policy lets
/// images load from data alone, and an SVG loaded as an image runs none of
/// the scripts another machine's writer may have put in it.
pub fn data_uri(mime: &str, bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(mime.len() + 13 + bytes.len().div_ceil(3) * 4);
    out.push_str("data:");
    out.push_str(mime);
    out.push_str(";base64,");
    for c in bytes.chunks(3) {
        let n =
            (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            out.push(if i <= c.len() { ABC[(n >> shift & 63) as usize] as char } else { '=' });
        }
    }
    out
}

#[cfg(test)]
mod data_uri_tests {
    #[test]
    fn base64_as_the_rfc_gives_it() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::data_uri("text/plain", plain.as_bytes()), format!("data:text/plain;base64,{coded}"));
        }
    }
}
