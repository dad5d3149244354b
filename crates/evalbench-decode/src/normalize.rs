//! SQL text folded for aggregation: literals and parameters become `?`,
//! lists of them one `?`, white space one space.
//!
//! A constant keeps its sign, as PostgreSQL's grammar folds a unary minus
//! into the constant (pg_stat_statements shows `abalance + $1` for both
//! `abalance + -1732` and `abalance + 2112`): `-` before a number is part of
//! it unless it follows an operand (a name, a number, a string, `)`), where
//! it is the binary minus (`a - 1`, `a -1`).

/// Words after which `-` starts a signed constant rather than subtracting.
const BEFORE_OPERAND: &[&str] = &[
    "select", "where", "and", "or", "not", "then", "else", "when", "case", "by", "limit", "offset", "values", "set", "in", "is", "like", "ilike",
    "between", "returning", "as", "on", "having", "default", "array", "return", "any", "all", "some", "distinct", "fetch", "interval",
];

pub fn normalize_sql(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    let mut prev_word = false;
    // Whether the last token was an operand, so that `-` would subtract.
    let mut after_operand = false;
    let mut word_start = 0usize;
    while i < b.len() {
        let c = b[i];
        if c == b'-' && b.get(i + 1) == Some(&b'-') {
            // A comment, to the end of the line, as written.
            let end = b[i..].iter().position(|&x| x == b'\n').map_or(b.len(), |p| i + p);
            out.push_str(&sql[i..end]);
            i = end;
            continue;
        }
        if c == b'-' && !after_operand {
            // A unary minus: part of the constant if one follows.
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < b.len() && (b[j].is_ascii_digit() || (b[j] == b'.' && b.get(j + 1).is_some_and(u8::is_ascii_digit))) {
                i = number_end(b, j);
                out.push('?');
                prev_word = false;
                after_operand = true;
                continue;
            }
        }
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
            after_operand = true;
            continue;
        }
        if c == b'$' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            out.push('?');
            prev_word = false;
            after_operand = true;
            continue;
        }
        if (c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))) && !prev_word {
            i = number_end(b, i);
            out.push('?');
            after_operand = true;
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
        let word = c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
        if word && !prev_word {
            word_start = i;
        }
        prev_word = word;
        after_operand = if word {
            // Decided at the word's end: a keyword like VALUES or THEN is no operand.
            let mut e = i + 1;
            while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_' || b[e] >= 0x80) {
                e += 1;
            }
            let w = &sql[word_start..e.min(sql.len())];
            !BEFORE_OPERAND.iter().any(|k| k.eq_ignore_ascii_case(w))
        } else {
            c == b')' || c == b']' || c == b'"'
        };
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
    // A statement's closing `;` is not part of it (pg_stat_statements keeps
    // the text without it).
    while out.ends_with(';') || out.ends_with(' ') {
        out.pop();
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

/// The end of the number starting at `i`: digits, a point, an exponent.
fn number_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            i = j;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    i
}

#[cfg(test)]
mod tests {
    #[test]
    fn folds_literals_and_lists() {
        assert_eq!(super::normalize_sql("SELECT * FROM t WHERE a = 'x''y' AND b IN (1, 2, 3) AND c = $1"), "SELECT * FROM t WHERE a = ? AND b IN (?) AND c = ?");
        assert_eq!(super::normalize_sql("select  t1.col2\n from t1"), "select t1.col2 from t1");
    }

    #[test]
    fn a_constant_keeps_its_sign() {
        let n = super::normalize_sql;
        assert_eq!(n("UPDATE pgbench_branches SET bbalance = bbalance + -1732 WHERE bid = 1"), n("UPDATE pgbench_branches SET bbalance = bbalance + 2112 WHERE bid = 1"));
        assert_eq!(n("UPDATE t SET b = b + -1732 WHERE id = 1"), "UPDATE t SET b = b + ? WHERE id = ?");
        assert_eq!(
            n("INSERT INTO h (tid, bid, aid, delta, mtime) VALUES (3, 1, 90, -4171, CURRENT_TIMESTAMP)"),
            n("INSERT INTO h (tid, bid, aid, delta, mtime) VALUES (3, 1, 90, 4171, CURRENT_TIMESTAMP)")
        );
        assert_eq!(n("SELECT -1, - 2.5e3, x FROM t WHERE a = -.5"), "SELECT ?, x FROM t WHERE a = ?");
        // The binary minus stays: `a - 1` subtracts a constant.
        assert_eq!(n("SELECT a - 1, a -1, (a) - 1 FROM t"), "SELECT a - ?, a -?, (a) - ? FROM t");
        assert_eq!(n("SELECT 'x' - 1"), "SELECT ? - ?");
        assert_eq!(n("SELECT 1; "), n("SELECT 1"));
        // A comment's dashes are no sign.
        assert_eq!(n("SELECT 1 --2\n"), "SELECT ? --2");
    }
}
