//! `stackmeter serve`: start the responder and keep the process alive.

use crate::args::ServeArgs;
use crate::fail;
use stackmeter_responder::{Config, Log, ObjectSource};
use std::net::SocketAddr;
use std::time::Duration;

pub fn run(a: ServeArgs) -> i32 {
    let port = stackmeter_proto::DEFAULT_PORT;
    let defaults = a.listen.is_empty();
    let listen = if defaults {
        vec![
            SocketAddr::from(([0, 0, 0, 0], port)),
            SocketAddr::from(([0u16; 8], port)),
        ]
    } else {
        a.listen
    };
    if let Some(cpu) = a.affinity {
        // Checked here so a bad CPU is a usage error, not a log line.
        if let Err(e) = stackmeter_sys::pin_current_thread(cpu) {
            return fail(2, format!("--affinity {cpu}: {e}"));
        }
    }
    let mut cfg = Config {
        listen: listen.clone(),
        max_sessions: a.max_sessions,
        max_msg: a.max_msg,
        header_timeout: Duration::from_millis(a.header_timeout_ms),
        idle_timeout: Duration::from_millis(a.idle_timeout_ms),
        cpu: a.affinity,
        log: if a.quiet { Log::Quiet } else { Log::Stderr },
        objects: match a.objects_dir {
            Some(d) => ObjectSource::Dir(d),
            None => ObjectSource::Synthetic(a.objects.0),
        },
    };
    crate::load::raise_fd_limit(cfg.log, cfg.max_sessions);
    let started = match stackmeter_responder::start(cfg.clone()) {
        Ok(r) => Ok(r),
        // A host without IPv6 still serves IPv4 on the default addresses.
        Err(e) if defaults => {
            cfg.log.line(format_args!("warning: {e}; serving IPv4 only"));
            cfg.listen.truncate(1);
            stackmeter_responder::start(cfg)
        }
        Err(e) => Err(e),
    };
    match started {
        Ok(_responder) => loop {
            std::thread::park();
        },
        Err(e) => fail(1, e),
    }
}
