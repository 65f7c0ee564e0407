//! UDP on smoltcp: echo requests answered by the protocol's one rule
//! (`stackmeter_proto::udp::answer`), with the receive and send times the
//! loop read, and stream datagrams counted into their test, as the host
//! responder does (crates/responder/src/udp.rs) without its kernel
//! batching and stamps.

use smoltcp::socket::udp::Socket;
use stackmeter_proto::machine::{Registry, TestRef, UdpCount};
use stackmeter_proto::udp::{self, Answer};
use std::collections::HashMap;

/// Datagrams answered in one round before the TCP sessions get theirs.
const BATCH: usize = 64;

/// Count ids whose counts are kept (docs/protocol.md 4.4); past this the
/// table starts again, as a responder restarting would.
const COUNTS: usize = 4096;

/// The echo socket's state.
pub(crate) struct Echo {
    registry: &'static Registry,
    /// The test the last stream datagram belonged to.
    test: Option<TestRef>,
    /// Requests that asked to be counted, by client and count id.
    counts: HashMap<(smoltcp::wire::IpEndpoint, u32), u64>,
    buf: Vec<u8>,
}

impl Echo {
    pub(crate) fn new(registry: &'static Registry) -> Echo {
        Echo {
            registry,
            test: None,
            counts: HashMap::new(),
            buf: vec![0; 65536],
        }
    }

    /// Answers or counts what has come; whether anything did.
    pub(crate) fn serve(&mut self, sock: &mut Socket, now: u64) -> bool {
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
            let d = &mut self.buf[..n];
            if n >= udp::HEADER_LEN && d[5] == udp::Kind::StreamData as u8 {
                self.count(n, now);
                continue;
            }
            let ask = udp::count_ask(d);
            if let Answer::Reply(len) = udp::answer(d, now) {
                if let Some(ask) = ask {
                    if self.counts.len() >= COUNTS {
                        self.counts.clear();
                    }
                    let c = self.counts.entry((meta.endpoint, ask.id)).or_insert(0);
                    *c += 1;
                    udp::put_count(&mut d[..len], ask, *c);
                }
                udp::stamp_tx(&mut d[..len], stackmeter_sys::monotonic_ns());
                // A full send queue drops the reply, as a full socket
                // buffer would: the client counts it lost.
                let _ = sock.send_slice(&d[..len], meta.endpoint);
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
