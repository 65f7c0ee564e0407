//! Authentication with a shared secret (docs/protocol.md section 10): the
//! key, the TCP challenge and proof, and the MAC that seals a UDP datagram,
//! as pure code. Where the MAC goes in a datagram, its flag bit and the
//! replay window are the datagram's business (`crate::udp`).
//!
//! ```text
//! challenge (responder to client, 24 bytes, after a header with FLAG_AUTH)
//!      0    4 magic "SMTA" (53 4d 54 41)
//!      4    1 version (1)
//!      5    3 reserved, 0
//!      8   16 nonce
//! proof (client to responder, 32 bytes)
//!      0   32 HMAC-SHA256(secret, challenge (24) || header (its first 24 bytes))
//! UDP trailer (flags bit 2 set in the datagram, 16 bytes after it)
//!      0   16 HMAC-SHA256(secret, every byte before the trailer), first 16 bytes
//! ```
//! HMAC-SHA256 is RFC 2104 over FIPS 180-4, here from the RustCrypto
//! `hmac` and `sha2` crates without their default features (no_std, no
//! alloc, no I/O); the C responder has its own 300-line copy
//! (`c-responder/src/smr_auth.c`), and `protocol/vectors.json` holds the
//! fixtures both are checked against. A [`Key`] is `Copy`: the secret as
//! HMAC uses it (a secret longer than 64 bytes is replaced by its SHA-256,
//! as RFC 2104 says), so every session machine keeps its own copy.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The challenge record's magic.
pub const CHALLENGE_MAGIC: [u8; 4] = *b"SMTA";
/// Length of the challenge record.
pub const CHALLENGE_LEN: usize = 24;
/// Length of the nonce inside it.
pub const NONCE_LEN: usize = 16;
/// Length of the client's proof.
pub const PROOF_LEN: usize = 32;
/// Length of a UDP datagram's MAC trailer.
pub const MAC_LEN: usize = 16;
/// Header bytes the proof covers (the flags word included).
pub const PROOF_HEADER_LEN: usize = 24;
/// Longest secret a responder or client takes (bytes of the file).
pub const MAX_SECRET_LEN: usize = 4096;

/// HMAC's block size: the longest key kept as it is.
const BLOCK: usize = 64;

/// Why bytes cannot be a secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretError {
    /// No bytes (after trailing line ends were removed): give a secret.
    Empty,
    /// More than [`MAX_SECRET_LEN`] bytes: use a shorter secret.
    TooLong(usize),
}

impl core::fmt::Display for SecretError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SecretError::Empty => write!(f, "the secret is empty"),
            SecretError::TooLong(n) => write!(f, "the secret is {n} bytes long, at most {MAX_SECRET_LEN}"),
        }
    }
}

/// A shared secret as HMAC-SHA256 keys with it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Key {
    bytes: [u8; BLOCK],
    len: u8,
}

impl core::fmt::Debug for Key {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never print the secret.
        f.write_str("Key(..)")
    }
}

impl Key {
    /// The key for `secret`: the bytes of a secret file or variable with
    /// trailing `\n` and `\r` removed ([`trim_secret`]).
    pub fn new(secret: &[u8]) -> Result<Key, SecretError> {
        if secret.is_empty() {
            return Err(SecretError::Empty);
        }
        if secret.len() > MAX_SECRET_LEN {
            return Err(SecretError::TooLong(secret.len()));
        }
        let mut bytes = [0u8; BLOCK];
        let len = if secret.len() > BLOCK {
            bytes[..32].copy_from_slice(&Sha256::digest(secret));
            32
        } else {
            bytes[..secret.len()].copy_from_slice(secret);
            secret.len()
        };
        Ok(Key { bytes, len: len as u8 })
    }

    /// The key as HMAC-SHA256 uses it: the secret itself, or its SHA-256
    /// when it is longer than 64 bytes. What a board's provisioning block
    /// holds (c-responder/mcu/smr_mcu.c), so the board needs no SHA-256 of
    /// a long secret at boot.
    pub fn hmac_key(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    fn hmac(&self) -> Hmac<Sha256> {
        // Any key length is valid for HMAC, so this cannot fail.
        match <Hmac<Sha256> as Mac>::new_from_slice(&self.bytes[..self.len as usize]) {
            Ok(m) => m,
            Err(_) => unreachable!("HMAC takes keys of any length"),
        }
    }

    /// HMAC-SHA256 over the concatenation of `parts`.
    pub fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut m = self.hmac();
        for p in parts {
            m.update(p);
        }
        m.finalize().into_bytes().into()
    }

    /// The nonce of challenge number `counter` at `now_ns` of a responder
    /// whose driver drew `seed` from its system's random source at start:
    /// `HMAC(secret, "SMTN" || seed || now_ns || counter)`, first 16 bytes.
    /// Unique per connection (the counter) and unpredictable without the
    /// secret and the seed.
    pub fn nonce(&self, seed: &[u8; NONCE_LEN], now_ns: u64, counter: u32) -> [u8; NONCE_LEN] {
        let m = self.mac(&[b"SMTN", seed, &now_ns.to_be_bytes(), &counter.to_be_bytes()]);
        let mut n = [0u8; NONCE_LEN];
        n.copy_from_slice(&m[..NONCE_LEN]);
        n
    }

    /// The proof a client sends for `challenge` and the first 24 bytes of
    /// the header it sent (`header` may be longer; the rest is not covered).
    pub fn proof(&self, challenge: &[u8; CHALLENGE_LEN], header: &[u8]) -> [u8; PROOF_LEN] {
        let h = &header[..header.len().min(PROOF_HEADER_LEN)];
        self.mac(&[challenge, h])
    }

    /// Whether `proof` is the right one (compared in constant time).
    pub fn check_proof(&self, challenge: &[u8; CHALLENGE_LEN], header: &[u8], proof: &[u8]) -> bool {
        eq(&self.proof(challenge, header), proof)
    }

    /// The MAC trailer of `body`: the first [`MAC_LEN`] bytes of its HMAC.
    pub fn trailer(&self, body: &[u8]) -> [u8; MAC_LEN] {
        let m = self.mac(&[body]);
        let mut t = [0u8; MAC_LEN];
        t.copy_from_slice(&m[..MAC_LEN]);
        t
    }

    /// Whether `trailer` is [`Key::trailer`] of `body`, compared without
    /// an early exit.
    pub fn check_trailer(&self, body: &[u8], trailer: &[u8]) -> bool {
        eq(&self.trailer(body), trailer)
    }
}

/// Compares without an early exit.
fn eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A secret as read from a file or variable, without the trailing line
/// ends an editor or `echo` adds.
pub fn trim_secret(b: &[u8]) -> &[u8] {
    let mut n = b.len();
    while n > 0 && matches!(b[n - 1], b'\n' | b'\r') {
        n -= 1;
    }
    &b[..n]
}

/// The challenge record with `nonce`.
pub fn challenge(nonce: &[u8; NONCE_LEN]) -> [u8; CHALLENGE_LEN] {
    let mut b = [0u8; CHALLENGE_LEN];
    b[0..4].copy_from_slice(&CHALLENGE_MAGIC);
    b[4] = crate::VERSION;
    b[8..].copy_from_slice(nonce);
    b
}

/// Whether the first bytes a client reads are a challenge (its magic).
pub fn is_challenge(b: &[u8]) -> bool {
    b.len() >= 4 && b[0..4] == CHALLENGE_MAGIC
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_case_2() {
        let k = Key::new(b"Jefe").unwrap();
        let m = k.mac(&[b"what do ya want ", b"for nothing?"]);
        assert_eq!(m[..4], [0x5b, 0xdc, 0xc1, 0x46]);
        assert_eq!(m[28..], [0x64, 0xec, 0x38, 0x43]);
    }

    #[test]
    fn long_keys_are_hashed_as_hmac_says() {
        let long = [0xaau8; 131];
        let k = Key::new(&long).unwrap();
        // RFC 4231 test case 6.
        let m = k.mac(&[b"Test Using Larger Than Block-Size Key - Hash Key First"]);
        assert_eq!(m[..4], [0x60, 0xe4, 0x31, 0x59]);
        assert_eq!(Key::new(b""), Err(SecretError::Empty));
        assert!(Key::new(&[1u8; MAX_SECRET_LEN + 1]).is_err());
    }
}
