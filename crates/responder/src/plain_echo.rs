//! A plain TCP echo server in the application (RFC 862's echo, no
//! stackmeter protocol): every byte read is written back. It is the
//! application side of the sockmap comparison (`serve --plain-echo`
//! against `serve --in-kernel sockmap`): the same accept and the same
//! socket options, only who sends the bytes back differs. One thread per
//! connection, blocking reads and writes, TCP_NODELAY as the sockmap side
//! sets it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the echo did.
#[derive(Debug, Default)]
pub struct EchoCounts {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Bytes read and written back by the application.
    pub bytes: AtomicU64,
}

/// Serves `listener` until `stop` is set (looked at every 20 ms).
pub fn serve(listener: TcpListener, stop: &AtomicBool, counts: &Arc<EchoCounts>) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                s.set_nodelay(true)?;
                counts.connections.fetch_add(1, Ordering::Relaxed);
                let counts = Arc::clone(counts);
                std::thread::spawn(move || echo(s, &counts));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Echoes one connection until the peer closes it (or an error).
fn echo(mut s: TcpStream, counts: &EchoCounts) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if s.write_all(&buf[..n]).is_err() {
                    return;
                }
                counts.bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
    }
}
