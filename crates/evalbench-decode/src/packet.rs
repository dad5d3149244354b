//! From a capture file to TCP segments: pcap or pcapng (pcap-parser reads
//! the container as a stream), then link layer (Ethernet, Linux cooked SLL
//! and SLL2, BSD loopback/null, raw IP), IPv4 or IPv6, TCP.

use crate::error::DecodeError;
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use pcap_parser::pcapng::Block;
use pcap_parser::{PcapBlockOwned, PcapError};

/// One TCP segment, borrowed from the capture buffer.
#[derive(Debug)]
pub struct Segment<'a> {
    pub ts_us: i64,
    pub src: (IpAddr, u16),
    pub dst: (IpAddr, u16),
    pub seq: u32,
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
    pub payload: &'a [u8],
}

/// Counts of what was not TCP, or not readable.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct PacketStats {
    pub packets: u64,
    pub tcp_segments: u64,
    pub not_tcp: u64,
    pub truncated: u64,
    pub unknown_link: u64,
    /// The capture ended in the middle of a record.
    pub file_truncated: bool,
}

const ETHERNET: i32 = 1;
const NULL: i32 = 0;
const LOOP: i32 = 108;
const RAW: i32 = 101;
const RAW_OLD1: i32 = 12;
const RAW_OLD2: i32 = 14;
const SLL: i32 = 113;
const SLL2: i32 = 276;
const IPV4: i32 = 228;
const IPV6: i32 = 229;

/// The IP packet inside a link-layer frame.
fn link_payload(linktype: i32, d: &[u8]) -> Option<&[u8]> {
    match linktype {
        ETHERNET => {
            let mut off = 12;
            let mut et = u16::from_be_bytes([*d.get(off)?, *d.get(off + 1)?]);
            off += 2;
            // VLAN tags (802.1Q, 802.1ad).
            while et == 0x8100 || et == 0x88a8 {
                et = u16::from_be_bytes([*d.get(off + 2)?, *d.get(off + 3)?]);
                off += 4;
            }
            (et == 0x0800 || et == 0x86dd).then(|| d.get(off..)).flatten()
        }
        SLL => d.get(16..),
        SLL2 => d.get(20..),
        NULL | LOOP => d.get(4..),
        RAW | RAW_OLD1 | RAW_OLD2 | IPV4 | IPV6 => Some(d),
        _ => None,
    }
}

/// Parses IP and TCP; `None` for anything else or anything cut short.
pub fn parse_tcp(ts_us: i64, ip: &[u8]) -> Result<Segment<'_>, bool> {
    let version = ip.first().ok_or(true)? >> 4;
    let (src, dst, proto, l4): (IpAddr, IpAddr, u8, &[u8]) = match version {
        4 => {
            let ihl = ((ip[0] & 0x0f) as usize) * 4;
            if ip.len() < 20 || ihl < 20 {
                return Err(true);
            }
            let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
            let end = if total >= ihl && total <= ip.len() { total } else { ip.len() };
            let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
            if frag != 0 {
                return Err(false); // a later fragment: not a TCP header
            }
            let s = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
            let d = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
            (s.into(), d.into(), ip[9], ip.get(ihl..end).ok_or(true)?)
        }
        6 => {
            if ip.len() < 40 {
                return Err(true);
            }
            let plen = u16::from_be_bytes([ip[4], ip[5]]) as usize;
            let mut next = ip[6];
            let s: [u8; 16] = ip[8..24].try_into().map_err(|_| true)?;
            let d: [u8; 16] = ip[24..40].try_into().map_err(|_| true)?;
            let end = (40 + plen).min(ip.len());
            let mut off = 40;
            // Skip extension headers: hop-by-hop, routing, destination options.
            while matches!(next, 0 | 43 | 60) {
                let h = ip.get(off..off + 2).ok_or(true)?;
                next = h[0];
                off += (h[1] as usize + 1) * 8;
            }
            (Ipv6Addr::from(s).into(), Ipv6Addr::from(d).into(), next, ip.get(off..end).ok_or(true)?)
        }
        _ => return Err(false),
    };
    if proto != 6 {
        return Err(false);
    }
    if l4.len() < 20 {
        return Err(true);
    }
    let data_off = ((l4[12] >> 4) as usize) * 4;
    if data_off < 20 || data_off > l4.len() {
        return Err(true);
    }
    let flags = l4[13];
    Ok(Segment {
        ts_us,
        src: (src, u16::from_be_bytes([l4[0], l4[1]])),
        dst: (dst, u16::from_be_bytes([l4[2], l4[3]])),
        seq: u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]),
        syn: flags & 0x02 != 0,
        ack: flags & 0x10 != 0,
        fin: flags & 0x01 != 0,
        rst: flags & 0x04 != 0,
        payload: &l4[data_off..],
    })
}

/// Reads every TCP segment of a capture, in file order, into `each`.
pub fn for_each_segment(path: &Path, mut each: impl FnMut(Segment<'_>)) -> Result<PacketStats, DecodeError> {
    let head = crate::sniff::head(path, 64)?;
    if !head.is_empty() && !crate::sniff::looks_like(&head).contains("pcap") {
        return Err(crate::sniff::wrong(path, "a pcap or pcapng capture", &head));
    }
    let f = std::fs::File::open(path).map_err(DecodeError::io(path))?;
    for_each_segment_in(f, &path.display().to_string(), &mut each)
}

/// What a capture said of its links: pcap's one, or pcapng's per interface.
struct Links {
    legacy: i32,
    /// pcap: timestamps in nanoseconds.
    nanos: bool,
    /// pcapng: per interface, link type and timestamp resolution/offset.
    ifaces: Vec<(i32, u64, i64)>,
}

impl Links {
    /// One block: a header noted, a packet handed on with its time (µs).
    #[inline]
    fn block(&mut self, block: PcapBlockOwned<'_>, stats: &mut PacketStats, each: &mut dyn FnMut(Segment<'_>)) {
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                self.legacy = h.network.0;
                self.nanos = h.is_nanosecond_precision();
            }
            PcapBlockOwned::Legacy(b) => {
                let ts =
                    b.ts_sec as i64 * 1_000_000 + if self.nanos { b.ts_usec as i64 / 1000 } else { b.ts_usec as i64 };
                handle(stats, self.legacy, ts, b.data, each);
            }
            PcapBlockOwned::NG(Block::SectionHeader(_)) => self.ifaces.clear(),
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                self.ifaces.push((idb.linktype.0, idb.ts_resolution().unwrap_or(1_000_000), idb.ts_offset()));
            }
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                let (link, res, off) = self.ifaces.get(epb.if_id as usize).copied().unwrap_or((ETHERNET, 1_000_000, 0));
                let raw = ((epb.ts_high as u64) << 32) | epb.ts_low as u64;
                let ts = (raw as u128 * 1_000_000 / res.max(1) as u128) as i64 + off * 1_000_000;
                let data = &epb.data[..(epb.caplen as usize).min(epb.data.len())];
                handle(stats, link, ts, data, each);
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                let link = self.ifaces.first().map(|i| i.0).unwrap_or(ETHERNET);
                handle(stats, link, 0, spb.data, each);
            }
            PcapBlockOwned::NG(_) => {}
        }
    }
}

pub fn for_each_segment_in(
    r: impl Read + Send,
    name: &str,
    each: &mut dyn FnMut(Segment<'_>),
) -> Result<PacketStats, DecodeError> {
    let mut reader = match pcap_parser::create_reader(1 << 20, r) {
        Ok(r) => r,
        Err(PcapError::Eof) => {
            return Err(DecodeError::format(name, "", "empty file, expected a pcap or pcapng capture"))
        }
        Err(_) => {
            return Err(DecodeError::format(name, "at byte 0: ", "not a pcap or pcapng file (unknown magic number)"))
        }
    };
    let mut stats = PacketStats::default();
    let mut links = Links { legacy: ETHERNET, nanos: false, ifaces: Vec::new() };
    let mut consumed: u64 = 0;
    loop {
        match reader.next() {
            Ok((offset, block)) => {
                links.block(block, &mut stats, each);
                consumed += offset as u64;
                reader.consume(offset);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => {
                if reader.refill().is_err() {
                    return Err(DecodeError::format(name, format!("at byte {consumed}: "), "read error"));
                }
                if reader.reader_exhausted() {
                    // Nothing more to read: either a clean end, or a record cut short.
                    match reader.next() {
                        Err(PcapError::Incomplete(_)) => {
                            stats.file_truncated = !reader.data().is_empty();
                            break;
                        }
                        Err(PcapError::Eof) => break,
                        _ => continue,
                    }
                }
            }
            Err(PcapError::UnexpectedEof) => {
                stats.file_truncated = true;
                break;
            }
            Err(PcapError::BufferTooSmall) => {
                return Err(DecodeError::format(name, format!("at byte {consumed}: "), "a record larger than 1 MiB"))
            }
            Err(e) => {
                return Err(DecodeError::format(
                    name,
                    format!("at byte {consumed}: "),
                    format!("corrupt record ({e:?})"),
                ))
            }
        }
    }
    Ok(stats)
}

fn handle(stats: &mut PacketStats, link: i32, ts: i64, data: &[u8], each: &mut dyn FnMut(Segment<'_>)) {
    stats.packets += 1;
    let Some(ip) = link_payload(link, data) else {
        if matches!(link, ETHERNET | SLL | SLL2 | NULL | LOOP) {
            stats.not_tcp += 1;
        } else {
            stats.unknown_link += 1;
        }
        return;
    };
    match parse_tcp(ts, ip) {
        Ok(seg) => {
            stats.tcp_segments += 1;
            each(seg);
        }
        Err(true) => stats.truncated += 1,
        Err(false) => stats.not_tcp += 1,
    }
}
