//! Whose a file is: evalbench replaces only files it wrote itself.
//!
//! A bundle Gradient wrote holds summary.txt, summary.json and
//! `<run>/trace.json` of Gradient's own `summarize.py`, under the names
//! evalbench writes; so may a directory a user points `-o` at. Writing
//! over them destroys what the user downloaded. Each kind of file evalbench
//! writes opens in a way of its own, and that is what is checked: a file of
//! one of these names that does not open so is another tool's.

use std::io::Read;
use std::path::Path;

/// How much of a file is read to tell.
const HEAD: u64 = 4096;

/// Whether `path` is a file of a name [`foreign`] can tell by its contents.
pub fn sniffable(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    [crate::layout::SUMMARY_TXT, crate::layout::SUMMARY_JSON, crate::layout::TRACE_JSON, "index.html"].contains(&name)
}

/// Whether `path` exists and is not a file evalbench wrote: a summary,
/// summary.json, a Perfetto trace or a report page of another writer (or
/// a directory, a link, anything unreadable where the file would go).
pub fn foreign(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return false };
    if !meta.is_file() {
        return true;
    }
    let mut head = Vec::new();
    if std::fs::File::open(path).and_then(|f| f.take(HEAD).read_to_end(&mut head)).is_err() {
        return true;
    }
    let text = String::from_utf8_lossy(&head);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ours = match name {
        crate::layout::SUMMARY_TXT => text.starts_with("evalbench summary of"),
        crate::layout::SUMMARY_JSON => text.trim_start().starts_with('{') && text.contains("\"evalbench_version\""),
        crate::layout::TRACE_JSON => {
            text.starts_with("{\"displayTimeUnit\":\"ms\",\"otherData\":{") && text.contains("\"clock\":\"server\"")
        }
        "index.html" => text.starts_with("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"),
        _ => false,
    };
    !ours
}

#[cfg(test)]
mod tests {
    use super::foreign;

    #[test]
    fn only_files_of_evalbench_s_making_are_ours() {
        let d = tempfile::tempdir().unwrap();
        let f = |name: &str, text: &str| {
            let p = d.path().join(name);
            std::fs::write(&p, text).unwrap();
            foreign(&p)
        };
        assert!(!foreign(&d.path().join("summary.txt")), "an absent file is no one's");
        assert!(f("summary.txt", "== cold-clean: wall 1.18 s, 26 spans, worker offset +250.0 ms (aligned)\n"));
        assert!(!f("summary.txt", "evalbench summary of out\n"));
        assert!(f("summary.json", "{\"cold-clean\": {\"aligned\": true}}"));
        assert!(!f("summary.json", "{\n  \"evalbench_version\": \"0.1.0\"}"));
        assert!(f("trace.json", "{\"traceEvents\": [], \"displayTimeUnit\": \"ms\"}"));
        assert!(!f(
            "trace.json",
            "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"pass\":\"x\",\"clock\":\"server\",\"alignment\":{}},\
                \"traceEvents\":[\n"
        ));
        std::fs::create_dir(d.path().join("index.html")).unwrap();
        assert!(foreign(&d.path().join("index.html")));
    }
}
