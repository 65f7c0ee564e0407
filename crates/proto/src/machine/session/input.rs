//! What arrives on a session: the header (judged, challenged, begun), the
//! proof, rr and crr requests, control records, object requests.

use super::poll::accepted;
use super::state::{Auth, Exchange, Phase, Reports, Session, Writer, TEST_GRACE_S};
use crate::auth::{self, PROOF_LEN};
use crate::control::{self};
use crate::header::{Mode, EXT_HEADER_LEN, FLAG_AUTH, FLAG_STAMPS};
use crate::limits;
use crate::machine::header_reader::Parsed;
use crate::machine::objects::{Catalogue, RequestReader};
use crate::machine::record_reader::{Record, RecordReader};
use crate::machine::registry::Registry;
use crate::machine::step::{Event, Service};
use crate::stamps::BLOCK_LEN;
use crate::status::Refusal;
use core::ops::Deref;

impl<R: Deref<Target = Registry>> Session<R> {
    /// Bytes received: at most what the last [`Next::Read`] asked for (more
    /// is allowed; the machine takes what it can). Returns how many bytes it
    /// took; a driver that read at most what was asked always gets them all
    /// taken. `objects` serves object sessions (any value otherwise).
    pub fn input<C: Catalogue + ?Sized>(&mut self, data: &[u8], now_ns: u64, objects: &mut C) -> usize {
        let mut done = 0;
        while done < data.len() && self.event.is_none() {
            let k = self.input_one(&data[done..], now_ns, objects);
            if k == 0 {
                break;
            }
            done += k;
        }
        done
    }

    /// One piece of input, in the phase the session is in; returns how
    /// much it took (0: nothing until the pending record is sent).
    pub(super) fn input_one<C: Catalogue + ?Sized>(&mut self, data: &[u8], now_ns: u64, objects: &mut C) -> usize {
        let out = !self.out.is_empty();
        match &mut self.phase {
            Phase::Rr(x) | Phase::Crr(x) if !x.answered => match out || x.left > 0 {
                true => 0,
                false => self.request(data),
            },
            Phase::Crr(_) => {
                self.abort(format_args!("data after the crr transaction"));
                data.len()
            }
            Phase::Rr(_) => 0,
            Phase::Header(_) => self.header(data, now_ns),
            Phase::Auth(_) if out => 0,
            Phase::Auth(_) => self.proof(data, now_ns),
            Phase::Sink => {
                if let Some(t) = self.test {
                    self.registry.add_rx(t, data.len() as u64);
                }
                data.len()
            }
            Phase::Control(_, Reports::Idle) if !out => self.control_record(data, now_ns),
            Phase::Control(..) => 0,
            Phase::Objects(_, body) if !out && body.is_none() => self.object_request(data, objects),
            Phase::Objects(..) => 0,
            Phase::Linger(l) => {
                l.got += data.len();
                if l.got >= limits::LINGER_BYTES {
                    self.phase = Phase::Ending { shut: false };
                }
                data.len()
            }
            // Nothing is expected from a source's client; after the end,
            // nothing matters.
            Phase::Source(_) | Phase::Ending { .. } => data.len(),
        }
    }

    /// Request bytes of rr or crr: when the request is whole, the response
    /// is due (its stamp block first, when the session asked for stamps;
    /// crr's status record rides with it).
    #[inline]
    fn request(&mut self, data: &[u8]) -> usize {
        let (Phase::Rr(x) | Phase::Crr(x)) = &mut self.phase else {
            return 0;
        };
        let take = data.len().min((x.req - x.got) as usize);
        x.got += take as u32;
        if x.got == x.req {
            x.got = 0;
            x.left = x.resp as u64;
            if x.stamps {
                // The block is the response's first bytes.
                x.left -= BLOCK_LEN as u64;
                x.stamp_due = true;
                x.open = true;
            }
            if let Phase::Crr(x) = &mut self.phase {
                // crr: the status record rides with the response.
                x.answered = true;
                self.out.set(&accepted());
            }
        }
        take
    }

    /// Header bytes; a whole header is judged.
    fn header(&mut self, data: &[u8], now_ns: u64) -> usize {
        let Phase::Header(h) = &mut self.phase else {
            return 0;
        };
        let (take, verdict) = h.input(data);
        if let Some(p) = verdict {
            let (flags, mut header) = (h.flags(), [0u8; EXT_HEADER_LEN]);
            let b = h.bytes();
            header[..b.len()].copy_from_slice(b);
            self.judged(p, flags, header, now_ns);
        }
        take
    }

    /// Bytes of the client's proof; a whole proof begins the session or
    /// refuses it.
    fn proof(&mut self, data: &[u8], now_ns: u64) -> usize {
        let Phase::Auth(a) = &mut self.phase else {
            return 0;
        };
        let at = a.got as usize;
        let take = data.len().min(PROOF_LEN - at);
        a.proof[at..at + take].copy_from_slice(&data[..take]);
        a.got += take as u8;
        if a.got as usize == PROOF_LEN {
            let a = *a;
            let right = self
                .cfg
                .key
                .is_some_and(|k| k.check_proof(&a.challenge, &a.header, &a.proof));
            if right {
                self.begin(a.parsed, now_ns);
            } else {
                self.refuse(
                    Refusal::Auth,
                    format_args!("failed: the proof does not match this responder's secret"),
                    now_ns,
                );
            }
        }
        take
    }

    /// Bytes of a control record; a whole one is acted on.
    fn control_record(&mut self, data: &[u8], now_ns: u64) -> usize {
        let Phase::Control(rec, _) = &mut self.phase else {
            return 0;
        };
        let (take, record) = rec.input(data);
        match record {
            None => {}
            Some(Record::BadLength(l)) => self.abort(format_args!("control record with bad length {l}")),
            Some(Record::Snapshot(id)) => self.snapshot(id),
            Some(Record::Stop(id)) => self.stop(id, now_ns),
        }
        take
    }

    /// Bytes of an object request; a whole one is answered.
    fn object_request<C: Catalogue + ?Sized>(&mut self, data: &[u8], objects: &mut C) -> usize {
        let Phase::Objects(req, _) = &mut self.phase else {
            return 0;
        };
        let (take, asked) = req.input(data);
        if let Some(a) = asked {
            self.answer(a, objects);
        }
        take
    }

    /// The whole header is in: with a secret, a valid header is
    /// challenged first (or refused when it does not ask to authenticate).
    pub(super) fn judged(&mut self, p: Parsed, flags: u32, header: [u8; EXT_HEADER_LEN], now_ns: u64) {
        let Some(key) = self.cfg.key else {
            return self.begin(p, now_ns);
        };
        if matches!(p, Parsed::Refuse(_)) {
            return self.begin(p, now_ns);
        }
        if flags & FLAG_AUTH == 0 {
            return self.refuse(
                Refusal::Auth,
                format_args!("required: this responder needs the shared secret (client --secret-file)"),
                now_ns,
            );
        }
        let counter = self.registry.challenge_counter();
        let challenge = auth::challenge(&key.nonce(&self.cfg.seed, now_ns, counter));
        self.out.set(&challenge);
        self.phase = Phase::Auth(Auth {
            parsed: p,
            header,
            challenge,
            proof: [0; PROOF_LEN],
            got: 0,
        });
    }

    /// The whole header is in (and authenticated): refuse it, or start the
    /// data phase.
    pub(super) fn begin(&mut self, p: Parsed, now_ns: u64) {
        let h = match p {
            Parsed::Refuse(e) => {
                let r = e.refusal().unwrap_or(Refusal::BadHeader);
                return self.refuse(r, format_args!("{e}"), now_ns);
            }
            Parsed::Objects if !self.cfg.objects => {
                return self.refuse(
                    Refusal::UnknownMode,
                    format_args!("object mode is not enabled on this responder"),
                    now_ns,
                );
            }
            Parsed::Objects => {
                self.out.set(&accepted());
                return self.accept(Service::Objects, Phase::Objects(RequestReader::new(), None), now_ns);
            }
            Parsed::Session(h) => h,
        };
        let max = self.cfg.max_msg;
        let sizes = match h.mode {
            Mode::Rr | Mode::Crr => [("request", h.req_size), ("response", h.resp_size)],
            Mode::Source => [("write", h.resp_size), ("write", 0)],
            Mode::Sink | Mode::Control => [("", 0), ("", 0)],
        };
        if let Some((what, size)) = sizes.into_iter().find(|&(_, s)| s > max) {
            return self.refuse(
                Refusal::TooLarge,
                format_args!("{what} size {size} exceeds limit {max}"),
                now_ns,
            );
        }
        let (req, resp) = (h.req_size, h.resp_size);
        match h.mode {
            Mode::Rr => {
                self.out.set(&accepted());
                let mut x = Exchange::new(&h);
                // A response too short for the block: the flag is ignored.
                x.stamps = h.flags & FLAG_STAMPS != 0 && resp as usize >= BLOCK_LEN && self.cfg.stamps;
                let stamps = x.stamps;
                self.accept(Service::Rr { req, resp, stamps }, Phase::Rr(x), now_ns);
            }
            Mode::Crr => self.accept(Service::Crr { req, resp }, Phase::Crr(Exchange::new(&h)), now_ns),
            Mode::Control => match self.registry.open(now_ns) {
                Err(_) => {
                    let n = crate::machine::registry::TESTS;
                    self.refuse(
                        Refusal::Busy,
                        format_args!("{n} throughput tests running, the limit"),
                        now_ns,
                    );
                }
                Ok(t) => {
                    self.test = Some(t);
                    self.owner = true;
                    self.out.set(&accepted());
                    match self.cfg.limits.any() {
                        true => self.out.push(&control::welcome_limits(t.id(), &self.cfg.limits)),
                        false => self.out.push(&control::welcome(t.id())),
                    }
                    let service = Service::Control { test: t.id() };
                    self.accept(service, Phase::Control(RecordReader::new(), Reports::Idle), now_ns);
                }
            },
            Mode::Sink | Mode::Source => {
                let id = h.test_id();
                let Some(t) = self.registry.join(id) else {
                    return self.refuse(Refusal::UnknownTest, format_args!("no open test {id}"), now_ns);
                };
                self.test = Some(t);
                self.out.set(&accepted());
                if h.mode == Mode::Sink {
                    self.accept(
                        Service::Sink {
                            test: id,
                            read_hint: resp,
                        },
                        Phase::Sink,
                        now_ns,
                    );
                } else {
                    let w = Writer {
                        size: resp,
                        off: 0,
                        start_by: now_ns.saturating_add(self.cfg.idle_timeout_ns),
                        now: now_ns,
                    };
                    self.accept(Service::Source { test: id, write: resp }, Phase::Source(w), now_ns);
                }
            }
        }
    }

    pub(super) fn accept(&mut self, service: Service, phase: Phase, now_ns: u64) {
        self.event = Some(Event::Accepted(service));
        self.phase = phase;
        let max = self.cfg.limits.max_test_s as u64;
        if max > 0 {
            self.ends_by = Some(now_ns.saturating_add((max + TEST_GRACE_S) * 1_000_000_000));
        }
    }
}
