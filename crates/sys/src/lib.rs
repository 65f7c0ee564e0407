//! Platform facts and knobs, behind small safe functions.
//!
//! Everything here wraps one C library call: pinning a thread to a CPU,
//! reading the monotonic clock as an integer, page-aligned receive buffers,
//! fine-grained waits (`ppoll`, timer slack),
//! and describing the host
//! (name, kernel, CPU model) so every result says where it was measured.
//! The rest of stackmeter has no `unsafe`; it all lives in this file
//! (also a child's parent-death signal), in `interrupt.rs` (Ctrl-C as a
//! flag), in `knobs.rs` (scheduling priority, locked memory, busy
//! polling, each read back from the kernel), in `tstamp.rs` (kernel
//! timestamps), in `batch.rs` (many datagrams per call) and in `epoll.rs`
//! (readiness of many sockets from one thread).

pub mod batch;
pub mod epoll;
pub mod interrupt;
pub mod knobs;
pub mod tstamp;
mod wallclock;

pub use wallclock::{unix_now, unix_now_ms, utc_rfc3339, utc_rfc3339_ms, wall_ns};

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

/// CLOCK_REALTIME in nanoseconds since the Unix epoch: the clock Linux
/// software timestamps are on (`tstamp`), read by a responder for the
/// application times of a stamp block.
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid, writable timespec; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
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

/// `recv(fd, buf, MSG_DONTWAIT)`: what has arrived, without waiting.
/// `WouldBlock` when nothing has; `Ok(0)` at end of stream.
#[cfg(unix)]
pub fn recv_nowait(fd: std::os::fd::RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of its length for the whole call.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT) };
    if n >= 0 {
        Ok(n as usize)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The sender-side TCP figures of a connection, from TCP_INFO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    /// Congestion window in bytes (segments times the send MSS).
    pub cwnd_bytes: u32,
    /// Smoothed round-trip time, microseconds.
    pub rtt_us: u32,
    /// Bytes the peer's TCP acknowledged over the connection's life
    /// (`tcpi_bytes_acked`, Linux 4.1+; 0 where the kernel has none): what
    /// a receiver that counts nothing itself (a discard server) got.
    pub bytes_acked: u64,
}

/// TCP_INFO of socket `fd`, or `None` where the platform has none (or the
/// socket is not TCP).
#[cfg(target_os = "linux")]
pub fn tcp_info(fd: std::os::fd::RawFd) -> Option<TcpInfo> {
    // SAFETY: tcp_info is plain data; getsockopt writes at most `len` bytes.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: valid pointers to a tcp_info and its length.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut ti as *mut libc::tcp_info as *mut libc::c_void,
            &mut len,
        )
    };
    (rc == 0).then(|| TcpInfo {
        total_retrans: ti.tcpi_total_retrans,
        cwnd_bytes: ti.tcpi_snd_cwnd.saturating_mul(ti.tcpi_snd_mss),
        rtt_us: ti.tcpi_rtt,
        bytes_acked: ti.tcpi_bytes_acked,
    })
}

/// TCP_INFO is Linux's; elsewhere there is none.
#[cfg(not(target_os = "linux"))]
pub fn tcp_info(_fd: i32) -> Option<TcpInfo> {
    None
}

/// Turns on MSG_ZEROCOPY for socket `fd` (SO_ZEROCOPY, Linux 4.14+).
#[cfg(target_os = "linux")]
pub fn enable_zerocopy(fd: std::os::fd::RawFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: a valid pointer to an int and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ZEROCOPY,
            &one as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `send(fd, buf, MSG_ZEROCOPY)`: the kernel pins the pages instead of
/// copying them and reports completion on the error queue
/// ([`drain_zerocopy`]). The caller must not change `buf` until then.
#[cfg(target_os = "linux")]
pub fn send_zerocopy(fd: std::os::fd::RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for reads of its length for the whole call.
    let n = unsafe { libc::send(fd, buf.as_ptr() as *const libc::c_void, buf.len(), libc::MSG_ZEROCOPY) };
    if n >= 0 {
        Ok(n as usize)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Zero-copy completions read from a socket's error queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZerocopyDone {
    /// Sends whose completion was reported.
    pub completed: u64,
    /// Of those, sends the kernel copied after all (loopback always does:
    /// SO_EE_CODE_ZEROCOPY_COPIED).
    pub copied: u64,
}

/// Reads every pending zero-copy completion of `fd` without blocking.
#[cfg(target_os = "linux")]
pub fn drain_zerocopy(fd: std::os::fd::RawFd) -> ZerocopyDone {
    const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
    const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;
    let mut done = ZerocopyDone::default();
    loop {
        let mut control = [0u64; 16];
        // SAFETY: msghdr is plain data; zeroed is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg points at a valid control buffer of the given size.
        let rc = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if rc < 0 {
            return done;
        }
        // SAFETY: CMSG_FIRSTHDR/NXTHDR walk the buffer the kernel filled,
        // within msg_controllen.
        let mut c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !c.is_null() {
            // SAFETY: c points at a cmsghdr inside the control buffer; the
            // data of an IP(V6)_RECVERR message is a sock_extended_err.
            let ee = unsafe { &*(libc::CMSG_DATA(c) as *const libc::sock_extended_err) };
            if ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY {
                // ee_info..ee_data is the inclusive range of send numbers.
                let n = ee.ee_data.wrapping_sub(ee.ee_info) as u64 + 1;
                done.completed += n;
                if ee.ee_code == SO_EE_CODE_ZEROCOPY_COPIED {
                    done.copied += n;
                }
            }
            // SAFETY: as above.
            c = unsafe { libc::CMSG_NXTHDR(&msg, c) };
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

/// Raises this process's soft limit on open files to its hard limit (a
/// responder holding 10,000 connections needs a descriptor each; the usual
/// soft limit is 1024). Returns the soft limit before and after.
#[cfg(unix)]
#[allow(clippy::unnecessary_cast)] // rlim_t is not u64 on every platform
pub fn raise_nofile() -> io::Result<(u64, u64)> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: r is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let before = r.rlim_cur as u64;
    if r.rlim_cur < r.rlim_max {
        r.rlim_cur = r.rlim_max;
        // SAFETY: r is a valid rlimit; the soft limit is within the hard one.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok((before, r.rlim_cur as u64))
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

/// Has the child that `cmd` starts get SIGTERM when the thread that
/// starts it ends (Linux `PR_SET_PDEATHSIG`): for helper processes that
/// must not outlive a stackmeter that exits at once or is killed. Start
/// them from a thread that lives as long as the process. Elsewhere this
/// does nothing.
#[cfg(target_os = "linux")]
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec and calls
    // only prctl, getppid and _exit, which are async-signal-safe; it
    // allocates nothing (last_os_error reads errno).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have gone before the request took effect.
            if libc::getppid() != parent {
                libc::_exit(0);
            }
            Ok(())
        });
    }
}

/// Only Linux has a parent-death signal.
#[cfg(not(target_os = "linux"))]
pub fn die_with_parent(_cmd: &mut std::process::Command) {}

/// The socket address in `ss` (IPv4 or IPv6), as a kernel call filled it.
#[cfg(target_os = "linux")]
pub(crate) fn sockaddr(ss: &libc::sockaddr_storage) -> Option<std::net::SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a = unsafe { &*(ss as *const libc::sockaddr_storage as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(std::net::SocketAddr::from((ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a = unsafe { &*(ss as *const libc::sockaddr_storage as *const libc::sockaddr_in6) };
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(std::net::SocketAddr::V6(std::net::SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Sets an integer socket option.
#[cfg(target_os = "linux")]
pub(crate) fn setsockopt_int(
    fd: std::os::fd::RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: v lives across the call, which reads sizeof(int) bytes.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The real user id of this process.
pub fn uid() -> u32 {
    // SAFETY: getuid takes no arguments, cannot fail and touches no memory
    // of ours.
    unsafe { libc::getuid() }
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
