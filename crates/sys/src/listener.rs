//! Which process on this host listens on a TCP address, and where the
//! scheduler may run it: a local target that the suite did not start is
//! someone's process, and whether it shares a CPU with the client or the
//! other target decides what a comparison means. Read from /proc: the
//! listening socket's inode in /proc/net/tcp{,6}, the process whose file
//! descriptors hold it, and its threads' allowed CPUs and last CPU.
//! Nothing is found (None) when /proc does not say (another user's process
//! without the rights to read its descriptors, a listener in another
//! network namespace).

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

/// A process listening on a TCP address of this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    /// Its process id.
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`).
    pub command: String,
    /// The CPUs any of its threads may run on, ascending.
    pub cpus: Vec<usize>,
    /// The CPU each of its threads ran on last, ascending, without repeats.
    pub last_cpus: Vec<usize>,
}

/// The process listening on TCP `addr` (or on the wildcard address of its
/// family and port), if /proc says.
pub fn listener(addr: SocketAddr) -> Option<Listener> {
    let inode = listening_inode(addr)?;
    let pid = owner(inode)?;
    let dir = Path::new("/proc").join(pid.to_string());
    let command = std::fs::read_to_string(dir.join("comm")).ok()?.trim().to_string();
    let (mut cpus, mut last_cpus) = (Vec::new(), Vec::new());
    for task in std::fs::read_dir(dir.join("task")).ok()?.flatten() {
        if let Ok(status) = std::fs::read_to_string(task.path().join("status")) {
            let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"));
            cpus.extend(list.map(|l| parse_cpu_list(l.trim())).unwrap_or_default());
        }
        if let Some(cpu) = std::fs::read_to_string(task.path().join("stat"))
            .ok()
            .and_then(|s| last_cpu(&s))
        {
            last_cpus.push(cpu);
        }
    }
    for v in [&mut cpus, &mut last_cpus] {
        v.sort_unstable();
        v.dedup();
    }
    Some(Listener {
        pid,
        command,
        cpus,
        last_cpus,
    })
}

/// What a process has used so far, as /proc says: CPU time (all its
/// threads, user and system) and its peak resident memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// User and system CPU time, nanoseconds (at /proc's tick).
    pub cpu_ns: u64,
    /// Peak resident set (VmHWM), KiB.
    pub peak_rss_kib: u64,
}

/// Process `pid`'s usage so far (None when /proc does not say: gone, or
/// not ours to read).
pub fn usage(pid: u32) -> Option<Usage> {
    let dir = Path::new("/proc").join(pid.to_string());
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    let ticks = cpu_ticks(&stat)?;
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())?;
    Some(Usage {
        cpu_ns: ticks.saturating_mul(1_000_000_000) / crate::process::clock_ticks(),
        peak_rss_kib: peak,
    })
}

/// utime + stime of a /proc/PID/stat line, in clock ticks (fields 14 and
/// 15, the 12th and 13th after the command's closing parenthesis).
fn cpu_ticks(stat: &str) -> Option<u64> {
    let mut w = after_command(stat)?.split_whitespace().skip(11);
    let user: u64 = w.next()?.parse().ok()?;
    let system: u64 = w.next()?.parse().ok()?;
    Some(user + system)
}

/// The inode of the socket listening on `addr` or on its family's
/// wildcard address at the same port.
fn listening_inode(addr: SocketAddr) -> Option<u64> {
    // IPv4 targets may be reached through a dual-stack listener on [::].
    let (files, wildcard) = match addr.ip() {
        IpAddr::V4(_) => (&["/proc/net/tcp", "/proc/net/tcp6"][..], "00000000".to_string()),
        IpAddr::V6(_) => (&["/proc/net/tcp6"][..], "0".repeat(32)),
    };
    let want = proc_hex(addr.ip());
    let mut found = None;
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
                continue;
            };
            let Some((ip, port)) = local.split_once(':') else {
                continue;
            };
            if *state != "0A" || u16::from_str_radix(port, 16).ok() != Some(addr.port()) {
                continue;
            }
            // A dual-stack listener on [::] takes IPv4 too.
            let any6 = ip.len() == 32 && ip.chars().all(|c| c == '0');
            if ip == want || ip == wildcard || any6 {
                found = inode.parse().ok().filter(|&i: &u64| i != 0);
                if ip == want {
                    return found;
                }
            }
        }
    }
    found
}

/// An address as /proc/net/tcp writes it: the bytes of each 32-bit word
/// in the host's order, in hex.
fn proc_hex(ip: IpAddr) -> String {
    let octets: Vec<u8> = match ip {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
    };
    octets
        .chunks(4)
        .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
        .collect()
}

/// The process one of whose descriptors is socket `inode`.
fn owner(inode: u64) -> Option<u32> {
    let target = format!("socket:[{inode}]");
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == target.as_str()) {
                return Some(pid);
            }
        }
    }
    None
}

/// The CPUs the calling thread may run on (its affinity), from
/// `/proc/thread-self/status`; empty when /proc does not say.
pub fn allowed_cpus() -> Vec<usize> {
    std::fs::read_to_string("/proc/thread-self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|l| parse_cpu_list(l.trim()))
        })
        .unwrap_or_default()
}

/// A CPU list as the kernel writes one: `0-3,6,8-9`.
pub fn parse_cpu_list(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<usize>().ok()),
        }
    }
    out
}

/// The `processor` field (the 39th) of a `/proc/PID/stat` line; the
/// command name in parentheses may hold spaces, so fields count from its
/// closing parenthesis.
fn last_cpu(stat: &str) -> Option<usize> {
    after_command(stat)?.split_whitespace().nth(36)?.parse().ok()
}

/// A /proc/PID/stat line's fields after the command (which is in
/// parentheses and may hold spaces and parentheses itself).
fn after_command(stat: &str) -> Option<&str> {
    Some(&stat[stat.rfind(')')? + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_and_stat_lines_parse() {
        assert_eq!(parse_cpu_list("0-3,6,8-9"), vec![0, 1, 2, 3, 6, 8, 9]);
        assert_eq!(parse_cpu_list("1"), vec![1]);
        let stat = "42 (a b) S 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0 \
                    18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(last_cpu(stat), Some(1));
        let busy = "42 (a) b) R 1 42 42 0 -1 4194560 0 0 0 0 250 31 0 0 20 0 1 0 9 0 0";
        assert_eq!(cpu_ticks(busy), Some(281));
        let me = usage(std::process::id()).expect("this process's own usage");
        assert!(me.peak_rss_kib > 0);
    }

    /// A socket this test listens on is found, with this process's id and
    /// the CPUs it may run on.
    #[test]
    fn this_process_listening_is_found() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let found = listener(l.local_addr().unwrap()).expect("found in /proc");
        assert_eq!(found.pid, std::process::id());
        assert!(!found.cpus.is_empty());
        let w = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let port = w.local_addr().unwrap().port();
        let found = listener(SocketAddr::from(([127, 0, 0, 1], port))).expect("the wildcard listener");
        assert_eq!(found.pid, std::process::id());
    }
}
