//! What a responder tells its session machines: the limits it enforces and
//! whether it serves object mode. Defaults come from [`crate::limits`], the
//! one table both responders share.

use crate::admit::Advertised;
use crate::auth::{Key, NONCE_LEN};
use crate::limits;

/// A responder's settings, the same for every session (`Copy`, so each
/// session keeps its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Concurrent TCP sessions the driver allows; only named in the reason
    /// of a `Busy` refusal ([`crate::machine::Session::busy`]), since the
    /// driver owns the count.
    pub max_sessions: usize,
    /// Largest request, response or source write size; larger is refused
    /// `TooLarge`.
    pub max_msg: u32,
    /// The whole session header must arrive within this, ns.
    pub header_timeout_ns: u64,
    /// A session with no progress for this long is aborted, ns.
    pub idle_timeout_ns: u64,
    /// Whether the driver has a catalogue: without one, object sessions
    /// (mode 16) are refused `UnknownMode`.
    pub objects: bool,
    /// Whether the driver reads kernel timestamps: with it, an rr session
    /// whose header asks for stamps gets a stamp block in front of every
    /// response ([`crate::stamps`]); without it the flag is ignored, as a
    /// responder that knows no flags does.
    pub stamps: bool,
    /// The shared secret: with one, every session authenticates first
    /// (docs/protocol.md section 10); a header without the auth flag is
    /// refused `Auth`.
    pub key: Option<Key>,
    /// Random bytes the driver drew from its system at start: the nonces
    /// of challenges are derived from them, the secret, the time and a
    /// counter ([`Key::nonce`]).
    pub seed: [u8; NONCE_LEN],
    /// The operator's limits of a test, advertised in every Welcome; the
    /// longest test also bounds every session ([`crate::machine::Session::ends_by`]).
    pub limits: Advertised,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_sessions: limits::MAX_SESSIONS,
            max_msg: limits::MAX_MSG,
            header_timeout_ns: limits::HEADER_TIMEOUT_MS * 1_000_000,
            idle_timeout_ns: limits::IDLE_TIMEOUT_MS * 1_000_000,
            objects: false,
            stamps: false,
            key: None,
            seed: [0; NONCE_LEN],
            limits: Advertised::default(),
        }
    }
}
