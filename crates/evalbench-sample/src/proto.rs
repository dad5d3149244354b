//! Newline-delimited JSON over TCP: the sample's stand-in for `/proto`.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use serde_json::Value;

pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    pub fn new(s: TcpStream) -> std::io::Result<Conn> {
        s.set_nodelay(true)?;
        Ok(Conn { reader: BufReader::new(s.try_clone()?), writer: s })
    }
    pub fn split(self) -> (BufReader<TcpStream>, TcpStream) {
        (self.reader, self.writer)
    }
    pub fn send(&mut self, v: &Value) -> std::io::Result<()> {
        send(&mut self.writer, v)
    }
    pub fn recv(&mut self) -> std::io::Result<Option<Value>> {
        recv(&mut self.reader)
    }
}

pub fn send(w: &mut TcpStream, v: &Value) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(v)?;
    line.push(b'\n');
    w.write_all(&line)
}

pub fn recv(r: &mut BufReader<TcpStream>) -> std::io::Result<Option<Value>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    serde_json::from_str(&line).map(Some).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}
