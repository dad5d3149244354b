//! Hostile and corrupt input: clear errors naming the file, never a panic,
//! never a write outside the destination. Real bundles from the sample
//! pipeline, corrupted by hand where the test is about corruption.

mod common;

use evalbench_bundle::{SpanFile, SpanText, TraceRead};
use std::io::Write;
use std::path::Path;

use common::*;

fn small_bundle(dir: &Path) -> std::path::PathBuf {
    sample(dir, &["--passes", "cold-clean,warm-clean", "--ci-jobs", "2", "--drvs", "10"])
}

fn stderr_of(cmd: &mut std::process::Command) -> (bool, String) {
    let out = cmd.output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn malformed_lines_are_listed_with_file_and_line_and_the_run_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let b = small_bundle(&tmp.path().join("b"));
    let trace = b.join("cold-clean/trace");
    let server = std::fs::read_dir(&trace)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("server-"))
        .unwrap();
    let good = std::fs::read_to_string(&server).unwrap().lines().count();
    let mut f = std::fs::OpenOptions::new().append(true).open(&server).unwrap();
    f.write_all(b"{not json\n{\"name\":\"x\"}\n[1,2]\n{\"name\":\"neg\",\"ts_us\":1,\"dur_us\":-5}\n").unwrap();
    // An unknown key is kept, not rejected.
    f.write_all(
        b"{\"name\":\"extra\",\"ts_us\":1,\"dur_us\":1,\"pid\":1,\"process\":\"server\",\"zone\":\"eu\",\"fields\":{}}\
            \n",
    )
    .unwrap();
    drop(f);
    run_ok(evalbench().args(["summarize", "--quiet"]).arg(&b));
    let s = read_json(&b.join("summary.json"));
    let warnings: Vec<String> = s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| format!("{}:{}", w["file"].as_str().unwrap(), w["line"]))
        .collect();
    let name = format!("cold-clean/trace/{}", server.file_name().unwrap().to_str().unwrap());
    for line in [good + 1, good + 2, good + 3, good + 4] {
        assert!(warnings.contains(&format!("{name}:{line}")), "{warnings:?} lacks line {line}");
    }
    assert_eq!(s["passes"][0]["malformed_lines"], 4);
    let text = std::fs::read_to_string(b.join("summary.txt")).unwrap();
    assert!(text.contains(&format!("{name}:{}", good + 1)));
    let trace = std::fs::read_to_string(b.join("cold-clean/trace.json")).unwrap();
    assert!(trace.contains("\"span.extra\":{\"zone\":\"eu\"}"));
}

#[test]
fn missing_run_json_and_empty_passes_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let b = small_bundle(&tmp.path().join("b"));
    std::fs::remove_file(b.join("warm-clean/run.json")).unwrap();
    std::fs::create_dir_all(b.join("cold-instrumented/trace")).unwrap();
    run_ok(evalbench().args(["summarize", "--quiet"]).arg(&b));
    let s = read_json(&b.join("summary.json"));
    let warm = s["passes"].as_array().unwrap().iter().find(|p| p["pass"] == "warm-clean").unwrap();
    assert_eq!(warm["wall_source"], "spans");
    assert!(warm["evaluated_s"].is_null());
    let w = serde_json::to_string(&s["warnings"]).unwrap();
    assert!(w.contains("warm-clean/run.json") && w.contains("missing"), "{w}");
    assert!(w.contains("cold-instrumented/trace") && w.contains("no spans"), "{w}");
}

#[test]
fn nothing_usable_exits_non_zero() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("cold-clean/trace")).unwrap();
    std::fs::write(tmp.path().join("cold-clean/trace/server.1.jsonl"), "garbage\n").unwrap();
    let (ok, err) = stderr_of(evalbench().args(["summarize", "--quiet"]).arg(tmp.path()));
    assert!(!ok);
    assert!(err.contains("nothing usable"), "{err}");
    assert!(err.contains("server.1.jsonl:1"), "{err}");
    let (ok, err) = stderr_of(evalbench().args(["summarize"]).arg(tmp.path().join("nope")));
    assert!(!ok && err.contains("nope"), "{err}");
    std::fs::write(tmp.path().join("x.txt"), "x").unwrap();
    let (ok, err) = stderr_of(evalbench().args(["summarize"]).arg(tmp.path().join("x.txt")));
    assert!(!ok && err.contains("x.txt") && err.contains(".tar.gz"), "{err}");
}

#[test]
fn a_truncated_archive_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let b = small_bundle(&tmp.path().join("b"));
    let archive = tmp.path().join("evalbench.tar.gz");
    evalbench_bundle::pack_dir(&b, &archive, &[]).unwrap();
    let bytes = std::fs::read(&archive).unwrap();
    let cut = tmp.path().join("cut.tar.gz");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let (ok, err) = stderr_of(evalbench().args(["summarize", "--quiet"]).arg(&cut));
    assert!(!ok);
    assert!(err.contains("cut.tar.gz") && err.contains("ends early"), "{err}");
    assert!(!tmp.path().join("cut/summary.json").exists(), "no summary from a broken archive");
}

/// A tar with one raw entry, its name written straight into the header so
/// that names the tar crate would refuse to write (`..`, `/`) get through.
fn hostile_tar(path: &Path, entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) {
    let gz = flate2::write::GzEncoder::new(std::fs::File::create(path).unwrap(), flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    for (name, kind, data, link) in entries {
        let mut h = tar::Header::new_old();
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_entry_type(*kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        if let Some(l) = link {
            h.as_old_mut().linkname[..l.len()].copy_from_slice(l.as_bytes());
        }
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap();
}

/// An archive entry: path, type, contents, link target.
type Entry<'a> = (&'a str, tar::EntryType, &'a [u8], Option<&'a str>);

#[test]
fn archives_cannot_write_outside_or_link_out_or_explode() {
    let tmp = tempfile::tempdir().unwrap();
    let run = br#"{"pass":"cold-clean"}"#;
    let cases: Vec<(&str, Vec<Entry>, &str)> = vec![
        (
            "dotdot",
            vec![
                ("cold-clean/run.json", tar::EntryType::Regular, run, None),
                ("../escaped", tar::EntryType::Regular, b"x", None),
            ],
            "`..`",
        ),
        ("absolute", vec![("/tmp/evalbench-abs-escape", tar::EntryType::Regular, b"x", None)], "absolute path"),
        ("symlink-abs", vec![("cold-clean/trace", tar::EntryType::Symlink, b"", Some("/etc"))], "absolute path"),
        ("symlink-up", vec![("cold-clean/trace", tar::EntryType::Symlink, b"", Some("../../.."))], "leads out"),
        (
            "hardlink-out",
            vec![("cold-clean/run.json", tar::EntryType::Link, b"", Some("/etc/passwd"))],
            "absolute path",
        ),
        ("device", vec![("cold-clean/null", tar::EntryType::Char, b"", None)], "not allowed"),
    ];
    for (name, entries, expect) in cases {
        let a = tmp.path().join(format!("{name}.tar.gz"));
        hostile_tar(&a, &entries);
        let (ok, err) = stderr_of(
            evalbench().args(["summarize", "--quiet", "-o"]).arg(tmp.path().join(format!("out-{name}"))).arg(&a),
        );
        assert!(!ok, "{name}: accepted");
        assert!(
            err.contains(&format!("{name}.tar.gz")) && err.contains("refused") && err.contains(expect),
            "{name}: {err}"
        );
    }
    assert!(!tmp.path().join("escaped").exists());
    assert!(!Path::new("/tmp/evalbench-abs-escape").exists());

    // A size bomb: 64 MiB of zeros is a few kilobytes compressed.
    let zeros = vec![0u8; 64 << 20];
    let bomb = tmp.path().join("bomb.tar.gz");
    hostile_tar(
        &bomb,
        &[
            ("cold-clean/run.json", tar::EntryType::Regular, run, None),
            ("cold-clean/trace/big.jsonl", tar::EntryType::Regular, &zeros, None),
        ],
    );
    assert!(std::fs::metadata(&bomb).unwrap().len() < 1 << 20);
    let (ok, err) = stderr_of(evalbench().args(["summarize", "--quiet", "--max-unpacked", "1M"]).arg(&bomb));
    assert!(!ok && err.contains("bomb.tar.gz") && err.contains("limit"), "{err}");

    // A link that only points downward is fine.
    let fine = tmp.path().join("fine.tar.gz");
    hostile_tar(
        &fine,
        &[
            ("cold-clean/run.json", tar::EntryType::Regular, br#"{"pass":"cold-clean","evaluated_s":1.5}"#, None),
            ("cold-clean/alias.json", tar::EntryType::Symlink, b"", Some("run.json")),
        ],
    );
    let (ok, err) = stderr_of(evalbench().args(["summarize", "--quiet"]).arg(&fine));
    assert!(ok, "{err}");
}

#[test]
fn chunked_reading_equals_whole_file_reading_with_line_numbers_intact() {
    let tmp = tempfile::tempdir().unwrap();
    let b = sample(&tmp.path().join("b"), &["--passes", "cold-clean", "--ci-jobs", "2", "--drvs", "300"]);
    let trace = b.join("cold-clean/trace");
    let server = std::fs::read_dir(&trace)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("server-"))
        .unwrap();
    let (mid, line_count) = corrupt(&server);
    let whole =
        evalbench_bundle::read_trace_dir(&trace, &TraceRead { chunk: u64::MAX, ..TraceRead::default() }).unwrap();
    let wide_ids: Vec<(Option<u64>, Option<u64>, Option<u64>)> = whole
        .iter()
        .flat_map(|f| &f.streams)
        .flat_map(|st| st.spans.iter().filter(|s| st.name(s) == "wide").map(|s| (st.id(s), st.parent(s), st.thread(s))))
        .collect();
    assert_eq!(wide_ids, (0..4).map(|k| (Some(u64::MAX - k), Some(1 << 42), Some(k))).collect::<Vec<_>>());
    // Text kept for one name, dropped chunk by chunk for the rest.
    let kept = |n: &str| n == "record_one";
    for chunk in [1u64, 100, 4096, 65536] {
        lean_reading_equals(&trace, chunk, &whole, &kept);
        placed_reading_equals(&trace, chunk, &whole, &kept);
        parts_equal(&trace, chunk, &whole);
    }
    let server_file = whole.iter().find(|f| f.path == server).unwrap();
    let lines_listed: Vec<u64> = server_file.malformed.iter().map(|m| m.line).collect();
    assert_eq!(lines_listed, vec![mid as u64 + 1, line_count as u64]);
}

/// Corrupts a line in the middle of the server's file and one at the end,
/// and puts spans whose fields are not where a tidy line has them: the
/// middle line's index, and the file's line count.
fn corrupt(server: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(server).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    // Ids too wide for a span to hold in itself, in every part of the
    // file (so in several chunks, joined).
    let wide = |k: u64| {
        format!(
            "{{\"name\":\"wide\",\"ts_us\":8,\"dur_us\":1,\"id\":{},\"parent\":{},\"thread\":{k},\"fields\":{{}}}}",
            u64::MAX - k,
            1u64 << 42
        )
    };
    for (k, at) in [1, lines.len() / 3, 2 * lines.len() / 3, lines.len() - 1].into_iter().enumerate() {
        lines.insert(at, wide(k as u64));
    }
    let mid = lines.len() / 2;
    lines[mid] = "{\"name\": truncated".into();
    // Spans whose fields are not where a tidy line has them: after
    // blanks, before a carriage return, beside extra keys, after a
    // multi-byte name.
    lines
        .insert(mid + 1, "  {\"name\":\"record_two\",\"ts_us\":5,\"dur_us\":1,\"fields\": {\"a\" : [1, 2]} }\r".into());
    lines.insert(
        mid + 2,
        "{\"name\":\"r\u{e9}cord\",\"zone\":\"eu\",\"ts_us\":6,\"dur_us\":1,\"fields\":{\"b\":\"\u{e9}\"}}".into(),
    );
    lines.insert(mid + 3, "{\"fields\":{\"c\":3},\"name\":\"r\u{e9}cord\",\"ts_us\":7,\"dur_us\":1}".into());
    lines.push("\u{1}garbage".into());
    std::fs::write(server, lines.join("\n") + "\n").unwrap();
    (mid, lines.len())
}

/// Text kept for one name, dropped chunk by chunk for the rest.
fn lean_reading_equals(trace: &Path, chunk: u64, whole: &[SpanFile], kept: &(dyn Fn(&str) -> bool + Sync)) {
    let lean = evalbench_bundle::read_trace_dir(
        trace,
        &TraceRead { chunk, text: SpanText::Only(kept), ..TraceRead::default() },
    )
    .unwrap();
    let (mut with_text, mut without) = (0, 0);
    for (a, w) in lean.iter().zip(whole) {
        assert_eq!((&a.malformed, a.lines), (&w.malformed, w.lines), "chunk {chunk}");
        for (x, y) in a.streams.iter().zip(&w.streams) {
            assert_eq!(x.spans.len(), y.spans.len());
            for (s, t) in x.spans.iter().zip(&y.spans) {
                let fields = if kept(y.name(t)) { y.fields(t) } else { "" };
                assert_eq!(
                    (x.name(s), s.ts_us, s.dur_us, x.id(s), x.fields(s)),
                    (y.name(t), t.ts_us, t.dur_us, y.id(t), fields),
                    "chunk {chunk}"
                );
                assert_eq!((x.parent(s), x.thread(s)), (y.parent(t), y.thread(t)), "chunk {chunk}");
                match (kept(y.name(t)), y.fields(t).is_empty()) {
                    (true, false) => with_text += 1,
                    (false, false) => without += 1,
                    _ => {}
                }
            }
        }
    }
    assert!(
        with_text > 100 && without > 100,
        "chunk {chunk}: {with_text} spans kept their fields, {without} had theirs dropped"
    );
}

/// The same names' text kept, every other span's fields left in its
/// file (summarize): the bytes there are the fields read whole.
fn placed_reading_equals(trace: &Path, chunk: u64, whole: &[SpanFile], kept: &(dyn Fn(&str) -> bool + Sync)) {
    let placed = {
        let text = SpanText::InFile { in_file: &|n| !kept(n), unless: &|f| f.contains("\"a\"") };
        evalbench_bundle::read_trace_dir(trace, &TraceRead { chunk, text, ..TraceRead::default() }).unwrap()
    };
    let (mut in_file, mut unless) = (0, 0);
    for (a, w) in placed.iter().zip(whole) {
        assert_eq!((&a.malformed, a.lines), (&w.malformed, w.lines), "chunk {chunk}");
        let bytes = std::fs::read(&w.path).unwrap();
        for (x, y) in a.streams.iter().zip(&w.streams) {
            assert_eq!(x.spans.len(), y.spans.len());
            for (s, t) in x.spans.iter().zip(&y.spans) {
                assert_eq!(
                    (x.name(s), s.ts_us, s.dur_us, x.id(s), x.extra(s)),
                    (y.name(t), t.ts_us, t.dur_us, y.id(t), y.extra(t)),
                    "chunk {chunk}"
                );
                match x.fields_in_file(s) {
                    Some((at, len)) => {
                        in_file += 1;
                        assert!(
                            !kept(y.name(t)) && y.extra(t).is_none() && !y.fields(t).contains("\"a\""),
                            "chunk {chunk}: {}",
                            y.name(t)
                        );
                        assert_eq!(&bytes[at as usize..at as usize + len], y.fields(t).as_bytes(), "chunk {chunk}");
                        // Asked for, a field is read from the file (every 50th: a read each).
                        if in_file % 50 == 1 {
                            let map: serde_json::Map<String, serde_json::Value> =
                                serde_json::from_str(y.fields(t)).unwrap();
                            for key in map.keys().chain([&"absent".to_string()]) {
                                assert_eq!(x.field(s, key), y.field(t, key), "chunk {chunk}: {key}");
                            }
                        }
                    }
                    None => {
                        unless +=
                            usize::from(!kept(y.name(t)) && y.extra(t).is_none() && y.fields(t).contains("\"a\""));
                        assert_eq!(x.fields(s), y.fields(t), "chunk {chunk}: {}", y.name(t));
                    }
                }
            }
        }
    }
    assert!(in_file > 100, "chunk {chunk}: {in_file} spans' fields left in their file");
    assert_eq!(unless, 1, "chunk {chunk}: the span whose fields were to be kept");
}

/// Read in parts, every span as read whole.
fn parts_equal(trace: &Path, chunk: u64, whole: &[SpanFile]) {
    let parts = evalbench_bundle::read_trace_dir(trace, &TraceRead { chunk, ..TraceRead::default() }).unwrap();
    assert_eq!(parts.len(), whole.len());
    for (a, w) in parts.iter().zip(whole) {
        assert_eq!(a.malformed, w.malformed, "chunk {chunk}");
        assert_eq!(a.lines, w.lines);
        assert_eq!(a.streams.len(), w.streams.len());
        for (x, y) in a.streams.iter().zip(&w.streams) {
            assert_eq!(x.spans.len(), y.spans.len());
            for (s, t) in x.spans.iter().zip(&y.spans) {
                assert_eq!(
                    (x.name(s), s.ts_us, s.dur_us, x.id(s), x.fields(s)),
                    (y.name(t), t.ts_us, t.dur_us, y.id(t), y.fields(t))
                );
            }
        }
    }
}

/// 0 success, 1 a verdict against the user, 2 an error: scripts and CI can tell
/// "your change is slower" from "evalbench could not read that".
#[test]
fn exit_status_tells_a_verdict_from_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let code = |cmd: &mut std::process::Command| cmd.output().unwrap().status.code();
    // Errors: 2.
    assert_eq!(
        code(evalbench().args(["summarize", "--quiet"]).arg(tmp.path().join("no-such-bundle"))),
        Some(2),
        "unreadable input"
    );
    let not_bundle = tmp.path().join("not-a-bundle.tar.gz");
    std::fs::write(&not_bundle, b"this is no archive").unwrap();
    assert_eq!(code(evalbench().arg("compare").arg(&not_bundle).arg(&not_bundle)), Some(2), "a bundle that is not one");
    assert_eq!(code(evalbench().args(["compare", "--no-such-flag"])), Some(2), "a bad flag");
    assert_eq!(code(evalbench().args(["decode", "pg"]).arg(tmp.path().join("missing.pcap"))), Some(2));
    // A verdict against the user: 1.
    assert_eq!(
        code(evalbench().args(["bench", "--runs", "2", "--warmup", "0", "--no-memory", "--", "false"])),
        Some(1),
        "failed bench runs"
    );
    // Success: 0, and --help says what the codes mean.
    let help = evalbench().arg("--help").output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("Exit status: 0 success; 1 a verdict against you") && text.contains("2 an error"), "{text}");
}

/// summarize leaves most spans' fields in their files and reads them back
/// for trace.json: a span file changed in between is an error that names
/// it and the bytes, and no trace.json is left as if it were whole.
#[test]
fn a_span_file_changed_before_its_fields_are_read_back_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let b = sample(&tmp.path().join("b"), &["--passes", "cold-clean", "--ci-jobs", "2", "--drvs", "300"]);
    let bundle = evalbench_bundle::Bundle::open(&b, evalbench_bundle::Limits::default()).unwrap();
    let pass = &bundle.passes[0];
    let trace = b.join("cold-clean/trace");
    let server = std::fs::read_dir(&trace)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("server-"))
        .unwrap();
    // A span of a name no analysis reads the fields of, that names its
    // track: the trace's tracks read its fields, so they stay in memory.
    let first: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&server).unwrap().lines().next().unwrap()).unwrap();
    let side = serde_json::json!({"name": "on_the_side", "ts_us": first["ts_us"], "dur_us": 5, "pid": first["pid"],
        "process": first["process"], "id": 999_999_999u64, "fields": {"track": "side track"}});
    let mut f = std::fs::OpenOptions::new().append(true).open(&server).unwrap();
    writeln!(f, "{side}").unwrap();
    drop(f);
    let original = std::fs::read(&server).unwrap();
    // As read: the same trace.json as from a whole load.
    let (whole, align) = evalbench_analyze::load(pass, evalbench_analyze::Fields::All);
    let (placed, _) = evalbench_analyze::load(pass, evalbench_analyze::Fields::Placed(&evalbench_analyze::fields_read));
    let (a, c) = (tmp.path().join("whole.json"), tmp.path().join("placed.json"));
    let events = evalbench_report::write_trace(
        &a,
        "cold-clean",
        &whole.streams,
        evalbench_analyze::lay_out(&whole.streams),
        &align,
        None,
    )
    .unwrap();
    assert_eq!(
        evalbench_report::write_trace(
            &c,
            "cold-clean",
            &placed.streams,
            evalbench_analyze::lay_out(&placed.streams),
            &align,
            None
        )
        .unwrap(),
        events
    );
    assert!(std::fs::read(&a).unwrap() == std::fs::read(&c).unwrap(), "trace.json differs with the fields read back");
    assert!(
        std::fs::read_to_string(&c).unwrap().contains(r#""args":{"name":"side track"}"#),
        "the track the span named"
    );
    let at = tmp.path().join("out/trace.json");
    let changes: [(&str, Vec<u8>); 3] = [
        ("cut short", original[..original.len() / 2].to_vec()),
        ("bytes moved", [b"{}\n".as_slice(), &original].concat()),
        ("bytes not UTF-8", original.iter().map(|&c| if c == b'"' { 0xff } else { c }).collect()),
    ];
    for (what, bytes) in changes {
        std::fs::write(&server, &bytes).unwrap();
        let err = evalbench_report::write_trace(
            &at,
            "cold-clean",
            &placed.streams,
            evalbench_analyze::lay_out(&placed.streams),
            &align,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains(server.to_str().unwrap()), "{what}: {err}");
        assert!(err.contains("bytes ") && err.contains("the file changed after it was read"), "{what}: {err}");
        eprintln!("{what}: {err}");
        assert!(!at.exists(), "{what}: a trace.json was left");
        assert_eq!(std::fs::read_dir(at.parent().unwrap()).unwrap().count(), 0, "{what}: a temporary file was left");
    }
}

/// Timestamps at the ends of i64, in run.json and in a span file of a pass
/// without a capture window (every span counted): a debug build panicked on
/// the overflow in the path's window, the traced wall time and the runs'
/// samples. Every reader saturates, or says what it could not use.
#[test]
fn timestamps_at_the_ends_of_the_range_are_no_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let b = small_bundle(&tmp.path().join("b"));
    let edit = |pass: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let p = b.join(pass).join("run.json");
        let mut v = read_json(&p);
        f(&mut v);
        std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
    };
    edit("cold-clean", &|v| {
        v["requested_us"] = serde_json::json!(i64::MAX - 1000);
        v["evaluated_s"] = serde_json::json!(1e300);
    });
    edit("warm-clean", &|v| {
        v["capture_started_us"] = serde_json::json!(0);
        v["capture_stopped_us"] = serde_json::json!(0);
    });
    let trace = b.join("warm-clean/trace");
    let server = std::fs::read_dir(&trace)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("server-"))
        .unwrap();
    let first: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&server).unwrap().lines().next().unwrap()).unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(&server).unwrap();
    for ts in [i64::MIN + 5, i64::MAX - 5] {
        let mut s = first.clone();
        s["ts_us"] = serde_json::json!(ts);
        writeln!(f, "{s}").unwrap();
    }
    drop(f);
    let out = tmp.path().join("out");
    for args in [
        vec!["summarize", "--quiet", "-o", out.to_str().unwrap()],
        vec!["whatif", "-q", "--pass", "cold-clean"],
        vec!["whatif", "-q", "--pass", "warm-clean"],
        vec!["inspect", "-o", out.to_str().unwrap()],
    ] {
        let res = evalbench().args(&args).arg(&b).output().unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        eprintln!("{args:?}: exit {:?}: {}", res.status.code(), err.lines().last().unwrap_or(""));
        assert!(
            !err.contains("panicked") && matches!(res.status.code(), Some(0..=2)),
            "{args:?}: {:?} {err}",
            res.status.code()
        );
    }
    let res = evalbench().arg("compare").arg(&b).arg(&b).output().unwrap();
    assert!(!String::from_utf8_lossy(&res.stderr).contains("panicked"), "{}", String::from_utf8_lossy(&res.stderr));
}
