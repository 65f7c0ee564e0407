//! What a process may hold and who it is: the open-files limit raised to
//! its hard limit, a child that dies with its parent, the user id.

#![allow(unsafe_code)] // This module wraps C library calls.

use std::io;

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

/// The real user id of this process.
pub fn uid() -> u32 {
    // SAFETY: getuid takes no arguments, cannot fail and touches no memory
    // of ours.
    unsafe { libc::getuid() }
}

/// Clock ticks per second of /proc's CPU times (`sysconf(_SC_CLK_TCK)`;
/// 100 where it cannot be read).
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(t).ok().filter(|&t| t > 0).unwrap_or(100)
}
