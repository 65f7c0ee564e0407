//! The paced UDP sender of `stream --udp`, `udp-max`'s trials and the
//! iperf 2 UDP test: datagrams of a fixed length, each with a header its
//! [`Framing`] writes just before the send (sequence number and send
//! time), the payload pattern after it, at a rate set by a token bucket
//! (`pace.rs`). Where the kernel can, several datagrams leave per system
//! call (UDP GSO, else `sendmmsg`); with a MAC trailer, one per call.
//! What the socket took is counted; a full queue on the way out is not an
//! error: that datagram was not sent, and the schedule goes on.

use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::sockets::lost;
use crate::throughput::pace::Pacer;
use crate::throughput::workers::{worker, Counter, Crew, Shared, Worker};
use stackmeter_proto::udp::{Header, HEADER_LEN};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How a sender writes each datagram's header.
pub(crate) trait Framing: Send + 'static {
    /// Bytes of the header at the start of each datagram; the payload
    /// pattern follows it.
    const HEADER_LEN: usize;

    /// Bytes each datagram carries after its length (a MAC trailer).
    fn trailer(&self) -> usize {
        0
    }

    /// Writes the header of datagram `seq` (from 0) into `d`, the whole
    /// datagram, trailer included, and seals it if it has a trailer.
    fn frame(&self, seq: u64, d: &mut [u8]);
}

/// stackmeter's stream datagrams (docs/protocol.md 4): the UDP header of
/// stream `index` of test `test_id`, sealed with the endpoint's secret.
pub(crate) struct StreamFrames {
    test_id: u32,
    index: u16,
    endpoint: Endpoint,
}

impl StreamFrames {
    /// Stream `index` of test `test_id` against `endpoint`.
    pub(crate) fn new(endpoint: &Endpoint, test_id: u32, index: u16) -> StreamFrames {
        StreamFrames {
            test_id,
            index,
            endpoint: *endpoint,
        }
    }
}

impl Framing for StreamFrames {
    const HEADER_LEN: usize = HEADER_LEN;

    fn trailer(&self) -> usize {
        self.endpoint.trailer()
    }

    #[inline]
    fn frame(&self, seq: u64, d: &mut [u8]) {
        let h = Header::stream_data(self.test_id, self.index, seq, stackmeter_sys::monotonic_ns());
        // Cannot fail: every datagram holds at least HEADER_LEN bytes.
        let _ = h.emit(d);
        self.endpoint.seal(d);
    }
}

/// One UDP stream's sender: its socket, datagram buffer and next sequence.
pub(crate) struct UdpTx<F: Framing> {
    pub(crate) sock: UdpSocket,
    pub(crate) buf: Vec<u8>,
    pub(crate) seq: u64,
    framing: F,
    trailer: usize,
    /// How many datagrams leave per system call, and how.
    way: Way,
    /// With a batch: `k` datagrams side by side, each with its header.
    train: Vec<u8>,
}

/// How a sender's datagrams leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    /// One `send` per datagram.
    One,
    /// UDP GSO: one `send` of up to `k` datagrams that the kernel cuts apart.
    Gso(usize),
    /// One `sendmmsg` of up to `k` datagrams.
    Mmsg(usize),
}

/// Bytes one GSO send may carry (the UDP length limit, headers aside).
const GSO_MAX_BYTES: usize = 65_000;

impl<F: Framing> UdpTx<F> {
    /// A sender of `length`-byte datagrams framed by `framing`, `batch`
    /// per system call where the kernel can (UDP GSO, else `sendmmsg`; 1:
    /// one `send` each). With a trailer each datagram carries it after its
    /// length, and goes alone.
    pub(crate) fn new(sock: UdpSocket, framing: F, length: usize, batch: usize) -> UdpTx<F> {
        let length = length.max(F::HEADER_LEN);
        let trailer = framing.trailer();
        let batch = if trailer > 0 { 1 } else { batch };
        let mut buf = vec![0u8; length + trailer];
        stackmeter_proto::pattern::fill(0, &mut buf[F::HEADER_LEN..]);
        let k = batch.min(stackmeter_sys::batch::GSO_MAX_SEGMENTS);
        let gso_k = k.min(GSO_MAX_BYTES / length);
        let fd = sock.as_raw_fd();
        let way = if k <= 1 {
            Way::One
        } else if gso_k > 1 && length <= u16::MAX as usize && stackmeter_sys::batch::set_gso(fd, length as u16).is_ok()
        {
            Way::Gso(gso_k)
        } else {
            Way::Mmsg(k)
        };
        let slots = match way {
            Way::One => 0,
            Way::Gso(k) | Way::Mmsg(k) => k,
        };
        let mut train = vec![0u8; slots * length];
        for d in train.chunks_mut(length) {
            d.copy_from_slice(&buf);
        }
        UdpTx {
            sock,
            buf,
            seq: 0,
            framing,
            trailer,
            way,
            train,
        }
    }

    /// Sends the next `k` datagrams (`k` within the batch) with one call;
    /// returns how many the socket took.
    fn send_train(&mut self, k: usize) -> io::Result<usize> {
        let length = self.buf.len();
        for d in self.train.chunks_mut(length).take(k) {
            self.framing.frame(self.seq, d);
            self.seq += 1;
        }
        let r = match self.way {
            Way::Gso(_) => self.sock.send(&self.train[..k * length]).map(|n| n / length),
            _ => {
                let bufs: Vec<&[u8]> = self.train.chunks(length).take(k).collect();
                stackmeter_sys::batch::send_many(self.sock.as_raw_fd(), &bufs)
            }
        };
        // Sequence numbers of datagrams that did not leave are reused.
        let took = *r.as_ref().unwrap_or(&0);
        self.seq -= (k - took) as u64;
        r
    }

    /// Sends `pps` datagrams per second (infinite: as fast as possible)
    /// until `stop` is set or `duration` has passed, counting what the
    /// socket accepted. Returns the datagrams sent.
    pub(crate) fn send_paced(
        &mut self,
        pps: f64,
        duration: Option<Duration>,
        stop: &AtomicBool,
        bytes: &Counter,
        datagrams: &Counter,
    ) -> io::Result<u64> {
        let start = Instant::now();
        let end_ns = duration.map_or(u64::MAX, |d| d.as_nanos() as u64);
        let mut pacer = Pacer::new(pps);
        let mut sent = 0;
        while !stop.load(Ordering::Relaxed) {
            let elapsed = start.elapsed().as_nanos() as u64;
            if elapsed >= end_ns {
                break;
            }
            let due = pacer.due(elapsed);
            if due == 0 {
                let next = pacer.next_due_ns().min(end_ns);
                if next > elapsed {
                    std::thread::sleep(Duration::from_nanos(next - elapsed));
                }
                continue;
            }
            if let Way::Gso(k) | Way::Mmsg(k) = self.way {
                let mut left = due as usize;
                while left > 0 {
                    let n = left.min(k);
                    match self.send_train(n) {
                        Ok(took) => {
                            sent += took as u64;
                            bytes.0.fetch_add((took * self.buf.len()) as u64, Ordering::Relaxed);
                            datagrams.0.fetch_add(took as u64, Ordering::Relaxed);
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        // A full queue on the way out: not sent, not counted.
                        Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) || e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(e),
                    }
                    left -= n;
                }
                pacer.sent(due);
                continue;
            }
            for _ in 0..due {
                self.framing.frame(self.seq, &mut self.buf);
                match self.sock.send(&self.buf) {
                    Ok(n) => {
                        self.seq += 1;
                        sent += 1;
                        // The datagram's size, as asked: not its trailer.
                        bytes.0.fetch_add((n - self.trailer) as u64, Ordering::Relaxed);
                        datagrams.0.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // A full queue on the way out: the datagram was not
                    // sent, so it is not counted; the schedule goes on.
                    Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) || e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
            pacer.sent(due);
        }
        Ok(sent)
    }
}

/// Starts a worker thread (`name`) that builds its sender with `make`,
/// waits at the gate and sends `pps` datagrams per second to `addr` until
/// the stop (`during`: what a failure says it was doing); then `then` has
/// the sender (iperf 2's end of test).
pub(crate) fn udp_sender<F: Framing>(
    crew: &Crew,
    name: &str,
    addr: SocketAddr,
    during: &'static str,
    pps: f64,
    make: impl FnOnce() -> UdpTx<F> + Send + 'static,
    then: impl FnOnce(&mut UdpTx<F>, &Shared) + Send + 'static,
) -> Result<Worker, ClientError> {
    worker(name, crew, Vec::new(), move |sh, go, b, d| {
        stackmeter_sys::tight_timers();
        let mut tx = make();
        go.wait();
        match tx.send_paced(pps, None, &sh.stop, b, d) {
            Ok(_) => then(&mut tx, sh),
            Err(e) => sh.fail(lost(addr, during, &e)),
        }
    })
}
