//! Real-time knobs on the measuring thread: checked, applied before a
//! test, read back from the kernel when it ends (the document records what
//! was in force), and undone afterwards, so a suite can run variants of
//! one target with different knobs side by side. Refusals are one line
//! naming the flag and what the process lacks.

use crate::error::Error;
use stackmeter_results::{KnobRequest, KnobState};
use stackmeter_sys::knobs::{self, Priority};

/// The request's priority, parsed.
pub fn priority(req: &KnobRequest) -> Result<Option<Priority>, Error> {
    req.priority
        .as_deref()
        .map(|p| Priority::parse(p).map_err(|e| Error::flag(format!("--priority {e}"))))
        .transpose()
}

/// What [`apply`] changed, to undo.
#[derive(Debug, Default)]
#[must_use = "undo it after the test"]
pub struct Applied {
    priority: bool,
    mlock: bool,
    busy_poll: bool,
}

/// Applies `req` to the calling thread (priority; threads it starts
/// later inherit it), the process (mlock) and the sockets the client opens
/// from now on (busy poll). On error nothing stays applied.
pub fn apply(req: &KnobRequest) -> Result<Applied, Error> {
    let mut done = Applied::default();
    match apply_into(req, &mut done) {
        Ok(()) => Ok(done),
        Err(e) => {
            undo(done);
            Err(e)
        }
    }
}

fn apply_into(req: &KnobRequest, done: &mut Applied) -> Result<(), Error> {
    if let Some(p) = priority(req)? {
        knobs::set_priority(p).map_err(|e| refused_priority(p, &e))?;
        done.priority = true;
    }
    if req.mlock {
        knobs::lock_memory().map_err(|e| {
            let limit = knobs::memlock_limit_kib()
                .map(|k| format!("RLIMIT_MEMLOCK is {k} KiB: run as root, or raise it with ulimit -l"))
                .unwrap_or_else(|| "run as root".into());
            Error::Local(format!("--mlock: cannot lock this process's memory: {e} ({limit})"))
        })?;
        done.mlock = true;
    }
    if let Some(us) = req.busy_poll_us.filter(|&us| us > 0) {
        // Tried on a scratch socket first, so a refusal stops the command
        // before it measures rather than inside the test.
        let probe = std::net::UdpSocket::bind("127.0.0.1:0")
            .map_err(|e| Error::Local(format!("--busy-poll: cannot open a socket: {e}")))?;
        knobs::set_busy_poll(std::os::fd::AsRawFd::as_raw_fd(&probe), us).map_err(|e| {
            let why = match e.kind() {
                std::io::ErrorKind::PermissionDenied => {
                    "not permitted above net.core.busy_read without CAP_NET_ADMIN: run as root".to_string()
                }
                _ => e.to_string(),
            };
            Error::Local(format!("--busy-poll {us}: {why}"))
        })?;
        stackmeter_client::tune::set_busy_poll(Some(us));
        done.busy_poll = true;
    }
    Ok(())
}

fn refused_priority(p: Priority, e: &std::io::Error) -> Error {
    let need = match p {
        Priority::Fifo(n) | Priority::Rr(n) => format!("CAP_SYS_NICE or an RLIMIT_RTPRIO of at least {n}"),
        Priority::Nice(n) => format!("CAP_SYS_NICE or an RLIMIT_NICE of at least {}", 20 - n as i32),
    };
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => Error::Local(format!(
            "--priority {p}: not permitted: run as root, or give the process {need}"
        )),
        _ => Error::Local(format!("--priority {p}: {e}")),
    }
}

/// Puts back what [`apply`] changed.
pub fn undo(a: Applied) {
    if a.priority {
        let _ = knobs::reset_priority();
    }
    if a.mlock {
        let _ = knobs::unlock_memory();
    }
    if a.busy_poll {
        stackmeter_client::tune::set_busy_poll(None);
    }
}

/// The knobs in force on the calling thread, as the kernel reports them.
pub fn in_force() -> KnobState {
    let s = knobs::sched();
    KnobState {
        policy: s.policy.into(),
        rt_priority: s.rt_priority,
        nice: s.nice,
        locked_kib: knobs::locked_kib(),
        busy_poll_us: stackmeter_client::tune::busy_poll_seen(),
    }
}

/// Checks that `req` can be applied here, applying and undoing it once
/// (so a refusal comes before any measuring).
pub fn check(req: &KnobRequest) -> Result<(), Error> {
    undo(apply(req)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_priority_names_the_flag() {
        let req = KnobRequest {
            priority: Some("fifo:0".into()),
            ..KnobRequest::default()
        };
        let e = check(&req).unwrap_err().to_string();
        assert!(e.starts_with("--priority 'fifo:0': expected"), "{e}");
    }

    #[test]
    fn a_lower_priority_applies_reads_back_and_is_undone() {
        std::thread::spawn(|| {
            let req = KnobRequest {
                priority: Some("nice:3".into()),
                ..KnobRequest::default()
            };
            let a = apply(&req).unwrap();
            let s = in_force();
            assert_eq!((s.policy.as_str(), s.nice), ("other", 3));
            undo(a);
            // Lowering the nice value back needs privilege; as root it is 0 again.
            if stackmeter_sys::uid() == 0 {
                assert_eq!(in_force().nice, 0);
            }
        })
        .join()
        .unwrap();
    }
}
