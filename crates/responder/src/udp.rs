//! UDP echo: the receive-answer-send loop around `proto::udp::answer`.
//!
//! The two clock reads stamp the server receive and send times into the
//! reply, so a client can split its round trip into the way out, the time
//! spent in this process, and the way back.

use crate::stream::Test;
use crate::Shared;
use stackmeter_proto::udp::{self, Answer};
use std::net::UdpSocket;
use std::sync::Arc;

pub(crate) fn echo_loop(sock: UdpSocket, shared: Arc<Shared>) {
    shared.pin();
    let log = shared.cfg.log;
    log.line(format_args!(
        "listening on udp {}",
        sock.local_addr().map(|a| a.to_string()).unwrap_or_default()
    ));
    let mut mem = stackmeter_sys::AlignedBuf::new(65536);
    let buf = mem.bytes_mut();
    let mut cache = Cache::default();
    loop {
        let (n, peer) = match sock.recv_from(buf) {
            Ok(x) => x,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // ICMP errors from earlier sends surface here on some
                // systems; they concern one client, not this loop.
                log.line(format_args!("udp receive: {e}"));
                continue;
            }
        };
        let rx = stackmeter_sys::monotonic_ns();
        if n >= udp::HEADER_LEN && buf[5] == udp::Kind::StreamData as u8 {
            stream_datagram(&buf[..n], rx, &shared, &mut cache);
            continue;
        }
        match udp::answer(&mut buf[..n], rx) {
            Answer::Reply(len) => {
                udp::stamp_tx(&mut buf[..len], stackmeter_sys::monotonic_ns());
                if sock.send_to(&buf[..len], peer).is_ok() {
                    Shared::bump(&shared.counters.udp_replies);
                }
            }
            Answer::Drop(_) => Shared::bump(&shared.counters.udp_dropped),
        }
    }
}

/// The test the last stream datagram belonged to, and this thread's CPU
/// time not yet charged to it.
#[derive(Default)]
struct Cache {
    test: Option<Arc<Test>>,
    cpu: stackmeter_sys::CpuTime,
    since: u32,
}

/// Datagrams between two charges of this thread's CPU time to a test.
const CPU_BATCH: u32 = 256;

impl Cache {
    /// Charges the CPU used since the last charge to the cached test.
    fn charge(&mut self) {
        let now = stackmeter_sys::thread_cpu();
        if let Some(t) = &self.test {
            t.add_cpu(now.since(self.cpu));
        }
        self.cpu = now;
        self.since = 0;
    }
}

/// Counts a stream datagram against its test. The last test seen is kept
/// so a stream costs one registry lookup, not one per datagram.
fn stream_datagram(d: &[u8], rx: u64, shared: &Shared, cache: &mut Cache) {
    let Ok(h) = udp::Header::parse(d) else { return };
    if h.version != stackmeter_proto::VERSION {
        return Shared::bump(&shared.counters.udp_dropped);
    }
    let id = h.test_id();
    // A stopped test still counts (datagrams queued when Stop came); a
    // closed one is looked up again.
    let hit = matches!(&cache.test, Some(t) if t.id == id && !t.closed.load(std::sync::atomic::Ordering::Relaxed));
    if !hit {
        cache.charge();
        cache.test = shared.tests.get(id);
        // Time spent before this test (echoes, idle) is nobody's.
        cache.cpu = stackmeter_sys::thread_cpu();
    }
    match &cache.test {
        Some(t) => t.udp_datagram(&h, d.len(), rx),
        None => return Shared::bump(&shared.counters.udp_dropped),
    }
    cache.since += 1;
    if cache.since >= CPU_BATCH {
        cache.charge();
    }
}
