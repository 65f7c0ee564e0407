//! Platform facts and knobs, behind small safe functions.
//!
//! Everything here wraps one C library call: pinning a thread to a CPU,
//! reading the monotonic clock as an integer, page-aligned receive buffers,
//! fine-grained waits (`ppoll`, timer slack),
//! and describing the host
//! (name, kernel, CPU model) so every result says where it was measured.
//! The rest of stackmeter has no `unsafe`; it all lives in this file
//! and in `interrupt.rs` (Ctrl-C as a flag).

pub mod interrupt;

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

/// CLOCK_MONOTONIC in nanoseconds: the responder's timestamps in UDP
/// replies. Only differences between two readings mean anything.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A zeroed receive buffer of `len` bytes whose first byte is page-aligned.
///
/// The kernel copies received data into it; on AMD Zen the copy (`rep
/// movsb`) runs about three times slower into a buffer that starts 16 bytes
/// into a page (where the allocator puts large blocks) than into an aligned
/// one, which showed as +50% on a 1 MiB rr response. Aligning costs one page.
pub struct AlignedBuf {
    mem: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// A zeroed, page-aligned buffer of `len` bytes.
    pub fn new(len: usize) -> AlignedBuf {
        const PAGE: usize = 4096;
        let mem = vec![0u8; len + PAGE];
        let start = mem.as_ptr().align_offset(PAGE).min(PAGE);
        AlignedBuf { mem, start, len }
    }

    /// The aligned bytes, read-only.
    pub fn bytes(&self) -> &[u8] {
        &self.mem[self.start..self.start + self.len]
    }

    /// The aligned bytes.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.mem[self.start..self.start + self.len]
    }
}

/// Waits until `fd` is readable or `wait` has passed (`ppoll`, whose
/// timeout has nanosecond resolution; `SO_RCVTIMEO` is kept in scheduler
/// ticks of 1-4 ms and cannot pace a schedule). Returns whether it is
/// readable (or has an error to report on the next receive).
#[cfg(unix)]
pub fn wait_readable(fd: std::os::fd::RawFd, wait: std::time::Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: wait.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    match rc {
        0 => Ok(false),
        n if n > 0 => Ok(true),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
    }
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

/// Where a measurement ran.
#[derive(Clone, Debug, Default)]
pub struct Host {
    /// Host name.
    pub hostname: String,
    /// OS name and kernel release, e.g. "Linux 6.1.0-18-amd64".
    pub kernel: String,
    /// CPU model name from /proc/cpuinfo, or "unknown".
    pub cpu_model: String,
    /// CPUs online.
    pub cpus: usize,
}

/// Describes this host. Never fails: unknown fields read "unknown".
pub fn host() -> Host {
    // SAFETY: utsname is plain data and uname fills it; the fields are
    // NUL-terminated C strings within their arrays.
    let (hostname, kernel) = unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) == 0 {
            let s = |f: &[libc::c_char]| std::ffi::CStr::from_ptr(f.as_ptr()).to_string_lossy().into_owned();
            (s(&u.nodename), format!("{} {}", s(&u.sysname), s(&u.release)))
        } else {
            ("unknown".into(), "unknown".into())
        }
    };
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    Host {
        hostname,
        kernel,
        cpu_model,
        cpus,
    }
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

    #[test]
    fn ppoll_waits_about_as_asked() {
        use std::os::fd::AsRawFd;
        super::tight_timers();
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let t = std::time::Instant::now();
        let ready = super::wait_readable(s.as_raw_fd(), std::time::Duration::from_micros(300)).unwrap();
        assert!(!ready);
        assert!(t.elapsed() >= std::time::Duration::from_micros(300));
        s.send_to(b"x", s.local_addr().unwrap()).unwrap();
        assert!(super::wait_readable(s.as_raw_fd(), std::time::Duration::from_secs(5)).unwrap());
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        for len in [1, 100, 1 << 20] {
            let mut b = super::AlignedBuf::new(len);
            let s = b.bytes_mut();
            assert_eq!(s.len(), len);
            assert_eq!(s.as_ptr() as usize % 4096, 0);
        }
    }

    #[test]
    fn clock_moves_forward_and_host_is_described() {
        let a = super::monotonic_ns();
        let b = super::monotonic_ns();
        assert!(b >= a);
        let h = super::host();
        assert!(h.kernel.starts_with("Linux"));
        assert!(h.cpus >= 1);
    }
}
