//! Any bytes as a plan in auto_explain's text format (first byte even) or
//! its JSON format (odd): the tree is read without a panic, its depths
//! step down at most one level at a time from a single top node, and the
//! fingerprint is 16 hex digits, the same when read again.
#![no_main]

use evalbench_decode::plan::Tree;
use libfuzzer_sys::fuzz_target;

fn check(t: &Tree) {
    assert_eq!(t.nodes.first().map(|n| n.depth), Some(0));
    for w in t.nodes.windows(2) {
        assert!(w[1].depth <= w[0].depth + 1, "a child is one level below its parent");
    }
    for n in &t.nodes {
        let _ = n.label();
    }
    let fp = t.fingerprint();
    assert!(fp.len() == 16 && fp.bytes().all(|b| b.is_ascii_hexdigit()));
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else { return };
    if kind % 2 == 0 {
        let text = String::from_utf8_lossy(rest);
        let a = Tree::from_text(text.lines());
        let b = Tree::from_text(text.lines());
        if let (Some(a), Some(b)) = (&a, &b) {
            check(a);
            assert_eq!(a.fingerprint(), b.fingerprint());
        }
    } else if let Ok(v) = serde_json::from_slice::<serde_json::Value>(rest) {
        if let Some(t) = Tree::from_json(&v) {
            if !t.nodes.is_empty() {
                check(&t);
            }
        }
    }
    // And whole logs, both formats, through the statement aggregation.
    let _ = evalbench_decode::explain::decode_from(rest, "fuzz", &mut |_| {});
});
