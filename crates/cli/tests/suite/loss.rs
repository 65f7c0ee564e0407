//! Loss each way (docs/protocol.md 4.4): a UDP relay between client and
//! responder drops known requests on the way up and known replies on the
//! way back; ping must put each loss on the right way, against both
//! responders.

use super::{json_of, run, stderr, Server};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A relay on 127.0.0.1 to `to` that drops every `up`-th request and every
/// `down`-th reply (counting from 1; 0 drops nothing), and counts what it
/// dropped.
struct Relay {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    dropped_up: Arc<AtomicU64>,
    dropped_down: Arc<AtomicU64>,
}

impl Relay {
    fn start(to: SocketAddr, up: u64, down: u64) -> Relay {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        let back = UdpSocket::bind("127.0.0.1:0").unwrap();
        back.connect(to).unwrap();
        for s in [&front, &back] {
            s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        }
        let addr = front.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (dropped_up, dropped_down) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let client: Arc<std::sync::Mutex<Option<SocketAddr>>> = Arc::default();
        let (f2, b2) = (front.try_clone().unwrap(), back.try_clone().unwrap());
        let (st, du, c) = (stop.clone(), dropped_up.clone(), client.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            let mut n_up = 0u64;
            while !st.load(Ordering::Relaxed) {
                let Ok((n, from)) = front.recv_from(&mut buf) else {
                    continue;
                };
                *c.lock().unwrap() = Some(from);
                n_up += 1;
                if up > 0 && n_up.is_multiple_of(up) {
                    du.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let _ = back.send(&buf[..n]);
            }
        });
        let (st, dd) = (stop.clone(), dropped_down.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            let mut n_down = 0u64;
            while !st.load(Ordering::Relaxed) {
                let Ok(n) = b2.recv(&mut buf) else { continue };
                n_down += 1;
                if down > 0 && n_down.is_multiple_of(down) {
                    dd.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                if let Some(to) = *client.lock().unwrap() {
                    let _ = f2.send_to(&buf[..n], to);
                }
            }
        });
        Relay {
            addr,
            stop,
            dropped_up,
            dropped_down,
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// ping through a relay dropping every 5th request and every 7th reply:
/// lost up and down are what the relay dropped of the timed datagrams.
fn split_through_a_relay(to: SocketAddr, extra: &[&str]) {
    let relay = Relay::start(to, 5, 7);
    let target = relay.addr.to_string();
    // On a schedule, so a lost datagram costs no wait.
    let mut args = vec![
        "ping",
        &target,
        "-c",
        "300",
        "--warmup",
        "0",
        "--interval-us",
        "1000",
        "--timeout-ms",
        "300",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    let doc = json_of(&out);
    let r = &doc["results"][0];
    let split = &r["loss_split"];
    assert!(split.is_object(), "{}: {r}", stderr(&out));
    let (up, down) = (
        relay.dropped_up.load(Ordering::Relaxed),
        relay.dropped_down.load(Ordering::Relaxed),
    );
    assert_eq!(up, 60, "the relay dropped every 5th of 300");
    let (s_up, s_down, unknown) = (
        split["up"].as_u64().unwrap(),
        split["down"].as_u64().unwrap(),
        split["unknown"].as_u64().unwrap(),
    );
    // The relay's drops are the only loss; the datagrams lost after the
    // last counted reply (the last one here: every 5th is dropped) are
    // neither way, and few.
    assert_eq!(r["lost"].as_u64().unwrap(), up + down, "{r}");
    assert!(unknown <= 2, "{split}");
    assert_eq!(s_up + s_down + unknown, up + down, "{split}");
    assert!(s_up <= up && s_up + unknown >= up, "{split}: the relay dropped {up} up");
    assert!(
        s_down <= down && s_down + unknown >= down,
        "{split}: the relay dropped {down} down"
    );
    assert_eq!(split["down_late"], 0);
}

#[test]
fn ping_splits_loss_up_and_down_against_serve() {
    let srv = Server::start(&[]);
    split_through_a_relay(srv.addr, &[]);
    // With stamps asked, the count block follows the stamp block.
    split_through_a_relay(srv.addr, &["--timestamps", "--size", "128"]);
}

#[test]
fn ping_splits_loss_up_and_down_against_the_c_responder() {
    let c = crate::c_responder::CServer::start(&[]);
    split_through_a_relay(c.target().parse().unwrap(), &[]);
    split_through_a_relay(c.target().parse().unwrap(), &["--timestamps", "--size", "128"]);
    c.finish();
}

#[test]
fn too_short_a_datagram_asks_for_no_count() {
    let srv = Server::start(&[]);
    let out = run(&["ping", &srv.target(), "-c", "20", "--size", "48", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &json_of(&out)["results"][0];
    assert!(r.get("loss_split").is_none(), "{r}");
    assert_eq!(r["mismatched"], 0);
}
