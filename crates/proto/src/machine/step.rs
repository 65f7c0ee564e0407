//! What a session asks of its driver, one step at a time.
//!
//! [`crate::machine::Session::poll`] answers with a [`Next`]: an event to
//! log, bytes to send, how many bytes to read, a Report that needs figures
//! only the driver can measure, a wait, a half-close, or the end. The
//! driver does it and reports back (`input`, `eof`, `sent`, `timeout`,
//! `failed`, `report`, `tick`, `shut_done`). Payload is named by [`Outgoing`]
//! and cut by the driver from its own memory, so the machine never copies
//! payload.

use crate::status::Refusal;

/// [`Next::Read`]: any number of bytes may be read.
pub const ANY: usize = usize::MAX;

/// The next thing the driver should do for a session. Nothing in it
/// borrows the session, so the driver can ask it more ([`Session::record`],
/// [`Session::reason`], [`Session::deadline`]) before it acts.
///
/// [`Session::record`]: crate::machine::Session::record
/// [`Session::reason`]: crate::machine::Session::reason
/// [`Session::deadline`]: crate::machine::Session::deadline
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Something to log or count; then poll again.
    Event(Event),
    /// Send `Session::record()` then this body (one `writev` for both where
    /// possible), then call `sent` with how many bytes the stack took.
    Send(Option<Outgoing>),
    /// Read at most this many bytes (or [`ANY`]), then call `input` with
    /// them, or `eof` when the peer has closed. A driver that never reads
    /// more than this never has to keep bytes back for later.
    Read(usize),
    /// A Report is due: gather the [`crate::machine::ReportInputs`] and call
    /// `report`.
    Report(ReportDue),
    /// Nothing to send or read until the registry changes (a source waits
    /// for its test's first Snapshot, a control session for its test to
    /// drain) or this time (ns) passes. Sleep a little, then call `tick`.
    Wait(u64),
    /// A stamped rr response is due (the session asked for stamps): read
    /// the clock right before the send (the application send time) and
    /// call `stamp` with this exchange's stamps; the next step sends them.
    Stamp,
    /// Half-close (shutdown write) once the bytes sent so far are out, then
    /// call `shut_done`.
    Shutdown,
    /// Close the connection: the session is over. Then `finish` it.
    Close,
}

/// Payload the driver sends from its own memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// Where the bytes come from.
    pub source: Source,
    /// Offset into that content of the first byte to send (payload
    /// content is unspecified: a driver may ignore it for
    /// [`Source::Payload`]).
    pub offset: u64,
    /// Bytes left; the driver sends any prefix of them and reports how many
    /// went with `sent`.
    pub len: u64,
}

/// The content an [`Outgoing`] is cut from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Any bytes: rr/crr responses and source writes (the driver's shared
    /// read-only buffer, reused for every message).
    Payload,
    /// The catalogue body (LIST).
    List,
    /// The object with this catalogue index (FETCH), which
    /// [`crate::machine::Catalogue::fetch`] made ready.
    Object(u32),
}

/// How long the driver may wait for the peer now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// Until this time, ns (header, linger): the wait shrinks as time passes.
    At(u64),
    /// This long after the last progress, ns (the idle timeout of every data
    /// phase): a blocking driver sets it once as its socket timeout.
    Idle(u64),
}

/// A Report the driver must complete ([`Next::Report`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReportDue {
    /// The test the Report is about: its source sessions' TCP_INFO.
    pub test: u32,
    /// The answer to Stop: include the control session's CPU time.
    pub is_final: bool,
}

/// What a session is, once its header was accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// rr: requests of `req` bytes, responses of `resp`.
    Rr {
        /// Request size.
        req: u32,
        /// Response size.
        resp: u32,
        /// Every response starts with a stamp block: turn the socket's
        /// kernel timestamps on before the status record is sent, read
        /// requests with their receive stamps, and feed send stamps to
        /// `tx_stamp` (docs/protocol.md 4.3).
        stamps: bool,
    },
    /// crr: one transaction.
    Crr {
        /// Request size.
        req: u32,
        /// Response size.
        resp: u32,
    },
    /// A throughput test's control session; it owns the test.
    Control {
        /// The test id it gave.
        test: u32,
    },
    /// A sink of test `test`.
    Sink {
        /// The test it joined.
        test: u32,
        /// The client's write size, 0 for the responder's choice: a good
        /// receive size.
        read_hint: u32,
    },
    /// A source of test `test`, writing `write` bytes per send call.
    Source {
        /// The test it joined.
        test: u32,
        /// Bytes per send call.
        write: u32,
    },
    /// An object session (LIST and FETCH).
    Objects,
}

/// Something the driver logs or counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The header was accepted: count the session, set it up.
    Accepted(Service),
    /// The header was refused with this code and `Session::reason()`; the
    /// status record follows, then a lingering close.
    Refused(Refusal),
    /// The session ends early (client gone mid-transfer, idle timeout,
    /// broken framing) for `Session::reason()`: one log line.
    Aborted,
}

/// Which socket call failed ([`crate::machine::Session::failed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A receive call.
    Receive,
    /// A send call.
    Send,
}
