//! The clocks a measurement reads as integers (monotonic for every timed
//! span, realtime for the kernel's software timestamps), and how close to
//! its timers a thread wakes.

#![allow(unsafe_code)] // This module wraps C library calls.

/// CLOCK_MONOTONIC in nanoseconds: the responder's timestamps in UDP
/// replies. Only differences between two readings mean anything.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME in nanoseconds since the Unix epoch: the clock Linux
/// software timestamps are on (`tstamp`), read by a responder for the
/// application times of a stamp block.
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid, writable timespec; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Asks the kernel to wake the calling thread as close to its timers as it
/// can (timer slack 1 ns instead of the default 50 us). Best effort.
pub fn tight_timers() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes one integer and changes only the
    // calling thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic_clock_moves_forward() {
        let a = super::monotonic_ns();
        let b = super::monotonic_ns();
        assert!(b >= a);
    }
}
