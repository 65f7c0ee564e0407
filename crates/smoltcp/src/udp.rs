//! UDP on smoltcp: echo requests answered by the protocol's one rule
//! (`stackmeter_proto::udp::answer`), with the receive and send times the
//! loop read, and stream datagrams counted into their test, as the host
//! responder does (crates/responder/src/udp.rs) without its kernel
//! batching and stamps. With a shared secret, only datagrams with a valid
//! trailer go on, each client's replay window drops repeats, and replies
//! are sealed (docs/protocol.md 10.2).

use crate::platform::Platform;
use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;
use smoltcp::socket::udp::Socket;
use smoltcp::wire::IpEndpoint;
use stackmeter_proto::auth::{Key, MAC_LEN};
use stackmeter_proto::machine::{Registry, TestRef, UdpCount};
use stackmeter_proto::udp::{self, Answer, ReplayWindow};

/// Datagrams answered in one round before the TCP sessions get theirs.
const BATCH: usize = 64;

/// The echo socket's state.
pub(crate) struct Echo {
    registry: &'static Registry,
    /// The test the last stream datagram belonged to.
    test: Option<TestRef>,
    /// Requests that asked to be counted, by client and count id.
    counts: BTreeMap<(IpEndpoint, u32), u64>,
    /// Count ids whose counts are kept (docs/protocol.md 4.4); past this
    /// the table starts again, as a responder restarting would.
    max_counts: usize,
    /// The shared secret, and each client's replay window (as many
    /// clients as count ids are remembered).
    key: Option<Key>,
    windows: BTreeMap<IpEndpoint, ReplayWindow>,
    buf: Vec<u8>,
}

impl Echo {
    /// An echo with room for datagrams of `max_len` bytes (a trailer
    /// included) and the counts of `max_counts` count ids, answering only
    /// who proves `key` when there is one.
    pub(crate) fn new(registry: &'static Registry, max_len: usize, max_counts: usize, key: Option<Key>) -> Echo {
        Echo {
            registry,
            test: None,
            counts: BTreeMap::new(),
            max_counts,
            key,
            windows: BTreeMap::new(),
            buf: vec![0; max_len],
        }
    }

    /// Answers or counts what has come; whether anything did.
    pub(crate) fn serve<P: Platform>(&mut self, sock: &mut Socket, now: u64, platform: &P) -> bool {
        let mut moved = false;
        for _ in 0..BATCH {
            let (n, meta) = match sock.recv() {
                Ok((d, meta)) => {
                    let n = d.len().min(self.buf.len());
                    self.buf[..n].copy_from_slice(&d[..n]);
                    (n, meta)
                }
                Err(_) => return moved,
            };
            moved = true;
            // With a secret, `body` is the datagram without its trailer.
            let body = match &self.key {
                None => n,
                Some(k) => match udp::open(k, &self.buf[..n]) {
                    Some(body) => body,
                    None => continue,
                },
            };
            if body >= udp::HEADER_LEN && self.buf[5] == udp::Kind::StreamData as u8 {
                self.count(body, now);
                continue;
            }
            let d = &mut self.buf[..n];
            let ask = udp::count_ask(&d[..body]);
            let answer = match self.key {
                None => udp::answer(d, now),
                Some(_) => {
                    if self.windows.len() >= self.max_counts && !self.windows.contains_key(&meta.endpoint) {
                        self.windows.clear();
                    }
                    let w = self.windows.entry(meta.endpoint).or_default();
                    udp::answer_sealed(d, body, now, false, w)
                }
            };
            if let Answer::Reply(len) = answer {
                if let Some(ask) = ask {
                    if self.counts.len() >= self.max_counts {
                        self.counts.clear();
                    }
                    let c = self.counts.entry((meta.endpoint, ask.id)).or_insert(0);
                    *c += 1;
                    udp::put_count(&mut d[..len], ask, *c);
                }
                udp::stamp_tx(&mut d[..len], platform.now_ns());
                let wire = match &self.key {
                    None => len,
                    Some(k) => {
                        udp::seal(k, &mut d[..len + MAC_LEN]);
                        len + MAC_LEN
                    }
                };
                // A full send queue drops the reply, as a full socket
                // buffer would: the client counts it lost.
                let _ = sock.send_slice(&d[..wire], meta.endpoint);
            }
        }
        moved
    }

    /// Counts a stream datagram of `n` bytes in `buf` against its test.
    fn count(&mut self, n: usize, now: u64) {
        let Ok(h) = udp::Header::parse(&self.buf[..n]) else {
            return;
        };
        if h.version != stackmeter_proto::VERSION {
            return;
        }
        let id = h.test_id();
        if self.test.map(|t| t.id()) != Some(id) {
            self.test = self.registry.find(id);
        }
        let Some(t) = self.test else { return };
        if self.registry.count_udp(t, &h, n, now) == UdpCount::Gone {
            self.test = self.registry.find(id);
        }
    }
}
