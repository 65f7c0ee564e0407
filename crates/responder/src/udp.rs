//! UDP: the echo loop around `proto::udp::answer`, and the counting of
//! throughput-test stream datagrams into the registry. Datagrams come in
//! batches (`recvmmsg`, and a sender's GSO train whole where the kernel
//! has UDP GRO), so a stream at a high packet rate costs a fraction of a
//! system call per datagram; the counting takes no lock.
//!
//! The two clock reads stamp the server receive and send times into the
//! reply, so a client can split its round trip into the way out, the time
//! spent in this process, and the way back.
//!
//! A request that asks for stamps (docs/protocol.md 4.3) turns the socket's
//! kernel receive stamps on (from then on the loop receives with `recvmsg`
//! and reads the wall clock, which kernel stamps are on); its reply gets the
//! stamp block and is sent with `sendmsg` asking for its own send stamp,
//! read from the error queue right after the send and carried in the next
//! reply to the same client. Replies to other requests stay as they were.

use crate::shared::{cpu, Shared};
use stackmeter_proto::admit;
use stackmeter_proto::auth::MAC_LEN;
use stackmeter_proto::machine::{TestRef, UdpCount};
use stackmeter_proto::stamps::Block;
use stackmeter_proto::udp::{self, Answer, ReplayWindow};
use stackmeter_sys::tstamp;
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;

/// The stamp state of the echo socket.
#[derive(Default)]
struct Stamping {
    /// Kernel receive stamps are on, and the loop reads the wall clock.
    on: bool,
    /// Stamped replies sent so far: the key of the next send stamp.
    sent: u32,
    /// The last stamped reply: its key, client and sequence number.
    last: Option<(u32, SocketAddr, u64)>,
    /// The latest known send stamp: client, sequence number, stamp.
    prev: Option<(SocketAddr, u64, u64)>,
}

impl Stamping {
    fn clock(&self) -> u64 {
        if self.on {
            stackmeter_sys::realtime_ns()
        } else {
            stackmeter_sys::monotonic_ns()
        }
    }
}

pub(crate) fn echo_loop(sock: UdpSocket, shared: Arc<Shared>) {
    shared.pin();
    let log = shared.cfg.log;
    log.line(format_args!(
        "listening on udp {}",
        sock.local_addr().map(|a| a.to_string()).unwrap_or_default()
    ));
    let mut mem = stackmeter_sys::AlignedBuf::new(65536);
    let mut state = State::default();
    let fd = sock.as_raw_fd();
    // Many datagrams per call (recvmmsg), and a train of one flow's
    // datagrams as one receive where the kernel coalesces them (UDP GRO);
    // with stamps on, or `udp_batch` 1, one `recvfrom` each.
    let mut batch = (shared.cfg.udp_batch > 1).then(|| {
        let _ = stackmeter_sys::batch::enable_gro(fd);
        stackmeter_sys::batch::RecvBatch::new(shared.cfg.udp_batch, 65536)
    });
    loop {
        if let (Some(b), false) = (batch.as_mut(), state.st.on) {
            let n = match b.recv(fd) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                    batch = None;
                    continue;
                }
                Err(e) => {
                    log.line(format_args!("udp receive: {e}"));
                    continue;
                }
            };
            let rx = state.st.clock();
            for i in 0..n {
                let (bytes, peer, seg) = b.message(i);
                let Some(peer) = peer else { continue };
                let seg = if seg == 0 { bytes.len().max(1) } else { seg };
                for d in bytes.chunks_mut(seg) {
                    datagram(d, peer, rx, None, &sock, &shared, &mut state);
                }
            }
            continue;
        }
        let buf = mem.bytes_mut();
        let got = match state.st.on {
            true => tstamp::recv_from(fd, buf),
            false => sock.recv_from(buf).map(|(n, p)| (n, p, None)),
        };
        let (n, peer, rx_kernel) = match got {
            Ok(x) => x,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // ICMP errors from earlier sends surface here on some
                // systems; they concern one client, not this loop.
                log.line(format_args!("udp receive: {e}"));
                continue;
            }
        };
        let rx = state.st.clock();
        datagram(&mut buf[..n], peer, rx, rx_kernel, &sock, &shared, &mut state);
    }
}

/// What the loop keeps between datagrams.
struct State {
    cache: Cache,
    st: Stamping,
    windows: Lru<SocketAddr, ReplayWindow>,
    counts: Lru<(SocketAddr, u32), u64>,
}

impl Default for State {
    fn default() -> State {
        State {
            cache: Cache::default(),
            st: Stamping::default(),
            windows: Lru::new(WINDOWS),
            counts: Lru::new(COUNTS),
        }
    }
}

/// One datagram (`buf`, its trailer included) received at `rx` (and
/// `rx_kernel`, with stamps on): from an allowed network and, with a
/// secret, carrying a valid MAC, a stream datagram is counted and an echo
/// request answered.
fn datagram(
    buf: &mut [u8],
    peer: SocketAddr,
    rx: u64,
    rx_kernel: Option<u64>,
    sock: &UdpSocket,
    shared: &Shared,
    state: &mut State,
) {
    let fd = sock.as_raw_fd();
    let log = shared.cfg.log;
    let State {
        cache,
        st,
        windows,
        counts,
    } = state;
    if !admit::allowed(&shared.cfg.allow, peer.ip()) {
        return Shared::bump(&shared.counters.udp_dropped);
    }
    // With a secret, only a datagram with a valid MAC goes on; `n` is
    // then its length without the trailer (docs/protocol.md 10.2).
    let key = shared.cfg.secret;
    let full = buf.len();
    let n = match key.map(|k| udp::open(&k, &buf[..full])) {
        None => full,
        Some(Some(body)) => body,
        Some(None) => return Shared::bump(&shared.counters.udp_unauthenticated),
    };
    if n >= udp::HEADER_LEN && buf[5] == udp::Kind::StreamData as u8 {
        return stream_datagram(&buf[..n], rx, shared, cache);
    }
    // This datagram's receive time is on the wall clock only if the
    // stamps were on before it came.
    let wall = st.on;
    if !st.on && n >= udp::STAMPED_MIN && buf[7] & udp::FLAG_STAMPS != 0 {
        match tstamp::enable(fd, tstamp::Kind::Software, false) {
            Ok(()) => st.on = true,
            Err(e) => log.line(format_args!("warning: udp: no kernel timestamps: {e}")),
        }
    }
    // Read before the echo rule rewrites the request into its reply.
    let count = udp::count_ask(&buf[..n]);
    let answer = match (key.is_some(), st.on) {
        (true, stamped) => udp::answer_sealed(&mut buf[..full], n, rx, stamped, windows.get(peer)),
        (false, true) => udp::answer_stamped(&mut buf[..n], rx),
        (false, false) => udp::answer(&mut buf[..n], rx),
    };
    // The reply's length on the wire: with a secret, its trailer after it.
    let wire = |len: usize| len + if key.is_some() { MAC_LEN } else { 0 };
    if let (Answer::Reply(len), Some(ask)) = (answer, count) {
        let received = counts.get((peer, ask.id));
        *received += 1;
        udp::put_count(&mut buf[..len], ask, *received);
    }
    match answer {
        Answer::Reply(len) if udp::stamps_due(&buf[..len]) => {
            let seq = u64::from_be_bytes([buf[8], buf[9], buf[10], buf[11], buf[12], buf[13], buf[14], buf[15]]);
            let block = Block {
                app: None,
                rx_kernel: rx_kernel.filter(|_| wall),
                prev_tx: st.prev.filter(|p| p.0 == peer).map(|p| (p.1, p.2)),
                hardware: false,
            };
            let tx = st.clock();
            let app = wall.then_some((rx, tx));
            udp::put_block(&mut buf[..len], &Block { app, ..block });
            udp::stamp_tx(&mut buf[..len], tx);
            if let Some(k) = key {
                udp::seal(&k, &mut buf[..wire(len)]);
            }
            if tstamp::send_to_stamped(fd, &buf[..wire(len)], &peer).is_ok() {
                Shared::bump(&shared.counters.udp_replies);
                st.last = Some((st.sent, peer, seq));
                st.sent = st.sent.wrapping_add(1);
            }
            // After the send, outside the next request's time here.
            let last = st.last;
            tstamp::drain_tx(fd, |k, ns| {
                if let Some((key, p, q)) = last {
                    if k == key {
                        st.prev = Some((p, q, ns));
                    }
                }
            });
        }
        Answer::Reply(len) => {
            udp::stamp_tx(&mut buf[..len], st.clock());
            if let Some(k) = key {
                udp::seal(&k, &mut buf[..wire(len)]);
            }
            if sock.send_to(&buf[..wire(len)], peer).is_ok() {
                Shared::bump(&shared.counters.udp_replies);
            }
        }
        Answer::Drop(udp::DropReason::Replayed) => Shared::bump(&shared.counters.udp_unauthenticated),
        Answer::Drop(_) => Shared::bump(&shared.counters.udp_dropped),
    }
}

/// Client addresses whose replay windows are kept; the least recently
/// used is forgotten when a new one comes (docs/protocol.md 10.2).
const WINDOWS: usize = 4096;

/// Count ids (with their client address) whose counts are kept, the
/// least recently used forgotten first (docs/protocol.md 4.4).
const COUNTS: usize = 4096;

/// Per-client state of at most `cap` clients, forgetting the least
/// recently used: the replay windows of a responder with a secret (by
/// client address and port: one per client socket), and the counts of
/// requests that ask to be counted (by address and count id).
struct Lru<K, V> {
    map: HashMap<K, (V, u64)>,
    uses: u64,
    cap: usize,
}

impl<K: std::hash::Hash + Eq + Copy, V: Default> Lru<K, V> {
    fn new(cap: usize) -> Lru<K, V> {
        Lru {
            map: HashMap::new(),
            uses: 0,
            cap,
        }
    }

    /// `key`'s state, made (from its default) if it is new.
    fn get(&mut self, key: K) -> &mut V {
        self.uses += 1;
        if self.map.len() >= self.cap && !self.map.contains_key(&key) {
            if let Some(old) = self.map.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| *k) {
                self.map.remove(&old);
            }
        }
        let e = self.map.entry(key).or_insert((V::default(), 0));
        e.1 = self.uses;
        &mut e.0
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
