//! nix's own statistics of a pass: `<pass>/eval/nix-stats.*.json`, one file
//! per nix evaluation, as nix wrote them (`NIX_SHOW_STATS`). Read here into
//! one set of counters per pass, every numeric value under its keys joined
//! with '.' (`gc.totalBytes`, `values.bytes`), summed over the files; and,
//! where nix counted calls (`NIX_COUNT_CALLS`), the calls by primop, by
//! function position and by attribute position, summed likewise.
//!
//! Left out of the counters: `sizes` (the byte sizes of nix's own structs, a
//! property of the nix build, not of the evaluation) and the call lists,
//! which are profiles and come back as [`Calls`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{io, BundleError};
use crate::inputs::Inputs;
use crate::layout;

/// Counter name (nix's keys joined with '.') -> value, summed over the files.
pub type Counters = BTreeMap<String, f64>;

/// Calls counted by nix (`NIX_COUNT_CALLS`), summed over the files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Calls {
    /// primop name -> calls
    pub primops: BTreeMap<String, u64>,
    /// `file:line:col` of a lambda -> calls (its name, when nix knows one, in the key's tail: ` (name)`)
    pub functions: BTreeMap<String, u64>,
    /// `file:line:col` of an attribute selection -> times selected
    pub attributes: BTreeMap<String, u64>,
}

/// A pass's statistics: the files read, the counters, the calls.
#[derive(Debug, Clone, Default)]
pub struct NixStats {
    pub files: Vec<PathBuf>,
    pub counters: Counters,
    pub calls: Calls,
}

const LEFT_OUT: &[&str] = &["sizes", "primops", "functions", "attributes"];

/// The statistics files of a pass directory, sorted by name.
pub fn files(pass_dir: &Path) -> Vec<PathBuf> {
    let dir = pass_dir.join(layout::EVAL_DIR);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(layout::NIX_STATS_PREFIX) && n.ends_with(".json"))
        })
        .collect();
    v.sort();
    v
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Reads a pass's statistics; None when the pass has no statistics files.
/// A file that is not nix's JSON is an error naming it and the place.
pub fn read(pass_dir: &Path) -> Result<Option<NixStats>, BundleError> {
    let files = files(pass_dir);
    if files.is_empty() {
        return Ok(None);
    }
    let mut s = NixStats { files: files.clone(), ..NixStats::default() };
    let inputs = Inputs::read(pass_dir).unwrap_or_default();
    for f in &files {
        let text = std::fs::read(f).map_err(io(f))?;
        const EXPECTED: &str = "nix's statistics (NIX_SHOW_STATS), a JSON object";
        let v: serde_json::Value = serde_json::from_slice(&text).map_err(crate::error::parse(f, EXPECTED))?;
        if !v.is_object() {
            return Err(crate::error::parse(f, EXPECTED)(serde::de::Error::custom(format!("found {}", kind(&v)))));
        }
        flatten_into(&v, &mut s.counters);
        add_calls(&v, &mut s.calls, &inputs);
    }
    Ok(Some(s))
}

/// One file's counters from its bytes; None when it is not JSON.
pub fn counters_of(text: &[u8]) -> Option<Counters> {
    let v: serde_json::Value = serde_json::from_slice(text).ok()?;
    let mut c = Counters::new();
    flatten_into(&v, &mut c);
    Some(c)
}

/// One file's counters (nix's JSON, read): added into `out`.
pub fn flatten_into(v: &serde_json::Value, out: &mut Counters) {
    for (k, v) in v.as_object().into_iter().flatten() {
        if !LEFT_OUT.contains(&k.as_str()) {
            flatten(k, v, out);
        }
    }
}

fn flatten(key: &str, v: &serde_json::Value, out: &mut Counters) {
    match v {
        serde_json::Value::Number(n) => {
            if let Some(x) = n.as_f64().filter(|x| x.is_finite()) {
                *out.entry(key.to_string()).or_insert(0.0) += x;
            }
        }
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                flatten(&format!("{key}.{k}"), v, out);
            }
        }
        _ => {}
    }
}

/// nix names a file by its store path, and an expression given as a string
/// (`--apply`, its own flake loader) by the whole text: the flake's own path
/// for the first, `(string)` for the second.
/// A path inside a store path without `/nix/store/<hash>-<name>/`: the
/// same file reads the same whatever input's hash it sits under. The one
/// place positions are shortened (nix's statistics, its function trace).
pub fn store_relative(path: &str) -> &str {
    if let Some(rest) = path.strip_prefix("/nix/store/") {
        if let Some((head, tail)) = rest.split_once('/') {
            if head.len() > 33 && head.as_bytes()[32] == b'-' {
                return tail;
            }
        }
    }
    path
}

/// A file as positions show it: named by its input (`bundle::inputs`),
/// else its path inside the store path, else itself; `--apply` text is "(string)".
fn source_name(file: &str, inputs: &Inputs) -> String {
    if file.starts_with("/nix/store/") {
        return inputs.name(file);
    }
    // Nix 2.26 names files of its own `«nix-internal»/call-flake.nix`, and none `«none»`.
    // Nix 2.34 names a file in an input by the input's locked reference
    // (`«path:…?narHash=…»/lib/default.nix`): named by its input where known.
    if (file.starts_with('/') || file.starts_with('«')) && !file.contains('\n') {
        inputs.name(file)
    } else {
        "(string)".to_string()
    }
}

fn position(v: &serde_json::Value, inputs: &Inputs) -> Option<String> {
    let file = source_name(v["file"].as_str()?, inputs);
    Some(format!("{file}:{}:{}", v["line"].as_u64().unwrap_or(0), v["column"].as_u64().unwrap_or(0)))
}

/// One file's calls (nix's JSON, read): added into `c`, positions named by `inputs`.
pub fn add_calls(v: &serde_json::Value, c: &mut Calls, inputs: &Inputs) {
    if let Some(m) = v["primops"].as_object() {
        for (name, n) in m {
            *c.primops.entry(name.clone()).or_default() += n.as_u64().unwrap_or(0);
        }
    }
    for f in v["functions"].as_array().into_iter().flatten() {
        let Some(mut at) = position(f, inputs) else { continue };
        if let Some(name) = f["name"].as_str() {
            at = format!("{at} ({name})");
        }
        *c.functions.entry(at).or_default() += f["count"].as_u64().unwrap_or(0);
    }
    for a in v["attributes"].as_array().into_iter().flatten() {
        // nix lists the selections it has no position for under no file.
        let at = position(a, inputs).unwrap_or_else(|| "(no position)".into());
        *c.attributes.entry(at).or_default() += a["count"].as_u64().unwrap_or(0);
    }
}

/// The counters as a JSON object, integers as integers.
pub fn to_json(c: &Counters) -> serde_json::Value {
    let m: serde_json::Map<String, serde_json::Value> = c.iter().map(|(k, &v)| (k.clone(), number(v))).collect();
    serde_json::Value::Object(m)
}

/// A counter as JSON: an integer when it is one, else the float.
pub fn number(v: f64) -> serde_json::Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        serde_json::Value::from(v as i64)
    } else {
        serde_json::Value::from(v)
    }
}

/// For `#[serde(serialize_with)]`: counters written as [`to_json`] writes them.
pub fn serialize_opt<S: serde::Serializer>(c: &Option<Counters>, s: S) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    c.as_ref().map(to_json).serialize(s)
}

/// Counters back from JSON (run.json's `nix_stats`).
pub fn from_json(v: &serde_json::Value) -> Option<Counters> {
    let m = v.as_object()?;
    Some(m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_f64()?))).collect())
}

// The counters' vocabulary: which are exact, which come first, their words and units.

/// Counters that are not exact counts of work: times, and the heap's size
/// (nix's, and the times and peaks of Gradient's `evaluation_metric`).
pub const NOISY: &[&str] = &[
    "cpuTime",
    "gc.heapSize",
    "gc.cycles",
    "time.cpu",
    "time.gc",
    "time.gcFraction",
    "evaluation_metric.fetch_ms",
    "evaluation_metric.eval_flake_ms",
    "evaluation_metric.eval_drv_ms",
    "evaluation_metric.total_eval_ms",
    "evaluation_metric.peak_heap_mb",
    "evaluation_metric.peak_rss_mb",
];

/// Counters shown first and in Hydra's metrics, with the words for them.
pub const HEADLINE: &[(&str, &str)] = &[
    ("nrFunctionCalls", "function calls"),
    ("nrThunks", "thunks"),
    ("gc.totalBytes", "bytes allocated"),
    ("nrPrimOpCalls", "primop calls"),
    ("nrLookups", "attribute lookups"),
    ("envs.number", "environments"),
    ("values.number", "values"),
];

/// The unit of a counter that is not a count, as nix writes it.
pub fn unit(name: &str) -> Option<&'static str> {
    match name {
        "cpuTime" | "time.cpu" | "time.gc" => Some("seconds"),
        "gc.heapSize" => Some("bytes"),
        n if n.starts_with("evaluation_metric.") && n.ends_with("_ms") => Some("milliseconds"),
        n if n.starts_with("evaluation_metric.") && n.ends_with("_mb") => Some("MiB"),
        "time.gcFraction" => Some("a fraction of the time"),
        _ => None,
    }
}

/// The words for a counter, or its key.
pub fn words(name: &str) -> &str {
    HEADLINE.iter().find(|(k, _)| *k == name).map_or(name, |(_, w)| w)
}

/// The headline counters that are exact counts (what gates and what
/// history steps on), in headline order.
pub fn exact_headline() -> impl Iterator<Item = &'static str> {
    HEADLINE.iter().map(|(n, _)| *n).filter(|n| !NOISY.contains(n))
}

/// Counter names in the order people read them: the headline first, in its
/// order, then the rest by name; each once.
pub fn in_headline_order<S: AsRef<str> + Ord>(names: &mut Vec<S>) {
    names.sort_by(|a, b| {
        let rank = |n: &S| HEADLINE.iter().position(|(k, _)| *k == n.as_ref()).unwrap_or(HEADLINE.len());
        rank(a).cmp(&rank(b)).then_with(|| a.cmp(b))
    });
    names.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_nix_statistics_is_a_parse_error_with_its_cause() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(layout::EVAL_DIR)).unwrap();
        let f = dir.path().join(layout::EVAL_DIR).join("nix-stats.0.json");
        for (text, said) in [("{\"nrThunks\": ", "EOF while parsing"), ("[1, 2]", "found an array")] {
            std::fs::write(&f, text).unwrap();
            let e = read(dir.path()).unwrap_err();
            let BundleError::Parse { path, source, .. } = &e else { panic!("not a parse error: {e:?}") };
            assert_eq!(path, &f);
            assert!(source.to_string().contains(said), "{source}");
            assert!(e.to_string().contains("nix-stats.0.json: expected nix's statistics"), "{e}");
        }
        std::fs::write(dir.path().join(layout::RUN_JSON), "{\"evaluation_id\": [").unwrap();
        let e = crate::RunInfo::read(&dir.path().join(layout::RUN_JSON)).unwrap_err();
        assert!(matches!(e, BundleError::Parse { .. }) && e.to_string().contains("line 1 column"), "{e}");
    }

    #[test]
    fn counters_are_flattened_and_summed_and_calls_merged() {
        let d = tempfile::tempdir().unwrap();
        let e = d.path().join(layout::EVAL_DIR);
        std::fs::create_dir_all(&e).unwrap();
        let one = r#"{"cpuTime": 0.5, "nrThunks": 10, "gc": {"heapSize": 100, "totalBytes": 7}, "sizes": {"Env": 16},
            "primops": {"map": 2}, "functions": [{"name": null, "file": "/f.nix", "line": 1, "column": 2, "count": 3}],
            "attributes": [{"count": 4}, {"file": "/f.nix", "line": 5, "column": 6, "count": 1}]}"#;
        std::fs::write(e.join("nix-stats.0.json"), one).unwrap();
        std::fs::write(e.join("nix-stats.1.json"), one).unwrap();
        std::fs::write(e.join("other.json"), "not read").unwrap();
        let s = read(d.path()).unwrap().unwrap();
        assert_eq!(s.files.len(), 2);
        assert_eq!(s.counters["nrThunks"], 20.0);
        assert_eq!(s.counters["gc.totalBytes"], 14.0);
        assert_eq!(s.counters["cpuTime"], 1.0);
        assert!(!s.counters.contains_key("sizes.Env") && !s.counters.keys().any(|k| k.starts_with("primops")));
        assert_eq!(s.calls.primops["map"], 4);
        assert_eq!(s.calls.functions["/f.nix:1:2"], 6);
        let none = Inputs::default();
        assert_eq!(
            super::source_name("/nix/store/0123456789abcdfghijklmnpqrsvwxyz-source/flake.nix", &none),
            "flake.nix"
        );
        assert_eq!(super::source_name("ps: let names = builtins.attrNames ps;\n in names", &none), "(string)");
        assert_eq!(super::source_name("«nix-internal»/call-flake.nix", &none), "«nix-internal»/call-flake.nix");
        assert_eq!(super::source_name("«none»", &none), "«none»");
        assert_eq!(s.calls.attributes["(no position)"], 8);
        assert_eq!(to_json(&s.counters)["nrThunks"], 20);
        assert_eq!(from_json(&to_json(&s.counters)).unwrap(), s.counters);

        std::fs::write(e.join("nix-stats.2.json"), "{\"nrThunks\": ").unwrap();
        let err = read(d.path()).unwrap_err().to_string();
        assert!(err.contains("nix-stats.2.json") && err.contains("line 1"), "{err}");
        assert!(read(&d.path().join("nowhere")).unwrap().is_none());
    }
}
