//! ping against a plain UDP echo server (`ping --echo`): its datagrams
//! carry the client's own header ([`EchoFrames`]) in place of the
//! protocol's. The server sends back what it got, so sequence numbers and
//! send stamps travel in the payload and loss, duplicates, reordering and
//! late replies are counted as against a responder; a reply that differs
//! from its request in any byte is mismatched.

/// Bytes of the client's own header at the start of each datagram sent to
/// a plain UDP echo server.
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 4 | magic `53 4D 54 45` ("SMTE") |
/// | 4 | 4 | run tag: chosen per test, so replies to another run are mismatched |
/// | 8 | 8 | sequence number, big-endian |
/// | 16 | 8 | send stamp: ns since the test's start, big-endian |
/// | 24 | .. | payload pattern of the sequence number (docs/protocol.md 4.2) |
pub const ECHO_HEADER_LEN: usize = stackmeter_proto::limits::PLAIN_ECHO_HEADER_LEN;
const ECHO_MAGIC: [u8; 4] = *b"SMTE";

/// The client's framing of ping datagrams to a plain echo server: what
/// it wrote into each, so each reply can be compared with its request.
pub(crate) struct EchoFrames {
    tag: u32,
    stamps: Vec<u64>,
}

impl EchoFrames {
    /// Framing for `total` datagrams.
    pub(crate) fn new(total: usize) -> EchoFrames {
        // Any value that differs between runs will do: the low bits of the
        // clock and the process id.
        let tag = (stackmeter_sys::monotonic_ns() as u32) ^ std::process::id().rotate_left(16);
        EchoFrames {
            tag,
            stamps: vec![0; total],
        }
    }

    /// Writes datagram `seq` (sent at `stamp` ns) into `buf`.
    pub(crate) fn build(&mut self, seq: u64, stamp: u64, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&ECHO_MAGIC);
        buf[4..8].copy_from_slice(&self.tag.to_be_bytes());
        buf[8..16].copy_from_slice(&seq.to_be_bytes());
        buf[16..24].copy_from_slice(&stamp.to_be_bytes());
        stackmeter_proto::pattern::fill(seq, &mut buf[ECHO_HEADER_LEN..]);
        if let Some(s) = self.stamps.get_mut(seq as usize) {
            *s = stamp;
        }
    }

    /// The sequence number a reply answers, and whether it equals that
    /// request byte for byte (`size` bytes); `None` when it names no
    /// datagram of this run (too short, another magic or run tag, a
    /// sequence number never sent).
    pub(crate) fn check(&self, reply: &[u8], size: usize) -> Option<(u64, bool)> {
        if reply.len() < ECHO_HEADER_LEN || reply[0..4] != ECHO_MAGIC || reply[4..8] != self.tag.to_be_bytes() {
            return None;
        }
        let seq = u64::from_be_bytes(reply[8..16].try_into().ok()?);
        let stamp = *self.stamps.get(seq as usize)?;
        let intact = reply.len() == size
            && reply[16..24] == stamp.to_be_bytes()
            && stackmeter_proto::pattern::matches(seq, &reply[ECHO_HEADER_LEN..]);
        Some((seq, intact))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_echoed_datagram_checks_and_any_changed_byte_does_not() {
        let mut f = EchoFrames::new(4);
        let mut buf = vec![0u8; 64];
        f.build(2, 12345, &mut buf);
        assert_eq!(&buf[0..4], b"SMTE");
        assert_eq!(f.check(&buf, 64), Some((2, true)));
        for at in [5, 9, 17, 30, 63] {
            let mut bad = buf.clone();
            bad[at] ^= 1;
            let r = f.check(&bad, 64);
            assert!(r.is_none() || r == Some((2, false)), "byte {at}: {r:?}");
        }
        assert_eq!(f.check(&buf[..63], 64), Some((2, false)), "short reply");
        assert_eq!(f.check(&buf[..20], 64), None, "shorter than the header");
        let mut other = buf.clone();
        other[8..16].copy_from_slice(&9u64.to_be_bytes());
        assert_eq!(f.check(&other, 64), None, "never sent");
    }
}
