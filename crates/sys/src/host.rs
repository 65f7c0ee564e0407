//! Where a measurement ran: host name, kernel, CPU model and count, so
//! every result says what machine it came from.

#![allow(unsafe_code)] // This module wraps C library calls.

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
    let cpus = std::thread::available_parallelism()
        .map(std::num::NonZero::get)
        .unwrap_or(1);
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
    fn host_is_described() {
        let h = super::host();
        assert!(h.kernel.starts_with("Linux"));
        assert!(h.cpus >= 1);
    }
}
