//! What the driver reports back: bytes sent, the end of the peer's data,
//! a timeout, a failed call, a tick, kernel stamps, a completed Report.

use super::state::{Phase, Reports, Session};
use crate::auth::PROOF_LEN;
use crate::control::FLAG_FINAL;
use crate::machine::registry::{Registry, ReportInputs};
use crate::machine::step::{Failure, Source};
use crate::stamps::Block;
use crate::status::{Refusal, STATUS_PREFIX_LEN};
use core::ops::Deref;

impl<R: Deref<Target = Registry>> Session<R> {
    /// The stamps of the exchange a [`Next::Stamp`] asked for: the driver's
    /// kernel receive stamp and application receive time of the read that
    /// completed the request, and the application send time it read just
    /// now (all on its wall clock, ns). The machine adds the latest earlier
    /// send stamp it was given ([`Session::tx_stamp`]) and queues the block.
    pub fn stamp(&mut self, mut block: Block) {
        if let Phase::Rr(x) = &mut self.phase {
            if x.stamp_due {
                x.stamp_due = false;
                block.prev_tx = x.prev_tx;
                self.out.set(&block.emit());
            }
        }
    }

    /// A kernel send stamp from the socket's error queue: `key` is the
    /// kernel's id for it (with `SOF_TIMESTAMPING_OPT_ID` on a TCP socket,
    /// the offset of the last byte of the send call, counted from the first
    /// byte sent after the option was set: the status record's first).
    /// Kept when it is the last byte of the latest complete response.
    pub fn tx_stamp(&mut self, key: u32, ns: u64) {
        if let Phase::Rr(x) = &mut self.phase {
            if x.stamps && x.served > 0 {
                let end = (STATUS_PREFIX_LEN as u64)
                    .wrapping_add(x.served.wrapping_mul(x.resp as u64))
                    .wrapping_sub(1);
                if key == end as u32 {
                    x.prev_tx = Some((x.served - 1, ns));
                }
            }
        }
    }

    /// `n` bytes of what the last [`Next::Send`] offered were taken by the
    /// stack (record first, then body).
    pub fn sent(&mut self, n: usize) {
        let n = self.out.sent(n) as u64;
        if let Phase::Rr(x) = &mut self.phase {
            x.left = x.left.saturating_sub(n);
            if x.open && x.left == 0 && self.out.is_empty() {
                x.open = false;
                x.served += 1;
            }
            return;
        }
        if n == 0 {
            return;
        }
        match &mut self.phase {
            Phase::Crr(x) => x.left = x.left.saturating_sub(n),
            Phase::Source(w) => {
                if let Some(t) = self.test {
                    self.registry.add_tx(t, n);
                }
                w.off = ((w.off as u64 + n) % w.size as u64) as u32;
            }
            Phase::Objects(_, Some(b)) => {
                let n = n.min(b.len);
                b.offset += n;
                b.len -= n;
                if b.len == 0 {
                    if let Source::Object(_) = b.source {
                        self.object_bytes += b.offset;
                    }
                    if let Phase::Objects(_, body) = &mut self.phase {
                        *body = None;
                    }
                }
            }
            _ => {}
        }
    }

    /// The peer closed its side (a receive returned 0 bytes).
    pub fn eof(&mut self) {
        match &self.phase {
            Phase::Header(h) => {
                let got = h.got();
                self.abort(format_args!(
                    "client closed after {got} header bytes, before the session header was complete"
                ));
            }
            Phase::Auth(a) => {
                let got = a.got;
                self.abort(format_args!("client closed after {got} of {PROOF_LEN} proof bytes"));
            }
            Phase::Rr(x) if x.got == 0 => self.end(),
            Phase::Crr(x) if x.answered => self.end(),
            Phase::Crr(x) if x.got == 0 => self.abort(format_args!("client closed before its request")),
            Phase::Rr(x) | Phase::Crr(x) => {
                let (got, req) = (x.got, x.req);
                self.abort(format_args!("client vanished mid-request ({got} of {req} bytes)"));
            }
            Phase::Control(rec, _) if !rec.idle() => self.abort(format_args!("client closed mid-record")),
            Phase::Objects(req, _) if req.got() > 0 => {
                let (got, want) = (req.got(), req.got() + req.want());
                self.abort(format_args!("client vanished mid-request ({got} of {want} bytes)"));
            }
            Phase::Ending { .. } => {}
            _ => self.end(),
        }
    }

    /// The wait [`Session::deadline`] allowed has passed (a receive or send
    /// timed out, or an [`Deadline::At`] time is reached).
    pub fn timeout(&mut self, now_ns: u64) {
        match &self.phase {
            Phase::Header(_) => self.refuse(
                Refusal::HeaderTimeout,
                format_args!("session header not complete in time"),
                now_ns,
            ),
            Phase::Auth(_) => self.refuse(
                Refusal::Auth,
                format_args!("failed: no proof within the header timeout"),
                now_ns,
            ),
            Phase::Linger(_) | Phase::Ending { .. } => self.close_now(),
            Phase::Rr(x) | Phase::Crr(x) if x.left > 0 => {
                let (sent, resp) = (x.resp as u64 - x.left, x.resp);
                self.abort(format_args!("idle timeout mid-response ({sent} of {resp} bytes sent)"));
            }
            Phase::Crr(x) if x.answered => self.abort(format_args!("idle timeout waiting for the client to close")),
            Phase::Rr(x) | Phase::Crr(x) => {
                let (got, req) = (x.got, x.req);
                self.abort(format_args!("idle timeout mid-request ({got} of {req} bytes)"));
            }
            Phase::Control(..) => self.abort(format_args!("idle timeout on the control session")),
            Phase::Sink => self.abort(format_args!("idle timeout in a sink session")),
            Phase::Source(_) => self.abort(format_args!("idle timeout in a source session")),
            Phase::Objects(..) => self.abort(format_args!("idle timeout in an object session")),
        }
    }

    /// A socket call failed (not a timeout, not a receive of 0 bytes);
    /// `peer_gone` when the error says the peer reset or closed
    /// (`ECONNRESET`, `EPIPE`).
    pub fn failed(&mut self, call: Failure, peer_gone: bool) {
        let what = match call {
            Failure::Receive => "receive",
            Failure::Send => "send",
        };
        match &self.phase {
            // A client that closes a source early, or resets a finished crr
            // instead of closing it, ends the session normally.
            Phase::Source(_) if peer_gone => self.end(),
            Phase::Crr(x) if x.answered && x.left == 0 && peer_gone => self.end(),
            Phase::Linger(_) | Phase::Ending { .. } => self.close_now(),
            Phase::Rr(x) | Phase::Crr(x) if call == Failure::Send => {
                let (sent, resp) = (x.resp as u64 - x.left, x.resp);
                self.abort(format_args!(
                    "client vanished mid-response ({sent} of {resp} bytes sent)"
                ));
            }
            Phase::Header(h) => {
                let got = h.got();
                self.abort(format_args!(
                    "connection failed after {got} header bytes, before the session header was complete"
                ));
            }
            Phase::Auth(_) => self.abort(format_args!("connection failed during authentication")),
            Phase::Rr(_) | Phase::Crr(_) => self.abort(format_args!("rr {what} failed")),
            Phase::Control(..) => self.abort(format_args!("control session {what} failed")),
            Phase::Sink => self.abort(format_args!("sink {what} failed")),
            Phase::Source(_) => self.abort(format_args!("source {what} failed")),
            Phase::Objects(..) => self.abort(format_args!("object session {what} failed")),
        }
    }

    /// Time passed while the session waited ([`Next::Wait`]): re-checks the
    /// drain rule of a stopped test, and a source's start deadline.
    pub fn tick(&mut self, now_ns: u64) {
        let Some(t) = self.test else {
            return;
        };
        match &mut self.phase {
            Phase::Control(_, reports) => {
                if let Reports::Draining { id, deadline } = *reports {
                    if let Some(flags) = self.registry.final_flags(t, now_ns, deadline) {
                        *reports = Reports::Due { id, flags };
                    }
                }
            }
            Phase::Source(w) => {
                w.now = now_ns;
                let r = &self.registry;
                if now_ns >= w.start_by && !r.started(t) && !r.stopped(t) {
                    self.abort(format_args!("no Snapshot started the test within the idle timeout"));
                }
            }
            _ => {}
        }
    }

    /// Completes the Report [`Next::Report`] asked for, with what the
    /// driver measured.
    pub fn report(&mut self, now_ns: u64, figures: ReportInputs) {
        let (Some(t), Phase::Control(_, reports)) = (self.test, &mut self.phase) else {
            return;
        };
        let Reports::Due { id, flags } = *reports else {
            return;
        };
        *reports = Reports::Idle;
        if flags & FLAG_FINAL != 0 {
            if let Some(cpu) = figures.cpu {
                self.registry.add_cpu(t, cpu);
            }
        }
        let r = self.registry.report(t, id, flags, now_ns, figures.tcp);
        self.out.set(&r.emit());
    }

    /// The half-close [`Next::Shutdown`] asked for is done.
    pub fn shut_done(&mut self) {
        match &mut self.phase {
            Phase::Linger(l) => l.shut = true,
            Phase::Ending { shut } => *shut = false,
            _ => {}
        }
    }
}
