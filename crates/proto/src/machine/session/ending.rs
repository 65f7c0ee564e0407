//! Refusals, limits, aborts and the end of a session; a throughput test's
//! Snapshot and Stop.

use super::state::{Linger, Phase, Reports, Session, LINGER_NS};
use crate::machine::registry::Registry;
use crate::machine::step::Event;
use crate::machine::text::Reason;
use crate::status::{self, Refusal, MAX_STATUS_LEN};
use core::fmt::{self, Write};
use core::ops::Deref;

impl<R: Deref<Target = Registry>> Session<R> {
    /// When the session must end at the latest (accepted sessions of a
    /// responder with a longest test: that many seconds plus 5 for the set
    /// up and the drain after accept), or `None`. A driver that gets a time
    /// here reads its clock while it serves the session and calls
    /// [`Session::expire`] once it is reached.
    pub fn ends_by(&self) -> Option<u64> {
        self.ends_by
    }

    /// The longest test has passed ([`Session::ends_by`]): a source stops
    /// as after Stop (FIN, so its client reads to the end); any other
    /// session is aborted with the limit as the reason.
    pub fn expire(&mut self, now_ns: u64) {
        if self.ends_by.is_none_or(|t| now_ns < t) || matches!(self.phase, Phase::Linger(_) | Phase::Ending { .. }) {
            return;
        }
        self.ends_by = None;
        let max = self.cfg.limits.max_test_s;
        if let (Phase::Source(_), Some(t)) = (&self.phase, self.test) {
            self.registry.stop(t);
            return;
        }
        self.abort(format_args!("the responder allows at most {max} s per test"));
    }

    /// Refuses a session the machine has just accepted ([`Event::Accepted`]
    /// was the last step, its status record not yet sent) because of a
    /// limit only the driver can count (tests per client address): the
    /// status record becomes a `Limit` refusal with `reason`.
    pub fn refuse_limit(&mut self, reason: fmt::Arguments<'_>, now_ns: u64) {
        let ok = match &self.phase {
            Phase::Rr(_) | Phase::Control(..) | Phase::Sink | Phase::Source(_) | Phase::Objects(..) => true,
            Phase::Crr(x) => !x.answered,
            _ => false,
        };
        if !ok {
            return;
        }
        self.release();
        self.ends_by = None;
        self.refuse(Refusal::Limit, reason, now_ns);
    }

    /// Queues a refusal record and moves to the lingering close.
    pub(super) fn refuse(&mut self, r: Refusal, reason: fmt::Arguments<'_>, now_ns: u64) {
        self.note = Reason::of(reason);
        let mut rec = [0u8; MAX_STATUS_LEN];
        let n = status::emit_refusal(r, self.note.as_str(), &mut rec);
        self.out.set(&rec[..n]);
        self.event = Some(Event::Refused(r));
        self.phase = Phase::Linger(Linger {
            got: 0,
            shut: false,
            until: now_ns.saturating_add(LINGER_NS),
        });
    }

    /// Ends the session early for a reason of the driver's (a file that
    /// shrank while it was sent): one [`Event::Aborted`], then the close.
    /// Drops what was queued.
    pub fn abort(&mut self, reason: fmt::Arguments<'_>) {
        self.note = Reason::of(reason);
        if matches!(self.phase, Phase::Objects(..)) {
            let (n, b) = (self.requests, self.object_bytes);
            let _ = write!(self.note, " (after {n} requests, {b} object bytes sent)");
        }
        self.event = Some(Event::Aborted);
        self.out.clear();
        self.phase = Phase::Ending { shut: false };
    }

    /// Closes without sending what is still queued (the peer is gone or
    /// too slow), without a log line.
    pub(super) fn close_now(&mut self) {
        self.out.clear();
        self.phase = Phase::Ending { shut: false };
    }

    /// The normal end: the client closed where it may.
    pub(super) fn end(&mut self) {
        self.phase = Phase::Ending { shut: false };
    }

    pub(super) fn snapshot(&mut self, id: u32) {
        if let (Some(t), Phase::Control(_, reports)) = (self.test, &mut self.phase) {
            self.registry.start(t);
            *reports = Reports::Due { id, flags: 0 };
        }
    }

    pub(super) fn stop(&mut self, id: u32, now_ns: u64) {
        if let (Some(t), Phase::Control(_, reports)) = (self.test, &mut self.phase) {
            self.registry.stop(t);
            let deadline = Registry::drain_deadline(now_ns);
            *reports = Reports::Draining { id, deadline };
            self.tick(now_ns);
        }
    }
}
