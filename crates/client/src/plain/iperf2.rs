//! The client side of iperf 2's TCP test, as far as a server needs it:
//! the settings header an iperf 2 client writes first on every
//! connection. `iperf -s` (iperf 2), lwIP's lwiperf and Zephyr's zperf
//! read it, then count every byte up to the client's close.
//!
//! Version 1 of the header, 24 bytes, each field a big-endian 32-bit word
//! (written byte by byte here, never as a C struct):
//!
//! | offset | field | what stackmeter sends |
//! |---|---|---|
//! | 0 | flags | `0`: no "dual" test. Bit 31 (`0x80000000`) would ask the server to connect back and send (`-d`/`-r`); newer clients set bit 30 for an extended header. A server that sees neither treats the connection as data only. |
//! | 4 | number of threads | `--parallel` |
//! | 8 | port for the dual test | `0` |
//! | 12 | buffer length | `--length` (the client's write size) |
//! | 16 | window / UDP rate | `0` (the server's default) |
//! | 20 | amount | negative: the test's length in 10 ms units (`-t`, as two's complement); positive: bytes (`-n`) |
//!
//! The header counts as data on the server (iperf 2.1.8 counts all but
//! the first 4 bytes of it); stackmeter sends it before the measured window.
//!
//! UDP (`iperf -s -u`): every datagram starts with a 16-byte datagram
//! header, then the same settings header (flags 0), then payload:
//!
//! | offset | field |
//! |---|---|
//! | 0 | sequence number, low 32 bits (signed), from 1 |
//! | 4 | send time, seconds |
//! | 8 | send time, microseconds |
//! | 12 | sequence number, high 32 bits |
//!
//! The end is a FIN: a datagram whose sequence number is negative (the
//! next one, negated), sent until the server answers with its report, at
//! most 10 times, 250 ms apart. The report is a datagram whose bytes
//! 16..56 hold the server's counts (big-endian 32-bit words): flags (bit
//! 31 set), total
//! bytes (high, low), the stop time (seconds, microseconds since the
//! first datagram), datagrams lost, datagrams out of order, datagrams
//! expected (the highest sequence number seen, the FIN's included), and
//! the RFC 1889 jitter (seconds, microseconds).

use crate::throughput::udp_sender::Framing;
use std::io;
use std::net::UdpSocket;
use std::time::Duration;

/// Bytes of the version-1 settings header.
pub const SETTINGS_LEN: usize = 24;

/// What the settings header tells the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Connections the client opens.
    pub threads: u32,
    /// Bytes per write.
    pub buffer_len: u32,
    /// The test's planned length, in 10 ms units.
    pub time_10ms: u32,
}

impl Settings {
    /// The header for a test of `seconds` with `threads` connections of
    /// `buffer_len`-byte writes.
    pub fn new(threads: u32, buffer_len: u32, seconds: f64) -> Settings {
        Settings {
            threads,
            buffer_len,
            time_10ms: (seconds * 100.0).ceil().clamp(1.0, i32::MAX as f64) as u32,
        }
    }

    /// The 24 bytes on the wire.
    pub fn emit(&self) -> [u8; SETTINGS_LEN] {
        let amount = (self.time_10ms as i32).wrapping_neg() as u32;
        let words = [0u32, self.threads, 0, self.buffer_len, 0, amount];
        let mut out = [0u8; SETTINGS_LEN];
        for (i, w) in words.iter().enumerate() {
            out[i * 4..i * 4 + 4].copy_from_slice(&w.to_be_bytes());
        }
        out
    }
}

/// Bytes of the UDP datagram header.
pub const DATAGRAM_LEN: usize = 16;
/// The smallest datagram: datagram header and settings header.
pub const UDP_MIN: usize = DATAGRAM_LEN + SETTINGS_LEN;
/// Bit 31 of a report's flags (iperf 2's `HEADER_VERSION1`).
const REPORT_FLAG: u64 = 0x8000_0000;
/// FINs sent before giving up on the server's report.
const FIN_TRIES: u32 = 10;
/// How long each FIN waits for the report.
const FIN_WAIT: Duration = Duration::from_millis(250);

/// iperf 2's datagrams as a UDP sender writes them: datagram `seq` (from
/// 0) is iperf 2's `seq + 1`, stamped with the wall clock; the settings
/// header after it stays zero (no flags).
pub(crate) struct Frames;

impl Framing for Frames {
    const HEADER_LEN: usize = UDP_MIN;

    #[inline]
    fn frame(&self, seq: u64, d: &mut [u8]) {
        stamp(d, seq as i64 + 1, stackmeter_sys::wall_ns());
    }
}

/// Writes datagram `seq`'s header (sent at `ns` on the wall clock) into
/// `buf`; a negative `seq` is a FIN.
pub fn stamp(buf: &mut [u8], seq: i64, ns: u64) {
    let (sec, usec) = ((ns / 1_000_000_000) as u32, ((ns % 1_000_000_000) / 1000) as u32);
    let words = [seq as u32, sec, usec, (seq >> 32) as u32];
    for (i, w) in words.iter().enumerate() {
        buf[i * 4..i * 4 + 4].copy_from_slice(&w.to_be_bytes());
    }
}

/// The counts an iperf 2 server reports at the end of a UDP test.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerReport {
    /// Bytes received.
    pub bytes: u64,
    /// Seconds from its first datagram to the FIN.
    pub seconds: f64,
    /// Datagrams lost (by sequence number).
    pub lost: u64,
    /// Datagrams that arrived out of order.
    pub out_of_order: u64,
    /// Datagrams expected: the highest sequence number, the FIN's included.
    pub datagrams: u64,
    /// Interarrival jitter, microseconds.
    pub jitter_us: f64,
}

impl ServerReport {
    /// Reads a report datagram; `None` when it is too short to be one or
    /// its flags lack bit 31 (every report has it; a FIN that an echo
    /// server sent back has flags 0).
    pub fn parse(d: &[u8]) -> Option<ServerReport> {
        let w = |i: usize| -> Option<u64> {
            let at = DATAGRAM_LEN + 4 * i;
            Some(u32::from_be_bytes(d.get(at..at + 4)?.try_into().ok()?) as u64)
        };
        if w(0)? & REPORT_FLAG == 0 {
            return None;
        }
        Some(ServerReport {
            bytes: (w(1)? << 32) | w(2)?,
            seconds: w(3)? as f64 + w(4)? as f64 / 1e6,
            lost: w(5)?,
            out_of_order: w(6)?,
            datagrams: w(7)?,
            jitter_us: w(8)? as f64 * 1e6 + w(9)? as f64,
        })
    }
}

/// Ends a UDP test on `sock` whose last datagram was `last_seq`: sends
/// FINs (a copy of `buf` with a negative sequence number) until the
/// server's report comes, at most 10 times. `None` when none came.
pub fn finish(sock: &UdpSocket, buf: &mut [u8], last_seq: i64) -> io::Result<Option<ServerReport>> {
    sock.set_read_timeout(Some(FIN_WAIT))?;
    let mut rx = [0u8; 512];
    for k in 0..FIN_TRIES as i64 {
        stamp(buf, -(last_seq + 1 + k), stackmeter_sys::wall_ns());
        sock.send(buf)?;
        match sock.recv(&mut rx) {
            Ok(n) => {
                if let Some(r) = ServerReport::parse(&rx[..n]) {
                    return Ok(Some(r));
                }
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_second_single_thread_header() {
        // What iperf 2 writes for `-t 1 -l 1K` (flags aside), as captured
        // from `iperf -c`: threads 1, buffer 0x400, amount -100.
        let h = Settings::new(1, 1024, 1.0).emit();
        assert_eq!(
            h,
            [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x9c]
        );
        assert_eq!(Settings::new(4, 128 << 10, 10.5).time_10ms, 1050);
    }

    #[test]
    fn datagram_headers_and_a_report_as_iperf_2_1_8_writes_them() {
        let mut b = [0u8; 16];
        stamp(&mut b, 1, 1_700_000_000_123_456_789);
        assert_eq!(&b[..4], &[0, 0, 0, 1]);
        assert_eq!(u32::from_be_bytes(b[8..12].try_into().unwrap()), 123_456);
        stamp(&mut b, -291, 0);
        assert_eq!(&b[..4], &[0xff, 0xff, 0xfe, 0xdd]);
        assert_eq!(&b[12..16], &[0xff; 4], "the high word of a FIN");
        // Captured from `iperf -s -u -e` (2.1.8) after 1000 datagrams of
        // 1470 bytes and one FIN.
        let hex = "00000000000000000000000000000000c800000000000000001673ee0000000000091b780000000000000000000003e90000000000000004";
        let d: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let r = ServerReport::parse(&d).unwrap();
        assert_eq!((r.bytes, r.lost, r.out_of_order, r.datagrams), (1_471_470, 0, 0, 1001));
        assert!((r.seconds - 0.596856).abs() < 1e-9 && r.jitter_us == 4.0, "{r:?}");
        assert!(ServerReport::parse(&d[..40]).is_none());
        let mut fin = [0u8; UDP_MIN + 40];
        stamp(&mut fin, -5, 0);
        assert!(ServerReport::parse(&fin).is_none(), "an echoed FIN is no report");
    }
}
