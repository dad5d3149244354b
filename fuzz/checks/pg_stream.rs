//! Any bytes as the two directions of a PostgreSQL connection, cut into
//! segments where the input says.

use evalbench_decode::pg::PgDecoder;
use evalbench_decode::tcp::Event;

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let mut d = PgDecoder::default();
    let ep = ("127.0.0.1".parse().unwrap(), 5432u16);
    d.event(Event::Open { conn: 1, client: ep, server: ep, ts_us: 0, saw_syn: data[0] & 1 == 1 }, &mut |_| {});
    // Each chunk: one byte of header (direction, length), then that many bytes.
    let mut i = 1;
    let mut ts = 0;
    while i < data.len() {
        let h = data[i];
        let n = (h & 0x7f) as usize + 1;
        let chunk = &data[i + 1..(i + 1 + n).min(data.len())];
        ts += 10;
        d.event(Event::Data { conn: 1, to_server: h & 0x80 == 0, ts_us: ts, bytes: chunk }, &mut |_| {});
        i += 1 + n;
    }
    d.event(Event::Close { conn: 1 }, &mut |_| {});
    d.finish();
}
