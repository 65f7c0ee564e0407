//! A responder's protocol logic as a pure state machine: bytes and times
//! in, steps out. No I/O, no clock, no allocation, no `unsafe`.
//!
//! The same rules the C engine (`c-responder/src/smr.h`) follows, in Rust
//! types: a [`Session`] per TCP connection and one [`Registry`] of
//! throughput tests shared by all of them. A driver owns the sockets, the
//! threads or event loop, the clock, the payload buffers and the objects;
//! the machine decides what every byte means and what to answer. Times are
//! nanoseconds on any monotonic clock the driver chooses (the same one
//! everywhere). CPU time and TCP_INFO come in as plain values
//! ([`ReportInputs`], [`CpuTime`]), the objects through the [`Catalogue`] trait.
//!
//! # Call order
//!
//! ```text
//! connection accepted          -> Session::new(registry, config, now)
//!                                 (Session::busy when the driver is full)
//! loop:  match session.poll()
//!   Event(e)                   -> log it (session.reason()), count it; on
//!                                 Accepted(service) set the session up
//!   Send(body)                 -> write session.record() then the body
//!                                 (one writev), the body cut from the
//!                                 driver's own memory -> session.sent(n)
//!   Read(max)                  -> read at most max bytes
//!                                 -> session.input(bytes, now, catalogue)
//!                                 -> session.eof() when the read gave 0
//!   Stamp                      -> (rr with stamps) read the wall clock
//!                                 -> session.stamp(block): the last read's
//!                                 kernel and application receive times
//!                                 and this application send time
//!   Report(due)                -> gather ReportInputs -> session.report(now, f)
//!   Wait(until)                -> sleep a little -> session.tick(now)
//!   Shutdown                   -> half-close -> session.shut_done()
//!   Close                      -> close the socket, leave the loop
//! a wait longer than session.deadline()  -> session.timeout(now)
//! a socket call failed                   -> session.failed(call, peer_gone)
//! a send stamp on the error queue        -> session.tx_stamp(key, ns)
//!   (rr with stamps: turn SO_TIMESTAMPING on at Accepted, before the
//!   status record goes out; read it before each Read)
//! at the end                   -> session.finish(cpu) (or drop it)
//!
//! UDP stream datagram (kind 4) -> registry.find(id), registry.count_udp()
//! ```
//!
//! [`Session::deadline`] says how long the driver may wait for the peer:
//! [`Deadline::At`] (header, linger) or [`Deadline::Idle`] (every data
//! phase: relative to the last progress, so a blocking driver sets it once
//! as its socket timeout and never per message). In the data phases `input`
//! does not read `now` ([`Session::needs_clock`]), so the measured path of
//! rr and crr costs no clock read: one receive per request chunk, one send
//! (or one `writev` of status and response in crr) per response.
//!
//! # Where each rule lives
//!
//! - `header`: the session header, prefix first (docs/protocol.md 2.1);
//! - `records`: control records from any chunking, unknown types skipped;
//! - `objects`: LIST/FETCH requests and the [`Catalogue`] trait (section 9);
//! - `registry`: throughput tests, their counters, UDP streams, the drain
//!   rule and Reports (section 8);
//! - `session`: the phases, refusals and their lingering close, aborts;
//! - `step`: what the machine asks of the driver ([`Next`]);
//! - `config`: the limits ([`crate::limits`]) a responder runs with;
//! - `text`: reasons formatted without allocation.

mod config;
mod header_reader;
mod objects;
mod record_reader;
mod registry;
mod session;
mod step;
mod text;

pub use config::Config;
pub use objects::{Catalogue, Lookup, NoObjects};
pub use registry::{CpuTime, Full, Registry, ReportInputs, TcpFigures, TestRef, UdpCount};
pub use session::{Served, Session};
pub use step::{Deadline, Event, Failure, Next, Outgoing, ReportDue, Service, Source, ANY};
pub use text::Reason;
