//! What can stop a test, and the exit code each maps to.

use std::io;
use std::net::SocketAddr;

/// Why a test could not start or could not finish.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The target name did not resolve to an address.
    #[error("cannot resolve target '{target}': {reason}")]
    Resolve {
        /// The name as given.
        target: String,
        /// What the resolver said.
        reason: String,
    },
    /// No connection: refused, unreachable, no answer, or no local port.
    #[error("cannot reach {addr}: {reason}")]
    Unreachable {
        /// The target.
        addr: SocketAddr,
        /// What failed.
        reason: String,
    },
    /// The responder answered the session header with a refusal.
    #[error("{addr} refused the session: {code}: {reason}")]
    Refused {
        /// The target.
        addr: SocketAddr,
        /// Refusal name or number.
        code: String,
        /// The responder's reason text.
        reason: String,
    },
    /// The exchange broke after it started: reset, closed, timed out, or
    /// bytes that do not follow the protocol.
    #[error("{addr}: {what}")]
    Lost {
        /// The target.
        addr: SocketAddr,
        /// What broke, and where in the test.
        what: String,
    },
    /// The target answered as a plain server does, not as a stackmeter
    /// responder: the request came back byte for byte (an echo server), or
    /// nothing came back at all (a discard server). Nothing was measured.
    #[error("{addr}: this looks like a plain {} server, not a stackmeter responder ({why}); to measure it as one, add {}", kind.name(), kind.flag())]
    PlainTarget {
        /// The target.
        addr: SocketAddr,
        /// What kind of plain server.
        kind: Plain,
        /// What gave it away.
        why: &'static str,
    },
    /// A local failure (socket creation, options).
    #[error("local error: {0}")]
    Local(#[from] io::Error),
    /// The user asked to stop (Ctrl-C or SIGTERM): the test ended early,
    /// keeping what finished.
    #[error("interrupted (Ctrl-C)")]
    Interrupted,
}

/// The plain servers a target can turn out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plain {
    /// It sends back what it got.
    Echo,
    /// It reads and sends nothing.
    Discard,
}

impl Plain {
    /// "echo", "discard".
    pub fn name(self) -> &'static str {
        match self {
            Plain::Echo => "echo",
            Plain::Discard => "discard",
        }
    }

    /// The flag that measures such a server.
    pub fn flag(self) -> &'static str {
        match self {
            Plain::Echo => "--echo",
            Plain::Discard => "--discard (stream), or a longer --timeout-ms if it is a slow responder",
        }
    }
}

/// `Err(Interrupted)` once the user asked to stop; loops call it between
/// transactions, outside the timed span.
pub(crate) fn check_interrupt() -> Result<(), ClientError> {
    match stackmeter_sys::interrupt::interrupted() {
        true => Err(ClientError::Interrupted),
        false => Ok(()),
    }
}

/// True for the errors a socket timeout produces.
pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

/// Describes a connect failure in the user's terms.
pub(crate) fn connect_reason(e: &io::Error, timeout_ms: u64) -> String {
    if is_timeout(e) || e.raw_os_error() == Some(libc::EINPROGRESS) {
        return format!("no answer within {timeout_ms} ms (connect timed out)");
    }
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => "connection refused (nothing listens on that port)".into(),
        Some(libc::EADDRNOTAVAIL) => {
            "no free local port (ephemeral ports exhausted, usually by TIME_WAIT: see docs/tests.md#crr)".into()
        }
        Some(libc::ENETUNREACH | libc::EHOSTUNREACH) => format!("{e} (no route)"),
        _ => e.to_string(),
    }
}

/// The error a UDP echo reply's kind calls for: a request that came back
/// (an echo server, not a responder), or the responder's refusal; `None`
/// for anything else (an echo reply, or junk the caller counts).
pub(crate) fn echo_reply_kind(addr: std::net::SocketAddr, h: &stackmeter_proto::udp::Header) -> Option<ClientError> {
    use stackmeter_proto::udp::Kind;
    if h.kind == Kind::EchoRequest as u8 {
        return Some(ClientError::PlainTarget {
            addr,
            kind: Plain::Echo,
            why: "the datagrams came back as they were sent, still requests",
        });
    }
    if h.kind == Kind::Refused as u8 {
        let code = stackmeter_proto::status::Refusal::from_u8(h.code)
            .map(|r| r.name().to_string())
            .unwrap_or(format!("code {}", h.code));
        return Some(ClientError::Refused {
            addr,
            code,
            reason: format!("UDP echo refused (responder speaks v{})", h.version),
        });
    }
    None
}

/// A UDP echo socket's error: port unreachable before any reply is an
/// unreachable target, after one a responder gone mid-test; anything
/// else breaks the test off.
pub(crate) fn udp_io_error(addr: std::net::SocketAddr, e: &io::Error, answered: bool) -> ClientError {
    if e.kind() == io::ErrorKind::ConnectionRefused {
        let reason = "UDP port unreachable (ICMP): no responder on that port".to_string();
        return match answered {
            false => ClientError::Unreachable { addr, reason },
            true => ClientError::Lost {
                addr,
                what: format!("responder gone mid-test: {reason}"),
            },
        };
    }
    ClientError::Lost {
        addr,
        what: format!("UDP: {e}"),
    }
}
