//! End-to-end tests: the real `stackmeter` binary, the real responder
//! process, real sockets on loopback. All integration tests live in this
//! one binary.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_stackmeter");

#[path = "suite/agent.rs"]
mod agent;
#[path = "suite/fleet.rs"]
mod fleet;
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
#[path = "suite/plain.rs"]
mod plain;
#[path = "suite/readme.rs"]
mod readme;
#[path = "suite/rrul.rs"]
mod rrul;
#[path = "suite/sessions.rs"]
mod sessions;
#[path = "store/mod.rs"]
mod store;
#[path = "suite/throughput.rs"]
mod throughput;

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

#[test]
fn rr_full_grid_against_serve() {
    let srv = Server::start(&[]);
    let sizes = "1:1K,1:10K,1:100K,1:1M,1K:1,10K:1,100K:1,1M:1,1M:1M";
    let out = run(&[
        "rr",
        &srv.target(),
        "--sizes",
        sizes,
        "-n",
        "20",
        "--warmup",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["schema"], "stackmeter/1");
    assert_eq!(doc["test"], "rr");
    assert_eq!(doc["complete"], true);
    assert_eq!(doc["target"]["embedded"], false);
    assert_eq!(doc["params"]["iterations"], 20);
    let rows = doc["results"].as_array().unwrap();
    let want = [
        (1, 1024),
        (1, 10240),
        (1, 102400),
        (1, 1 << 20),
        (1024, 1),
        (10240, 1),
        (102400, 1),
        (1 << 20, 1),
        (1 << 20, 1 << 20),
    ];
    assert_eq!(rows.len(), want.len());
    for (row, (req, resp)) in rows.iter().zip(want) {
        assert_eq!(row["req_bytes"], req);
        assert_eq!(row["resp_bytes"], resp);
        assert_eq!(row["samples"], 20);
        assert_eq!(row["warmup"], 2);
        check_latency(&row["rtt_us"], 20);
        assert!(row["tps"].as_f64().unwrap() > 0.0);
    }
    // Moving 1 MiB both ways cannot be faster than moving 1 byte both ways.
    let p50 = |i: usize| rows[i]["rtt_us"]["p50"].as_f64().unwrap();
    assert!(p50(8) > p50(0), "1M:1M {} vs 1:1K {}", p50(8), p50(0));
}

#[test]
fn rr_text_table_has_one_row_per_size() {
    let out = run(&["rr", "--sizes", "1:1K,1K:1", "-n", "5", "--warmup", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(t.contains("embedded responder"), "{t}");
    assert!(
        t.lines().any(|l| l.trim_start().starts_with("1 B     1 KiB        5")),
        "{t}"
    );
    assert!(
        t.lines()
            .any(|l| l.trim_start().starts_with("1 KiB       1 B        5")),
        "{t}"
    );
    assert!(t.contains("p99.9 is the largest sample"), "tail caveat: {t}");
}

#[test]
fn crr_times_connect_and_transaction() {
    let srv = Server::start(&[]);
    let out = run(&[
        "crr",
        &srv.target(),
        "-n",
        "200",
        "--warmup",
        "5",
        "--size",
        "64:1K",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["test"], "crr");
    let r = &doc["results"][0];
    assert_eq!(r["samples"], 200);
    assert_eq!(
        (r["req_bytes"].as_u64(), r["resp_bytes"].as_u64()),
        (Some(64), Some(1024))
    );
    check_latency(&r["connect_us"], 200);
    check_latency(&r["transaction_us"], 200);
    let connect = r["connect_us"]["p50"].as_f64().unwrap();
    let whole = r["transaction_us"]["p50"].as_f64().unwrap();
    assert!(connect < whole, "connect {connect} within transaction {whole}");
    assert!(r["cps"].as_f64().unwrap() > 0.0);
}

#[test]
fn ping_checks_every_payload() {
    let srv = Server::start(&[]);
    for size in ["64", "1400"] {
        let out = run(&[
            "ping",
            &srv.target(),
            "--size",
            size,
            "-c",
            "500",
            "--slow-us",
            "1",
            "--json",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let r = &json_of(&out)["results"][0];
        assert_eq!(r["bytes"].as_u64(), size.parse().ok());
        assert_eq!((r["sent"].as_u64(), r["received"].as_u64()), (Some(500), Some(500)));
        for k in ["lost", "late", "duplicates", "reordered", "mismatched"] {
            assert_eq!(r[k], 0, "{k}");
        }
        check_latency(&r["rtt_us"], 500);
        check_latency(&r["server_us"], 500);
        // A 1 us threshold makes every answer slow; ten are listed.
        assert_eq!(r["slow"], 500);
        assert_eq!(r["slow_first"].as_array().unwrap().len(), 10);
        assert_eq!(r["slow_first"][0]["seq"], 0);
    }
}

#[test]
fn ping_on_a_schedule() {
    let out = run(&["ping", "-c", "200", "--interval-us", "500", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &json_of(&out)["results"][0];
    assert_eq!(r["received"], 200);
    // 200 sends 500 us apart take at least 99.5 ms: about 2000/s at most,
    // unless the client fell behind (a loaded machine), which it must then
    // report. Back-to-back sending would show ~10x the rate and no lag.
    let lag = r["max_send_lag_us"].as_f64().unwrap();
    assert!(r["pps"].as_f64().unwrap() < 2100.0 || lag > 500.0, "{r}");
}

#[test]
fn garbage_header_gets_bad_magic_and_a_log_line() {
    let srv = Server::start(&[]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (version, code, reason) = read_refusal(&mut s);
    assert_eq!((version, code), (1, 1));
    assert!(reason.contains("bad magic"), "{reason}");
    srv.expect_log(&["refused", "bad magic"]);
}

#[test]
fn other_version_is_refused_by_name() {
    let srv = Server::start(&[]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(&header(2, 1, 1, 1)).unwrap();
    let (version, code, reason) = read_refusal(&mut s);
    assert_eq!((version, code), (1, 2));
    assert!(reason.contains("version 2 not supported"), "{reason}");
}

#[test]
fn oversize_is_refused_and_the_client_says_so() {
    let srv = Server::start(&["--max-msg", "1M"]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(&header(1, 1, 100_000_000, 1)).unwrap();
    let (_, code, reason) = read_refusal(&mut s);
    assert_eq!(code, 5);
    assert!(reason.contains("100000000") && reason.contains("1048576"), "{reason}");
    srv.expect_log(&["refused", "too large"]);

    let out = run(&["rr", &srv.target(), "--sizes", "1:2M", "-n", "2"]);
    assert_eq!(out.status.code(), Some(4));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(&srv.target()) && err.contains("too large"), "{err}");

    // crr sends header and request together, so the refused connection
    // still holds unread bytes: the responder must drain them before it
    // closes, or the reset can destroy the refusal. Repeat to catch a race.
    for _ in 0..20 {
        let out = run(&["crr", &srv.target(), "--size", "1K:2M", "-n", "1", "--warmup", "0"]);
        assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    }
}

#[test]
fn silent_connection_times_out_with_a_status() {
    let srv = Server::start(&["--header-timeout-ms", "300"]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(b"SMT").unwrap(); // a partial header, then silence
    let (_, code, _) = read_refusal(&mut s);
    assert_eq!(code, 7);
    srv.expect_log(&["header timeout"]);
}

#[test]
fn busy_responder_refuses_beyond_max_sessions() {
    let srv = Server::start(&["--max-sessions", "1"]);
    let mut first = TcpStream::connect(srv.addr).unwrap();
    first.write_all(&header(1, 1, 1, 1)).unwrap();
    let mut acc = [0u8; 8];
    first.read_exact(&mut acc).unwrap();
    assert_eq!(acc[5], 0, "first session accepted");
    let mut second = TcpStream::connect(srv.addr).unwrap();
    let (_, code, _) = read_refusal(&mut second);
    assert_eq!(code, 6);
    drop(first);
    // The slot is freed when the first client goes.
    let mut ok = false;
    for _ in 0..50 {
        if run(&["rr", &srv.target(), "--sizes", "1:1", "-n", "3"])
            .status
            .success()
        {
            ok = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ok, "session slot freed after the client left");
}

#[test]
fn client_vanishing_mid_reply_frees_its_session() {
    let srv = Server::start(&["--max-sessions", "1"]);
    {
        let mut s = TcpStream::connect(srv.addr).unwrap();
        s.write_all(&header(1, 1, 1, 64 << 20)).unwrap();
        let mut acc = [0u8; 8];
        s.read_exact(&mut acc).unwrap();
        s.write_all(b"x").unwrap();
        let mut some = [0u8; 4096];
        s.read_exact(&mut some).unwrap();
    } // closed with 64 MiB still to come
    srv.expect_log(&["vanished mid-response"]);
    let out = run(&["rr", &srv.target(), "--sizes", "1:1K", "-n", "5", "--json"]);
    assert!(
        out.status.success(),
        "the only session slot is free again: {}",
        stderr(&out)
    );
}

#[test]
fn responder_gone_mid_test_is_exit_5_with_partial_rows() {
    let mut srv = Server::start(&[]);
    let target = srv.target();
    let client = stackmeter()
        .args([
            "rr", &target, "--sizes", "1:1,1:1M", "-n", "1000000", "--warmup", "0", "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let the client connect and get going (it runs for a minute or more).
    std::thread::sleep(Duration::from_millis(1500));
    srv.child.kill().unwrap();
    let out = client.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&target), "{err}");
    let doc = json_of(&out);
    assert_eq!(doc["complete"], false);
    assert!(doc["error"].as_str().unwrap().contains(&target));
}

#[test]
fn closed_port_is_exit_3_naming_the_target() {
    let port = closed_port();
    let target = format!("127.0.0.1:{port}");
    for test in ["rr", "crr", "ping"] {
        let out = run(&[test, &target, "--timeout-ms", "2000"]);
        assert_eq!(out.status.code(), Some(3), "{test}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{test}: {err}");
        assert!(
            err.starts_with("stackmeter: error:") && err.contains(&target),
            "{test}: {err}"
        );
        assert!(err.contains("refused") || err.contains("unreachable"), "{test}: {err}");
    }
    // Nothing measured: no empty table before the error, for a test that
    // prints its table as it goes too.
    for args in [vec!["rr", &target], vec!["stream", &target, "--time", "1"]] {
        let test = args[0];
        let out = run(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        // The first line, perhaps the knobs in force, then why.
        assert!(text.lines().count() <= 3, "{test}: {text}");
        assert!(
            text.lines()
                .last()
                .unwrap()
                .starts_with("nothing measured: cannot reach"),
            "{test}: {text}"
        );
        assert!(
            !text.contains("samples") && !text.contains("interval"),
            "{test}: {text}"
        );
    }
}

#[test]
fn bad_command_lines_are_exit_2_naming_the_item() {
    let out = run(&["rr", "--sizes", "1:1K,1:1Q"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("'1:1Q'"), "{}", stderr(&out));
    let out = run(&["ping", "--size", "20"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["rr", "no.such.host.invalid"]);
    assert_eq!(out.status.code(), Some(3));
    // A port that is not one is a typo on the command line, not a target
    // that cannot be reached.
    for bad in ["127.0.0.1:99999", "[::1]:0", "localhost:http"] {
        let out = run(&["rr", bad, "--no-store"]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert!(stderr(&out).contains("is not a port"), "{}", stderr(&out));
    }
    assert!(stderr(&out).contains("no.such.host.invalid"));
    let out = run(&["rr", "--affinity", "4000", "--sizes", "1:1", "-n", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("CPU 4000"), "{}", stderr(&out));
}

#[test]
fn udp_rules_no_answer_to_foreign_or_short_and_no_amplification() {
    let srv = Server::start(&[]);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut buf = [0u8; 2048];
    for junk in [&b"hello"[..], &[0u8; 100][..]] {
        s.send(junk).unwrap();
        assert!(s.recv(&mut buf).is_err(), "no answer to junk");
    }
    // A version 2 request of 1000 bytes is refused in 40.
    let mut d = vec![0u8; 1000];
    d[..4].copy_from_slice(b"SMTU");
    d[4] = 2;
    d[5] = 1;
    s.send(&d).unwrap();
    let n = s.recv(&mut buf).expect("refusal");
    assert_eq!(n, 40);
    assert_eq!((buf[4], buf[5], buf[6]), (1, 3, 2));
    // A reply is never answered (no loops between two responders).
    d[4] = 1;
    d[5] = 2;
    s.send(&d).unwrap();
    assert!(s.recv(&mut buf).is_err());
}

#[test]
fn ipv6_loopback_serves_tcp_and_udp() {
    if UdpSocket::bind("[::1]:0").is_err() {
        crate::missing("ipv6_loopback_serves_tcp_and_udp", "no IPv6 loopback on this host");
        return;
    }
    let srv = Server::start_on("[::1]:0", &[]);
    assert!(srv.addr.is_ipv6());
    let out = run(&["rr", &srv.target(), "--sizes", "64:64", "-n", "10", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&["ping", &srv.target(), "-c", "10", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_of(&out)["results"][0]["received"], 10);
}

#[test]
fn embedded_default_and_placement_are_recorded() {
    let out = run(&[
        "rr",
        "--sizes",
        "1:1",
        "-n",
        "10",
        "--affinity",
        "0",
        "--responder-affinity",
        "0",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["target"]["embedded"], true);
    assert_eq!(doc["placement"]["client_cpu"], 0);
    assert_eq!(doc["placement"]["responder_cpu"], 0);
    assert!(doc["env"]["kernel"].as_str().unwrap().starts_with("Linux"));
    assert_eq!(doc["env"]["command"][1], "rr");
    let out = run(&["rr", "127.0.0.1:1", "--responder-affinity", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn json_documents_read_back_into_the_typed_value() {
    for args in [
        &["rr", "--sizes", "1:1", "-n", "5", "--json"][..],
        &["crr", "-n", "5", "--json"],
        &["ping", "-c", "5", "--json"],
    ] {
        let out = run(args);
        assert!(out.status.success());
        let doc: stackmeter_results::Document = serde_json::from_slice(&out.stdout).expect("round trip");
        assert_eq!(doc.body.test_name(), args[0]);
        // Rendering the value read back gives the same JSON again.
        let again: Value = serde_json::from_str(&stackmeter_render::json::pretty(&doc)).unwrap();
        assert_eq!(again, json_of(&out));
    }
}

#[test]
fn many_clients_at_once_each_get_their_own_session() {
    let srv = Server::start(&[]);
    let target = srv.target();
    let clients: Vec<_> = (0..12)
        .map(|i| {
            let (test, args): (&str, Vec<&str>) = match i % 3 {
                0 => ("rr", vec!["--sizes", "1:64K,64K:1", "-n", "200"]),
                1 => ("crr", vec!["-n", "100"]),
                _ => ("ping", vec!["-c", "300"]),
            };
            spawn_json(test, &target, &args)
        })
        .collect();
    for c in clients {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let doc = json_of(&out);
        assert_eq!(doc["complete"], true);
        if doc["test"] == "ping" {
            assert_eq!(doc["results"][0]["mismatched"], 0);
        }
    }
}

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

#[test]
fn ping_counts_agree_with_the_kernels_udp_counters() {
    // A private network namespace, so no other test's traffic is counted.
    let Some((doc, in_d, out_d)) = in_private_netns("ping-snmp", "ping -c 1000 --warmup 10") else {
        return;
    };
    let r = &doc["results"][0];
    let (sent, received) = (r["sent"].as_i64().unwrap(), r["received"].as_i64().unwrap());
    let warmup = doc["params"]["warmup"].as_i64().unwrap();
    // Client and embedded responder share the namespace: every datagram is
    // sent once by each side and received once by each side.
    assert_eq!(out_d, 2 * (sent + warmup), "kernel OutDatagrams vs stackmeter sent");
    assert_eq!(
        in_d,
        (sent + warmup) + (received + warmup),
        "kernel InDatagrams vs stackmeter received"
    );
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

#[test]
fn completions_and_man_pages_come_from_the_flags() {
    let out = run(&["completions", "bash"]);
    assert!(out.status.success());
    let bash = String::from_utf8_lossy(&out.stdout);
    assert!(
        bash.contains("udp-max") && bash.contains("--fail-on"),
        "every command and flag"
    );
    assert!(run(&["completions", "zsh"]).status.success());
    let man = String::from_utf8_lossy(&run(&["man"]).stdout).into_owned();
    assert!(
        man.contains(".TH stackmeter 1") && man.contains("udp\\-max"),
        "{}",
        &man[..man.len().min(400)]
    );
    let rr = String::from_utf8_lossy(&run(&["man", "rr"]).stdout).into_owned();
    assert!(
        rr.contains("stackmeter\\-rr") && rr.contains("\\-\\-sizes"),
        "{}",
        &rr[..rr.len().min(400)]
    );
    let out = run(&["man", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no command 'nope'"));
}

#[test]
fn responder_log_lines_carry_a_time_and_a_level() {
    let srv = Server::start(&[]);
    let _ = std::net::TcpStream::connect(srv.addr).map(|mut s| s.write_all(b"XXXXXXXXXXXXXXXX"));
    let line = srv.expect_log(&["refused", "bad magic"]);
    // "stackmeter serve: 2026-11-23T00:27:58.336Z warn: refused ..."
    let rest = line.strip_prefix("stackmeter serve: ").expect("prefix");
    let (time, level) = rest.split_once(' ').unwrap();
    assert!(
        time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
        "{line}"
    );
    assert!(level.starts_with("warn: refused"), "{line}");
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

#[test]
fn ctrl_c_during_rr_prints_and_stores_what_finished() {
    let srv = Server::start(&[]);
    let label = format!("ctrlc-rr-{}", std::process::id());
    let out = interrupted(
        &[
            "rr",
            &srv.target(),
            "--sizes",
            "1:1,1:2",
            "-n",
            "100000000",
            "--json",
            "--label",
            &label,
        ],
        |_| {
            std::thread::sleep(Duration::from_millis(700));
            true
        },
    );
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["complete"], false);
    assert!(doc["error"].as_str().unwrap().contains("interrupted"));
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "the pair in progress is kept, the next one not started");
    let n = rows[0]["samples"].as_u64().unwrap();
    assert!(n > 0 && n < 100_000_000, "{n}");
    let stored = stackmeter_store::Store::open(std::path::Path::new(TEST_DB)).unwrap();
    let tests = stored.tests_with_label(&label).unwrap();
    assert_eq!(tests.len(), 1);
    assert!(!tests[0].doc.complete);
}

#[test]
fn ctrl_c_during_open_loop_rr_keeps_the_requests_that_were_answered() {
    let srv = Server::start(&[]);
    let out = interrupted(
        &[
            "rr",
            &srv.target(),
            "--sizes",
            "64:64",
            "--rate",
            "2000",
            "--connections",
            "2",
            "--time",
            "60",
            "--json",
            "--no-store",
        ],
        |_| {
            std::thread::sleep(Duration::from_millis(1500));
            true
        },
    );
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["complete"], false);
    let row = &doc["results"][0];
    let n = row["samples"].as_u64().unwrap();
    assert!(n > 0 && n < 120_000, "stopped early, kept what was answered: {n}");
    // The achieved rate is over the time that ran, not the planned 60 s.
    let achieved = row["achieved_rate"].as_f64().unwrap();
    assert!(achieved > 200.0, "{achieved}/s from {n} samples");
}
