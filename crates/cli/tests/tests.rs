//! End-to-end tests: the real `stackmeter` binary, the real responder
//! process, real sockets on loopback. All integration tests live in this
//! one binary (one link, not one per file); this file holds what they
//! share (a responder process, the sandboxed binary, the checks of a
//! document) and each test lives in a file named for its command or
//! area: `suite/rr.rs`, `suite/ping.rs`, `suite/serve.rs`, `suite/cli.rs`
//! (exit codes, man pages), `suite/lab.rs`, `store/history.rs`,
//! `store/compare.rs`, `store/suite.rs` and so on.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_stackmeter");

#[path = "suite/agent.rs"]
mod agent;
#[path = "suite/cli.rs"]
mod cli;
#[path = "suite/fleet.rs"]
mod fleet;
#[path = "suite/in_kernel.rs"]
mod in_kernel;
#[path = "suite/k8s.rs"]
mod k8s;
#[path = "suite/k8s_cluster.rs"]
mod k8s_cluster;
#[path = "suite/knobs.rs"]
mod knobs;
#[path = "suite/load.rs"]
mod load;
#[path = "suite/loss.rs"]
mod loss;
#[path = "suite/ping.rs"]
mod ping;
#[path = "suite/plain.rs"]
mod plain;
#[path = "suite/readme.rs"]
mod readme;
#[path = "suite/rr.rs"]
mod rr;
#[path = "suite/rrul.rs"]
mod rrul;
#[path = "suite/serve.rs"]
mod serve;
#[path = "suite/sessions.rs"]
mod sessions;
#[path = "store/mod.rs"]
mod store;
#[path = "suite/throughput.rs"]
mod throughput;
#[path = "suite/udp_burst.rs"]
mod udp_burst;

use stackmeter_store::testing::missing;

/// A `stackmeter serve` process on 127.0.0.1 with a kernel-chosen port; its
/// log lines are collected for assertions. Killed on drop.
struct Server {
    child: Child,
    addr: SocketAddr,
    log: mpsc::Receiver<String>,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        Self::start_on("127.0.0.1:0", extra)
    }

    fn start_on(listen: &str, extra: &[&str]) -> Server {
        let mut cmd = stackmeter();
        cmd.args(["serve", "--listen", listen]).args(extra);
        Self::spawn(cmd)
    }

    /// Starts `cmd` (a `stackmeter serve`, perhaps wrapped, or the C
    /// responder, which prints the same lines under its own name) and waits
    /// for the address it prints.
    fn spawn(mut cmd: Command) -> Server {
        let mut child = sandbox(&mut cmd)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("serve starts");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let addr = loop {
            let line = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("serve prints its address");
            if let Some((_, a)) = line.split_once(": listening on tcp ") {
                break a.parse().unwrap();
            }
        };
        Server { child, addr, log: rx }
    }

    fn target(&self) -> String {
        self.addr.to_string()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to 5 s for a log line containing every one of `parts`.
    fn expect_log(&self, parts: &[&str]) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut seen = Vec::new();
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match self.log.recv_timeout(left) {
                Ok(l) if parts.iter().all(|p| l.contains(p)) => return l,
                Ok(l) => seen.push(l),
                Err(_) => break,
            }
        }
        panic!("no log line with {parts:?}; saw {seen:?}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two namespaces joined by one veth pair (client 198.19.NET.1 on
/// `ifaces[0]`, server 198.19.NET.2 on `ifaces[1]`), named with `tag` and
/// this process's id so tests running at once do not meet. Removed on
/// drop (deleting a namespace deletes its end of the pair).
struct VethPair {
    names: [String; 2],
    ifaces: [String; 2],
}

impl VethPair {
    fn new(tag: &str, net: u8) -> Option<VethPair> {
        if netns_unusable().is_some() {
            return None;
        }
        let id = std::process::id() % 100_000;
        let v = VethPair {
            names: [format!("smt{tag}c{id}"), format!("smt{tag}s{id}")],
            ifaces: [format!("vt{tag}c{id}"), format!("vt{tag}s{id}")],
        };
        let [c, s] = &v.names;
        let [vc, vs] = &v.ifaces;
        let (ac, a_s) = (format!("198.19.{net}.1/24"), format!("198.19.{net}.2/24"));
        let steps: Vec<Vec<&str>> = vec![
            vec!["netns", "add", c],
            vec!["netns", "add", s],
            vec![
                "link", "add", vc, "netns", c, "type", "veth", "peer", "name", vs, "netns", s,
            ],
            vec!["-n", c, "addr", "add", &ac, "dev", vc],
            vec!["-n", s, "addr", "add", &a_s, "dev", vs],
            vec!["-n", c, "link", "set", vc, "up"],
            vec!["-n", s, "link", "set", vs, "up"],
            vec!["-n", c, "link", "set", "lo", "up"],
            vec!["-n", s, "link", "set", "lo", "up"],
        ];
        for st in steps {
            let out = Command::new("ip").args(&st).output().unwrap();
            assert!(out.status.success(), "ip {st:?}: {}", stderr(&out));
        }
        Some(v)
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "delete", n]).output();
        }
    }
}

/// The binary, storing into a results store of the test run (never the
/// user's own).
/// Whether the tests run as root (effective uid 0): namespaces, tbf,
/// real-time priorities.
fn is_root() -> bool {
    stackmeter_sys::uid() == 0
}

/// Why network namespaces cannot be used here, in the words of what
/// failed (not root; `ip netns` missing; a remount refused, as in a chroot
/// whose root is no mount point), or `None` when they can: a probe
/// namespace is made, used and removed once per test binary.
fn netns_unusable() -> Option<String> {
    static WHY: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    WHY.get_or_init(|| {
        if !is_root() {
            return Some("needs root (network namespaces, veth, tbf)".into());
        }
        let name = format!("smprobe{}", std::process::id());
        let run = |args: &[&str]| {
            Command::new("ip")
                .args(args)
                .output()
                .map_err(|e| format!("ip: {e}"))
                .and_then(|o| match o.status.success() {
                    true => Ok(()),
                    false => Err(format!(
                        "ip {}: {}",
                        args.join(" "),
                        String::from_utf8_lossy(&o.stderr).trim()
                    )),
                })
        };
        let why = run(&["netns", "add", &name])
            .and_then(|()| run(&["-n", &name, "link", "set", "lo", "up"]))
            .err();
        let _ = run(&["netns", "del", &name]);
        why.map(|w| format!("network namespaces do not work here: {w}"))
    })
    .clone()
}

/// `stackmeter TEST TARGET ARGS... --json`, started with its output piped
/// (several clients at once against one responder).
fn spawn_json(test: &str, target: &str, args: &[&str]) -> Child {
    stackmeter()
        .arg(test)
        .arg(target)
        .args(args)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn stackmeter() -> Command {
    let mut c = Command::new(BIN);
    sandbox(&mut c);
    c
}

/// Gives a command (stackmeter itself, or a wrapper that starts it: `ip
/// netns exec`, `unshare`, `script`) the tests' own HOME, data and config
/// folders and results store, so no test reads or writes the user's.
/// scripts/test checks that the user's store and stackmeter folders are
/// unchanged after the tests.
fn sandbox(c: &mut Command) -> &mut Command {
    let home = concat!(env!("CARGO_TARGET_TMPDIR"), "/home");
    c.env("HOME", home)
        .env(
            "XDG_DATA_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/home/.local/share"),
        )
        .env("XDG_CONFIG_HOME", concat!(env!("CARGO_TARGET_TMPDIR"), "/home/.config"))
        .env("STACKMETER_DB", TEST_DB)
}

/// The results store every test's measuring commands write to.
const TEST_DB: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/tests-results.db");

fn run(args: &[&str]) -> Output {
    stackmeter().args(args).output().expect("stackmeter runs")
}

/// stdout as JSON, checked against the JSON Schema of its kind (every
/// output of stackmeter has one: docs/schema/).
fn json_of(out: &Output) -> Value {
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    check_schema(&v);
    v
}

/// Validates `v` against the schema of its kind, told by its keys.
fn check_schema(v: &Value) {
    let name = if v.get("test").is_some() {
        "document"
    } else if v.get("sections").is_some() {
        "comparison"
    } else if v.get("suite").is_some() {
        "suite"
    } else if v.get("runs").is_some()
        && v.get("schema").is_some()
        && v["runs"]
            .as_array()
            .is_some_and(|r| r.iter().all(|x| x.get("key_figure").is_some()))
    {
        "runs"
    } else if v.get("series").is_some() && v.get("settings").is_some() {
        "history"
    } else if v.get("rows").is_some() && v.get("stop").is_some() {
        "decision"
    } else if v.get("rows").is_some() && v.get("run").is_some() {
        "percentiles"
    } else if v.get("interval").is_some() || v.get("trial").is_some() {
        "row"
    } else {
        return;
    };
    let schemas = stackmeter_results::schema::schemas();
    let (_, schema) = schemas.iter().find(|(n, _)| *n == name).unwrap();
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "output does not match the {name} schema: {errors:#?}"
    );
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// stderr without the placement warning a suite gives for local targets
/// it did not start and that may share a CPU (the tests' own `serve`
/// processes are not pinned, and the warning is right about them).
fn stderr_but_placement(out: &Output) -> String {
    stderr(out)
        .lines()
        .filter(|l| !l.starts_with("stackmeter: warning: placement:"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Checks the latency keys every summary must have, and their order.
fn check_latency(v: &Value, samples: u64) {
    for k in ["min", "mean", "p50", "p90", "p99", "p999", "max", "stddev"] {
        assert!(v[k].as_f64().is_some(), "missing {k} in {v}");
    }
    let f = |k: &str| v[k].as_f64().unwrap();
    assert!(f("min") > 0.0);
    assert!(f("min") <= f("p50") && f("p50") <= f("p90") && f("p90") <= f("p99"));
    assert!(f("p99") <= f("p999") && f("p999") <= f("max"));
    assert!(f("min") <= f("mean") && f("mean") <= f("max"));
    assert_eq!(v["count"].as_u64(), Some(samples));
}

/// A kernel-chosen port with nothing listening on it (TCP and UDP).
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn header(version: u8, mode: u8, req: u32, resp: u32) -> Vec<u8> {
    let mut h = b"SMTR".to_vec();
    h.extend([version, mode]);
    h.extend(16u16.to_be_bytes());
    h.extend(req.to_be_bytes());
    h.extend(resp.to_be_bytes());
    h
}

/// A TCP connection from `from` (port 0) to `to`, or `None` when the
/// connect fails (a full backlog may refuse some); every wait bounded.
fn connect_from(from: &str, to: SocketAddr) -> Option<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
    s.bind(&format!("{from}:0").parse::<SocketAddr>().unwrap().into())
        .ok()?;
    s.set_write_timeout(Some(Duration::from_secs(2))).ok()?;
    s.connect_timeout(&to.into(), Duration::from_secs(2)).ok()?;
    Some(s.into())
}

/// Reads a status record (and its reason) and then expects the close.
fn read_refusal(s: &mut TcpStream) -> (u8, u8, String) {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).expect("responder closes after the refusal");
    assert!(all.len() >= 8, "status record: {all:?}");
    assert_eq!(&all[..4], b"SMTR");
    let n = u16::from_be_bytes([all[6], all[7]]) as usize;
    assert_eq!(all.len(), 8 + n, "nothing after the reason");
    (all[4], all[5], String::from_utf8(all[8..].to_vec()).unwrap())
}

// The same client test set against the C99 responder (c-responder/).
#[path = "suite/c_responder.rs"]
mod c_responder;

// Authentication with a shared secret, both responders.
#[path = "suite/auth.rs"]
mod auth;

// Hostile clients: idle floods, junk, amplification, limits.
#[path = "suite/hostile.rs"]
mod hostile;

// Kernel timestamps: the round trip split (ping and rr --timestamps).
#[path = "suite/timestamps.rs"]
mod timestamps;

// `stackmeter lab` (root only).
#[path = "suite/lab.rs"]
mod lab;

// `stackmeter lab up embox linux-a9` and `lab up nuttx linux-virt`: an
// RTOS against Linux on one emulated board (root only).
#[path = "suite/lab_rtos.rs"]
mod lab_rtos;

// `stackmeter lab up solidframe asio-2010 asio`: the proxy write-up's race (root only).
#[path = "suite/lab_proxies.rs"]
mod lab_proxies;

/// The kernel's UDP counters (InDatagrams, OutDatagrams) from two
/// snapshots of /proc/net/snmp printed by a shell script.
fn udp_counter_deltas(text: &str) -> (i64, i64) {
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("Udp:")).collect();
    assert_eq!(lines.len(), 4, "two header+value pairs: {text}");
    let field = |header: &str, values: &str, name: &str| -> i64 {
        let i = header.split_whitespace().position(|h| h == name).unwrap();
        values.split_whitespace().nth(i).unwrap().parse().unwrap()
    };
    let d = |name| field(lines[2], lines[3], name) - field(lines[0], lines[1], name);
    (d("InDatagrams"), d("OutDatagrams"))
}

/// Runs `stackmeter ARGS --json` alone in a new network namespace and
/// returns its document with the kernel's UDP counter changes over the run
/// (InDatagrams, OutDatagrams); None (after a visible skip) without root.
fn in_private_netns(test: &str, args: &str) -> Option<(Value, i64, i64)> {
    let probe = Command::new("unshare").args(["-n", "true"]).output();
    if !matches!(probe, Ok(ref o) if o.status.success()) {
        crate::missing(test, "needs root and unshare(1)");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("stackmeter-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json_path = dir.join("out.json");
    let script = format!(
        "ip link set lo up && grep '^Udp:' /proc/net/snmp && '{BIN}' {args} --json > '{}' && grep '^Udp:' /proc/net/snmp",
        json_path.display()
    );
    let out = sandbox(&mut Command::new("unshare"))
        .args(["-n", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let (in_d, out_d) = udp_counter_deltas(&String::from_utf8_lossy(&out.stdout));
    Some((doc, in_d, out_d))
}

/// Runs stackmeter with `args`, sends it SIGINT once `ready` says so (it
/// sees the bytes of stdout so far), and returns its output.
fn interrupted(args: &[&str], ready: impl Fn(&str) -> bool) -> Output {
    let mut child = stackmeter()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("stackmeter runs");
    let mut out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            let _ = tx.send(String::from_utf8_lossy(&seen).into_owned());
        }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut printed = String::new();
    while !ready(&printed) {
        assert!(std::time::Instant::now() < deadline, "not ready within 30 s: {printed}");
        if let Ok(s) = rx.recv_timeout(Duration::from_millis(50)) {
            printed = s;
        }
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    while let Ok(s) = rx.recv_timeout(Duration::from_millis(500)) {
        printed = s;
    }
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    Output {
        status,
        stdout: printed.into_bytes(),
        stderr: err.into_bytes(),
    }
}
