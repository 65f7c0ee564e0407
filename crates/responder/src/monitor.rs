//! The session monitor: one log line when the number of concurrent TCP
//! sessions has changed, at most once a second, so a responder holding
//! 10,000 connections says how many it holds without a line per connection.

use crate::shared::Shared;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How often the monitor looks.
const PERIOD: Duration = Duration::from_secs(1);

/// Runs forever on its own thread (only when the log goes somewhere).
pub(crate) fn run(shared: &Shared) {
    let c = &shared.counters;
    let mut last = 0usize;
    loop {
        std::thread::sleep(PERIOD);
        let active = c.active.load(Ordering::Relaxed);
        if active == last {
            continue;
        }
        last = active;
        shared.cfg.log.line(format_args!(
            "sessions: {active} active (peak {}), {} accepted, {} refused, {} aborted; object requests {}, object bytes {}",
            c.peak.load(Ordering::Relaxed),
            c.sessions.load(Ordering::Relaxed),
            c.refused.load(Ordering::Relaxed),
            c.aborted.load(Ordering::Relaxed),
            c.object_requests.load(Ordering::Relaxed),
            c.object_bytes.load(Ordering::Relaxed),
        ));
    }
}
