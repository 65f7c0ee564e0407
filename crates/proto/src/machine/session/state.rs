//! A session's state: what it is doing (its phase, with the state of
//! each: the record being sent, an rr or crr exchange, a control session's
//! Reports, a source's writer, the proof being read, a lingering close)
//! and what it holds for the whole connection.

use crate::auth::{CHALLENGE_LEN, PROOF_LEN};
use crate::header::{SessionHeader, EXT_HEADER_LEN};
use crate::limits;
use crate::machine::config::Config;
use crate::machine::header_reader::{HeaderReader, Parsed};
use crate::machine::objects::RequestReader;
use crate::machine::record_reader::RecordReader;
use crate::machine::registry::{Registry, TestRef};
use crate::machine::step::{Event, Outgoing, Source};
use crate::machine::text::Reason;
use crate::objects::{self as obj};
use core::ops::Deref;

/// Room for the largest record the machine sends: an object error response
/// (12 + 255), which is longer than a refusal (8 + 255) or a Report (128).
pub(super) const OUT_LEN: usize = obj::RESPONSE_LEN + obj::MAX_REASON_LEN;
pub(super) const LINGER_NS: u64 = limits::LINGER_MS * 1_000_000;
/// Seconds a session may outlive the longest test (set up, drain).
pub(super) const TEST_GRACE_S: u64 = 5;

/// One TCP session of a responder. See the module documentation of
/// [`crate::machine`] for the call order.
///
/// `R` is how the session reaches the shared [`Registry`]: `&Registry`,
/// `&'static Registry`, an `Arc<Registry>`: anything that derefs to it.
pub struct Session<R: Deref<Target = Registry>> {
    pub(super) registry: R,
    pub(super) cfg: Config,
    pub(super) phase: Phase,
    pub(super) out: Out,
    /// The test this session owns (control) or joined (sink, source).
    pub(super) test: Option<TestRef>,
    pub(super) owner: bool,
    pub(super) event: Option<Event>,
    /// The reason of the last refusal or abort.
    pub(super) note: Reason,
    pub(super) header_by: u64,
    /// Object requests answered and object bytes sent.
    pub(super) requests: u64,
    pub(super) object_bytes: u64,
    /// When the session must end (the longest test), once accepted.
    pub(super) ends_by: Option<u64>,
}

/// Record bytes built and not yet sent.
pub(super) struct Out {
    pub(super) buf: [u8; OUT_LEN],
    pub(super) off: u16,
    pub(super) len: u16,
}

impl Out {
    pub(super) const fn new() -> Out {
        Out {
            buf: [0; OUT_LEN],
            off: 0,
            len: 0,
        }
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.off == self.len
    }

    #[inline]
    pub(super) fn pending(&self) -> &[u8] {
        &self.buf[self.off as usize..self.len as usize]
    }

    /// Replaces what is pending with `bytes` (at most [`OUT_LEN`]).
    pub(super) fn set(&mut self, bytes: &[u8]) {
        self.off = 0;
        self.len = 0;
        self.push(bytes);
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        let at = self.len as usize;
        let n = bytes.len().min(OUT_LEN - at);
        self.buf[at..at + n].copy_from_slice(&bytes[..n]);
        self.len += n as u16;
    }

    pub(super) fn clear(&mut self) {
        self.off = 0;
        self.len = 0;
    }

    /// `n` bytes went out: consumes them from the record; returns how many
    /// of them were payload after it.
    #[inline]
    pub(super) fn sent(&mut self, n: usize) -> usize {
        let k = n.min((self.len - self.off) as usize);
        self.off += k as u16;
        n - k
    }
}

/// rr and crr: the current transaction.
#[derive(Clone, Copy)]
pub(super) struct Exchange {
    pub(super) req: u32,
    pub(super) resp: u32,
    /// Bytes of the current request received.
    pub(super) got: u32,
    /// Bytes of the current response not yet sent.
    pub(super) left: u64,
    /// crr: the one transaction is complete; only the client's close may
    /// follow.
    pub(super) answered: bool,
    /// rr with stamps: every response starts with a stamp block.
    pub(super) stamps: bool,
    /// A request is complete and its stamp block not yet built.
    pub(super) stamp_due: bool,
    /// A response is being sent (stamped sessions).
    pub(super) open: bool,
    /// Responses completely handed to the stack (stamped sessions).
    pub(super) served: u64,
    /// The latest response whose kernel send stamp is known: its
    /// transaction number and the stamp.
    pub(super) prev_tx: Option<(u64, u64)>,
}

impl Exchange {
    pub(super) fn new(h: &SessionHeader) -> Exchange {
        Exchange {
            req: h.req_size,
            resp: h.resp_size,
            got: 0,
            left: 0,
            answered: false,
            stamps: false,
            stamp_due: false,
            open: false,
            served: 0,
            prev_tx: None,
        }
    }

    #[inline]
    pub(super) fn body(&self) -> Option<Outgoing> {
        (self.left > 0).then_some(Outgoing {
            source: Source::Payload,
            offset: self.resp as u64 - self.left,
            len: self.left,
        })
    }
}

/// The control session's state between records.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Reports {
    /// Reading records.
    Idle,
    /// A Report answering `id` waits for the driver's figures.
    Due { id: u32, flags: u8 },
    /// Stop came: the final Report waits for the drain rule.
    Draining { id: u32, deadline: u64 },
}

/// A source's writes.
#[derive(Clone, Copy)]
pub(super) struct Writer {
    /// Bytes per send call.
    pub(super) size: u32,
    /// Bytes of the current message already sent.
    pub(super) off: u32,
    /// Abort if no Snapshot started the test by then.
    pub(super) start_by: u64,
    /// The latest time `tick` gave (paced sources wait for their rate).
    pub(super) now: u64,
}

/// A header waiting for its proof (the responder has a secret).
#[derive(Clone, Copy)]
pub(super) struct Auth {
    pub(super) parsed: Parsed,
    pub(super) header: [u8; EXT_HEADER_LEN],
    pub(super) challenge: [u8; CHALLENGE_LEN],
    pub(super) proof: [u8; PROOF_LEN],
    pub(super) got: u8,
}

/// The lingering close after a refusal.
#[derive(Clone, Copy)]
pub(super) struct Linger {
    pub(super) got: usize,
    pub(super) shut: bool,
    pub(super) until: u64,
}

// No allocation here: a session is one fixed-size value whatever its
// phase, and the phase changes a few times per connection, never per message.
#[allow(clippy::large_enum_variant)]
pub(super) enum Phase {
    Header(HeaderReader),
    Auth(Auth),
    Rr(Exchange),
    Crr(Exchange),
    Control(RecordReader, Reports),
    Sink,
    Source(Writer),
    Objects(RequestReader, Option<Outgoing>),
    Linger(Linger),
    /// Send what is queued, half-close if `shut`, then close.
    Ending {
        shut: bool,
    },
}
