//! Deterministic payload bytes, so a client can check every byte it gets back.
//!
//! Byte `i` of the payload of datagram `seq` is `(seq * 131 + i) mod 256`.
//! The sequence number enters the pattern, so a reply carrying another
//! datagram's payload is caught as a mismatch, not just a corrupted byte.

/// The pattern byte at offset `i` of the payload of datagram `seq`.
pub fn byte(seq: u64, i: usize) -> u8 {
    (seq.wrapping_mul(131).wrapping_add(i as u64) & 0xff) as u8
}

/// Fills `buf` with the pattern for `seq`.
pub fn fill(seq: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = byte(seq, i);
    }
}

/// True when `buf` holds exactly the pattern for `seq`.
pub fn matches(seq: u64, buf: &[u8]) -> bool {
    matches_from(seq, 0, buf)
}

/// True when `buf` holds the pattern for `seq` from payload offset `start`
/// on (what follows a stamp block).
pub fn matches_from(seq: u64, start: usize, buf: &[u8]) -> bool {
    buf.iter().enumerate().all(|(i, &b)| b == byte(seq, start + i))
}

#[cfg(test)]
mod tests {
    #[test]
    fn fill_then_match_and_detect_flip() {
        let mut b = [0u8; 300];
        super::fill(7, &mut b);
        assert!(super::matches(7, &b));
        assert!(!super::matches(8, &b));
        b[299] ^= 1;
        assert!(!super::matches(7, &b));
    }
}
