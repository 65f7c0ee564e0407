//! The status record: the responder's answer to a session header.
//!
//! ```text
//! offset size field
//!      0    4 magic "SMTR"
//!      4    1 the responder's protocol version
//!      5    1 code: 0 = accepted, otherwise a [`Refusal`]
//!      6    2 reason length N (0 when accepted, at most 255)
//!      8    N reason, UTF-8 text for a human, no terminator
//! ```
//! After a refusal the responder closes the connection. After acceptance
//! the data phase begins.

use crate::be16;

/// Length of the fixed part of a status record.
pub const STATUS_PREFIX_LEN: usize = 8;
/// Longest reason a responder sends; longer text is cut at a UTF-8 boundary.
pub const MAX_REASON_LEN: usize = 255;
/// Longest whole status record.
pub const MAX_STATUS_LEN: usize = STATUS_PREFIX_LEN + MAX_REASON_LEN;

/// Why a responder refused a session. The numbers are wire values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Refusal {
    /// The header did not start with the magic.
    BadMagic = 1,
    /// The client's protocol version is not one the responder speaks; the
    /// record's version byte says which one it does.
    UnsupportedVersion = 2,
    /// The mode is not one the responder implements.
    UnknownMode = 3,
    /// The header length or a field value is invalid.
    BadHeader = 4,
    /// A size exceeds the responder's configured message limit.
    TooLarge = 5,
    /// The responder already runs its maximum number of sessions.
    Busy = 6,
    /// The header did not arrive within the responder's header timeout.
    HeaderTimeout = 7,
    /// The responder could not set the session up (out of resources).
    Internal = 8,
    /// A sink or source session named a test id no control session owns.
    UnknownTest = 9,
    /// The responder needs a shared secret: the header did not ask to
    /// authenticate, or its proof was wrong (docs/protocol.md section 10).
    /// Codes 10 and 11 are object-mode responses, not status codes.
    Auth = 12,
    /// A limit the responder's operator set for each client address
    /// (tests at once, sessions waiting for their header, connections per
    /// second) or for a test (docs/protocol.md 5.1); the reason names it.
    Limit = 13,
}

impl Refusal {
    /// The refusal for a wire code, if version 1 defines it.
    pub fn from_u8(v: u8) -> Option<Refusal> {
        Some(match v {
            1 => Refusal::BadMagic,
            2 => Refusal::UnsupportedVersion,
            3 => Refusal::UnknownMode,
            4 => Refusal::BadHeader,
            5 => Refusal::TooLarge,
            6 => Refusal::Busy,
            7 => Refusal::HeaderTimeout,
            8 => Refusal::Internal,
            9 => Refusal::UnknownTest,
            12 => Refusal::Auth,
            13 => Refusal::Limit,
            _ => return None,
        })
    }

    /// A short lower-case name for logs and error messages.
    pub fn name(self) -> &'static str {
        match self {
            Refusal::BadMagic => "bad magic",
            Refusal::UnsupportedVersion => "unsupported version",
            Refusal::UnknownMode => "unknown mode",
            Refusal::BadHeader => "bad header",
            Refusal::TooLarge => "too large",
            Refusal::Busy => "busy",
            Refusal::HeaderTimeout => "header timeout",
            Refusal::Internal => "internal error",
            Refusal::UnknownTest => "unknown test",
            Refusal::Auth => "authentication",
            Refusal::Limit => "limit",
        }
    }
}

/// The fixed part of a status record, as parsed by a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusPrefix {
    /// The responder's protocol version.
    pub version: u8,
    /// 0 for accepted, otherwise a refusal code (possibly one this side
    /// does not know: keep the number).
    pub code: u8,
    /// Bytes of reason text that follow.
    pub reason_len: u16,
}

/// Why bytes from a responder are not a status record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusError {
    /// Fewer than [`STATUS_PREFIX_LEN`] bytes.
    Truncated,
    /// The magic is wrong: the peer is not a stackmeter responder.
    BadMagic,
    /// The reason length is above [`MAX_REASON_LEN`].
    BadLength(u16),
}

impl StatusPrefix {
    /// Parses the fixed eight bytes; the caller then reads `reason_len` more.
    pub fn parse(bytes: &[u8]) -> Result<StatusPrefix, StatusError> {
        if bytes.len() < STATUS_PREFIX_LEN {
            return Err(StatusError::Truncated);
        }
        if bytes[0..4] != crate::TCP_MAGIC {
            return Err(StatusError::BadMagic);
        }
        let reason_len = be16(bytes, 6);
        if reason_len as usize > MAX_REASON_LEN {
            return Err(StatusError::BadLength(reason_len));
        }
        Ok(StatusPrefix {
            version: bytes[4],
            code: bytes[5],
            reason_len,
        })
    }

    /// True when the session was accepted.
    pub fn accepted(&self) -> bool {
        self.code == 0
    }
}

/// Writes the status record "accepted" into `out` and returns its length.
pub fn emit_accepted(out: &mut [u8; STATUS_PREFIX_LEN]) -> usize {
    out[0..4].copy_from_slice(&crate::TCP_MAGIC);
    out[4] = crate::VERSION;
    out[5] = 0;
    out[6..8].copy_from_slice(&0u16.to_be_bytes());
    STATUS_PREFIX_LEN
}

/// Writes a refusal with `reason` (cut to [`MAX_REASON_LEN`] bytes at a
/// character boundary) into `out` and returns the record's length.
pub fn emit_refusal(refusal: Refusal, reason: &str, out: &mut [u8; MAX_STATUS_LEN]) -> usize {
    let mut n = reason.len().min(MAX_REASON_LEN);
    while !reason.is_char_boundary(n) {
        n -= 1;
    }
    out[0..4].copy_from_slice(&crate::TCP_MAGIC);
    out[4] = crate::VERSION;
    out[5] = refusal as u8;
    out[6..8].copy_from_slice(&(n as u16).to_be_bytes());
    out[8..8 + n].copy_from_slice(&reason.as_bytes()[..n]);
    STATUS_PREFIX_LEN + n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_round_trip() {
        let mut b = [0u8; STATUS_PREFIX_LEN];
        assert_eq!(emit_accepted(&mut b), 8);
        let p = StatusPrefix::parse(&b).unwrap();
        assert!(p.accepted());
        assert_eq!(p.reason_len, 0);
    }

    #[test]
    fn refusal_round_trip_and_cut() {
        let mut b = [0u8; MAX_STATUS_LEN];
        let long = "é".repeat(200); // 400 bytes, two per char
        let n = emit_refusal(Refusal::TooLarge, &long, &mut b);
        assert_eq!(n, 8 + 254);
        let p = StatusPrefix::parse(&b[..n]).unwrap();
        assert_eq!(Refusal::from_u8(p.code), Some(Refusal::TooLarge));
        assert!(core::str::from_utf8(&b[8..n]).is_ok());
    }

    #[test]
    fn every_code_maps_back() {
        for c in (1..=9u8).chain([12, 13]) {
            assert_eq!(Refusal::from_u8(c).map(|r| r as u8), Some(c));
        }
        assert_eq!(Refusal::from_u8(0), None);
        assert_eq!(Refusal::from_u8(10), None);
        assert_eq!(Refusal::from_u8(14), None);
    }
}
