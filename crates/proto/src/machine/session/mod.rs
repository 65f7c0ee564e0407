//! One TCP connection of a responder, from the first header byte to the
//! close, as a state machine: bytes and times in, [`Next`] steps out.
//!
//! Phases: the header (read and judged, then accepted or refused); after a
//! refusal the status record, a half-close and a lingering read (so no reset
//! destroys the record); after acceptance the data phase of the mode: rr,
//! crr, control, sink, source or objects. A session that joined or owns a
//! throughput test leaves it or closes it when dropped.
//!
//! The files: `state.rs` holds the session's state (and that of each
//! phase); `poll.rs` its creation and call order (`poll`, `step`); `input.rs` what arrives (the
//! header, the proof, requests, control records) and the data phase it
//! starts; `answers.rs` an object session's responses; `ending.rs`
//! refusals, limits and the end of a session; `feedback.rs` what the
//! driver reports back (sent, end of file, timeouts, stamps, a Report).

mod answers;
mod ending;
mod feedback;
mod input;
mod poll;
mod state;

pub use poll::Served;
pub use state::Session;
