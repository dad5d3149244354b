//! A fast path for the lines our own layer writes: one flat object of the
//! known keys, strings without escapes, plain integers, and a `fields`
//! object of flat scalars. Anything else (an escape, a float where an
//! integer goes, an unknown key, a nested value) returns None and the line
//! goes through serde, which is the reference: this path accepts a subset of
//! what serde accepts and reads it the same way (tests hold the two side by side).

use std::borrow::Cow;

use super::parse::Line;

struct Cur<'a> {
    /// The line, validated as UTF-8 once: strings are slices of it.
    t: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    /// These exact bytes, here. Inlined, so each literal's comparison is
    /// of a known length (no call to memcmp).
    #[inline(always)]
    fn lit(&mut self, s: &[u8]) -> Option<()> {
        self.b[self.i..].starts_with(s).then(|| self.i += s.len())
    }
    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }
    /// A string without escapes or control characters, borrowed.
    fn str(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.i;
        // Eight bytes at a time while eight remain (a vectorized search's
        // set-up costs more than these short strings), then byte by byte
        // from the first quote, backslash or control byte.
        let mut end = start;
        while let Some(chunk) = self.b.get(end..end + 8) {
            let stop = special_bytes(u64::from_le_bytes(chunk.try_into().ok()?));
            if stop != 0 {
                end += (stop.trailing_zeros() / 8) as usize;
                break;
            }
            end += 8;
        }
        loop {
            match *self.b.get(end)? {
                b'"' => break,
                b'\\' => return None,
                c if c < 0x20 => return None,
                _ => end += 1,
            }
        }
        self.i = end + 1;
        // Quotes are ASCII, so both ends are character boundaries.
        Some(&self.t[start..end])
    }
    /// An integer as JSON writes it: `-`? then `0` or a digit 1-9 and digits.
    fn int(&mut self) -> Option<(bool, u64)> {
        self.ws();
        let neg = self.b.get(self.i) == Some(&b'-');
        if neg {
            self.i += 1;
        }
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(&c) = self.b.get(self.i).filter(|c| c.is_ascii_digit()) {
            v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
            self.i += 1;
        }
        let n = self.i - start;
        if n == 0 || (n > 1 && self.b[start] == b'0') || matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some((neg, v))
    }
    fn i64(&mut self) -> Option<i64> {
        match self.int()? {
            (false, v) => i64::try_from(v).ok(),
            (true, v) => 0i64.checked_sub_unsigned(v),
        }
    }
    fn u64(&mut self) -> Option<u64> {
        match self.int()? {
            (false, v) => Some(v),
            (true, 0) => Some(0),
            _ => None,
        }
    }
    fn opt_u64(&mut self) -> Option<Option<u64>> {
        self.ws();
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
            return Some(None);
        }
        self.u64().map(Some)
    }
    /// After an object member: `,` (true, another follows) or `}` (false, the end).
    fn more(&mut self) -> Option<bool> {
        self.ws();
        let more = match self.b.get(self.i)? {
            b',' => true,
            b'}' => false,
            _ => return None,
        };
        self.i += 1;
        Some(more)
    }
    /// `{}` or `{"k": scalar, ...}` with flat scalars; its text, as written.
    fn flat_object(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.i;
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_none() {
            loop {
                self.str()?;
                self.eat(b':')?;
                self.ws();
                match self.b.get(self.i)? {
                    b'"' => {
                        self.str()?;
                    }
                    b't' if self.b[self.i..].starts_with(b"true") => self.i += 4,
                    b'f' if self.b[self.i..].starts_with(b"false") => self.i += 5,
                    b'n' if self.b[self.i..].starts_with(b"null") => self.i += 4,
                    b'-' | b'0'..=b'9' => {
                        self.int()?;
                    }
                    _ => return None,
                }
                if !self.more()? {
                    break;
                }
            }
        }
        Some(&self.t[start..self.i])
    }
}

/// The high bit of each byte of `w` that is `"`, `\\` or below 0x20, and
/// perhaps of bytes after the first such (borrows carry upwards); the
/// lowest set bit is always exact. Bytes of 0x80 and above never match.
fn special_bytes(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    let quote = w ^ (ONES * b'"' as u64);
    let backslash = w ^ (ONES * b'\\' as u64);
    let control = w.wrapping_sub(ONES * 0x20) & !w;
    (zero(quote) | zero(backslash) | control) & HIGH
}

/// The exact layout `evalbench-trace` writes, key by key, without
/// whitespace: most lines of a bundle, read without a key dispatch.
#[inline]
fn template(t: &str) -> Option<Line<'_>> {
    let mut c = Cur { t, b: t.as_bytes(), i: 0 };
    let mut l = Line::default();
    c.lit(b"{\"name\":")?;
    l.name = Some(Cow::Borrowed(c.str()?));
    c.lit(b",\"target\":")?;
    l.target = Some(Cow::Borrowed(c.str()?));
    c.lit(b",\"ts_us\":")?;
    l.ts_us = Some(c.i64()?);
    c.lit(b",\"dur_us\":")?;
    l.dur_us = Some(c.i64()?);
    c.lit(b",\"pid\":")?;
    l.pid = Some(u32::try_from(c.u64()?).ok()?);
    c.lit(b",\"process\":")?;
    l.process = Some(Cow::Borrowed(c.str()?));
    if c.lit(b",\"host\":").is_some() {
        l.host = Some(Cow::Borrowed(c.str()?));
    }
    c.lit(b",\"id\":")?;
    l.id = Some(c.u64()?);
    if c.lit(b",\"parent\":").is_some() {
        l.parent = Some(c.u64()?);
    }
    c.lit(b",\"thread\":")?;
    l.thread = Some(c.u64()?);
    c.lit(b",\"fields\":")?;
    l.fields = Some(c.flat_object()?);
    c.lit(b"}")?;
    trailing(&mut c).then_some(l)
}

/// The line, when it has the shape this path reads; None sends it to serde.
#[inline]
pub(super) fn line(b: &[u8]) -> Option<Line<'_>> {
    let t = std::str::from_utf8(b).ok()?;
    if let Some(l) = template(t) {
        return Some(l);
    }
    let mut c = Cur { t, b, i: 0 };
    let mut l = Line::default();
    c.eat(b'{')?;
    c.ws();
    if c.eat(b'}').is_some() {
        return trailing(&mut c).then_some(l);
    }
    loop {
        let k = c.str()?;
        c.eat(b':')?;
        match k {
            "name" => l.name = Some(Cow::Borrowed(c.str()?)),
            "target" => l.target = Some(Cow::Borrowed(c.str()?)),
            "process" => l.process = Some(Cow::Borrowed(c.str()?)),
            "host" => l.host = Some(Cow::Borrowed(c.str()?)),
            "ts_us" => l.ts_us = Some(c.i64()?),
            "dur_us" => l.dur_us = Some(c.i64()?),
            "pid" => l.pid = Some(u32::try_from(c.u64()?).ok()?),
            "id" => l.id = c.opt_u64()?,
            "parent" => l.parent = c.opt_u64()?,
            "thread" => l.thread = c.opt_u64()?,
            "fields" => l.fields = Some(c.flat_object()?),
            _ => return None,
        }
        if !c.more()? {
            break;
        }
    }
    trailing(&mut c).then_some(l)
}

/// Only whitespace may follow the object.
fn trailing(c: &mut Cur<'_>) -> bool {
    c.ws();
    c.i == c.b.len()
}

/// Whether the fast path reads `b` as serde does (or leaves it to serde).
/// For the fuzz target and the tests.
pub(super) fn agrees(b: &[u8]) -> bool {
    match line(b) {
        None => true,
        Some(fast) => serde_json::from_slice::<Line<'_>>(b).is_ok_and(|slow| slow == fast),
    }
}

#[cfg(test)]
mod tests {
    use super::{agrees, line, special_bytes};

    const OURS: &str = concat!(
        r#"{"name":"lock_flake","target":"gradient_eval","ts_us":1796003862489832,"dur_us":209,"pid":22275,"#,
        r#""process":"eval","host":"worker-0","id":2,"parent":1,"thread":22275,"fields":{"cached":false}}"#
    );

    #[test]
    fn the_layers_lines_take_the_fast_path_and_read_as_serde_reads_them() {
        for l in [
            OURS,
            r#"{"name":"a","target":"t","ts_us":1,"dur_us":0,"pid":7,"process":"p","fields":{}}"#,
            concat!(
                r#" { "name" : "a" , "ts_us" : -5 , "dur_us" : 3 , "id" : null , "#,
                r#""fields" : { "k" : "v" , "n" : -0 , "b" : true , "z" : null } } "#
            ),
            r#"{"name":"a","name":"b","ts_us":1,"dur_us":2}"#,
            r#"{"ts_us":-9223372036854775808,"dur_us":0,"name":"é"}"#,
            r#"{}"#,
        ] {
            assert!(line(l.as_bytes()).is_some(), "fast path refused {l}");
            assert!(agrees(l.as_bytes()), "{l}");
        }
    }

    #[test]
    fn anything_else_goes_to_serde() {
        for l in [
            r#"{"name":"a\"b","ts_us":1,"dur_us":2}"#,
            r#"{"name":"a","ts_us":01,"dur_us":2}"#,
            r#"{"name":"a","ts_us":1.0,"dur_us":2}"#,
            r#"{"name":"a","ts_us":1e3,"dur_us":2}"#,
            r#"{"name":"a","ts_us":1,"dur_us":2,"fields":{"a":{"b":1}}}"#,
            r#"{"name":"a","ts_us":1,"dur_us":2,"fields":{"a":1.5}}"#,
            r#"{"name":"a","ts_us":1,"dur_us":2} x"#,
            r#"{"name":"a","ts_us":1,"dur_us":2,"other":1}"#,
            r#"{"name":"a","ts_us":1,"dur_us":2,"host":null}"#,
            r#"{"name":"a","ts_us":99999999999999999999,"dur_us":2}"#,
            r#"{"name":"a","pid":4294967296,"ts_us":1,"dur_us":2}"#,
            "{\"name\":\"a\tb\",\"ts_us\":1,\"dur_us\":2}",
            r#"{"name":"a","ts_us":1,"dur_us":2,}"#,
            r#"{"name":"a","ts_us":1,"dur_us":2,"fields":{"a":1,}}"#,
            r#"{"name":"a","ts_us":-,"dur_us":2}"#,
            r#"{"dropped_spans":3}"#,
        ] {
            assert!(line(l.as_bytes()).is_none(), "fast path took {l}");
        }
        assert!(line(b"{\"name\":\"\xff\",\"ts_us\":1,\"dur_us\":2}").is_none());
    }

    #[test]
    fn the_word_scan_finds_the_first_stop_byte() {
        let first = |w: [u8; 8]| w.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        let mut x = 0x2545f4914f6cdd1du64;
        for round in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut w = x.to_le_bytes();
            // Mostly text, now and then a stop byte or a byte next to one.
            for (k, b) in w.iter_mut().enumerate() {
                let pick = (x >> (k * 3)) as u8 % 16;
                *b = match pick {
                    0 => b'"',
                    1 => b'\\',
                    2 => (x >> 40) as u8 % 0x20,
                    3 => [0x20, 0x21, 0x23, 0x5b, 0x5d, 0x1f, 0x80, 0xff][round % 8],
                    _ => 0x20 + (*b % 0x5f),
                };
            }
            let stop = special_bytes(u64::from_le_bytes(w));
            let found = (stop != 0).then(|| (stop.trailing_zeros() / 8) as usize);
            assert_eq!(found, first(w), "{w:?}");
        }
    }
}
