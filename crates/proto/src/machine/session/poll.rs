//! A session made, and its call order: `poll` asks the machine for the
//! next step, `step` decides it from the phase.

use super::state::{Out, Phase, Reports, Session};
use crate::auth::PROOF_LEN;
use crate::control::FLAG_FINAL;
use crate::machine::config::Config;
use crate::machine::header_reader::HeaderReader;
use crate::machine::registry::{CpuTime, Registry, TestRef};
use crate::machine::step::{Deadline, Next, Outgoing, ReportDue, Source, ANY};
use crate::machine::text::Reason;
use crate::status::{self, Refusal, STATUS_PREFIX_LEN};
use core::fmt::{self};
use core::ops::Deref;

impl<R: Deref<Target = Registry>> Session<R> {
    /// A new connection at `now_ns`: the header must be complete by
    /// `now_ns + cfg.header_timeout_ns`.
    pub fn new(registry: R, cfg: Config, now_ns: u64) -> Session<R> {
        Session {
            registry,
            cfg,
            phase: Phase::Header(HeaderReader::new()),
            out: Out::new(),
            test: None,
            owner: false,
            event: None,
            note: Reason::new(),
            header_by: now_ns.saturating_add(cfg.header_timeout_ns),
            requests: 0,
            object_bytes: 0,
            ends_by: None,
        }
    }

    /// A connection the driver has no room for (it runs
    /// `cfg.max_sessions`): refused `Busy` at once, then the lingering close.
    pub fn busy(registry: R, cfg: Config, now_ns: u64) -> Session<R> {
        let mut s = Session::new(registry, cfg, now_ns);
        let max = cfg.max_sessions;
        s.refuse(Refusal::Busy, format_args!("{max} sessions running, the limit"), now_ns);
        s
    }

    /// What the driver should do next.
    pub fn poll(&mut self) -> Next {
        if let Some(e) = self.event.take() {
            return Next::Event(e);
        }
        self.step()
    }

    /// The record bytes to send before the body of a [`Next::Send`] (a
    /// status record, Welcome, Report, object response head); may be empty.
    pub fn record(&self) -> &[u8] {
        self.out.pending()
    }

    /// The reason of the last refusal or abort ([`Event::Refused`],
    /// [`Event::Aborted`]).
    pub fn reason(&self) -> &str {
        self.note.as_str()
    }

    pub(super) fn step(&mut self) -> Next {
        let out = !self.out.is_empty();
        match &mut self.phase {
            Phase::Rr(x) => {
                if x.stamp_due {
                    Next::Stamp
                } else if out || x.left > 0 {
                    Next::Send(x.body())
                } else {
                    Next::Read((x.req - x.got) as usize)
                }
            }
            Phase::Crr(x) => {
                if out || x.left > 0 {
                    Next::Send(x.body())
                } else if x.answered {
                    Next::Read(ANY)
                } else {
                    Next::Read((x.req - x.got) as usize)
                }
            }
            Phase::Header(h) => Next::Read(h.want()),
            Phase::Auth(_) if out => Next::Send(None),
            Phase::Auth(a) => Next::Read(PROOF_LEN - a.got as usize),
            Phase::Sink if out => Next::Send(None),
            Phase::Sink => Next::Read(ANY),
            Phase::Control(..) if out => Next::Send(None),
            Phase::Control(rec, reports) => match *reports {
                Reports::Idle => Next::Read(rec.want()),
                Reports::Due { flags, .. } => Next::Report(ReportDue {
                    test: self.test.map_or(0, |t| t.id()),
                    is_final: flags & FLAG_FINAL != 0,
                }),
                Reports::Draining { deadline, .. } => Next::Wait(deadline),
            },
            Phase::Source(_) if out => Next::Send(None),
            Phase::Source(w) => {
                let Some(t) = self.test else {
                    return Next::Close;
                };
                let w = *w;
                if self.registry.stopped(t) {
                    self.phase = Phase::Ending { shut: true };
                    Next::Shutdown
                } else if !self.registry.started(t) {
                    Next::Wait(w.start_by)
                } else if let Some(due) = paced(&self.registry, &self.cfg, t, w.now) {
                    // The test is ahead of the highest rate: wait until
                    // its bytes so far are due.
                    Next::Wait(due)
                } else {
                    Next::Send(Some(Outgoing {
                        source: Source::Payload,
                        offset: w.off as u64,
                        len: (w.size - w.off) as u64,
                    }))
                }
            }
            Phase::Objects(req, body) => {
                if out || body.is_some() {
                    Next::Send(*body)
                } else {
                    Next::Read(req.want())
                }
            }
            Phase::Linger(_) if out => Next::Send(None),
            Phase::Linger(l) if !l.shut => Next::Shutdown,
            Phase::Linger(_) => Next::Read(ANY),
            Phase::Ending { .. } if out => Next::Send(None),
            Phase::Ending { shut: true } => Next::Shutdown,
            Phase::Ending { shut: false } => Next::Close,
        }
    }

    /// How long the driver may wait for the peer in the current phase.
    pub fn deadline(&self) -> Deadline {
        match &self.phase {
            Phase::Header(_) | Phase::Auth(_) => Deadline::At(self.header_by),
            Phase::Linger(l) => Deadline::At(l.until),
            _ => Deadline::Idle(self.cfg.idle_timeout_ns),
        }
    }

    /// Whether [`Session::input`] reads its `now_ns` in the current phase:
    /// in the header and control phases. In the data phases of rr, crr,
    /// sink, source and objects the only deadline is the idle timeout
    /// ([`Deadline::Idle`], relative to the last progress), so a driver on
    /// the measured path may skip reading its clock and pass 0.
    pub fn needs_clock(&self) -> bool {
        matches!(self.phase, Phase::Header(_) | Phase::Auth(_) | Phase::Control(..))
    }

    /// The test this session owns or joined.
    pub fn test_id(&self) -> Option<u32> {
        self.test.map(|t| t.id())
    }

    /// Object requests answered and object bytes sent so far.
    pub fn objects_served(&self) -> Served {
        Served {
            requests: self.requests,
            bytes: self.object_bytes,
        }
    }

    /// Ends the session: a data session adds the CPU time its thread spent
    /// (`cpu`, if the driver measures it) to its test, then leaves it; a
    /// control session closes its test. Dropping a session does the same
    /// without the CPU time.
    pub fn finish(mut self, cpu: Option<CpuTime>) {
        if let (Some(t), Some(c), false) = (self.test, cpu, self.owner) {
            self.registry.add_cpu(t, c);
        }
        self.release();
    }

    pub(super) fn release(&mut self) {
        if let Some(t) = self.test.take() {
            if self.owner {
                self.registry.close(t);
            } else {
                self.registry.leave(t);
            }
        }
    }
}

impl<R: Deref<Target = Registry>> Drop for Session<R> {
    fn drop(&mut self) {
        self.release();
    }
}

impl<R: Deref<Target = Registry>> fmt::Debug for Session<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("test", &self.test_id())
            .field("pending_record", &self.out.pending().len())
            .finish()
    }
}

/// With a highest rate, the time test `t`'s sources may write again if
/// that is after `now` (its bytes so far at the rate since it opened).
pub(super) fn paced(registry: &Registry, cfg: &Config, t: TestRef, now: u64) -> Option<u64> {
    let rate = cfg.limits.max_rate_bps;
    if rate == 0 {
        return None;
    }
    let (sent, opened) = registry.sent_since(t);
    let due = opened as u128 + sent as u128 * 8 * 1_000_000_000 / rate as u128;
    let due = due.min(u64::MAX as u128) as u64;
    (due > now).then_some(due)
}

/// An object session's totals so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Served {
    /// Object requests answered.
    pub requests: u64,
    /// Object bytes sent.
    pub bytes: u64,
}

/// The status record "accepted".
pub(super) fn accepted() -> [u8; STATUS_PREFIX_LEN] {
    let mut b = [0u8; STATUS_PREFIX_LEN];
    status::emit_accepted(&mut b);
    b
}
