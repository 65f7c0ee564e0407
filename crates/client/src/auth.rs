//! The client's shared secret (docs/protocol.md section 10): set once by
//! the binary from `--secret-file` or the environment, then used by every
//! session and datagram this process sends. With a secret, every session
//! header asks to authenticate and answers the responder's challenge, and
//! every UDP datagram carries a MAC trailer; a responder that does not
//! challenge, or answers without a MAC, is an error, not a silent
//! unauthenticated test.

use crate::error::ClientError;
use crate::sockets::{finish_status, lost, recv_exact, send_all};
use stackmeter_proto::auth::{self, Key, CHALLENGE_LEN, MAC_LEN};
use stackmeter_proto::session::FLAG_AUTH;
use stackmeter_proto::status::STATUS_PREFIX_LEN;
use std::net::{SocketAddr, TcpStream};
use std::sync::OnceLock;

static SECRET: OnceLock<Key> = OnceLock::new();

/// Sets the secret for the rest of the process (the first call wins).
pub fn set_secret(key: Key) {
    let _ = SECRET.set(key);
}

/// The secret, if one was set.
pub fn secret() -> Option<Key> {
    SECRET.get().copied()
}

/// Bytes a UDP datagram carries on the wire beyond its size: the trailer
/// with a secret, 0 without.
pub(crate) fn trailer() -> usize {
    if secret().is_some() {
        MAC_LEN
    } else {
        0
    }
}

/// Header flags with [`FLAG_AUTH`] added when the client has a secret.
pub(crate) fn flags(flags: u32) -> u32 {
    match secret() {
        Some(_) => flags | FLAG_AUTH,
        None => flags,
    }
}

/// A 16-byte header (an object session's) in its 24-byte form with the
/// auth flag when the client has a secret; unchanged otherwise.
pub(crate) fn extend(header: &[u8]) -> Vec<u8> {
    let mut h = header.to_vec();
    if secret().is_some() && h.len() == 16 {
        h.resize(24, 0);
        h[6..8].copy_from_slice(&24u16.to_be_bytes());
        h[16..20].copy_from_slice(&FLAG_AUTH.to_be_bytes());
    }
    h
}

/// After the header went out (`header`, the bytes sent): without a secret,
/// nothing. With one, reads the challenge and sends the proof followed by
/// `then` (crr's request, so they leave in one send). A status record in
/// place of the challenge is the responder's refusal or, when it accepts,
/// an error: it does not authenticate.
pub(crate) fn answer(
    stream: &mut TcpStream,
    addr: SocketAddr,
    header: &[u8],
    then: &[u8],
) -> Result<bool, ClientError> {
    let Some(key) = secret() else {
        return Ok(false);
    };
    let mut ch = [0u8; CHALLENGE_LEN];
    recv_exact(stream, STATUS_PREFIX_LEN as u64, &mut ch[..STATUS_PREFIX_LEN])
        .map_err(|e| lost(addr, "waiting for the responder's challenge", &e))?;
    if !auth::is_challenge(&ch) {
        let mut prefix = [0u8; STATUS_PREFIX_LEN];
        prefix.copy_from_slice(&ch[..STATUS_PREFIX_LEN]);
        finish_status(stream, addr, prefix)?;
        return Err(ClientError::Lost {
            addr,
            what: "the responder accepted without a challenge: it has no secret or predates authentication \
                   (docs/protocol.md 10); this client has one (--secret-file, STACKMETER_SECRET_FILE or \
                   STACKMETER_SECRET) and does not test unauthenticated"
                .into(),
        });
    }
    recv_exact(
        stream,
        (CHALLENGE_LEN - STATUS_PREFIX_LEN) as u64,
        &mut ch[STATUS_PREFIX_LEN..],
    )
    .map_err(|e| lost(addr, "reading the responder's challenge", &e))?;
    let mut msg = key.proof(&ch, header).to_vec();
    msg.extend_from_slice(then);
    send_all(stream, &msg).map_err(|e| lost(addr, "sending the authentication proof", &e))?;
    Ok(true)
}

/// Seals datagram `d` (its last [`MAC_LEN`] bytes are the trailer) when
/// the client has a secret.
#[inline]
pub(crate) fn seal(d: &mut [u8]) {
    if let Some(k) = secret() {
        stackmeter_proto::udp::seal(&k, d);
    }
}

/// What a received datagram is worth: `Ok(len)` without the trailer,
/// `Err(true)` for a stackmeter reply without a MAC (the responder does not
/// authenticate), `Err(false)` for a bad MAC (ignore it).
#[inline]
pub(crate) fn open(d: &[u8]) -> Result<usize, bool> {
    match secret() {
        None => Ok(d.len()),
        Some(k) => match stackmeter_proto::udp::open(&k, d) {
            Some(n) => Ok(n),
            None => Err(stackmeter_proto::udp::is_unsealed(d)),
        },
    }
}

/// The error for a reply without a MAC.
pub(crate) fn unsealed_reply(addr: SocketAddr) -> ClientError {
    ClientError::Lost {
        addr,
        what: "the responder answered UDP without a MAC: it has no secret or predates authentication \
               (docs/protocol.md 10); this client has one and does not test unauthenticated"
            .into(),
    }
}

/// What to add to "no reply" on UDP: the likely reason.
pub(crate) fn no_reply_hint() -> &'static str {
    match secret() {
        None => " (the responder may require a secret: --secret-file)",
        Some(_) => " (is the secret the responder's? a responder with another secret, or none, does not answer)",
    }
}
