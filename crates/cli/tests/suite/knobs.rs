//! Real-time knobs (the UDP echo write-up's `nice`/`chrt` experiment): read
//! back from the kernel while the test runs (/proc, not our own flags),
//! recorded in the document, refused in one line when the process may not
//! use them, and compared as suite variants.

use super::{json_of, run, stackmeter, stderr, Server};
use serde_json::Value;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// (policy, rt_priority) of thread `tid` of process `pid`, from /proc:
/// policy 0 other, 1 fifo, 2 rr.
pub(crate) fn sched_of(pid: u32, tid: u32) -> Option<(u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    // Fields after the command name, which may hold spaces: field 3 first.
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some((rest.get(38)?.parse().ok()?, rest.get(37)?.parse().ok()?))
}

/// Every thread of `pid` with its name and scheduling.
pub(crate) fn threads(pid: u32) -> Vec<(String, u32, u32)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let tid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let name = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
        let (policy, prio) = sched_of(pid, tid)?;
        Some((name.trim().to_string(), policy, prio))
    })
    .collect()
}

fn locked_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map(|s| stackmeter_sys::knobs::status_kib(&s, "VmLck:"))
        .unwrap_or(0)
}

#[test]
fn client_knobs_are_in_force_while_the_test_runs_and_recorded() {
    if super::is_root() {
        // About 3 s of scheduled pings, watched from outside while they run.
        let child = stackmeter()
            .args(["ping", "-c", "3000", "--interval-us", "1000", "--no-store", "--json"])
            .args(["--priority", "fifo:10", "--mlock", "--busy-poll", "25"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = None;
        while Instant::now() < deadline {
            // The measuring thread is the main thread (tid = pid).
            // Once the knobs are in force and the embedded responder's
            // threads are listed (a loaded machine may show the first
            // before the second).
            if let Some((1, 10)) = sched_of(pid, pid) {
                let now = threads(pid);
                if now.iter().any(|t| t.0.starts_with("stackmeter-")) {
                    seen = Some((now, locked_kib(pid)));
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let (threads, locked) = seen.expect("the measuring thread ran at SCHED_FIFO 10");
        assert!(locked > 0, "memory locked while the test ran");
        // The embedded responder's threads started before the knobs
        // applied, so they keep the default policy.
        let responder: Vec<_> = threads.iter().filter(|t| t.0.starts_with("stackmeter-")).collect();
        assert!(!responder.is_empty(), "{threads:?}");
        assert!(responder.iter().all(|t| t.1 == 0), "{threads:?}");
        let v = json_of(&out);
        let k = &v["knobs"];
        assert_eq!(k["requested"]["priority"], "fifo:10");
        assert_eq!(k["requested"]["mlock"], true);
        assert_eq!(k["client"]["policy"], "fifo");
        assert_eq!(k["client"]["rt_priority"], 10);
        assert!(k["client"]["locked_kib"].as_u64().unwrap() > 0);
        assert_eq!(k["client"]["busy_poll_us"], 25, "read back from the measuring socket");
    }
    // Unprivileged or not, a default run records the default in force.
    let out = run(&["ping", "-c", "50", "--no-store", "--json"]);
    let v = json_of(&out);
    assert_eq!(v["knobs"]["client"]["policy"], "other");
    assert_eq!(v["knobs"]["requested"]["mlock"], false);
    // And text names knobs only when some were asked for.
    let out = run(&["ping", "-c", "50", "--no-store", "--priority", "nice:3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "client scheduling: asked nice:3; the measuring thread ran at normal priority (SCHED_OTHER), nice 3"
        ),
        "{text}"
    );
}

/// Runs `stackmeter ARGS` without CAP_SYS_NICE and CAP_IPC_LOCK, with a
/// memory-lock limit of 64 KiB and no real-time priority allowed.
fn unprivileged(args: &[&str]) -> std::process::Output {
    super::sandbox(&mut std::process::Command::new("setpriv"))
        .args([
            "--bounding-set=-sys_nice,-ipc_lock,-net_admin",
            "--inh-caps=-sys_nice,-ipc_lock,-net_admin",
        ])
        .args(["prlimit", "--memlock=65536:65536", "--rtprio=0:0", "--nice=0:0"])
        .arg(super::BIN)
        .args(args)
        .output()
        .expect("setpriv and prlimit run (util-linux)")
}

#[test]
fn knobs_the_process_may_not_use_are_refused_in_one_line() {
    if !super::is_root() {
        return; // setpriv can only take away what root has
    }
    for (flag, value, says) in [
        ("--priority", Some("rr:50"), "--priority rr:50: not permitted: run as root, or give the process CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 50"),
        ("--priority", Some("nice:-20"), "--priority nice:-20: not permitted"),
        ("--mlock", None, "--mlock: cannot lock this process's memory"),
    ] {
        let mut args = vec!["ping", "-c", "10", "--no-store", flag];
        args.extend(value);
        let out = unprivileged(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{flag}: {err}");
        assert!(err.contains(says), "{flag}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(out.stdout.is_empty(), "nothing measured: {}", String::from_utf8_lossy(&out.stdout));
        // serve refuses the same way, before it listens.
        let mut args = vec!["serve", "--listen", "127.0.0.1:0", flag];
        args.extend(value);
        let out = unprivileged(&args);
        assert_ne!(out.status.code(), Some(0));
        assert!(stderr(&out).contains(says), "serve {flag}: {}", stderr(&out));
    }
}

#[test]
fn serve_runs_every_thread_at_the_priority_asked() {
    if !super::is_root() {
        return;
    }
    let srv = Server::start(&["--priority", "rr:5", "--busy-poll", "20"]);
    // A session thread too, started after the knobs applied.
    let out = run(&["rr", &srv.target(), "--sizes", "1:1", "-n", "20", "--no-store"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ts = threads(srv.child.id());
    assert!(ts.len() >= 3, "{ts:?}");
    assert!(ts.iter().all(|t| (t.1, t.2) == (2, 5)), "{ts:?}");
}

#[test]
fn udp_echo_rt_plan_compares_client_priorities_as_variants() {
    if !super::is_root() {
        return;
    }
    let out = run(&[
        "suite",
        "udp-echo-rt",
        "--quick",
        "--repeat",
        "2",
        "--no-store",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json_of(&out);
    let labels: Vec<&str> = v["suite"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["default", "nice-20", "rt"]);
    assert_eq!(v["suite"]["targets"][2]["knobs"]["priority"], "rr:99");
    let cmp = v["comparisons"].as_array().unwrap();
    assert_eq!(cmp.len(), 2, "each variant against the default");
    // One responder measured three ways.
    let addrs: Vec<&Value> = v["suite"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["address"])
        .collect();
    assert!(addrs.windows(2).all(|w| w[0] == w[1]), "{addrs:?}");

    // The same from flags, against one given target.
    let srv = Server::start(&[]);
    let target = format!("here={}", srv.target());
    let out = run(&[
        "suite",
        "udp-echo",
        "--quick",
        "--repeat",
        "2",
        "--no-store",
        "--json",
        "--target",
        &target,
        "--variant",
        "plain",
        "--variant",
        "fifo,priority=fifo:20,busy-poll=10",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json_of(&out);
    // One target: the variants' names are the labels.
    assert_eq!(v["suite"]["targets"][1]["label"], "fifo");
    assert_eq!(v["suite"]["targets"][1]["knobs"]["busy_poll_us"], 10);
    // Variants are checked before anything runs.
    for (args, says) in [
        (vec!["--variant", "only"], "one variant compares nothing"),
        (vec!["--variant", "a", "--variant", "a"], "two variants named 'a'"),
        (
            vec!["--variant", "a", "--variant", "b,priority=fast"],
            "--variant 'b,priority=fast': priority 'fast': expected",
        ),
        (vec!["--variant", "a", "--variant", "b,turbo"], "unknown field `turbo`"),
    ] {
        let mut all = vec!["suite", "udp-echo", "--quick", "--no-store", "--target", &target];
        all.extend(args);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
}
