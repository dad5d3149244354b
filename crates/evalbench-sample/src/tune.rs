//! Changes a test makes to the pipeline's work, to know the truth the
//! critical path must find: a delay (a sleep) inside every span of a name,
//! or its CPU work scaled. The driver hands them to every process it
//! starts in one environment variable.

use std::collections::HashMap;
use std::sync::OnceLock;

pub const ENV: &str = "EVALBENCH_SAMPLE_TUNE";

#[derive(Debug, Default)]
struct Tune {
    delay_ms: HashMap<String, u64>,
    work: HashMap<String, f64>,
}

/// The variable's value for these delays and work factors.
pub fn encode(delays: &[(String, u64)], work: &[(String, f64)]) -> String {
    let d = delays.iter().map(|(n, ms)| format!("d:{n}={ms}"));
    let w = work.iter().map(|(n, f)| format!("w:{n}={f}"));
    d.chain(w).collect::<Vec<_>>().join(";")
}

fn tune() -> &'static Tune {
    static T: OnceLock<Tune> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = Tune::default();
        for item in std::env::var(ENV).unwrap_or_default().split(';') {
            let Some((kind, rest)) = item.split_once(':') else { continue };
            let Some((name, v)) = rest.split_once('=') else { continue };
            match kind {
                "d" => {
                    t.delay_ms.insert(name.into(), v.parse().unwrap_or(0));
                }
                "w" => {
                    t.work.insert(name.into(), v.parse().unwrap_or(1.0));
                }
                _ => {}
            }
        }
        t
    })
}

/// Does span `name`'s work: `rounds` of hashing (scaled) and its delay.
pub fn work(name: &str, seed: &[u8], rounds: u32) -> u64 {
    let t = tune();
    let rounds = t.work.get(name).map_or(rounds, |f| (rounds as f64 * f).round() as u32);
    let h = crate::eval::work(seed, rounds);
    if let Some(&ms) = t.delay_ms.get(name) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    h
}

/// A `--delay` or `--work` that does not read: the flag's value, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TuneError {
    #[error("{0:?}: expected SPAN=VALUE")]
    NotNameValue(String),
    #[error("{given:?}: {value:?} is not a number")]
    NotANumber { given: String, value: String },
    #[error("{0:?}: expected a span name")]
    NoSpanName(String),
}

/// Parses `NAME=VALUE` for `--delay` and `--work`.
pub fn parse<T: std::str::FromStr>(s: &str) -> Result<(String, T), TuneError> {
    let (n, v) = s.split_once('=').ok_or_else(|| TuneError::NotNameValue(s.to_string()))?;
    let v = v.parse().map_err(|_| TuneError::NotANumber { given: s.to_string(), value: v.to_string() })?;
    if n.is_empty() || n.contains([';', ':', '=']) {
        return Err(TuneError::NoSpanName(s.to_string()));
    }
    Ok((n.to_string(), v))
}
