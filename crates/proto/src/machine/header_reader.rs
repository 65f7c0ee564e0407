//! The header phase: the session header, read and judged as docs/protocol.md
//! 2.1 orders it.
//!
//! The 8-byte prefix first, judged before another byte is read (magic,
//! length bounds, then the version: another version may lay out the rest
//! differently); then the rest of the announced length, of which only the
//! first 24 bytes mean anything in version 1 (16, and the flags word of a
//! 24-byte header; bytes past them are counted, not kept).

use crate::header::{HeaderError, Prefix, SessionHeader, EXT_HEADER_LEN, PREFIX_LEN};
use crate::objects;

/// A complete header, judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A valid rr, crr, control, sink or source header (sizes not yet
    /// checked against the responder's limit).
    Session(SessionHeader),
    /// A valid object-mode header (mode 16).
    Objects,
    /// Refuse it.
    Refuse(HeaderError),
}

/// The header bytes received so far.
#[derive(Clone, Debug)]
pub struct HeaderReader {
    buf: [u8; EXT_HEADER_LEN],
    /// Bytes received, those past the first 24 included.
    got: u16,
    /// The announced length, once the prefix is in and judged (0 before).
    len: u16,
}

impl HeaderReader {
    pub const fn new() -> HeaderReader {
        HeaderReader {
            buf: [0; EXT_HEADER_LEN],
            got: 0,
            len: 0,
        }
    }

    /// Bytes received so far.
    pub fn got(&self) -> u16 {
        self.got
    }

    /// The first 24 header bytes as received (fewer if the header was
    /// shorter): what an authentication proof covers.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..(self.got as usize).min(EXT_HEADER_LEN)]
    }

    /// The flags word, 0 when the header is shorter than 24 bytes.
    pub fn flags(&self) -> u32 {
        if (self.len as usize) < EXT_HEADER_LEN {
            return 0;
        }
        u32::from_be_bytes([self.buf[16], self.buf[17], self.buf[18], self.buf[19]])
    }

    /// Bytes to read next: the rest of the prefix, then the rest of the
    /// header.
    pub fn want(&self) -> usize {
        if self.len == 0 {
            PREFIX_LEN - self.got as usize
        } else {
            (self.len - self.got) as usize
        }
    }

    /// Takes header bytes from `data` (at most [`HeaderReader::want`]);
    /// returns how many it took, and the verdict once there is one.
    pub fn input(&mut self, data: &[u8]) -> (usize, Option<Parsed>) {
        let take = data.len().min(self.want());
        for &b in &data[..take] {
            if let Some(slot) = self.buf.get_mut(self.got as usize) {
                *slot = b;
            }
            self.got += 1;
        }
        if self.len == 0 {
            if (self.got as usize) < PREFIX_LEN {
                return (take, None);
            }
            let prefix = match Prefix::parse(&self.buf[..PREFIX_LEN]) {
                Ok(p) => p,
                Err(e) => return (take, Some(Parsed::Refuse(e))),
            };
            if prefix.version != crate::VERSION {
                return (
                    take,
                    Some(Parsed::Refuse(HeaderError::UnsupportedVersion(prefix.version))),
                );
            }
            self.len = prefix.header_len;
        }
        if self.got < self.len {
            return (take, None);
        }
        (take, Some(self.judge()))
    }

    /// Judges the whole header. The parsers want every announced byte; only
    /// the first 24 are kept, so they see a copy that announces at most 24
    /// (bytes past 24 are reserved and ignored anyway).
    fn judge(&self) -> Parsed {
        let mut h = self.buf;
        let n = if self.len as usize >= EXT_HEADER_LEN {
            h[6..8].copy_from_slice(&(EXT_HEADER_LEN as u16).to_be_bytes());
            EXT_HEADER_LEN
        } else {
            self.len as usize
        };
        if h[5] == objects::MODE {
            return match objects::parse_header(&h[..n]) {
                Ok(()) => Parsed::Objects,
                Err(e) => Parsed::Refuse(e),
            };
        }
        match SessionHeader::parse(&h[..n]) {
            Ok(s) => Parsed::Session(s),
            Err(e) => Parsed::Refuse(e),
        }
    }
}
