//! Any bytes as a capture to cut to a window (the runner cuts tcpdump's
//! files, which a crash or a full disk can leave half-written): an error
//! or a cut, never a panic. A cut keeps the header and counts every record
//! once; the tail follower, fed in pieces, agrees on how many records are whole.

use evalbench_decode::pcap_window::{cut, Tail};

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let (window, body) = data.split_at(data.len().min(2));
    let from = window.first().copied().unwrap_or(0) as i64 * 1_000_000;
    let to = from + window.get(1).copied().unwrap_or(255) as i64 * 1_000_000;
    let mut out = Vec::new();
    if let Ok(c) = cut("fuzz.pcap", body, &mut out, from, to) {
        assert_eq!(&out[..24], &body[..24]);
        let mut tail = Tail::default();
        for piece in body.chunks(7) {
            tail.feed(piece);
        }
        assert_eq!(tail.records, c.kept + c.before + c.after);
        // What was kept cuts to itself.
        let again = cut("kept.pcap", &out[..], Vec::new(), from, to).expect("a cut reads back");
        assert_eq!((again.kept, again.before, again.after), (c.kept, 0, 0));
    }
}
