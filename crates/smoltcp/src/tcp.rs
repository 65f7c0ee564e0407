//! One TCP connection's driver: a smoltcp socket and the session machine
//! it feeds. The machine decides what every byte means
//! (`stackmeter_proto::machine`'s call order); this file does what it asks
//! as far as the socket's buffers allow in one round, and says whether it
//! moved and when it wants to be looked at again.
//!
//! smoltcp accepts one connection per listening socket, so a [`Slot`] is a
//! socket that listens, serves one connection, closes, and listens again.
//! A connection that finds every slot taken is reset by smoltcp (no
//! socket listens): the pool is the responder's session limit.

use crate::platform::Platform;
use alloc::vec::Vec;
use smoltcp::iface::SocketSet;
use smoltcp::socket::tcp::{Socket, State};
use smoltcp::time::Duration;
use smoltcp::wire::IpAddress;
use stackmeter_proto::machine::{
    Config, CpuTime, Deadline, Event, Failure, Next, Outgoing, Registry, ReportInputs, Session, Source,
};
use stackmeter_proto::stamps::Block;

/// Steps one session may take in a round before the others get theirs.
const STEPS: usize = 64;

/// A closing connection whose peer never finishes its side is reset
/// after this long, and its slot listens again.
const CLOSE_WAIT_NS: u64 = 5_000_000_000;

/// How soon a slot with a session wants to be looked at when it waits for
/// nothing in particular (its deadlines are checked then).
const DEADLINE_STEP: Duration = Duration::from_millis(100);

/// What every slot serves with, the same for all.
pub(crate) struct Context<P: Platform> {
    /// The port it listens on.
    pub(crate) port: u16,
    /// The throughput tests every session shares.
    pub(crate) registry: &'static Registry,
    /// The machine's settings.
    pub(crate) machine: Config,
    /// The payload every rr, crr and source send is cut from (its content
    /// is unspecified, docs/protocol.md): a longer one takes fewer calls.
    pub(crate) payload: &'static [u8],
    pub(crate) platform: P,
}

/// A socket and the session it serves.
pub(crate) struct Slot<P: Platform> {
    pub(crate) handle: smoltcp::iface::SocketHandle,
    session: Option<Session<&'static Registry>>,
    files: P::Files,
    /// When the session last moved (ns), for its idle deadline.
    last: u64,
    /// The session waits for the registry or this time.
    wake: Option<u64>,
    /// The loop's CPU time when the session started (the loop serves
    /// every session; a test's control session is charged all of it while
    /// it runs), where the platform can tell.
    cpu_at_start: Option<CpuTime>,
    /// When this slot's connection began closing, with no session left.
    closing_since: Option<u64>,
    /// The client's address, and whether its header was accepted (a
    /// session still in its header can be evicted, [`make_room`]).
    peer: Option<IpAddress>,
    accepted: bool,
}

impl<P: Platform> Slot<P> {
    pub(crate) fn new(handle: smoltcp::iface::SocketHandle, platform: &P) -> Slot<P> {
        Slot {
            handle,
            session: None,
            files: platform.files(),
            last: 0,
            wake: None,
            cpu_at_start: None,
            closing_since: None,
            peer: None,
            accepted: false,
        }
    }

    /// One round: listen again, take a new connection, or drive the
    /// session. Returns whether anything moved, and how soon it wants
    /// another round at the latest.
    pub(crate) fn serve(&mut self, sock: &mut Socket, cx: &Context<P>, now: u64) -> (bool, Option<Duration>) {
        if self.session.is_none() {
            return self.idle(sock, cx, now);
        }
        if let Some(s) = self.session.as_mut() {
            if sock.state() == State::Closed {
                // Reset by the peer while the session was open. (TIME_WAIT
                // is an orderly end after its own half-close: the next Read
                // finds the peer's FIN and ends it with `eof`.)
                s.failed(Failure::Receive, true);
            }
            let late = match s.deadline() {
                Deadline::At(t) => now > t,
                Deadline::Idle(d) => now.saturating_sub(self.last) > d,
            };
            if late {
                s.timeout(now);
            }
            // A waiting session looks at the registry and the time once a
            // round (a round is at most a millisecond while one waits).
            if self.wake.take().is_some() {
                s.tick(now);
            }
        }
        let moved = self.drive(sock, now, cx);
        let again = if self.wake.is_some() {
            Duration::from_millis(1)
        } else {
            DEADLINE_STEP
        };
        (moved, Some(again))
    }

    /// A slot without a session: a connection that just arrived gets one;
    /// a closed socket listens again; a close the peer never finishes is
    /// cut short.
    fn idle(&mut self, sock: &mut Socket, cx: &Context<P>, now: u64) -> (bool, Option<Duration>) {
        match sock.state() {
            State::Closed => {
                self.closing_since = None;
                // Responses go out at once (no Nagle), acknowledgements
                // without delay, as the host responder sets TCP_NODELAY.
                sock.set_nagle_enabled(false);
                sock.set_ack_delay(None);
                let _ = sock.listen(cx.port);
                (false, None)
            }
            State::Listen | State::SynReceived => (false, None),
            State::Established | State::CloseWait if self.closing_since.is_none() => {
                self.session = Some(Session::new(cx.registry, cx.machine, now));
                self.last = now;
                self.wake = None;
                self.cpu_at_start = cx.platform.cpu();
                self.peer = sock.remote_endpoint().map(|e| e.addr);
                self.accepted = false;
                (true, Some(Duration::from_millis(1)))
            }
            State::TimeWait => {
                // The peer has all it needs; the slot is wanted more.
                sock.abort();
                (true, None)
            }
            _ => {
                let since = *self.closing_since.get_or_insert(now);
                if now.saturating_sub(since) > CLOSE_WAIT_NS {
                    sock.abort();
                }
                (false, Some(DEADLINE_STEP))
            }
        }
    }

    /// Does what the session asks until the socket cannot take or give
    /// more, the session waits, or it ends.
    fn drive(&mut self, sock: &mut Socket, now: u64, cx: &Context<P>) -> bool {
        let mut moved = false;
        for _ in 0..STEPS {
            let Some(s) = self.session.as_mut() else { return moved };
            match s.poll() {
                Next::Event(Event::Accepted(_)) => self.accepted = true,
                Next::Event(Event::Refused(_) | Event::Aborted) => match sock.remote_endpoint() {
                    Some(peer) => cx.platform.event(format_args!("{peer}: {}", s.reason())),
                    None => cx.platform.event(format_args!("{}", s.reason())),
                },
                Next::Send(body) => {
                    let n = send::<P>(sock, s.record(), body, &mut self.files, cx.payload);
                    match n {
                        Ok(0) => return moved,
                        Ok(n) => {
                            s.sent(n);
                            self.last = now;
                            moved = true;
                        }
                        Err(()) => s.failed(Failure::Send, true),
                    }
                }
                Next::Read(max) => {
                    if sock.can_recv() {
                        let files = &mut self.files;
                        let took = sock.recv(|b| {
                            let n = b.len().min(max);
                            let used = s.input(&b[..n], now, files);
                            (used, used)
                        });
                        if matches!(took, Ok(n) if n > 0) {
                            self.last = now;
                            moved = true;
                        } else {
                            return moved;
                        }
                    } else if !sock.may_recv() {
                        s.eof();
                        moved = true;
                    } else {
                        return moved;
                    }
                }
                Next::Report(due) => {
                    let cpu = match (due.is_final, self.cpu_at_start, cx.platform.cpu()) {
                        (true, Some(a), Some(b)) => Some(CpuTime {
                            user_ns: b.user_ns.saturating_sub(a.user_ns),
                            sys_ns: b.sys_ns.saturating_sub(a.sys_ns),
                        }),
                        _ => None,
                    };
                    s.report(now, ReportInputs { tcp: None, cpu });
                }
                Next::Wait(until) => {
                    self.wake = Some(until);
                    return moved;
                }
                // Never asked: the machine runs without kernel stamps.
                Next::Stamp => s.stamp(Block::default()),
                Next::Shutdown => {
                    sock.close();
                    s.shut_done();
                }
                Next::Close => {
                    sock.close();
                    if let Some(s) = self.session.take() {
                        s.finish(None);
                    }
                    self.wake = None;
                    self.closing_since = Some(now);
                    return true;
                }
            }
        }
        moved
    }
}

/// Keeps one socket listening when every slot is taken: a session still
/// in its header (connected, nothing accepted yet) from the address that
/// holds the most slots is reset, so a client that opens connections and
/// sends nothing cannot lock the others out; it keeps at most all slots
/// but one, and loses its oldest first whenever anyone else connects.
/// The header timeout ends the rest.
pub(crate) fn make_room<P: Platform>(slots: &mut [Slot<P>], sockets: &mut SocketSet<'_>) {
    if slots.iter().any(|s| sockets.get::<Socket>(s.handle).is_listening()) {
        return;
    }
    let mut held: Vec<(IpAddress, usize)> = Vec::new();
    for p in slots.iter().filter_map(|s| s.session.as_ref().and(s.peer)) {
        match held.iter_mut().find(|h| h.0 == p) {
            Some(h) => h.1 += 1,
            None => held.push((p, 1)),
        }
    }
    let Some(&(most, _)) = held.iter().max_by_key(|h| h.1) else {
        return;
    };
    if let Some(s) = slots
        .iter_mut()
        .find(|s| s.session.is_some() && !s.accepted && s.peer == Some(most))
    {
        sockets.get_mut::<Socket>(s.handle).abort();
        if let Some(session) = s.session.take() {
            session.finish(None);
        }
        s.wake = None;
    }
}

/// Queues the session's record and as much of `body` as the send buffer
/// takes; how many bytes went (record first). An error when the
/// connection can no longer send.
fn send<P: Platform>(
    sock: &mut Socket,
    record: &[u8],
    body: Option<Outgoing>,
    files: &mut P::Files,
    payload: &[u8],
) -> Result<usize, ()> {
    if !sock.may_send() {
        return Err(());
    }
    let mut n = 0;
    if !record.is_empty() {
        n = sock.send_slice(record).map_err(|_| ())?;
        if n < record.len() {
            return Ok(n);
        }
    }
    if let Some(b) = body {
        let bytes: &[u8] = match b.source {
            Source::Payload => &payload[..(b.len.min(payload.len() as u64)) as usize],
            Source::List | Source::Object(_) => P::body(files, b).ok_or(())?,
        };
        n += sock.send_slice(bytes).map_err(|_| ())?;
    }
    Ok(n)
}
