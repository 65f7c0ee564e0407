//! Object mode (session mode 16): a catalogue of named objects a client can
//! list and fetch over one TCP session, as the proxy-load scenario's file
//! server did (docs/scenarios.md).
//!
//! After the 16-byte session header (mode 16, bytes 8..16 reserved) and the
//! "accepted" status record, the client sends requests and the responder
//! answers each one in order:
//!
//! ```text
//! request            offset size field
//!                         0    1 op: 1 = LIST, 2 = FETCH
//!                         1    1 reserved, 0
//!                         2    2 name length N (0 for LIST, 1..255 for FETCH)
//!                         4    N name bytes (FETCH)
//! response           offset size field
//!                         0    1 code: 0 = ok, else a code from the status table
//!                         1    3 reserved, 0
//!                         4    8 body length L
//!                        12    L body: the catalogue (LIST), the object (FETCH),
//!                                or UTF-8 reason text (code != 0, L <= 255)
//! catalogue          offset size field
//!                         0    4 object count n (<= MAX_OBJECTS)
//!                         4    . n entries, each:
//!                                0 8 size in bytes
//!                                8 4 CRC-32 of the content (0 for pattern objects)
//!                               12 1 flags: bit 0 = content is the object pattern
//!                               13 1 name length N (1..255)
//!                               14 N name bytes
//! ```
//! All integers big-endian. The object pattern ([`word`]) gives every 8-byte
//! word of every object a distinct value, so a client verifying a pattern
//! object catches lost, repeated, reordered or swapped data, not only flipped
//! bits. Objects read from real files carry a CRC-32 (IEEE 802.3, as zlib)
//! instead, computed by the responder when it builds its catalogue.

use crate::be16;
use crate::header::{HeaderError, Prefix};

/// The session mode number of object sessions.
pub const MODE: u8 = 16;
/// Header length of an object session (bytes 8..16 reserved: sent as 0,
/// ignored by the responder).
pub const HEADER_LEN: usize = 16;
/// Length of a request's fixed part.
pub const REQUEST_LEN: usize = 4;
/// Length of a response's fixed part.
pub const RESPONSE_LEN: usize = 12;
/// Length of a catalogue entry's fixed part.
pub const ENTRY_LEN: usize = 14;
/// Longest object name.
pub const MAX_NAME_LEN: usize = crate::limits::MAX_NAME_LEN;
/// Most objects a catalogue may hold.
pub const MAX_OBJECTS: usize = crate::limits::MAX_OBJECTS;
/// Longest error reason text in a response body.
pub const MAX_REASON_LEN: usize = 255;
/// Catalogue flag: the content is the object pattern for the entry's index.
pub const FLAG_PATTERN: u8 = 1;

/// Response code: the object is not in the catalogue (the session goes on).
pub const CODE_NOT_FOUND: u8 = 10;
/// Response code: the request broke the rules (the responder closes).
pub const CODE_BAD_REQUEST: u8 = 11;
/// Response code: the responder could not read the object (the session goes on).
pub const CODE_INTERNAL: u8 = 8;

/// What a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// The catalogue.
    List = 1,
    /// One object's bytes.
    Fetch = 2,
}

/// The fixed part of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// LIST or FETCH.
    pub op: Op,
    /// Bytes of name that follow.
    pub name_len: u16,
}

/// Why request bytes are not a valid request. Each maps to
/// [`CODE_BAD_REQUEST`]; the responder answers and closes, because it can no
/// longer tell where the next request starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// Fewer than [`REQUEST_LEN`] bytes.
    Truncated,
    /// An op number version 1 does not define.
    UnknownOp(u8),
    /// LIST with a name, FETCH without one, or a name above [`MAX_NAME_LEN`].
    BadNameLength(u16),
}

impl core::fmt::Display for RequestError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RequestError::Truncated => write!(f, "request truncated"),
            RequestError::UnknownOp(o) => write!(f, "unknown object request op {o}"),
            RequestError::BadNameLength(n) => {
                write!(f, "bad name length {n} (LIST takes 0, FETCH 1..{MAX_NAME_LEN})")
            }
        }
    }
}

impl Request {
    /// Parses the 4 fixed bytes of a request.
    pub fn parse(b: &[u8]) -> Result<Request, RequestError> {
        if b.len() < REQUEST_LEN {
            return Err(RequestError::Truncated);
        }
        let name_len = be16(b, 2);
        let op = match b[0] {
            1 => Op::List,
            2 => Op::Fetch,
            o => return Err(RequestError::UnknownOp(o)),
        };
        let ok = match op {
            Op::List => name_len == 0,
            Op::Fetch => name_len >= 1 && name_len as usize <= MAX_NAME_LEN,
        };
        if !ok {
            return Err(RequestError::BadNameLength(name_len));
        }
        Ok(Request { op, name_len })
    }
}

/// Writes a request for `op` with `name` into `out`; returns its length, or
/// `None` when `out` is too small or the name is not allowed for the op.
pub fn emit_request(op: Op, name: &[u8], out: &mut [u8]) -> Option<usize> {
    let ok = match op {
        Op::List => name.is_empty(),
        Op::Fetch => !name.is_empty() && name.len() <= MAX_NAME_LEN,
    };
    let n = REQUEST_LEN + name.len();
    if !ok || out.len() < n {
        return None;
    }
    out[0] = op as u8;
    out[1] = 0;
    out[2..4].copy_from_slice(&(name.len() as u16).to_be_bytes());
    out[4..n].copy_from_slice(name);
    Some(n)
}

/// The fixed part of a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response {
    /// 0 for ok, else an error code.
    pub code: u8,
    /// Bytes of body that follow.
    pub len: u64,
}

impl Response {
    /// Parses the 12 fixed bytes of a response (`None` if fewer).
    pub fn parse(b: &[u8]) -> Option<Response> {
        if b.len() < RESPONSE_LEN {
            return None;
        }
        let mut l = [0u8; 8];
        l.copy_from_slice(&b[4..12]);
        Some(Response {
            code: b[0],
            len: u64::from_be_bytes(l),
        })
    }

    /// The 12 bytes of this response's fixed part.
    pub fn emit(&self) -> [u8; RESPONSE_LEN] {
        let mut b = [0u8; RESPONSE_LEN];
        b[0] = self.code;
        b[4..12].copy_from_slice(&self.len.to_be_bytes());
        b
    }
}

/// Checks an object-session header (prefix, version 1, mode 16, header
/// length at least 16). Bytes 8..header length are ignored.
pub fn parse_header(b: &[u8]) -> Result<(), HeaderError> {
    let p = Prefix::parse(b)?;
    if p.version != crate::VERSION {
        return Err(HeaderError::UnsupportedVersion(p.version));
    }
    if p.mode != MODE {
        return Err(HeaderError::UnknownMode(p.mode));
    }
    if (p.header_len as usize) < HEADER_LEN {
        return Err(HeaderError::BadLength(p.header_len));
    }
    if b.len() < p.header_len as usize {
        return Err(HeaderError::Truncated);
    }
    Ok(())
}

/// The 16 header bytes of an object session.
pub fn emit_header() -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    b[0..4].copy_from_slice(&crate::header::MAGIC);
    b[4] = crate::VERSION;
    b[5] = MODE;
    b[6..8].copy_from_slice(&(HEADER_LEN as u16).to_be_bytes());
    b
}

/// The header of an object session with header flags `flags`
/// ([`crate::header::FLAG_AUTH`]): the 16 bytes of [`emit_header`]
/// without a flag, the 24-byte form that carries the flags word with one.
pub fn emit_header_with(flags: u32) -> crate::header::HeaderBytes {
    crate::header::emit(MODE, 0, 0, flags)
}

/// One catalogue entry, borrowing its name from the catalogue bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Size in bytes.
    pub size: u64,
    /// CRC-32 of the content; 0 for pattern objects.
    pub crc32: u32,
    /// [`FLAG_PATTERN`] or 0; other bits reserved (ignored).
    pub flags: u8,
    /// The name, 1..255 bytes.
    pub name: &'a [u8],
}

impl Entry<'_> {
    /// True when the content is the object pattern.
    pub fn is_pattern(&self) -> bool {
        self.flags & FLAG_PATTERN != 0
    }

    /// Bytes this entry takes in a catalogue.
    pub fn encoded_len(&self) -> usize {
        ENTRY_LEN + self.name.len()
    }

    /// Writes the entry into `out`; returns its length, or `None` when `out`
    /// is too small or the name is empty or too long.
    pub fn emit(&self, out: &mut [u8]) -> Option<usize> {
        let n = self.encoded_len();
        if self.name.is_empty() || self.name.len() > MAX_NAME_LEN || out.len() < n {
            return None;
        }
        out[0..8].copy_from_slice(&self.size.to_be_bytes());
        out[8..12].copy_from_slice(&self.crc32.to_be_bytes());
        out[12] = self.flags;
        out[13] = self.name.len() as u8;
        out[14..n].copy_from_slice(self.name);
        Some(n)
    }
}

/// Why catalogue bytes do not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatalogueError {
    /// The bytes end inside the count or an entry.
    Truncated,
    /// More than [`MAX_OBJECTS`] entries.
    TooMany(u32),
    /// An entry with a zero-length name.
    EmptyName,
    /// Bytes left after the last entry.
    Trailing,
}

impl core::fmt::Display for CatalogueError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CatalogueError::Truncated => write!(f, "catalogue truncated"),
            CatalogueError::TooMany(n) => write!(f, "catalogue holds {n} objects, more than {MAX_OBJECTS}"),
            CatalogueError::EmptyName => write!(f, "catalogue entry with an empty name"),
            CatalogueError::Trailing => write!(f, "bytes after the last catalogue entry"),
        }
    }
}

/// The entries of a catalogue body, in order. Validates the whole body
/// first, so iterating cannot fail.
#[derive(Clone, Copy, Debug)]
pub struct Catalogue<'a> {
    body: &'a [u8],
    count: u32,
}

impl<'a> Catalogue<'a> {
    /// Checks a LIST body: count, every entry, no trailing bytes.
    pub fn parse(body: &'a [u8]) -> Result<Catalogue<'a>, CatalogueError> {
        if body.len() < 4 {
            return Err(CatalogueError::Truncated);
        }
        let count = crate::be32(body, 0);
        if count as usize > MAX_OBJECTS {
            return Err(CatalogueError::TooMany(count));
        }
        let mut at = 4;
        for _ in 0..count {
            if body.len() < at + ENTRY_LEN {
                return Err(CatalogueError::Truncated);
            }
            let n = body[at + 13] as usize;
            if n == 0 {
                return Err(CatalogueError::EmptyName);
            }
            at += ENTRY_LEN + n;
            if body.len() < at {
                return Err(CatalogueError::Truncated);
            }
        }
        if at != body.len() {
            return Err(CatalogueError::Trailing);
        }
        Ok(Catalogue { body, count })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when the catalogue is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The entries, in catalogue order (the index is the pattern seed).
    pub fn entries(&self) -> impl Iterator<Item = Entry<'a>> + 'a {
        let body = self.body;
        let mut at = 4;
        (0..self.count).map(move |_| {
            let e = &body[at..];
            let n = e[13] as usize;
            at += ENTRY_LEN + n;
            Entry {
                size: crate::be64(e, 0),
                crc32: crate::be32(e, 8),
                flags: e[12],
                name: &e[14..14 + n],
            }
        })
    }
}

/// Word `w` (the 8 bytes at offsets `8w..8w+8`) of pattern object `k`.
///
/// `x = w XOR (k << 40)`, then `x *= 0x9E3779B97F4A7C15` (mod 2^64), then
/// `x ^= x >> 29`; the word's bytes are `x` big-endian. Both steps are
/// bijections, so no two words of objects below 8 TiB with index below 2^24
/// are equal.
#[inline]
pub fn word(k: u64, w: u64) -> u64 {
    let x = (w ^ (k << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^ (x >> 29)
}

/// The pattern byte at `offset` of object `k`.
#[inline]
pub fn byte(k: u64, offset: u64) -> u8 {
    word(k, offset / 8).to_be_bytes()[(offset % 8) as usize]
}

/// Fills `buf` with object `k`'s bytes starting at `offset`.
pub fn fill(k: u64, offset: u64, buf: &mut [u8]) {
    let mut i = 0;
    // Unaligned head, whole words, unaligned tail.
    while i < buf.len() && !(offset + i as u64).is_multiple_of(8) {
        buf[i] = byte(k, offset + i as u64);
        i += 1;
    }
    while i + 8 <= buf.len() {
        let w = (offset + i as u64) / 8;
        buf[i..i + 8].copy_from_slice(&word(k, w).to_be_bytes());
        i += 8;
    }
    while i < buf.len() {
        buf[i] = byte(k, offset + i as u64);
        i += 1;
    }
}

/// CRC-32 (IEEE 802.3 polynomial, reflected, as zlib and Ethernet), one
/// 8-table slicing step per 8 bytes. Start with [`crc32_init`], feed chunks
/// with [`crc32_update`], end with [`crc32_finish`]; `crc32(b"123456789")`
/// is `0xCBF43926`.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32_finish(crc32_update(crc32_init(), bytes))
}

/// The running value before any byte.
pub const fn crc32_init() -> u32 {
    0xFFFF_FFFF
}

/// The final CRC from a running value.
pub const fn crc32_finish(state: u32) -> u32 {
    !state
}

const CRC_TABLES: [[u32; 256]; 8] = crc_tables();

const fn crc_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

/// Feeds `bytes` into a running CRC-32.
pub fn crc32_update(mut c: u32, bytes: &[u8]) -> u32 {
    let t = &CRC_TABLES;
    let mut chunks = bytes.chunks_exact(8);
    for b in &mut chunks {
        let lo = c ^ u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let hi = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        c = t[7][(lo & 0xff) as usize]
            ^ t[6][((lo >> 8) & 0xff) as usize]
            ^ t[5][((lo >> 16) & 0xff) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xff) as usize]
            ^ t[2][((hi >> 8) & 0xff) as usize]
            ^ t[1][((hi >> 16) & 0xff) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        c = t[0][((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_check_value_and_chunking() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        let data: [u8; 1000] = core::array::from_fn(|i| (i * 7 + 3) as u8);
        let mut c = crc32_init();
        for piece in data.chunks(13) {
            c = crc32_update(c, piece);
        }
        assert_eq!(crc32_finish(c), crc32(&data));
    }

    #[test]
    fn pattern_fill_matches_bytes_at_any_offset() {
        let mut a = [0u8; 100];
        fill(3, 5, &mut a);
        for (i, &b) in a.iter().enumerate() {
            assert_eq!(b, byte(3, 5 + i as u64));
        }
        let mut w = [0u8; 16];
        fill(0, 0, &mut w);
        assert_eq!(w[..8], word(0, 0).to_be_bytes());
        assert_ne!(w[..8], w[8..]);
    }

    #[test]
    fn requests_round_trip_and_bad_ones_are_named() {
        let mut b = [0u8; 300];
        let n = emit_request(Op::Fetch, b"4K", &mut b).unwrap();
        assert_eq!(&b[..n], &[2, 0, 0, 2, b'4', b'K']);
        assert_eq!(
            Request::parse(&b[..n]),
            Ok(Request {
                op: Op::Fetch,
                name_len: 2
            })
        );
        assert_eq!(emit_request(Op::List, b"", &mut b), Some(4));
        assert_eq!(emit_request(Op::List, b"x", &mut b), None);
        assert_eq!(emit_request(Op::Fetch, &[b'a'; 256], &mut b), None);
        assert_eq!(Request::parse(&[3, 0, 0, 0]), Err(RequestError::UnknownOp(3)));
        assert_eq!(Request::parse(&[2, 0, 1, 0]), Err(RequestError::BadNameLength(256)));
        assert_eq!(Request::parse(&[2, 0, 0, 0]), Err(RequestError::BadNameLength(0)));
        assert_eq!(Request::parse(&[1, 0, 0, 1]), Err(RequestError::BadNameLength(1)));
        assert_eq!(Request::parse(&[1, 0, 0]), Err(RequestError::Truncated));
    }

    #[test]
    fn catalogue_round_trip_and_errors() {
        let mut b = [0u8; 64];
        b[0..4].copy_from_slice(&2u32.to_be_bytes());
        let e1 = Entry {
            size: 4096,
            crc32: 0,
            flags: FLAG_PATTERN,
            name: b"4K",
        };
        let e2 = Entry {
            size: 5,
            crc32: 0xdead_beef,
            flags: 0,
            name: b"a.txt",
        };
        let n1 = e1.emit(&mut b[4..]).unwrap();
        let n2 = e2.emit(&mut b[4 + n1..]).unwrap();
        let len = 4 + n1 + n2;
        let c = Catalogue::parse(&b[..len]).unwrap();
        assert_eq!(c.len(), 2);
        let v: [Entry; 2] = {
            let mut it = c.entries();
            [it.next().unwrap(), it.next().unwrap()]
        };
        assert_eq!(v, [e1, e2]);
        assert_eq!(Catalogue::parse(&b[..len - 1]).unwrap_err(), CatalogueError::Truncated);
        assert_eq!(Catalogue::parse(&b[..len + 1]).unwrap_err(), CatalogueError::Trailing);
        assert_eq!(
            Catalogue::parse(&[0, 0, 0x10, 1]).unwrap_err(),
            CatalogueError::TooMany(4097)
        );
    }

    #[test]
    fn a_header_with_flags_is_the_long_form_of_the_plain_one() {
        assert_eq!(*emit_header_with(0), emit_header());
        let h = emit_header_with(crate::header::FLAG_AUTH);
        assert_eq!(h.len(), crate::header::EXT_HEADER_LEN);
        assert_eq!(parse_header(&h), Ok(()));
        assert_eq!(h[..6], emit_header()[..6]);
        assert_eq!(crate::be32(&h, 16), crate::header::FLAG_AUTH);
    }

    #[test]
    fn header_checks() {
        let h = emit_header();
        assert_eq!(parse_header(&h), Ok(()));
        let mut short = h;
        short[7] = 12;
        assert_eq!(parse_header(&short), Err(HeaderError::BadLength(12)));
        let mut rr = h;
        rr[5] = 1;
        assert_eq!(parse_header(&rr), Err(HeaderError::UnknownMode(1)));
    }
}
