//! The source sockets of open throughput tests, so a control session can
//! read their TCP_INFO when it builds a Report.
//!
//! A source adds a duplicate of its socket when it starts and removes it
//! when it ends; a Report reads the list. Never touched per message.

use stackmeter_proto::machine::TcpFigures;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// (key, test id, duplicate of the source's socket).
#[derive(Default)]
pub(crate) struct Sources {
    list: Mutex<Vec<(u64, u32, TcpStream)>>,
    next: AtomicU64,
}

impl Sources {
    /// Lists a source of test `test`; returns the key to remove it with.
    pub(crate) fn add(&self, test: u32, s: &TcpStream) -> Option<u64> {
        let dup = s.try_clone().ok()?;
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push((key, test, dup));
        Some(key)
    }

    pub(crate) fn remove(&self, key: u64) {
        self.lock().retain(|(k, _, _)| *k != key);
    }

    /// TCP_INFO summed over the listed sources of `test` (the smoothed RTT
    /// averaged), or `None` when none can be read.
    pub(crate) fn figures(&self, test: u32) -> Option<TcpFigures> {
        let list = self.lock();
        let mut f = TcpFigures::default();
        let mut n = 0u64;
        let mut rtt = 0u64;
        for (_, _, s) in list.iter().filter(|(_, t, _)| *t == test) {
            if let Some(i) = stackmeter_sys::tcp_info(s.as_raw_fd()) {
                f.retransmits = f.retransmits.wrapping_add(i.total_retrans);
                f.cwnd_bytes = f.cwnd_bytes.saturating_add(i.cwnd_bytes);
                rtt += i.rtt_us as u64;
                n += 1;
            }
        }
        (n > 0).then(|| TcpFigures {
            rtt_us: (rtt / n) as u32,
            ..f
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, u32, TcpStream)>> {
        self.list.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
