//! UDP echo: the receive-answer-send loop around `proto::udp::answer`.
//!
//! The two clock reads stamp the server receive and send times into the
//! reply, so a client can split its round trip into the way out, the time
//! spent in this process, and the way back.

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
