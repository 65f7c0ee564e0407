//! Ctrl-C as a flag, the one signal mechanism of stackmeter: a measuring
//! command installs it, its loops look at the flag between transactions
//! (never between two clock reads), finish what they can, and the command
//! prints and stores what finished, marked partial, instead of dying
//! mid-write. A second Ctrl-C is counted too, for "quit at once".

#![allow(unsafe_code)] // This module wraps C library calls.

use std::sync::atomic::{AtomicU32, Ordering};

static INTERRUPTS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only an atomic add: async-signal-safe.
    INTERRUPTS.fetch_add(1, Ordering::SeqCst);
}

/// From now on SIGINT and SIGTERM set [`interrupted`] instead of ending
/// the process.
pub fn catch_interrupts() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `on_signal` only stores to an atomic, which is
        // async-signal-safe; the sigaction struct is zeroed and then filled
        // with a valid handler and an empty mask.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// True once SIGINT or SIGTERM arrived after [`catch_interrupts`].
pub fn interrupted() -> bool {
    interrupts() > 0
}

/// How many SIGINTs and SIGTERMs arrived after [`catch_interrupts`].
pub fn interrupts() -> u32 {
    INTERRUPTS.load(Ordering::Relaxed)
}
