//! The TCP session header: the first bytes of every TCP connection.
//!
//! A client opens a connection, sends this header once, reads the
//! responder's [`crate::status`] record, and from then on the connection
//! carries pure payload: a 1-byte request is one byte on the wire.
//!
//! ```text
//! offset size field
//!      0    4 magic "SMTR" (53 4d 54 52)
//!      4    1 version (1)
//!      5    1 mode (1 = rr, 2 = crr, 3 = control, 4 = sink, 5 = source)
//!      6    2 header length in bytes, this prefix included (16 in v1)
//!      8    4 rr/crr: request size (>= 1); sink/source: test id (>= 1)
//!     12    4 rr/crr: response size (>= 1); source: write size (>= 1);
//!               sink: read size hint (0 = the responder's choice)
//!     16    4 flags (header length 24 and up): bit 0 = stamps requested (rr),
//!               bit 1 = the client authenticates (crate::auth)
//!     20    4 reserved, 0
//! ```
//! A header without flags is 16 bytes long, as version 1 always had it; a
//! client sets a flag by sending the 24-byte header (header length 24),
//! which responders that know no flags read and ignore past offset 16.
//! All integers are big-endian. The first eight bytes (the [`Prefix`]) keep
//! this layout in every version, so any responder can read a header of a
//! version it does not know and refuse it by name.

use crate::{be16, be32};

/// The four bytes every TCP session header starts with.
pub const MAGIC: [u8; 4] = crate::TCP_MAGIC;
/// Length of the version-independent prefix.
pub const PREFIX_LEN: usize = 8;
/// Length of a version 1 rr/crr header.
pub const RR_HEADER_LEN: usize = 16;
/// Length of a header that carries the flags word.
pub const EXT_HEADER_LEN: usize = 24;
/// Header flag (rr): start every response with a stamp block
/// ([`crate::stamps`]).
pub const FLAG_STAMPS: u32 = 1;
/// Header flag bit 1: the client has a shared secret and answers a
/// challenge (docs/protocol.md section 10, [`crate::auth`]).
pub const FLAG_AUTH: u32 = 2;
/// Largest header length a responder accepts; longer ones are refused.
pub const MAX_HEADER_LEN: u16 = 256;

/// What a session does after the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// Request/response, repeated until the client closes: read the request
    /// size, write the response size, again.
    Rr = 1,
    /// Connect/request/response: one transaction, then the client closes.
    /// The responder writes the status record and the response together.
    Crr = 2,
    /// The control session of a throughput test: carries
    /// [`crate::control`] records, no payload. Both size fields are 0.
    Control = 3,
    /// A data session that only receives: the client sends, the responder
    /// reads and counts until end of stream ("up").
    Sink = 4,
    /// A data session that only sends: the responder writes `resp_size`
    /// bytes at a time until the test is stopped ("down").
    Source = 5,
}

impl Mode {
    /// The mode for a wire number, if version 1 defines it.
    pub fn from_u8(v: u8) -> Option<Mode> {
        match v {
            1 => Some(Mode::Rr),
            2 => Some(Mode::Crr),
            3 => Some(Mode::Control),
            4 => Some(Mode::Sink),
            5 => Some(Mode::Source),
            _ => None,
        }
    }
}

/// Why a session header was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Fewer bytes than the header needs; read more and try again.
    Truncated,
    /// The first four bytes are not "SMTR": not a stackmeter client.
    BadMagic,
    /// A version this implementation does not speak.
    UnsupportedVersion(u8),
    /// A mode number version 1 does not define.
    UnknownMode(u8),
    /// The header length field is below the minimum for its mode or above
    /// [`MAX_HEADER_LEN`].
    BadLength(u16),
    /// A request or response size of zero (neither side could tell when a
    /// transaction ends), or a zero test id or write size in a data session.
    ZeroSize,
}

/// The version-independent first eight bytes of a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix {
    /// Protocol version the client speaks.
    pub version: u8,
    /// Raw mode number (validated later, by version).
    pub mode: u8,
    /// Total header length, prefix included.
    pub header_len: u16,
}

impl Prefix {
    /// Checks the magic and the length bounds. The version is returned, not
    /// judged: a responder refuses an unknown version with its own code.
    pub fn parse(bytes: &[u8]) -> Result<Prefix, HeaderError> {
        if bytes.len() < PREFIX_LEN {
            return Err(HeaderError::Truncated);
        }
        if bytes[0..4] != MAGIC {
            return Err(HeaderError::BadMagic);
        }
        let header_len = be16(bytes, 6);
        if (header_len as usize) < PREFIX_LEN || header_len > MAX_HEADER_LEN {
            return Err(HeaderError::BadLength(header_len));
        }
        Ok(Prefix {
            version: bytes[4],
            mode: bytes[5],
            header_len,
        })
    }
}

/// A complete, valid version 1 session header.
///
/// The two 32-bit fields mean different things per mode: request and
/// response size for rr/crr; for sink and source sessions `req_size` holds
/// the test id (from the control session's welcome) and, for source,
/// `resp_size` the size of each write. A control header carries zeros.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionHeader {
    /// What the session does.
    pub mode: Mode,
    /// Bytes the client sends per transaction (rr/crr); test id (sink/source).
    pub req_size: u32,
    /// Bytes the responder sends back per transaction (rr/crr); write size
    /// (source).
    pub resp_size: u32,
    /// Flag bits ([`FLAG_STAMPS`]); 0 in a 16-byte header.
    pub flags: u32,
}

/// The bytes of an emitted header: 16, or 24 when it carries flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderBytes {
    buf: [u8; EXT_HEADER_LEN],
    len: u8,
}

impl core::ops::Deref for HeaderBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
}

impl SessionHeader {
    /// Parses a whole header: `bytes` must hold at least the length the
    /// prefix announces. The flags word is read when the header is at least
    /// 24 bytes long (unknown flag bits are ignored); other bytes past [`RR_HEADER_LEN`] and up to that
    /// length are reserved for later minor additions and ignored.
    pub fn parse(bytes: &[u8]) -> Result<SessionHeader, HeaderError> {
        let prefix = Prefix::parse(bytes)?;
        if prefix.version != crate::VERSION {
            return Err(HeaderError::UnsupportedVersion(prefix.version));
        }
        let mode = Mode::from_u8(prefix.mode).ok_or(HeaderError::UnknownMode(prefix.mode))?;
        if (prefix.header_len as usize) < RR_HEADER_LEN {
            return Err(HeaderError::BadLength(prefix.header_len));
        }
        if bytes.len() < prefix.header_len as usize {
            return Err(HeaderError::Truncated);
        }
        let req_size = be32(bytes, 8);
        let resp_size = be32(bytes, 12);
        let zero = match mode {
            Mode::Rr | Mode::Crr | Mode::Source => req_size == 0 || resp_size == 0,
            Mode::Sink => req_size == 0,
            Mode::Control => false,
        };
        if zero {
            return Err(HeaderError::ZeroSize);
        }
        let flags = if prefix.header_len as usize >= EXT_HEADER_LEN {
            be32(bytes, 16)
        } else {
            0
        };
        Ok(SessionHeader {
            mode,
            req_size,
            resp_size,
            flags,
        })
    }

    /// The header of a throughput test's control session.
    pub fn control() -> SessionHeader {
        SessionHeader {
            mode: Mode::Control,
            req_size: 0,
            resp_size: 0,
            flags: 0,
        }
    }

    /// The header of a data session of test `test_id`: a sink (client
    /// sends; `size` is the read size the responder should use, 0 for its
    /// own choice) or a source (responder sends `size` bytes per write).
    pub fn data(mode: Mode, test_id: u32, size: u32) -> SessionHeader {
        SessionHeader {
            mode,
            req_size: test_id,
            resp_size: size,
            flags: 0,
        }
    }

    /// The test a sink or source session belongs to.
    pub fn test_id(&self) -> u32 {
        self.req_size
    }

    /// The header bytes for this session: 16, or 24 with the flags word
    /// when a flag is set.
    pub fn emit(&self) -> HeaderBytes {
        emit(self.mode as u8, self.req_size, self.resp_size, self.flags)
    }
}

/// The header bytes of a session of mode number `mode` (a [`Mode`], or
/// object mode, `crate::objects`): 16, or 24 with the flags word when a
/// flag is set.
pub(crate) fn emit(mode: u8, req_size: u32, resp_size: u32, flags: u32) -> HeaderBytes {
    let mut b = [0u8; EXT_HEADER_LEN];
    let len = if flags == 0 { RR_HEADER_LEN } else { EXT_HEADER_LEN };
    b[0..4].copy_from_slice(&MAGIC);
    b[4] = crate::VERSION;
    b[5] = mode;
    b[6..8].copy_from_slice(&(len as u16).to_be_bytes());
    b[8..12].copy_from_slice(&req_size.to_be_bytes());
    b[12..16].copy_from_slice(&resp_size.to_be_bytes());
    b[16..20].copy_from_slice(&flags.to_be_bytes());
    HeaderBytes { buf: b, len: len as u8 }
}

impl HeaderError {
    /// The refusal code a responder sends for this error, or `None` for
    /// [`HeaderError::Truncated`] (which means "read more", not "refuse").
    pub fn refusal(self) -> Option<crate::status::Refusal> {
        use crate::status::Refusal;
        match self {
            HeaderError::Truncated => None,
            HeaderError::BadMagic => Some(Refusal::BadMagic),
            HeaderError::UnsupportedVersion(_) => Some(Refusal::UnsupportedVersion),
            HeaderError::UnknownMode(_) => Some(Refusal::UnknownMode),
            HeaderError::BadLength(_) | HeaderError::ZeroSize => Some(Refusal::BadHeader),
        }
    }
}

impl core::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HeaderError::Truncated => write!(f, "header truncated"),
            HeaderError::BadMagic => write!(f, "not a stackmeter session (bad magic)"),
            HeaderError::UnsupportedVersion(v) => {
                write!(
                    f,
                    "protocol version {v} not supported (this side speaks {})",
                    crate::VERSION
                )
            }
            HeaderError::UnknownMode(m) => write!(f, "unknown session mode {m}"),
            HeaderError::BadLength(l) => write!(f, "bad header length {l}"),
            HeaderError::ZeroSize => write!(f, "request and response sizes must be at least 1 byte"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut h = SessionHeader {
            mode: Mode::Rr,
            req_size: 1,
            resp_size: 1 << 20,
            flags: 0,
        };
        assert_eq!(h.emit().len(), 16);
        assert_eq!(SessionHeader::parse(&h.emit()), Ok(h));
        h.flags = FLAG_STAMPS;
        let b = h.emit();
        assert_eq!((b.len(), b[7], b[19]), (24, 24, 1));
        assert_eq!(SessionHeader::parse(&b), Ok(h));
    }

    #[test]
    fn extra_reserved_bytes_are_ignored() {
        let h = SessionHeader {
            mode: Mode::Crr,
            req_size: 7,
            resp_size: 9,
            flags: 0,
        };
        let mut long = [0xeeu8; 20];
        long[..16].copy_from_slice(&h.emit());
        long[6..8].copy_from_slice(&20u16.to_be_bytes());
        assert_eq!(SessionHeader::parse(&long), Ok(h));
        assert_eq!(SessionHeader::parse(&long[..16]), Err(HeaderError::Truncated));
    }

    #[test]
    fn errors_are_named() {
        let mut b = SessionHeader {
            mode: Mode::Rr,
            req_size: 1,
            resp_size: 1,
            flags: 0,
        }
        .emit()
        .to_vec();
        b[4] = 2;
        assert_eq!(SessionHeader::parse(&b), Err(HeaderError::UnsupportedVersion(2)));
        b[4] = 1;
        b[5] = 9;
        assert_eq!(SessionHeader::parse(&b), Err(HeaderError::UnknownMode(9)));
        b[5] = 4;
        assert!(SessionHeader::parse(&b).is_ok(), "sink with test id 1");
        b[8..12].copy_from_slice(&[0; 4]);
        assert_eq!(
            SessionHeader::parse(&b),
            Err(HeaderError::ZeroSize),
            "sink with test id 0"
        );
        b[5] = 3;
        assert_eq!(SessionHeader::parse(&b).map(|h| h.mode), Ok(Mode::Control));
        b[8..12].copy_from_slice(&1u32.to_be_bytes());
        b[5] = 1;
        b[0] = b'X';
        assert_eq!(SessionHeader::parse(&b), Err(HeaderError::BadMagic));
        assert_eq!(Prefix::parse(&b[..7]), Err(HeaderError::Truncated));
    }
}
