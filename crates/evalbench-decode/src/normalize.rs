//! SQL text folded for aggregation: literals and parameters become `?`,
//! lists of them one `?`, white space one space.

pub fn normalize_sql(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    let mut prev_word = false;
    while i < b.len() {
        let c = b[i];
        if c == b'\'' {
            i += 1;
            while i < b.len() {
                if b[i] == b'\'' {
                    if b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            i += 1;
            out.push('?');
            prev_word = false;
            continue;
        }
        if c == b'$' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            out.push('?');
            prev_word = false;
            continue;
        }
        if c.is_ascii_digit() && !prev_word {
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            out.push('?');
            continue;
        }
        if c.is_ascii_whitespace() {
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if !out.is_empty() && i < b.len() {
                out.push(' ');
            }
            prev_word = false;
            continue;
        }
        prev_word = c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
        // Copy one UTF-8 character.
        let len = match c {
            0..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            _ => 4,
        };
        let end = (i + len).min(b.len());
        out.push_str(&String::from_utf8_lossy(&b[i..end]));
        i = end;
    }
    // Lists of placeholders fold to one.
    while out.contains("?, ?") {
        out = out.replace("?, ?", "?");
    }
    while out.contains("?,?") {
        out = out.replace("?,?", "?");
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn folds_literals_and_lists() {
        assert_eq!(super::normalize_sql("SELECT * FROM t WHERE a = 'x''y' AND b IN (1, 2, 3) AND c = $1"), "SELECT * FROM t WHERE a = ? AND b IN (?) AND c = ?");
        assert_eq!(super::normalize_sql("select  t1.col2\n from t1"), "select t1.col2 from t1");
    }
}
