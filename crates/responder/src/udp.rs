//! UDP: the echo loop around `proto::udp::answer`, and the counting of
//! throughput-test stream datagrams into the registry.
//!
//! The two clock reads stamp the server receive and send times into the
//! reply, so a client can split its round trip into the way out, the time
//! spent in this process, and the way back.

use crate::shared::{cpu, Shared};
use stackmeter_proto::machine::{TestRef, UdpCount};
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
    test: Option<TestRef>,
    cpu: stackmeter_sys::CpuTime,
    since: u32,
}

/// Datagrams between two charges of this thread's CPU time to a test.
const CPU_BATCH: u32 = 256;

impl Cache {
    /// Charges the CPU used since the last charge to the cached test.
    fn charge(&mut self, shared: &Shared) {
        let now = stackmeter_sys::thread_cpu();
        if let Some(t) = self.test {
            shared.registry.add_cpu(t, cpu(now.since(self.cpu)));
        }
        self.cpu = now;
        self.since = 0;
    }

    /// Looks test `id` up anew, charging the CPU so far to the old one;
    /// time spent before this test (echoes, idle) is nobody's.
    fn switch(&mut self, id: u32, shared: &Shared) {
        self.charge(shared);
        self.test = shared.registry.find(id);
        self.cpu = stackmeter_sys::thread_cpu();
    }
}

/// Counts a stream datagram against its test. The last test seen is kept,
/// so a stream costs no registry lookup per datagram; a stopped test still
/// counts (datagrams queued when Stop came), a closed one is looked up again.
fn stream_datagram(d: &[u8], rx: u64, shared: &Shared, cache: &mut Cache) {
    let Ok(h) = udp::Header::parse(d) else { return };
    if h.version != stackmeter_proto::VERSION {
        return Shared::bump(&shared.counters.udp_dropped);
    }
    let id = h.test_id();
    if cache.test.map(|t| t.id()) != Some(id) {
        cache.switch(id, shared);
    }
    let Some(t) = cache.test else {
        return Shared::bump(&shared.counters.udp_dropped);
    };
    match shared.registry.count_udp(t, &h, d.len(), rx) {
        UdpCount::Counted | UdpCount::StreamIgnored => {}
        UdpCount::Gone => {
            cache.switch(id, shared);
            return Shared::bump(&shared.counters.udp_dropped);
        }
    }
    cache.since += 1;
    if cache.since >= CPU_BATCH {
        cache.charge(shared);
    }
}
