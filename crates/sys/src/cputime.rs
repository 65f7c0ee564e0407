//! CPU time used by the process or the calling thread (getrusage), for
//! the CPU cost every throughput result reports.

#![allow(unsafe_code)] // This module wraps C library calls.

/// CPU time used, split into user and kernel mode, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// Time in user mode.
    pub user_ns: u64,
    /// Time in the kernel on this process's (or thread's) behalf.
    pub sys_ns: u64,
}

impl CpuTime {
    /// The CPU time used between `earlier` and `self`.
    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
        }
    }

    /// Sum of two CPU times.
    pub fn plus(self, other: CpuTime) -> CpuTime {
        CpuTime {
            user_ns: self.user_ns + other.user_ns,
            sys_ns: self.sys_ns + other.sys_ns,
        }
    }
}

fn rusage(who: libc::c_int) -> CpuTime {
    // SAFETY: rusage is plain data; getrusage writes it whole or fails.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid, writable rusage; `who` is RUSAGE_SELF or RUSAGE_THREAD.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return CpuTime::default();
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    CpuTime {
        user_ns: ns(ru.ru_utime),
        sys_ns: ns(ru.ru_stime),
    }
}

/// CPU time of the whole process so far (getrusage RUSAGE_SELF).
pub fn process_cpu() -> CpuTime {
    rusage(libc::RUSAGE_SELF)
}

/// CPU time of the calling thread so far (getrusage RUSAGE_THREAD; the
/// process's on systems without it).
pub fn thread_cpu() -> CpuTime {
    #[cfg(target_os = "linux")]
    return rusage(libc::RUSAGE_THREAD);
    #[cfg(not(target_os = "linux"))]
    return rusage(libc::RUSAGE_SELF);
}
