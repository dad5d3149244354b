//! The lab's WebSocket /proto traffic in a pcap: a record per message.

use evalbench_decode::ws::{Message, WsSummary};

pub struct Proto;

impl super::Decoder for Proto {
    type Record = Message;
    type Summary = WsSummary;
    type Text = ();
    type Json = ();

    fn decode(&self, a: &super::Args, emit: &mut dyn FnMut(Message)) -> anyhow::Result<WsSummary> {
        Ok(evalbench_decode::ws::decode_file(&a.file, a.port, &mut |m| emit(m.clone()))?)
    }

    fn detect(&self, a: &super::Args, s: &WsSummary) -> anyhow::Result<()> {
        if s.frames_from_worker + s.frames_from_server == 0 && s.not_websocket_connections > 0 {
            anyhow::bail!(
                "{}: expected WebSocket /proto traffic, but none of its {} TCP connections carries it{}",
                a.file.display(),
                s.connections,
                if a.port.is_none() { " (pg.pcap? decode pg; or give the server's --port)" } else { "" }
            );
        }
        Ok(())
    }

    fn text(&self, (): (), s: &WsSummary) -> Vec<u8> {
        let mut t = serde_json::to_string_pretty(s).expect("a summary serializes");
        t.push('\n');
        t.into_bytes()
    }

    fn json_summary(&self, s: &WsSummary) -> serde_json::Value {
        super::to_json(s)
    }
}
