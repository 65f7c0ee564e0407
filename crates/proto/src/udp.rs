//! UDP datagrams: the header every datagram carries, and the echo rule.
//!
//! ```text
//! offset size field
//!      0    4 magic "SMTU" (53 4d 54 55)
//!      4    1 version (1)
//!      5    1 kind: 1 = echo request, 2 = echo reply, 3 = refused,
//!                    4 = stream data (never answered; see crate::stream)
//!      6    1 code: a status::Refusal when kind = 3, else 0
//!      7    1 flags: bit 0 = server timestamps valid (replies);
//!                     bit 1 = stamps requested (requests) / stamp block
//!                     at offset 40 (replies), see crate::stamps;
//!                     bit 2 = a 16-byte MAC trailer follows ([`seal`]);
//!                     bit 3 = count block (requests: count me; replies:
//!                     valid), see [`ask_count`]
//!      8    8 sequence number, chosen by the client
//!     16    8 client timestamp (ns; opaque to the responder, echoed)
//!     24    8 server receive timestamp (ns, responder's clock; 0 if none)
//!     32    8 server send timestamp (ns, responder's clock; 0 if none)
//!     40    . payload, echoed unchanged
//! ```
//! The responder answers only echo requests, with a datagram of exactly the
//! request's length (never more: no amplification), and never answers a
//! reply or a refusal (two responders cannot start a loop). Datagrams too
//! short to hold the header, or with another magic, are dropped silently.
//! The [`answer`] function is the whole rule, shared by every responder.

use crate::auth::{Key, MAC_LEN};
use crate::{be64, status::Refusal};

/// The four bytes every stackmeter datagram starts with.
pub const MAGIC: [u8; 4] = *b"SMTU";
/// Header length; also the smallest valid datagram.
pub const HEADER_LEN: usize = 40;
/// Flag bit: a MAC trailer of [`MAC_LEN`] bytes follows the datagram
/// ([`seal`], [`open`]).
pub const FLAG_MAC: u8 = 4;
/// Sequence numbers the replay window of one client address remembers.
pub const REPLAY_WINDOW: u64 = 64;
/// Flag bit: the server timestamps in this reply are valid.
pub const FLAG_SERVER_TS: u8 = 1;
/// Flag bit: in a request, "write your stamp block into the reply"; in a
/// reply, "the stamp block is at offset 40" ([`crate::stamps`]). Only a
/// datagram of at least [`STAMPED_MIN`] bytes gets one.
pub const FLAG_STAMPS: u8 = 2;
/// The shortest datagram with room for a stamp block.
pub const STAMPED_MIN: usize = HEADER_LEN + crate::stamps::BLOCK_LEN;
/// Flag bit: in a request, "count what you receive from me" (a count
/// block follows, [`ask_count`]); in a reply, the count block is valid
/// ([`reply_count`]). docs/protocol.md 4.4.
pub const FLAG_COUNT: u8 = 8;
/// The four bytes a count block starts with ("SMTC").
pub const COUNT_MAGIC: [u8; 4] = *b"SMTC";
/// Length of a count block.
pub const COUNT_LEN: usize = 16;

/// What a datagram is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A client asks for an echo.
    EchoRequest = 1,
    /// The responder's echo.
    EchoReply = 2,
    /// The responder refused the request (see the code byte).
    Refused = 3,
    /// One datagram of a UDP throughput test: counted, never answered.
    /// Bytes 24..28 hold the test id and 28..30 the stream index instead
    /// of the server timestamps.
    StreamData = 4,
}

/// A parsed datagram header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Version of the sender.
    pub version: u8,
    /// Raw kind byte (see [`Kind`]).
    pub kind: u8,
    /// Refusal code for kind 3.
    pub code: u8,
    /// Flag bits.
    pub flags: u8,
    /// Sequence number.
    pub seq: u64,
    /// Client send time as the client put it.
    pub client_ts: u64,
    /// Responder receive time (responder's clock).
    pub server_rx: u64,
    /// Responder send time (responder's clock).
    pub server_tx: u64,
}

/// Why bytes are not a stackmeter datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatagramError {
    /// Shorter than [`HEADER_LEN`].
    TooShort,
    /// Another magic: not stackmeter traffic.
    BadMagic,
}

impl Header {
    /// Parses the header of `d`. The version is returned, not judged.
    pub fn parse(d: &[u8]) -> Result<Header, DatagramError> {
        if d.len() < HEADER_LEN {
            return Err(DatagramError::TooShort);
        }
        if d[0..4] != MAGIC {
            return Err(DatagramError::BadMagic);
        }
        Ok(Header {
            version: d[4],
            kind: d[5],
            code: d[6],
            flags: d[7],
            seq: be64(d, 8),
            client_ts: be64(d, 16),
            server_rx: be64(d, 24),
            server_tx: be64(d, 32),
        })
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `d`.
    /// Returns `Err(TooShort)` if `d` cannot hold it.
    pub fn emit(&self, d: &mut [u8]) -> Result<(), DatagramError> {
        if d.len() < HEADER_LEN {
            return Err(DatagramError::TooShort);
        }
        d[0..4].copy_from_slice(&MAGIC);
        d[4] = self.version;
        d[5] = self.kind;
        d[6] = self.code;
        d[7] = self.flags;
        d[8..16].copy_from_slice(&self.seq.to_be_bytes());
        d[16..24].copy_from_slice(&self.client_ts.to_be_bytes());
        d[24..32].copy_from_slice(&self.server_rx.to_be_bytes());
        d[32..40].copy_from_slice(&self.server_tx.to_be_bytes());
        Ok(())
    }

    /// A version 1 stream data header for stream `stream` of test `test_id`.
    pub fn stream_data(test_id: u32, stream: u16, seq: u64, client_ts: u64) -> Header {
        Header {
            version: crate::VERSION,
            kind: Kind::StreamData as u8,
            code: 0,
            flags: 0,
            seq,
            client_ts,
            server_rx: ((test_id as u64) << 32) | ((stream as u64) << 16),
            server_tx: 0,
        }
    }

    /// For a stream data datagram: the test id (bytes 24..28).
    pub fn test_id(&self) -> u32 {
        (self.server_rx >> 32) as u32
    }

    /// For a stream data datagram: the stream index (bytes 28..30).
    pub fn stream(&self) -> u16 {
        (self.server_rx >> 16) as u16
    }

    /// A version 1 echo request header.
    pub fn request(seq: u64, client_ts: u64) -> Header {
        Header {
            version: crate::VERSION,
            kind: Kind::EchoRequest as u8,
            code: 0,
            flags: 0,
            seq,
            client_ts,
            server_rx: 0,
            server_tx: 0,
        }
    }
}

/// What a responder does with a received datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Send back the first `len` bytes of the (rewritten) buffer, after
    /// stamping the send time with [`stamp_tx`].
    Reply(usize),
    /// Send nothing; the reason is for the responder's counters.
    Drop(DropReason),
}

/// Why a datagram got no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Shorter than the header.
    TooShort,
    /// Not stackmeter traffic.
    BadMagic,
    /// A reply, a refusal or an unknown kind: never answered (no loops).
    NotARequest,
    /// A responder with a secret: no flag bit 2, or a wrong MAC trailer,
    /// or a version whose trailer it cannot know (docs/protocol.md 10.2).
    Unauthenticated,
    /// A responder with a secret: a sequence number its client's replay
    /// window has seen, or one too old for it.
    Replayed,
}

/// Applies the echo rule to datagram `d` received at `rx_ns` on the
/// responder's clock, rewriting it in place into the reply.
///
/// A version 1 echo request becomes an echo reply of the same length with
/// the receive time stamped. A request of another version becomes a
/// refusal of [`HEADER_LEN`] bytes (the request was at least that long).
/// This is the rule of a responder without stamps: a request's
/// [`FLAG_STAMPS`] is not kept, and the payload goes back unchanged.
pub fn answer(d: &mut [u8], rx_ns: u64) -> Answer {
    rule(d, rx_ns, false)
}

/// [`answer`] for a responder that writes stamp blocks: a version 1 echo
/// request with [`FLAG_STAMPS`] and room for the block gets a reply with
/// [`FLAG_STAMPS`] set ([`stamps_due`]); the driver then writes the block
/// with [`put_block`] right before the send.
pub fn answer_stamped(d: &mut [u8], rx_ns: u64) -> Answer {
    rule(d, rx_ns, true)
}

/// The echo rule of a responder with a secret (docs/protocol.md 10.2):
/// `d` is the whole datagram, trailer included, whose trailer
/// [`open`] found valid, `body` its length without the
/// trailer, and `window` the replay window of its source address. Another
/// version, a kind other than 1, or a replayed sequence number is dropped;
/// anything else is answered as [`answer`] (or [`answer_stamped`]) answers
/// the body, and the driver seals the reply ([`seal`] on `d[..len +
/// MAC_LEN]`, the request's length) right before the send.
pub fn answer_sealed(d: &mut [u8], body: usize, rx_ns: u64, stamps: bool, window: &mut ReplayWindow) -> Answer {
    let h = match Header::parse(&d[..body.min(d.len())]) {
        Ok(h) => h,
        Err(_) => return Answer::Drop(DropReason::Unauthenticated),
    };
    if h.version != crate::VERSION {
        return Answer::Drop(DropReason::Unauthenticated);
    }
    if h.kind != Kind::EchoRequest as u8 {
        return Answer::Drop(DropReason::NotARequest);
    }
    if !window.accept(h.seq) {
        return Answer::Drop(DropReason::Replayed);
    }
    rule(&mut d[..body], rx_ns, stamps)
}

/// Whether the reply `d` built by [`answer_stamped`] wants a stamp block.
pub fn stamps_due(d: &[u8]) -> bool {
    d.len() >= STAMPED_MIN && d[5] == Kind::EchoReply as u8 && d[7] & FLAG_STAMPS != 0
}

/// Writes `block` at offset 40 of a reply that [`stamps_due`]; does nothing
/// to any other buffer.
pub fn put_block(d: &mut [u8], block: &crate::stamps::Block) {
    if stamps_due(d) {
        d[HEADER_LEN..STAMPED_MIN].copy_from_slice(&block.emit());
    }
}

/// The stamp block of a reply, if the responder wrote one: the flag is set
/// and the block's magic is there.
pub fn reply_block(d: &[u8]) -> Option<crate::stamps::Block> {
    if d.len() < STAMPED_MIN || d[7] & FLAG_STAMPS == 0 {
        return None;
    }
    crate::stamps::Block::parse(&d[HEADER_LEN..STAMPED_MIN])
}

/// Where a request's count block is, and its count id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountAsk {
    /// Offset of the block: after the header, or after the stamp block
    /// when the request asks for stamps too.
    pub offset: usize,
    /// The client's count id.
    pub id: u32,
}

/// Where the count block of a datagram with flags `flags` goes.
fn count_offset(flags: u8) -> usize {
    match flags & FLAG_STAMPS != 0 {
        true => STAMPED_MIN,
        false => HEADER_LEN,
    }
}

/// The count block echo request `d` asks with: flags bit 3, room for the
/// block at its place, and its magic; `None` for anything else (the
/// request is answered as if it asked for nothing).
pub fn count_ask(d: &[u8]) -> Option<CountAsk> {
    if d.len() < HEADER_LEN || d[0..4] != MAGIC || d[5] != Kind::EchoRequest as u8 || d[7] & FLAG_COUNT == 0 {
        return None;
    }
    let offset = count_offset(d[7]);
    let b = d.get(offset..offset + COUNT_LEN)?;
    if b[0..4] != COUNT_MAGIC {
        return None;
    }
    Some(CountAsk {
        offset,
        id: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
    })
}

/// Writes `received` into the count block of reply `d` (made from the
/// request `ask` came from, by the echo rule) and sets flags bit 3. Does
/// nothing to a datagram that is not an echo reply or too short.
pub fn put_count(d: &mut [u8], ask: CountAsk, received: u64) {
    if d.len() < ask.offset + COUNT_LEN || d[5] != Kind::EchoReply as u8 {
        return;
    }
    d[7] |= FLAG_COUNT;
    d[ask.offset + 8..ask.offset + COUNT_LEN].copy_from_slice(&received.to_be_bytes());
}

/// Makes request `d` (its header already written) ask to be counted under
/// `id`: sets flags bit 3 and writes the block at its place. False, and
/// nothing changed, when `d` is too short to hold it.
pub fn ask_count(d: &mut [u8], id: u32) -> bool {
    if d.len() < HEADER_LEN {
        return false;
    }
    let offset = count_offset(d[7]);
    let Some(b) = d.get_mut(offset..offset + COUNT_LEN) else {
        return false;
    };
    b[0..4].copy_from_slice(&COUNT_MAGIC);
    b[4..8].copy_from_slice(&id.to_be_bytes());
    b[8..16].fill(0);
    d[7] |= FLAG_COUNT;
    true
}

/// The count block of a reply (docs/protocol.md 4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyCount {
    /// Which count: the id the client asked for it under.
    pub id: u32,
    /// The datagrams of that id the responder had received.
    pub received: u64,
}

/// The count a reply carries, when the responder counted (flags bit 3 and
/// the block's magic). `stamps_asked` says whether the request asked for
/// a stamp block (the count block then follows it).
pub fn reply_count(d: &[u8], stamps_asked: bool) -> Option<ReplyCount> {
    if d.len() < HEADER_LEN || d[7] & FLAG_COUNT == 0 {
        return None;
    }
    let offset = if stamps_asked { STAMPED_MIN } else { HEADER_LEN };
    let b = d.get(offset..offset + COUNT_LEN)?;
    if b[0..4] != COUNT_MAGIC {
        return None;
    }
    let id = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
    Some(ReplyCount {
        id,
        received: be64(b, 8),
    })
}

fn rule(d: &mut [u8], rx_ns: u64, stamps: bool) -> Answer {
    let h = match Header::parse(d) {
        Ok(h) => h,
        Err(DatagramError::TooShort) => return Answer::Drop(DropReason::TooShort),
        Err(DatagramError::BadMagic) => return Answer::Drop(DropReason::BadMagic),
    };
    if h.kind != Kind::EchoRequest as u8 {
        return Answer::Drop(DropReason::NotARequest);
    }
    d[4] = crate::VERSION;
    if h.version != crate::VERSION {
        d[5] = Kind::Refused as u8;
        d[6] = Refusal::UnsupportedVersion as u8;
        d[7] = 0;
        return Answer::Reply(HEADER_LEN);
    }
    d[5] = Kind::EchoReply as u8;
    d[6] = 0;
    d[7] = if stamps && h.flags & FLAG_STAMPS != 0 && d.len() >= STAMPED_MIN {
        FLAG_SERVER_TS | FLAG_STAMPS
    } else {
        FLAG_SERVER_TS
    };
    d[24..32].copy_from_slice(&rx_ns.to_be_bytes());
    d[32..40].copy_from_slice(&rx_ns.to_be_bytes());
    Answer::Reply(d.len())
}

/// Stamps the responder's send time into a reply built by [`answer`]; call
/// it right before the send. Does nothing to a buffer shorter than the header.
pub fn stamp_tx(d: &mut [u8], tx_ns: u64) {
    if d.len() >= HEADER_LEN && d[5] == Kind::EchoReply as u8 {
        d[32..40].copy_from_slice(&tx_ns.to_be_bytes());
    }
}

/// Seals datagram `d` with `key`: its last [`MAC_LEN`] bytes become the
/// trailer over the bytes before them, after [`FLAG_MAC`] is set. `d` must
/// hold at least the header and the trailer; a shorter one is left alone.
pub fn seal(key: &Key, d: &mut [u8]) {
    if d.len() < HEADER_LEN + MAC_LEN {
        return;
    }
    d[7] |= FLAG_MAC;
    let body = d.len() - MAC_LEN;
    let t = key.trailer(&d[..body]);
    d[body..].copy_from_slice(&t);
}

/// The length of datagram `d` without its trailer, if it is a stackmeter
/// datagram with [`FLAG_MAC`] and a trailer `key` made; `None` for
/// anything else (drop it).
pub fn open(key: &Key, d: &[u8]) -> Option<usize> {
    if d.len() < HEADER_LEN + MAC_LEN || !is_sealed(d) {
        return None;
    }
    let body = d.len() - MAC_LEN;
    key.check_trailer(&d[..body], &d[body..]).then_some(body)
}

/// Whether `d` is a stackmeter datagram that says it carries a trailer
/// ([`FLAG_MAC`]), valid or not.
pub fn is_sealed(d: &[u8]) -> bool {
    d.len() >= 8 && d[0..4] == MAGIC && d[7] & FLAG_MAC != 0
}

/// Whether `d` is a stackmeter datagram without [`FLAG_MAC`]: what an
/// unauthenticated responder answers to a client that has a secret.
pub fn is_unsealed(d: &[u8]) -> bool {
    d.len() >= 8 && d[0..4] == MAGIC && d[7] & FLAG_MAC == 0
}

/// The replay window of one client address: the highest sequence number
/// seen and which of the [`REPLAY_WINDOW`] below it came.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayWindow {
    highest: u64,
    /// Bit i: sequence `highest - i` came.
    seen: u64,
    any: bool,
}

impl ReplayWindow {
    /// A window that has seen nothing.
    pub const fn new() -> ReplayWindow {
        ReplayWindow {
            highest: 0,
            seen: 0,
            any: false,
        }
    }

    /// Marks `seq` as seen; false (drop the datagram) if it was seen
    /// before or is more than 63 below the highest.
    pub fn accept(&mut self, seq: u64) -> bool {
        if !self.any {
            *self = ReplayWindow {
                highest: seq,
                seen: 1,
                any: true,
            };
            return true;
        }
        if seq > self.highest {
            let shift = seq - self.highest;
            self.seen = if shift >= REPLAY_WINDOW { 0 } else { self.seen << shift };
            self.seen |= 1;
            self.highest = seq;
            return true;
        }
        let back = self.highest - seq;
        if back >= REPLAY_WINDOW || self.seen & (1 << back) != 0 {
            return false;
        }
        self.seen |= 1 << back;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(len: usize, seq: u64) -> [u8; 64] {
        let mut d = [0u8; 64];
        Header::request(seq, 0x1122).emit(&mut d[..len]).unwrap();
        crate::pattern::fill(seq, &mut d[HEADER_LEN..len]);
        d
    }

    #[test]
    fn echo_keeps_length_payload_and_stamps() {
        let mut d = request(64, 5);
        assert_eq!(answer(&mut d, 1000), Answer::Reply(64));
        stamp_tx(&mut d, 1500);
        let h = Header::parse(&d).unwrap();
        assert_eq!(h.kind, Kind::EchoReply as u8);
        assert_eq!((h.seq, h.client_ts, h.server_rx, h.server_tx), (5, 0x1122, 1000, 1500));
        assert_eq!(h.flags, FLAG_SERVER_TS);
        assert!(crate::pattern::matches(5, &d[HEADER_LEN..]));
    }

    #[test]
    fn stamps_are_kept_only_when_asked_with_room() {
        use crate::stamps::Block;
        let mut d = [0u8; 96];
        let mut h = Header::request(9, 1);
        h.flags = FLAG_STAMPS;
        h.emit(&mut d).unwrap();
        crate::pattern::fill(9, &mut d[HEADER_LEN..]);
        let (mut old, mut short) = (d, d);
        assert_eq!(answer(&mut old, 5), Answer::Reply(96));
        assert_eq!((old[7], stamps_due(&old), reply_block(&old)), (1, false, None));
        assert_eq!(answer_stamped(&mut short[..87], 5), Answer::Reply(87));
        assert!(!stamps_due(&short[..87]), "no room for the block");
        let b = Block {
            app: Some((10, 20)),
            rx_kernel: Some(9),
            prev_tx: None,
            hardware: false,
        };
        assert_eq!(answer_stamped(&mut d, 5), Answer::Reply(96));
        assert!(stamps_due(&d));
        put_block(&mut d, &b);
        assert_eq!(reply_block(&d), Some(b));
        assert!(crate::pattern::matches_from(
            9,
            STAMPED_MIN - HEADER_LEN,
            &d[STAMPED_MIN..]
        ));
    }

    #[test]
    fn replies_are_never_answered() {
        let mut d = request(64, 5);
        answer(&mut d, 1);
        assert_eq!(answer(&mut d, 2), Answer::Drop(DropReason::NotARequest));
    }

    #[test]
    fn other_version_is_refused_without_amplification() {
        let mut d = request(64, 5);
        d[4] = 9;
        assert_eq!(answer(&mut d, 1), Answer::Reply(HEADER_LEN));
        let h = Header::parse(&d).unwrap();
        assert_eq!((h.kind, h.code, h.version), (3, 2, 1));
    }

    #[test]
    fn short_and_foreign_are_dropped() {
        let mut d = request(64, 5);
        assert_eq!(answer(&mut d[..39], 1), Answer::Drop(DropReason::TooShort));
        d[0] = 0;
        assert_eq!(answer(&mut d, 1), Answer::Drop(DropReason::BadMagic));
    }

    #[test]
    fn seal_open_and_tamper() {
        let k = Key::new(b"secret").unwrap();
        let mut d = [0u8; 72];
        d[..4].copy_from_slice(b"SMTU");
        seal(&k, &mut d);
        assert_eq!(open(&k, &d), Some(56));
        d[50] ^= 1;
        assert_eq!(open(&k, &d), None);
        d[50] ^= 1;
        assert_eq!(open(&Key::new(b"other").unwrap(), &d), None);
        d[7] &= !FLAG_MAC;
        assert_eq!(open(&k, &d), None);
    }

    #[test]
    fn replay_window() {
        let mut w = ReplayWindow::new();
        assert!(w.accept(100));
        assert!(!w.accept(100));
        assert!(w.accept(99));
        assert!(!w.accept(99));
        assert!(w.accept(170));
        assert!(!w.accept(106), "more than 63 below the highest");
        assert!(w.accept(107));
        assert!(!w.accept(107));
        assert!(w.accept(1000));
        assert!(w.accept(999));
    }

    #[test]
    fn a_counted_request_gets_its_count_and_nothing_else_changes() {
        let mut d = request(64, 5);
        assert!(ask_count(&mut d, 0xabcd));
        let ask = count_ask(&d).unwrap();
        assert_eq!(ask, CountAsk { offset: 40, id: 0xabcd });
        let payload = d[56..64].to_vec();
        assert_eq!(answer(&mut d, 1000), Answer::Reply(64));
        put_count(&mut d, ask, 3);
        assert_eq!(d[7], FLAG_SERVER_TS | FLAG_COUNT);
        assert_eq!(
            reply_count(&d, false),
            Some(ReplyCount {
                id: 0xabcd,
                received: 3
            })
        );
        assert_eq!(d[56..64], payload[..], "the rest of the payload is echoed");
        // Too short to hold it: asks for nothing.
        let mut short = request(50, 1);
        assert!(!ask_count(&mut short[..50], 1));
        assert_eq!(count_ask(&short[..50]), None);
        // With stamps asked, the block follows the stamp block.
        let mut d = [0u8; 120];
        Header::request(1, 0).emit(&mut d).unwrap();
        d[7] |= FLAG_STAMPS;
        assert!(ask_count(&mut d, 9));
        assert_eq!(count_ask(&d).unwrap().offset, STAMPED_MIN);
        // An uncounted reply (an older responder) says nothing.
        let mut e = request(64, 2);
        assert!(ask_count(&mut e, 4));
        assert_eq!(answer(&mut e, 1), Answer::Reply(64));
        assert_eq!(reply_count(&e, false), None);
    }
}
