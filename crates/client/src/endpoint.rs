//! Where a test connects and the shared secret it proves there
//! (docs/protocol.md section 10): one [`Endpoint`] value that every test
//! against a responder receives, and what the secret does to the bytes
//! the client sends. With a secret, every session header asks to
//! authenticate (the challenge is answered in `handshake.rs`) and every
//! UDP datagram carries a MAC trailer; a responder that does not
//! challenge, or answers without a MAC, is an error, not a silent
//! unauthenticated test. No socket here: bytes in, bytes out.

use crate::error::ClientError;
use stackmeter_proto::auth::{Key, MAC_LEN};
use stackmeter_proto::header::FLAG_AUTH;
use stackmeter_proto::udp;
use std::net::SocketAddr;

/// A responder to measure: its address, and the shared secret it asks
/// for (the engine reads it from `--secret-file` or the environment).
/// Plain targets speak no protocol and take an address alone.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint {
    /// Where to connect.
    pub addr: SocketAddr,
    /// The shared secret; `None`: nothing is authenticated.
    pub secret: Option<Key>,
}

impl Endpoint {
    /// An endpoint to `addr` that proves `secret`, if one is given.
    pub fn new(addr: SocketAddr, secret: Option<Key>) -> Endpoint {
        Endpoint { addr, secret }
    }

    /// Session header flags with [`FLAG_AUTH`] added when there is a
    /// secret.
    pub(crate) fn flags(&self, flags: u32) -> u32 {
        match self.secret {
            Some(_) => flags | FLAG_AUTH,
            None => flags,
        }
    }

    /// Bytes a UDP datagram carries on the wire beyond its size: the
    /// trailer with a secret, 0 without.
    pub(crate) fn trailer(&self) -> usize {
        match self.secret {
            Some(_) => MAC_LEN,
            None => 0,
        }
    }

    /// Seals datagram `d` (its last [`MAC_LEN`] bytes are the trailer)
    /// when there is a secret.
    #[inline]
    pub(crate) fn seal(&self, d: &mut [u8]) {
        if let Some(k) = &self.secret {
            udp::seal(k, d);
        }
    }

    /// What a received datagram is worth: `Ok(len)` without the trailer,
    /// `Err(true)` for a stackmeter reply without a MAC (the responder
    /// does not authenticate), `Err(false)` for a bad MAC (ignore it).
    #[inline]
    pub(crate) fn open(&self, d: &[u8]) -> Result<usize, bool> {
        match &self.secret {
            None => Ok(d.len()),
            Some(k) => match udp::open(k, d) {
                Some(n) => Ok(n),
                None => Err(udp::is_unsealed(d)),
            },
        }
    }

    /// The error for a reply without a MAC.
    pub(crate) fn unsealed_reply(&self) -> ClientError {
        ClientError::Lost {
            addr: self.addr,
            what: "the responder answered UDP without a MAC: it has no secret or predates authentication \
                   (docs/protocol.md 10); this client has one and does not test unauthenticated"
                .into(),
        }
    }
}
