//! `stackmeter serve`: the responder the engine starts from the flags
//! (`crate::flags::serve`), kept alive until the process is killed; with
//! `--in-kernel xdp` an XDP program beside it answers the UDP echo in the
//! kernel, with `--in-kernel sockmap` (or `--plain-echo`, its application
//! twin) a plain TCP echo replaces it. The in-kernel responders print
//! their counters when SIGINT or SIGTERM ends them; the kernel detaches
//! their programs however the process ends (stackmeter_bpf).

use crate::flags::serve::{start, InKernel, ServeArgs, XdpMode};
use crate::out::fail;
use stackmeter_proto::auth::Key;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub fn run(a: ServeArgs, secret: Option<Key>) -> i32 {
    match (a.in_kernel, a.plain_echo) {
        (Some(InKernel::Sockmap), _) | (None, true) => return echo(&a),
        (Some(InKernel::Xdp), _) => return xdp(a, secret),
        (None, false) => {}
    }
    match start(a, secret) {
        Ok(_responder) => loop {
            std::thread::park();
        },
        Err(e) => crate::out::error(e),
    }
}

/// The one address a plain echo listens on (default 0.0.0.0:24680).
fn echo_address(a: &ServeArgs) -> Result<std::net::SocketAddr, String> {
    match a.listen.as_slice() {
        [] => Ok(std::net::SocketAddr::from((
            [0, 0, 0, 0],
            stackmeter_proto::DEFAULT_PORT,
        ))),
        [one] => Ok(*one),
        _ => Err("a plain echo (--in-kernel sockmap, --plain-echo) listens on one --listen address".into()),
    }
}

/// Waits for SIGINT or SIGTERM.
fn until_interrupted() -> Result<(), String> {
    stackmeter_sys::interrupt::catch_interrupts().map_err(|e| format!("cannot catch SIGINT and SIGTERM: {e}"))?;
    while !stackmeter_sys::interrupt::interrupted() {
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// `--in-kernel sockmap` and `--plain-echo`: a plain TCP echo, in the
/// kernel or in the application.
fn echo(a: &ServeArgs) -> i32 {
    let addr = match echo_address(a) {
        Ok(x) => x,
        Err(e) => return fail(2, e),
    };
    let kernel = match a.in_kernel {
        Some(InKernel::Sockmap) => match stackmeter_bpf::sockmap::SockmapEcho::load() {
            Ok(k) => Some(Arc::new(k)),
            Err(e) => return fail(1, format!("--in-kernel sockmap: {e}")),
        },
        _ => None,
    };
    let listener = match std::net::TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) => return fail(1, format!("cannot listen on {addr}: {e}")),
    };
    let local = listener.local_addr().unwrap_or(addr);
    let how = if kernel.is_some() {
        "in the kernel (sockmap)"
    } else {
        "in the application"
    };
    eprintln!("stackmeter serve: plain TCP echo {how}: listening on tcp {local}");
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(stackmeter_responder::plain_echo::EchoCounts::default());
    let served = {
        let (stop, counts, kernel) = (Arc::clone(&stop), Arc::clone(&counts), kernel.clone());
        std::thread::spawn(move || match kernel {
            Some(k) => k.serve(listener, &stop).map_err(|e| e.to_string()),
            None => stackmeter_responder::plain_echo::serve(listener, &stop, &counts).map_err(|e| e.to_string()),
        })
    };
    let waited = until_interrupted();
    stop.store(true, Ordering::Relaxed);
    let ended = served.join().unwrap_or_else(|_| Err("the echo thread panicked".into()));
    match &kernel {
        Some(k) => match k.counters() {
            Ok(c) => eprintln!("stackmeter serve: in-kernel sockmap: {}", c.describe()),
            Err(e) => eprintln!("stackmeter serve: in-kernel sockmap: counters unreadable: {e}"),
        },
        None => eprintln!(
            "stackmeter serve: plain echo: {} connection(s); application echoed {} B",
            counts.connections.load(Ordering::Relaxed),
            counts.bytes.load(Ordering::Relaxed)
        ),
    }
    match (waited, ended) {
        (Err(e), _) | (_, Err(e)) => fail(1, e),
        _ => 0,
    }
}

/// `--in-kernel xdp`: the responder as ever, and the XDP program on the
/// interface answering its UDP echo in the kernel.
fn xdp(a: ServeArgs, secret: Option<Key>) -> i32 {
    let Some(interface) = a.interface.clone() else {
        return fail(
            2,
            "--in-kernel xdp: give the --interface it answers on (lo, a veth, a NIC)",
        );
    };
    let port = a
        .listen
        .first()
        .map_or(stackmeter_proto::DEFAULT_PORT, std::net::SocketAddr::port);
    if port == 0 {
        return fail(
            2,
            "--in-kernel xdp: the XDP program needs a fixed port: --listen ADDR:PORT with PORT above 0",
        );
    }
    let mode = match a.xdp_mode {
        XdpMode::Generic => stackmeter_bpf::xdp::Mode::Generic,
        XdpMode::Native => stackmeter_bpf::xdp::Mode::Native,
    };
    let plain = a.xdp_plain;
    if let Err(e) = stackmeter_bpf::xdp::XdpEcho::check() {
        return fail(1, format!("--in-kernel xdp: {e}"));
    }
    let _responder = match start(a, secret) {
        Ok(r) => r,
        Err(e) => return crate::out::error(e),
    };
    let echo = match stackmeter_bpf::xdp::XdpEcho::attach(&interface, port, plain, mode) {
        Ok(x) => x,
        Err(e) => return fail(1, format!("--in-kernel xdp: {e}")),
    };
    eprintln!("stackmeter serve: XDP answers UDP port {port} on {interface} in the kernel");
    let waited = until_interrupted();
    match echo.counters() {
        Ok(c) => eprintln!("stackmeter serve: in-kernel xdp on {interface}: {}", c.describe()),
        Err(e) => eprintln!("stackmeter serve: in-kernel xdp: counters unreadable: {e}"),
    }
    match waited {
        Err(e) => fail(1, e),
        Ok(()) => 0,
    }
}
