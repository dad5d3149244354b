//! Sizes on the command line: `512M`, `16G`, `1000000`.

/// `--max-unpacked`, on every command that opens a bundle.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct MaxUnpacked {
    /// Refuse archives that unpack to more than this (e.g. 512M, 16G).
    #[arg(long = "max-unpacked", default_value = "16G", value_parser = parse_size)]
    pub bytes: u64,
}

impl MaxUnpacked {
    pub fn limits(self) -> evalbench_bundle::Limits {
        evalbench_bundle::Limits { max_unpacked_bytes: self.bytes, ..evalbench_bundle::Limits::default() }
    }
}

pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        None => (t, 1u64),
        Some((i, _)) => {
            let unit = t[i..].trim_end_matches(['B', 'b', 'i']).to_ascii_uppercase();
            let m = match unit.as_str() {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                "T" => 1 << 40,
                _ => return Err(format!("{s:?}: expected a size such as 512M or 16G")),
            };
            (&t[..i], m)
        }
    };
    let n: u64 = num.parse().map_err(|_| format!("{s:?}: expected a size such as 512M or 16G"))?;
    n.checked_mul(mult).ok_or_else(|| format!("{s:?}: too large"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes() {
        assert_eq!(super::parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(super::parse_size("16GiB").unwrap(), 16 << 30);
        assert_eq!(super::parse_size("42").unwrap(), 42);
        assert!(super::parse_size("x1").is_err());
        assert!(super::parse_size("1Q").is_err());
    }
}
