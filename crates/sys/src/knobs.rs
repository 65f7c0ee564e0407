//! Real-time knobs (as `nice -n -20` and `chrt --rr 99` set them): the
//! calling thread's scheduling policy and priority or nice value, locking the
//! process's memory (`mlockall`), and busy polling on a socket
//! (`SO_BUSY_POLL`); and reading each back from the kernel, so a result
//! records what was in force rather than what was asked for. Linux only;
//! elsewhere setting fails with `Unsupported` and reading says "other".

#![allow(unsafe_code)] // This module wraps C library calls.

use std::io;

/// A scheduling request for one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// `SCHED_FIFO` at this real-time priority (1..=99).
    Fifo(u8),
    /// `SCHED_RR` at this real-time priority (1..=99).
    Rr(u8),
    /// `SCHED_OTHER` at this nice value (-20..=19).
    Nice(i8),
}

impl Priority {
    /// Parses `fifo:N`, `rr:N` or `nice:N`; the error says what is allowed.
    pub fn parse(s: &str) -> Result<Priority, String> {
        let bad = || format!("'{s}': expected fifo:N or rr:N (N 1..99), or nice:N (N -20..19)");
        let (kind, n) = s.split_once(':').ok_or_else(bad)?;
        let n: i32 = n.trim().parse().map_err(|_| bad())?;
        match kind.trim() {
            "fifo" if (1..=99).contains(&n) => Ok(Priority::Fifo(n as u8)),
            "rr" if (1..=99).contains(&n) => Ok(Priority::Rr(n as u8)),
            "nice" if (-20..=19).contains(&n) => Ok(Priority::Nice(n as i8)),
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Priority::Fifo(n) => write!(f, "fifo:{n}"),
            Priority::Rr(n) => write!(f, "rr:{n}"),
            Priority::Nice(n) => write!(f, "nice:{n}"),
        }
    }
}

/// A thread's scheduling as the kernel reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sched {
    /// "other", "fifo", "rr", "batch", "idle" or "deadline".
    pub policy: &'static str,
    /// Real-time priority (0 for the non-real-time policies).
    pub rt_priority: u32,
    /// Nice value.
    pub nice: i32,
}

/// The calling thread's id (gettid): how the kernel's trace records name
/// it.
#[cfg(target_os = "linux")]
pub fn tid() -> libc::id_t {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as libc::id_t }
}

/// Applies `p` to the calling thread (threads it starts afterwards
/// inherit it). `EPERM` comes back as `PermissionDenied`.
#[cfg(target_os = "linux")]
pub fn set_priority(p: Priority) -> io::Result<()> {
    let (policy, prio, nice) = match p {
        Priority::Fifo(n) => (libc::SCHED_FIFO, n as i32, 0),
        Priority::Rr(n) => (libc::SCHED_RR, n as i32, 0),
        Priority::Nice(n) => (libc::SCHED_OTHER, 0, n as i32),
    };
    set(policy, prio, nice)
}

/// Puts the calling thread back to `SCHED_OTHER` at nice 0.
#[cfg(target_os = "linux")]
pub fn reset_priority() -> io::Result<()> {
    set(libc::SCHED_OTHER, 0, 0)
}

#[cfg(target_os = "linux")]
fn set(policy: libc::c_int, prio: libc::c_int, nice: libc::c_int) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: pid 0 is the calling thread; param is a valid sched_param
    // that the call only reads.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if policy == libc::SCHED_OTHER {
        // On Linux a nice value belongs to a thread (PRIO_PROCESS with a
        // thread id).
        // SAFETY: setpriority takes plain integers.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid(), nice) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The calling thread's scheduling, read back from the kernel.
#[cfg(target_os = "linux")]
pub fn sched() -> Sched {
    // SAFETY: pid 0 is the calling thread; param is written by the call.
    let (policy, rt) = unsafe {
        let mut param = libc::sched_param { sched_priority: 0 };
        let policy = libc::sched_getscheduler(0);
        libc::sched_getparam(0, &mut param);
        (policy, param.sched_priority)
    };
    // getpriority may return -1 as a value: errno tells them apart, and
    // this call cannot fail for our own thread.
    // SAFETY: getpriority takes plain integers.
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid()) };
    Sched {
        policy: match policy & !libc::SCHED_RESET_ON_FORK {
            libc::SCHED_FIFO => "fifo",
            libc::SCHED_RR => "rr",
            libc::SCHED_BATCH => "batch",
            libc::SCHED_IDLE => "idle",
            6 => "deadline",
            _ => "other",
        },
        rt_priority: rt.max(0) as u32,
        nice,
    }
}

/// Locks every page of this process, now and later (`mlockall`).
#[cfg(target_os = "linux")]
pub fn lock_memory() -> io::Result<()> {
    // SAFETY: mlockall takes flags only.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Undoes [`lock_memory`].
#[cfg(target_os = "linux")]
pub fn unlock_memory() -> io::Result<()> {
    // SAFETY: munlockall takes no arguments.
    if unsafe { libc::munlockall() } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// This process's locked memory in KiB (`VmLck` of /proc/self/status).
pub fn locked_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| status_kib(&s, "VmLck:"))
        .unwrap_or(0)
}

/// The KiB figure of `key` ("VmLck:") in a /proc/PID/status text (0 when
/// absent).
pub fn status_kib(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The soft `RLIMIT_MEMLOCK` in KiB (`None`: unlimited or unknown), for
/// error messages.
#[cfg(target_os = "linux")]
pub fn memlock_limit_kib() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: r is a valid rlimit the call writes.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    Some(r.rlim_cur / 1024)
}

/// Sets `SO_BUSY_POLL` (microseconds of busy polling on a blocking
/// receive) on `fd`.
#[cfg(target_os = "linux")]
pub fn set_busy_poll(fd: std::os::fd::RawFd, us: u32) -> io::Result<()> {
    crate::socket::setsockopt_int(
        fd,
        libc::SOL_SOCKET,
        libc::SO_BUSY_POLL,
        us.min(i32::MAX as u32) as libc::c_int,
    )
}

/// `SO_BUSY_POLL` of `fd`, read back.
#[cfg(target_os = "linux")]
pub fn busy_poll(fd: std::os::fd::RawFd) -> io::Result<u32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: v and len are valid for writing; len says how big v is.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_BUSY_POLL,
            &mut v as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(v.max(0) as u32)
}

#[cfg(not(target_os = "linux"))]
fn unsupported() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "only on Linux")
}

/// Only Linux is supported.
#[cfg(not(target_os = "linux"))]
pub fn set_priority(_p: Priority) -> io::Result<()> {
    Err(unsupported())
}

/// Only Linux is supported.
#[cfg(not(target_os = "linux"))]
pub fn reset_priority() -> io::Result<()> {
    Ok(())
}

/// Only Linux is supported.
#[cfg(not(target_os = "linux"))]
pub fn sched() -> Sched {
    Sched {
        policy: "other",
        rt_priority: 0,
        nice: 0,
    }
}

/// Only Linux is supported.
#[cfg(not(target_os = "linux"))]
pub fn lock_memory() -> io::Result<()> {
    Err(unsupported())
}

/// Only Linux is supported.
#[cfg(not(target_os = "linux"))]
pub fn unlock_memory() -> io::Result<()> {
    Ok(())
}

/// Only Linux is supported.
#[cfg(not(target_os = "linux"))]
pub fn memlock_limit_kib() -> Option<u64> {
    None
}

/// Only Linux is supported.
#[cfg(not(target_os = "linux"))]
pub fn set_busy_poll(_fd: i32, _us: u32) -> io::Result<()> {
    Err(unsupported())
}

/// Only Linux is supported.
#[cfg(not(target_os = "linux"))]
pub fn busy_poll(_fd: i32) -> io::Result<u32> {
    Err(unsupported())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_parse_and_print_back() {
        for s in ["fifo:1", "rr:99", "nice:-20", "nice:19"] {
            assert_eq!(Priority::parse(s).unwrap().to_string(), s);
        }
        for s in [
            "fifo:0",
            "rr:100",
            "nice:-21",
            "nice:20",
            "deadline:1",
            "fifo",
            "rr:x",
            "",
        ] {
            assert!(Priority::parse(s).unwrap_err().contains("expected fifo:N"), "{s}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_raised_nice_value_reads_back_on_this_thread_only() {
        // Raising one's own nice value needs no privilege.
        let before = sched();
        std::thread::spawn(|| {
            set_priority(Priority::Nice(5)).unwrap();
            let s = sched();
            assert_eq!((s.policy, s.nice), ("other", 5));
        })
        .join()
        .unwrap();
        assert_eq!(sched(), before);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn busy_poll_reads_back_what_was_set_or_is_refused() {
        use std::os::fd::AsRawFd;
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(busy_poll(s.as_raw_fd()).unwrap(), 0);
        match set_busy_poll(s.as_raw_fd(), 50) {
            Ok(()) => assert_eq!(busy_poll(s.as_raw_fd()).unwrap(), 50),
            // Without CAP_NET_ADMIN above net.core.busy_read.
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::PermissionDenied),
        }
    }
}
