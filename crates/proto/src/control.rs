//! Control records: what a throughput test's control session carries.
//!
//! A throughput test (`stream`, `udp-max`) is one control session (mode 3)
//! plus any number of data sessions: TCP sinks and sources (modes 4 and 5)
//! and UDP stream datagrams (kind 4), all naming the test id the responder
//! gave in its Welcome ([`ServerRecord::Welcome`]). The data sessions carry
//! pure payload; counting happens in the responder, and the client asks for
//! the counts over the control session whenever its own interval ends
//! ([`ClientRecord::Snapshot`]), so the responder needs no timer at all and
//! both sides' counts are taken within one one-way delay of each other.
//!
//! Every record starts with a 4-byte head:
//! ```text
//! offset size field
//!      0    2 type
//!      2    2 length of the whole record in bytes, head included (>= 4)
//! ```
//! Client to responder: Snapshot (1) and Stop (2), 8 bytes each, with a
//! 32-bit request id at offset 4 that the answer echoes. Responder to
//! client: Welcome (16, 8 bytes, test id at offset 4) once after the status
//! record, and Report (17, [`REPORT_LEN`] bytes) per Snapshot or Stop.
//! A record of a type the reader does not know is skipped by its length.

use crate::{be16, be32, be64};

/// Length of the type/length head of every record.
pub const HEAD_LEN: usize = 4;
/// Length of Snapshot, Stop and Welcome records.
pub const SHORT_LEN: usize = 8;
/// Length of a version 1 Report record.
pub const REPORT_LEN: usize = 128;

/// Record type: client asks for the counters now.
pub const T_SNAPSHOT: u16 = 1;
/// Record type: client ends the test.
pub const T_STOP: u16 = 2;
/// Record type: responder names the test id.
pub const T_WELCOME: u16 = 16;
/// Record type: responder's counters.
pub const T_REPORT: u16 = 17;

/// Report flag: this is the answer to Stop, sent after every data session
/// of the test has ended (or the drain deadline passed).
pub const FLAG_FINAL: u8 = 1;
/// Report flag: the CPU fields are valid.
pub const FLAG_CPU: u8 = 2;
/// Report flag: the TCP_INFO fields are valid.
pub const FLAG_TCP_INFO: u8 = 4;
/// Report flag: the final report was sent at the drain deadline with data
/// sessions still open (their last bytes may be missing).
pub const FLAG_DRAIN_TIMEOUT: u8 = 8;

/// Why bytes are not a control record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// Not all of the record has arrived; read more.
    Truncated,
    /// The length field is below the head length or below what the type
    /// needs: the stream cannot be resynchronised.
    BadLength(u16),
}

/// A record the client sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientRecord {
    /// Answer with a Report of the counters as they are now.
    Snapshot(u32),
    /// Stop the test's sources, wait for its data sessions to end, answer
    /// with a final Report.
    Stop(u32),
    /// A type this side does not know (skipped).
    Unknown(u16),
}

/// A record the responder sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerRecord {
    /// The test id data sessions must name.
    Welcome(u32),
    /// Counters.
    Report(Report),
    /// A type this side does not know (skipped).
    Unknown(u16),
}

/// The responder's counters for one test, cumulative since the Welcome.
///
/// ```text
/// offset size field
///      0    4 head (type 17, length 128)
///      4    4 request id (echoed from Snapshot or Stop)
///      8    1 flags (FLAG_*)
///      9    3 reserved (0)
///     12    4 data sessions that joined the test so far (TCP)
///     16    8 elapsed ns since the Welcome (responder's clock; 0 if none)
///     24    8 TCP bytes received by sink sessions
///     32    8 TCP bytes sent by source sessions
///     40    8 UDP stream datagrams received (valid, duplicates excluded)
///     48    8 UDP stream payload bytes received (whole datagrams)
///     56    8 UDP datagrams expected (sum over streams of highest seq + 1)
///     64    8 UDP duplicates
///     72    8 UDP datagrams that arrived after a higher sequence number
///     80    8 UDP jitter ns (RFC 3550 estimate; the largest of the streams)
///     88    4 TCP retransmitted segments (sum over source sessions)
///     92    4 TCP congestion window bytes (sum over source sessions)
///     96    4 TCP smoothed RTT us (mean over source sessions)
///    100    4 reserved (0)
///    104    8 responder CPU time in user mode, ns since the Welcome
///    112    8 responder CPU time in the kernel, ns since the Welcome
///    120    8 reserved (0)
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The request this answers.
    pub id: u32,
    /// FLAG_* bits.
    pub flags: u8,
    /// TCP data sessions that joined the test so far.
    pub sessions: u32,
    /// Responder time since the Welcome, ns.
    pub elapsed_ns: u64,
    /// Bytes received by sink sessions.
    pub tcp_rx_bytes: u64,
    /// Bytes sent by source sessions.
    pub tcp_tx_bytes: u64,
    /// UDP stream datagrams received (without duplicates).
    pub udp_datagrams: u64,
    /// UDP stream bytes received.
    pub udp_bytes: u64,
    /// UDP datagrams the sequence numbers say were sent.
    pub udp_expected: u64,
    /// UDP duplicates.
    pub udp_duplicates: u64,
    /// UDP datagrams that arrived out of order.
    pub udp_reordered: u64,
    /// RFC 3550 interarrival jitter, ns.
    pub udp_jitter_ns: u64,
    /// Retransmitted segments of source sessions.
    pub tcp_retransmits: u32,
    /// Congestion windows of source sessions, bytes, summed.
    pub tcp_cwnd_bytes: u32,
    /// Smoothed RTT of source sessions, us, averaged.
    pub tcp_rtt_us: u32,
    /// Responder user CPU, ns.
    pub cpu_user_ns: u64,
    /// Responder kernel CPU, ns.
    pub cpu_sys_ns: u64,
}

impl Report {
    /// UDP datagrams lost: expected but never received.
    pub fn udp_lost(&self) -> u64 {
        self.udp_expected.saturating_sub(self.udp_datagrams)
    }

    /// Whether a flag bit is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// The record's bytes.
    pub fn emit(&self) -> [u8; REPORT_LEN] {
        let mut b = [0u8; REPORT_LEN];
        put_head(&mut b, T_REPORT, REPORT_LEN);
        b[4..8].copy_from_slice(&self.id.to_be_bytes());
        b[8] = self.flags;
        b[12..16].copy_from_slice(&self.sessions.to_be_bytes());
        let wide = [
            self.elapsed_ns,
            self.tcp_rx_bytes,
            self.tcp_tx_bytes,
            self.udp_datagrams,
            self.udp_bytes,
            self.udp_expected,
            self.udp_duplicates,
            self.udp_reordered,
            self.udp_jitter_ns,
        ];
        for (i, v) in wide.iter().enumerate() {
            b[16 + 8 * i..24 + 8 * i].copy_from_slice(&v.to_be_bytes());
        }
        b[88..92].copy_from_slice(&self.tcp_retransmits.to_be_bytes());
        b[92..96].copy_from_slice(&self.tcp_cwnd_bytes.to_be_bytes());
        b[96..100].copy_from_slice(&self.tcp_rtt_us.to_be_bytes());
        b[104..112].copy_from_slice(&self.cpu_user_ns.to_be_bytes());
        b[112..120].copy_from_slice(&self.cpu_sys_ns.to_be_bytes());
        b
    }

    fn parse_body(b: &[u8]) -> Report {
        Report {
            id: be32(b, 4),
            flags: b[8],
            sessions: be32(b, 12),
            elapsed_ns: be64(b, 16),
            tcp_rx_bytes: be64(b, 24),
            tcp_tx_bytes: be64(b, 32),
            udp_datagrams: be64(b, 40),
            udp_bytes: be64(b, 48),
            udp_expected: be64(b, 56),
            udp_duplicates: be64(b, 64),
            udp_reordered: be64(b, 72),
            udp_jitter_ns: be64(b, 80),
            tcp_retransmits: be32(b, 88),
            tcp_cwnd_bytes: be32(b, 92),
            tcp_rtt_us: be32(b, 96),
            cpu_user_ns: be64(b, 104),
            cpu_sys_ns: be64(b, 112),
        }
    }
}

fn put_head(b: &mut [u8], kind: u16, len: usize) {
    b[0..2].copy_from_slice(&kind.to_be_bytes());
    b[2..4].copy_from_slice(&(len as u16).to_be_bytes());
}

/// Reads the head and checks that the whole record is in `b`: returns the
/// type and the record length.
fn head(b: &[u8], min_len: impl Fn(u16) -> usize) -> Result<(u16, usize), RecordError> {
    if b.len() < HEAD_LEN {
        return Err(RecordError::Truncated);
    }
    let kind = be16(b, 0);
    let len = be16(b, 2);
    if (len as usize) < HEAD_LEN.max(min_len(kind)) {
        return Err(RecordError::BadLength(len));
    }
    if b.len() < len as usize {
        return Err(RecordError::Truncated);
    }
    Ok((kind, len as usize))
}

impl ClientRecord {
    /// Parses one record from the start of `b`; returns it and its length.
    pub fn parse(b: &[u8]) -> Result<(ClientRecord, usize), RecordError> {
        let (kind, len) = head(b, |k| match k {
            T_SNAPSHOT | T_STOP => SHORT_LEN,
            _ => HEAD_LEN,
        })?;
        let rec = match kind {
            T_SNAPSHOT => ClientRecord::Snapshot(be32(b, 4)),
            T_STOP => ClientRecord::Stop(be32(b, 4)),
            other => ClientRecord::Unknown(other),
        };
        Ok((rec, len))
    }

    /// The record's bytes (Unknown emits an empty record of its type).
    pub fn emit(&self) -> [u8; SHORT_LEN] {
        let mut b = [0u8; SHORT_LEN];
        let (kind, id) = match *self {
            ClientRecord::Snapshot(id) => (T_SNAPSHOT, id),
            ClientRecord::Stop(id) => (T_STOP, id),
            ClientRecord::Unknown(k) => (k, 0),
        };
        put_head(&mut b, kind, SHORT_LEN);
        b[4..8].copy_from_slice(&id.to_be_bytes());
        b
    }
}

impl ServerRecord {
    /// Parses one record from the start of `b`; returns it and its length.
    pub fn parse(b: &[u8]) -> Result<(ServerRecord, usize), RecordError> {
        let (kind, len) = head(b, |k| match k {
            T_WELCOME => SHORT_LEN,
            T_REPORT => REPORT_LEN,
            _ => HEAD_LEN,
        })?;
        let rec = match kind {
            T_WELCOME => ServerRecord::Welcome(be32(b, 4)),
            T_REPORT => ServerRecord::Report(Report::parse_body(b)),
            other => ServerRecord::Unknown(other),
        };
        Ok((rec, len))
    }
}

/// Length of a Welcome that carries the responder's limits.
pub const WELCOME_LIMITS_LEN: usize = 24;

/// The Welcome record for test `id` with the responder's limits
/// (docs/protocol.md 8.1): offset 8 longest test in s, 12 tests per client
/// address, 16 highest rate in bit/s (u64), each 0 for none. A client that
/// knows only the 8-byte Welcome skips the rest by the record's length.
pub fn welcome_limits(id: u32, a: &crate::admit::Advertised) -> [u8; WELCOME_LIMITS_LEN] {
    let mut b = [0u8; WELCOME_LIMITS_LEN];
    put_head(&mut b, T_WELCOME, WELCOME_LIMITS_LEN);
    b[4..8].copy_from_slice(&id.to_be_bytes());
    b[8..12].copy_from_slice(&a.max_test_s.to_be_bytes());
    b[12..16].copy_from_slice(&a.max_tests_per_client.to_be_bytes());
    b[16..24].copy_from_slice(&a.max_rate_bps.to_be_bytes());
    b
}

/// The limits in a whole Welcome record `b` (none in an 8-byte one).
pub fn parse_welcome_limits(b: &[u8]) -> crate::admit::Advertised {
    if b.len() < WELCOME_LIMITS_LEN {
        return crate::admit::Advertised::default();
    }
    crate::admit::Advertised {
        max_test_s: be32(b, 8),
        max_tests_per_client: be32(b, 12),
        max_rate_bps: be64(b, 16),
    }
}

/// The Welcome record for test `id`.
pub fn welcome(id: u32) -> [u8; SHORT_LEN] {
    let mut b = [0u8; SHORT_LEN];
    put_head(&mut b, T_WELCOME, SHORT_LEN);
    b[4..8].copy_from_slice(&id.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_round_trip() {
        let r = Report {
            id: 7,
            flags: FLAG_FINAL | FLAG_CPU,
            sessions: 2,
            elapsed_ns: 1_000_000_001,
            tcp_rx_bytes: 1 << 40,
            tcp_tx_bytes: 3,
            udp_datagrams: 4,
            udp_bytes: 5,
            udp_expected: 9,
            udp_duplicates: 6,
            udp_reordered: 7,
            udp_jitter_ns: 8,
            tcp_retransmits: 9,
            tcp_cwnd_bytes: 10,
            tcp_rtt_us: 11,
            cpu_user_ns: 12,
            cpu_sys_ns: 13,
        };
        let b = r.emit();
        assert_eq!(ServerRecord::parse(&b), Ok((ServerRecord::Report(r), REPORT_LEN)));
        assert_eq!(r.udp_lost(), 5);
        assert_eq!(ServerRecord::parse(&b[..100]), Err(RecordError::Truncated));
    }

    #[test]
    fn short_records_and_unknown_types() {
        let s = ClientRecord::Snapshot(3).emit();
        assert_eq!(ClientRecord::parse(&s), Ok((ClientRecord::Snapshot(3), 8)));
        let w = welcome(42);
        assert_eq!(ServerRecord::parse(&w), Ok((ServerRecord::Welcome(42), 8)));
        // An unknown type of length 6 is skipped whole.
        let u = [0, 99, 0, 6, 1, 2, 0xff];
        assert_eq!(ClientRecord::parse(&u), Ok((ClientRecord::Unknown(99), 6)));
        // A Snapshot claiming 4 bytes cannot hold its id.
        assert_eq!(ClientRecord::parse(&[0, 1, 0, 4]), Err(RecordError::BadLength(4)));
        assert_eq!(ClientRecord::parse(&[0, 9, 0, 2]), Err(RecordError::BadLength(2)));
    }
}
