//! SQL text folded for aggregation: literals and parameters become `?`,
//! lists of them one `?`, white space one space.
//!
//! A constant keeps its sign, as PostgreSQL's grammar folds a unary minus
//! into the constant (pg_stat_statements shows `abalance + $1` for both
//! `abalance + -1732` and `abalance + 2112`): `-` before a number is part of
//! it unless it follows an operand (a name, a number, a string, `)`), where
//! it is the binary minus (`a - 1`, `a -1`).
//!
//! A statement that opens with a name in a block comment (`/* eval_closure */
//! WITH RECURSIVE ...`) is that name, whatever follows: one statement written
//! two ways (the lab's two forms of a graph walk, a query before and after a
//! rewrite) is then one row in a comparison, with both plans side by side.

/// Words after which `-` starts a signed constant rather than subtracting.
const BEFORE_OPERAND: &[&str] = &[
    "select",
    "where",
    "and",
    "or",
    "not",
    "then",
    "else",
    "when",
    "case",
    "by",
    "limit",
    "offset",
    "values",
    "set",
    "in",
    "is",
    "like",
    "ilike",
    "between",
    "returning",
    "as",
    "on",
    "having",
    "default",
    "array",
    "return",
    "any",
    "all",
    "some",
    "distinct",
    "fetch",
    "interval",
];

pub fn normalize_sql(sql: &str) -> String {
    if let Some(name) = statement_name(sql) {
        return format!("/* {name} */");
    }
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    let mut prev_word = false;
    // Whether the last token was an operand, so that `-` would subtract.
    let mut after_operand = false;
    while i < b.len() {
        let c = b[i];
        if c == b'-' && b.get(i + 1) == Some(&b'-') {
            // A comment, to the end of the line, as written.
            let end = b[i..].iter().position(|&x| x == b'\n').map_or(b.len(), |p| i + p);
            out.push_str(&sql[i..end]);
            i = end;
            continue;
        }
        // A unary minus and its constant, a quoted string, a parameter: one `?`.
        let constant = match c {
            b'-' if !after_operand => signed_number_end(b, i),
            b'\'' => Some(quoted_end(b, i)),
            b'$' if b.get(i + 1).is_some_and(|d| d.is_ascii_digit()) => {
                Some(i + 1 + b[i + 1..].iter().position(|d| !d.is_ascii_digit()).unwrap_or(b.len() - i - 1))
            }
            _ => None,
        };
        if let Some(end) = constant {
            i = end;
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
        if is_word_byte(c) {
            // A whole word at once (it ends at an ASCII byte, a character
            // boundary); a keyword like VALUES or THEN is no operand.
            let end = i + b[i..].iter().position(|&x| !is_word_byte(x)).unwrap_or(b.len() - i);
            let w = &sql[i..end];
            out.push_str(w);
            after_operand = !BEFORE_OPERAND.iter().any(|k| k.eq_ignore_ascii_case(w));
            prev_word = true;
            i = end;
            continue;
        }
        // Anything else is one ASCII byte (bytes of 0x80 and up are in words).
        prev_word = false;
        after_operand = c == b')' || c == b']' || c == b'"';
        out.push(c as char);
        i += 1;
    }
    folded(out)
}

/// Where a unary minus's constant ends, if one follows it.
fn signed_number_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() && b[j].is_ascii_whitespace() {
        j += 1;
    }
    (j < b.len() && (b[j].is_ascii_digit() || (b[j] == b'.' && b.get(j + 1).is_some_and(u8::is_ascii_digit))))
        .then(|| number_end(b, j))
}

/// Past the quoted string that starts at `i` (`''` inside it is a quote).
fn quoted_end(b: &[u8], mut i: usize) -> usize {
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
    i + 1
}

/// Without its closing `;` (pg_stat_statements keeps the text without
/// it), lists of placeholders folded to one.
fn folded(mut out: String) -> String {
    while out.ends_with(';') || out.ends_with(' ') {
        out.pop();
    }
    while out.contains("?, ?") {
        out = out.replace("?, ?", "?");
    }
    while out.contains("?,?") {
        out = out.replace("?,?", "?");
    }
    out
}

/// The name a statement opens with: `/* name */`, the name a word of
/// letters, digits, `_`, `.`, `:` or `-`, at most 64 bytes.
fn statement_name(sql: &str) -> Option<&str> {
    let rest = sql.trim_start().strip_prefix("/*")?;
    let name = rest[..rest.find("*/")?].trim();
    let word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-');
    (!name.is_empty() && name.len() <= 64 && name.chars().all(word)).then_some(name)
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
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
        assert_eq!(
            super::normalize_sql("SELECT * FROM t WHERE a = 'x''y' AND b IN (1, 2, 3) AND c = $1"),
            "SELECT * FROM t WHERE a = ? AND b IN (?) AND c = ?"
        );
        assert_eq!(super::normalize_sql("select  t1.col2\n from t1"), "select t1.col2 from t1");
    }

    #[test]
    fn a_statement_named_in_its_opening_comment_is_that_name() {
        let n = super::normalize_sql;
        assert_eq!(
            n("/* eval_closure */ WITH RECURSIVE c(d) AS (SELECT 1 UNION SELECT e.b FROM c JOIN e ON e.a = c.d) SELECT \
                1"),
            "/* eval_closure */"
        );
        assert_eq!(
            n("  /*eval_closure*/ WITH RECURSIVE c(d) AS (SELECT 2 UNION SELECT s.n FROM c, LATERAL (SELECT 1) s) \
                SELECT 2"),
            "/* eval_closure */"
        );
        // A comment that is prose, or not at the start, names nothing.
        assert_eq!(n("/* the walk, 2 ways */ SELECT 1"), "/* the walk, ? ways */ SELECT ?");
        assert_eq!(n("SELECT 1 /* x */"), "SELECT ? /* x */");
        assert_eq!(n("/* unclosed SELECT 1"), "/* unclosed SELECT ?");
    }

    #[test]
    fn a_constant_keeps_its_sign() {
        let n = super::normalize_sql;
        assert_eq!(
            n("UPDATE pgbench_branches SET bbalance = bbalance + -1732 WHERE bid = 1"),
            n("UPDATE pgbench_branches SET bbalance = bbalance + 2112 WHERE bid = 1")
        );
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
        assert_eq!(n("SELECT ünïcode_1 FROM t WHERE x = 'é' AND y=-2"), "SELECT ünïcode_1 FROM t WHERE x = ? AND y=?");
        // A comment's dashes are no sign.
        assert_eq!(n("SELECT 1 --2\n"), "SELECT ? --2");
    }
}
