//! Socket options from the run's real-time knobs (today `SO_BUSY_POLL`),
//! given to every socket the client opens for measuring. They are set
//! process-wide before a test starts, so no test's parameters carry them,
//! and the value the kernel reports on the last tuned socket is kept for
//! the result (what was in force, not what was asked for).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

/// Busy-poll microseconds to set; 0: leave sockets alone.
static BUSY_POLL: AtomicU32 = AtomicU32::new(0);
/// What the kernel reported on the last tuned socket; `u32::MAX`: none yet.
static SEEN: AtomicU32 = AtomicU32::new(u32::MAX);

/// Sockets opened from now on get `SO_BUSY_POLL` `us` (`None` or 0: not
/// set). Forgets what was read back before.
pub fn set_busy_poll(us: Option<u32>) {
    BUSY_POLL.store(us.unwrap_or(0), Ordering::Relaxed);
    SEEN.store(u32::MAX, Ordering::Relaxed);
}

/// `SO_BUSY_POLL` as the kernel reported it on the last socket tuned since
/// [`set_busy_poll`]; `None` when no socket was tuned.
pub fn busy_poll_seen() -> Option<u32> {
    match SEEN.load(Ordering::Relaxed) {
        u32::MAX => None,
        v => Some(v),
    }
}

/// Applies the knobs to a new socket, before it connects.
pub(crate) fn socket(fd: RawFd) -> std::io::Result<()> {
    let us = BUSY_POLL.load(Ordering::Relaxed);
    if us == 0 {
        return Ok(());
    }
    stackmeter_sys::knobs::set_busy_poll(fd, us)?;
    if let Ok(v) = stackmeter_sys::knobs::busy_poll(fd) {
        SEEN.store(v, Ordering::Relaxed);
    }
    Ok(())
}
