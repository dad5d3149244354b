//! `.drv` files are ATerm: `Derive([outputs],[inputDrvs],[inputSrcs],system,builder,[args],[env])`.
//! Only what the server records is kept: outputs, input derivations, system, name.

use crate::msg::Drv;

/// Where a `.drv` file stops being ATerm, and what was expected there.
#[derive(Debug, thiserror::Error)]
pub enum DrvError {
    #[error("at byte {at}: expected {expected}")]
    Expected { at: usize, expected: String },
    #[error("at byte {at}: string is not UTF-8")]
    NotUtf8 { at: usize },
    #[error("at byte {at}: dangling escape")]
    DanglingEscape { at: usize },
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> P<'a> {
    fn err<T>(&self, what: &str) -> Result<T, DrvError> {
        Err(DrvError::Expected { at: self.i, expected: what.to_string() })
    }
    fn eat(&mut self, c: u8) -> Result<(), DrvError> {
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            self.err(&format!("{:?}", c as char))
        }
    }
    fn peek(&self, c: u8) -> bool {
        self.s.get(self.i) == Some(&c)
    }
    fn string(&mut self) -> Result<String, DrvError> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            match self.s.get(self.i) {
                None => return self.err("the end of a string"),
                Some(b'"') => {
                    self.i += 1;
                    return String::from_utf8(out).map_err(|_| DrvError::NotUtf8 { at: self.i });
                }
                Some(b'\\') => {
                    let c = *self.s.get(self.i + 1).ok_or(DrvError::DanglingEscape { at: self.i })?;
                    out.push(match c {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'r' => b'\r',
                        other => other,
                    });
                    self.i += 2;
                }
                Some(&c) => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }
    /// `[item,item,...]`
    fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Result<T, DrvError>) -> Result<Vec<T>, DrvError> {
        self.eat(b'[')?;
        let mut out = Vec::new();
        if self.peek(b']') {
            self.i += 1;
            return Ok(out);
        }
        loop {
            out.push(item(self)?);
            if self.peek(b',') {
                self.i += 1;
            } else {
                self.eat(b']')?;
                return Ok(out);
            }
        }
    }
}

pub fn parse(path: &str, text: &[u8]) -> Result<Drv, DrvError> {
    let mut p = P { s: text, i: 0 };
    for &c in b"Derive(" {
        p.eat(c)?;
    }
    let outputs = p.list(|p| {
        p.eat(b'(')?;
        let name = p.string()?;
        p.eat(b',')?;
        let out = p.string()?;
        p.eat(b',')?;
        p.string()?;
        p.eat(b',')?;
        p.string()?;
        p.eat(b')')?;
        Ok((name, out))
    })?;
    p.eat(b',')?;
    let input_drvs = p.list(|p| {
        p.eat(b'(')?;
        let d = p.string()?;
        p.eat(b',')?;
        p.list(|p| p.string())?;
        p.eat(b')')?;
        Ok(d)
    })?;
    p.eat(b',')?;
    p.list(|p| p.string())?;
    p.eat(b',')?;
    let system = p.string()?;
    p.eat(b',')?;
    p.string()?;
    p.eat(b',')?;
    p.list(|p| p.string())?;
    p.eat(b',')?;
    let env = p.list(|p| {
        p.eat(b'(')?;
        let k = p.string()?;
        p.eat(b',')?;
        let v = p.string()?;
        p.eat(b')')?;
        Ok((k, v))
    })?;
    p.eat(b')')?;
    let name = env.iter().find(|(k, _)| k == "name").map(|(_, v)| v.clone()).unwrap_or_default();
    Ok(Drv { path: path.to_string(), name, system, outputs, input_drvs })
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_a_derivation_and_refuses_garbage() {
        let t = concat!(
            r#"Derive([("out","/nix/store/aaa-x","","")],[("/nix/store/bbb-y.drv",["out"])],[],"x86_64-linux","#,
            r#""/bin/sh",["-c","echo \"hi\" > $out"],[("name","x"),("out","/nix/store/aaa-x")])"#
        )
        .as_bytes();
        let d = super::parse("/nix/store/ccc-x.drv", t).unwrap();
        assert_eq!(d.name, "x");
        assert_eq!(d.outputs, vec![("out".to_string(), "/nix/store/aaa-x".to_string())]);
        assert_eq!(d.input_drvs, vec!["/nix/store/bbb-y.drv".to_string()]);
        assert!(super::parse("x", b"Derive([(").is_err());
        assert!(super::parse("x", b"garbage").is_err());
    }
}
