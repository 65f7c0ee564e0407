//! The start of every session with a responder (docs/protocol.md sections
//! 3 and 10): the session header sent, the responder's challenge answered
//! with the proof when the endpoint has a secret, the status record read (a
//! refusal becomes [`ClientError::Refused`]). The header bytes come from
//! `stackmeter_proto`'s encoders, the proof from its crypto, the bytes move
//! through `sockets.rs`.

use crate::endpoint::Endpoint;
use crate::error::{ClientError, Plain};
use crate::sockets::{lost, recv_exact, send_all, tcp_connect};
use stackmeter_proto::auth::{CHALLENGE_LEN, PROOF_LEN};
use stackmeter_proto::header::SessionHeader;
use stackmeter_proto::status::{Refusal, StatusPrefix, MAX_REASON_LEN, STATUS_PREFIX_LEN};
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Connects, sends the session header (answering the challenge when the
/// endpoint has a secret) and reads the status record: a stream ready for
/// the data phase, with `timeout` on every read and write.
pub fn open_session(endpoint: &Endpoint, h: &SessionHeader, timeout: Duration) -> Result<TcpStream, ClientError> {
    open_session_with(endpoint, h, timeout, true)
}

/// [`open_session`] with a choice of TCP_NODELAY for the data phase: a
/// throughput test's data connections leave Nagle on by default (a bulk
/// sender of small writes wants its segments coalesced, as iperf3 does).
/// The header and status exchange happen with NODELAY either way.
pub(crate) fn open_session_with(
    endpoint: &Endpoint,
    h: &SessionHeader,
    timeout: Duration,
    nodelay: bool,
) -> Result<TcpStream, ClientError> {
    let mut stream = tcp_connect(endpoint.addr, timeout)?;
    start(&mut stream, endpoint, h)?;
    if !nodelay {
        stream.set_nodelay(false)?;
    }
    Ok(stream)
}

/// The session on a connected `stream`: sends the header (asking to
/// authenticate when the endpoint has a secret), answers the challenge, reads
/// the status record. Returns the bytes the client wrote before the data
/// phase (the header, and the proof with a secret).
pub(crate) fn start(stream: &mut TcpStream, endpoint: &Endpoint, h: &SessionHeader) -> Result<u64, ClientError> {
    let h = SessionHeader {
        flags: endpoint.flags(h.flags),
        ..*h
    };
    begin(stream, endpoint, &h.emit(), "sending the session header")
}

/// An object session (the load test's): connects, sends its header, and
/// reads the status record.
pub(crate) fn open_objects(endpoint: &Endpoint, timeout: Duration) -> Result<TcpStream, ClientError> {
    let mut stream = tcp_connect(endpoint.addr, timeout)?;
    let header = stackmeter_proto::objects::emit_header_with(endpoint.flags(0));
    begin(&mut stream, endpoint, &header, "sending the object session header")?;
    Ok(stream)
}

/// Sends `header`, answers the challenge, reads the status record;
/// returns the bytes written.
fn begin(stream: &mut TcpStream, endpoint: &Endpoint, header: &[u8], during: &str) -> Result<u64, ClientError> {
    send_all(stream, header).map_err(|e| lost(endpoint.addr, during, &e))?;
    let proof = match answer(stream, endpoint, header, &[])? {
        true => PROOF_LEN,
        false => 0,
    };
    read_status(stream, endpoint.addr, header)?;
    Ok((header.len() + proof) as u64)
}

/// After the header went out (`header`, the bytes sent): without a secret,
/// nothing. With one, reads the challenge and sends the proof followed by
/// `then` (crr's request, so they leave in one send). A status record in
/// place of the challenge is the responder's refusal or, when it accepts,
/// an error: it does not authenticate.
pub(crate) fn answer(
    stream: &mut TcpStream,
    endpoint: &Endpoint,
    header: &[u8],
    then: &[u8],
) -> Result<bool, ClientError> {
    let Some(key) = &endpoint.secret else {
        return Ok(false);
    };
    let addr = endpoint.addr;
    let mut ch = [0u8; CHALLENGE_LEN];
    recv_exact(stream, STATUS_PREFIX_LEN as u64, &mut ch[..STATUS_PREFIX_LEN])
        .map_err(|e| lost(addr, "waiting for the responder's challenge", &e))?;
    if !stackmeter_proto::auth::is_challenge(&ch) {
        let mut prefix = [0u8; STATUS_PREFIX_LEN];
        prefix.copy_from_slice(&ch[..STATUS_PREFIX_LEN]);
        finish_status(stream, addr, prefix, header)?;
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

/// Reads a status record; a refusal becomes [`ClientError::Refused`], and
/// the first bytes `sent` on the connection coming back, or nothing at
/// all, [`ClientError::PlainTarget`].
pub(crate) fn read_status(stream: &mut TcpStream, addr: SocketAddr, sent: &[u8]) -> Result<(), ClientError> {
    let mut prefix = [0u8; STATUS_PREFIX_LEN];
    recv_exact(stream, STATUS_PREFIX_LEN as u64, &mut prefix).map_err(|e| lost_status(addr, &e))?;
    finish_status(stream, addr, prefix, sent)
}

/// A connection that broke before the status record: with a closed
/// connection and no byte, the responder may have turned the address away.
fn lost_status(addr: SocketAddr, e: &io::Error) -> ClientError {
    // Not a byte in the whole timeout: a discard server reads and says
    // nothing; a responder answers the header at once.
    if crate::error::is_timeout(e) {
        return ClientError::PlainTarget {
            addr,
            kind: Plain::Discard,
            why: "no status record, nor any byte, came back to the session header within the timeout",
        };
    }
    let mut err = lost(addr, "waiting for the session status", e);
    if let ClientError::Lost { what, .. } = &mut err {
        if e.kind() == io::ErrorKind::UnexpectedEof && e.to_string().starts_with("closed after 0 ") {
            what.push_str(
                " (a responder with limits closes connections from networks it does not allow, \
                 and beyond its connections per second or waiting sessions per address)",
            );
        }
    }
    err
}

/// The rest of a status record whose first 8 bytes are `prefix`.
fn finish_status(
    stream: &mut TcpStream,
    addr: SocketAddr,
    prefix: [u8; STATUS_PREFIX_LEN],
    sent: &[u8],
) -> Result<(), ClientError> {
    // The header came back: an echo server (a responder never sends it).
    if sent.len() >= STATUS_PREFIX_LEN && prefix[..] == sent[..STATUS_PREFIX_LEN] {
        return Err(ClientError::PlainTarget {
            addr,
            kind: Plain::Echo,
            why: "the session header came back byte for byte",
        });
    }
    let mut rec = [0u8; STATUS_PREFIX_LEN + MAX_REASON_LEN];
    rec[..STATUS_PREFIX_LEN].copy_from_slice(&prefix);
    let p = StatusPrefix::parse(&rec).map_err(|_| ClientError::Lost {
        addr,
        what: "the peer is not a stackmeter responder (bad status record)".into(),
    })?;
    if p.accepted() {
        return Ok(());
    }
    let n = p.reason_len as usize;
    // A responder that closes before its whole reason still refused.
    let _ = recv_exact(stream, n as u64, &mut rec[STATUS_PREFIX_LEN..STATUS_PREFIX_LEN + n]);
    let reason = String::from_utf8_lossy(&rec[STATUS_PREFIX_LEN..STATUS_PREFIX_LEN + n]).into_owned();
    let code = match Refusal::from_u8(p.code) {
        Some(Refusal::UnsupportedVersion) => format!(
            "unsupported version (responder speaks v{}, this client v{})",
            p.version,
            stackmeter_proto::VERSION
        ),
        Some(r) => r.name().to_string(),
        None => format!("code {}", p.code),
    };
    Err(ClientError::Refused { addr, code, reason })
}
