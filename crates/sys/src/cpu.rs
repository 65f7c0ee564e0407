//! Where a thread runs: pinning it to one CPU, checking that a CPU is
//! available, and which CPU it is on now (every result records placement).

#![allow(unsafe_code)] // This module wraps C library calls.

use std::io;

/// Pins the calling thread to `cpu` (Linux: `sched_setaffinity(0, ...)`).
#[cfg(target_os = "linux")]
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is out of range"),
        ));
    }
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write inside it
    // (cpu was bounds-checked above) and sched_setaffinity only reads it.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("cannot pin to CPU {cpu}: {e}")))
    }
}

/// Checks that this process may run on `cpu`, without pinning anything.
#[cfg(target_os = "linux")]
pub fn check_cpu(cpu: usize) -> io::Result<()> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is not available to this process"),
        )
    };
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(bad());
    }
    // SAFETY: as in pin_current_thread; sched_getaffinity writes the set.
    let allowed = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        libc::CPU_ISSET(cpu, &set)
    };
    if allowed {
        Ok(())
    } else {
        Err(bad())
    }
}

/// Checking is only implemented on Linux.
#[cfg(not(target_os = "linux"))]
pub fn check_cpu(cpu: usize) -> io::Result<()> {
    pin_current_thread(cpu)
}

/// Pinning is only implemented on Linux.
#[cfg(not(target_os = "linux"))]
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("cannot pin to CPU {cpu}: not supported on this OS"),
    ))
}

/// The CPU the calling thread runs on right now, where the OS says.
pub fn current_cpu() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sched_getcpu takes no arguments and only returns a number.
        let c = unsafe { libc::sched_getcpu() };
        if c >= 0 {
            return Some(c as usize);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn pin_then_run_there() {
        super::pin_current_thread(0).unwrap();
        assert_eq!(super::current_cpu(), Some(0));
        assert!(super::pin_current_thread(1 << 20).is_err());
        assert!(super::check_cpu(0).is_ok());
        assert!(super::check_cpu(4000).is_err());
    }
}
