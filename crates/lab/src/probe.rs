//! Whether a responder of the lab answers: one rr transaction of 1 byte
//! each way, or a control session's Welcome, opened through the client as
//! every test opens its sessions (the header, the status record, a refusal
//! read as the client reads it).

use crate::error::LabError;
use stackmeter_client::{open_session, welcome as client_welcome, ClientError, Endpoint};
use stackmeter_proto::auth::Key;
use stackmeter_proto::header::{Mode, SessionHeader};
use stackmeter_proto::status::Refusal;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How long one probe may wait for anything.
const PROBE_WAIT: Duration = Duration::from_millis(500);
/// How long a responder that was just started may take to answer.
const START_WAIT: Duration = Duration::from_secs(15);

/// One rr transaction (1 byte each way) through the real protocol.
fn rr_once(addr: SocketAddr) -> Result<(), ClientError> {
    let header = SessionHeader {
        mode: Mode::Rr,
        req_size: 1,
        resp_size: 1,
        flags: 0,
    };
    let mut s = open_session(&Endpoint::new(addr, None), &header, PROBE_WAIT)?;
    s.write_all(&[0])?;
    s.read_exact(&mut [0u8; 1])?;
    Ok(())
}

/// Whether the responder at `addr` answers an rr transaction now; one
/// that refuses it for want of the shared secret (a firmware provisioned
/// with one) answers too.
pub(crate) fn rr_answers(addr: SocketAddr) -> bool {
    match rr_once(addr) {
        Ok(()) => true,
        Err(ClientError::Refused { code, .. }) => code == Refusal::Auth.name(),
        Err(_) => false,
    }
}

/// Waits until the responder at `addr` answers an rr transaction, at most
/// [`START_WAIT`].
pub(crate) fn wait_answers(addr: SocketAddr) -> Result<(), LabError> {
    let deadline = Instant::now() + START_WAIT;
    loop {
        if stackmeter_sys::interrupt::interrupted() {
            return Err(LabError::Interrupted);
        }
        match rr_once(addr) {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() > deadline => {
                return Err(LabError::NoAnswer {
                    addr: addr.to_string(),
                    why: format!("nothing within {} s ({e})", START_WAIT.as_secs()),
                })
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// Whether a control session at `addr` (proving `secret`, if given, with
/// the client's own handshake) gets its Welcome within 200 ms: the first
/// thing a throughput test gets from a responder.
pub(crate) fn welcome(addr: SocketAddr, secret: Option<Key>) -> Result<(), ClientError> {
    client_welcome(&Endpoint::new(addr, secret), Duration::from_millis(200)).map(|_| ())
}
