//! The proxy write-up's race on this host, end to end (root only; a
//! visible skip otherwise, a failure when CI is set): `make -C proxies`
//! builds SolidFrame's relay and the 2010 boost::asio proxy from their
//! sources (STACKMETER_SOLIDFRAME_SRC, STACKMETER_ASIO_2010_SRC, which
//! scripts/test reports when they are not set) and our own asio proxy;
//! `lab up solidframe asio-2010 asio` starts the file server with the
//! write-up's ten files and the three proxies in front of it. Through each
//! (and direct): a many-client load with every byte verified and the
//! proxy's own CPU and memory read, latency under load; then the hostile
//! clients (an idle flood from another address beside an rr, junk
//! headers), after which each proxy still carries a verified load; a run
//! of the `proxy` plan until decided between the write-up's two proxies;
//! and `lab down` leaves no process and no file.

use super::hostile::idle_flood_then_rr;
use super::lab::alive;
use super::{is_root, json_of, run, stderr};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// The targets `lab up` prints, the file server first.
const TARGETS: [(&str, &str); 4] = [
    ("direct", "127.0.0.1:24700"),
    ("solidframe", "127.0.0.1:24701"),
    ("asio-2010", "127.0.0.1:24702"),
    ("asio", "127.0.0.1:24703"),
];

/// The write-up's files: ten, 4 KiB to 8,800 KiB.
const PASS_BYTES: u64 = 44_244_992;

/// A load of 10 clients each fetching every file once through `addr`:
/// every byte verified; through a proxy, its process's CPU and memory
/// read (the proxy's own command name).
fn load(label: &str, addr: &str) {
    let out = run(&[
        "load",
        addr,
        "--clients",
        "10",
        "--fetch-each",
        "1",
        "--repeat",
        "1",
        "--json",
    ]);
    assert!(out.status.success(), "{label} load: {}", stderr(&out));
    let r = &json_of(&out)["results"][0];
    assert_eq!(r["errors"], 0, "{label}: {r}");
    assert_eq!(r["bytes"].as_u64(), Some(10 * PASS_BYTES), "{label}: {r}");
    assert_eq!(r["verified_bytes"], r["bytes"], "{label}: {r}");
    let used = &r["target_use"];
    let command = used["command"].as_str().unwrap_or("");
    match label {
        "direct" => assert_eq!(command, "stackmeter", "{label}: {used}"),
        proxy => assert!(proxy.starts_with(command) && !command.is_empty(), "{label}: {used}"),
    }
    assert!(
        used["cpu_s_per_gib"].as_f64().is_some_and(|c| c > 0.0),
        "{label}: {used}"
    );
    assert!(
        used["peak_rss_mib"].as_f64().is_some_and(|m| m > 0.0),
        "{label}: {used}"
    );
}

/// Latency under load through `addr`: open-loop rr on a schedule, every
/// scheduled request answered.
fn under_load(label: &str, addr: &str) {
    let args = [
        "rr",
        addr,
        "--sizes",
        "64:64",
        "--rate",
        "500",
        "--connections",
        "10",
        "--time",
        "2",
        "--json",
    ];
    let out = run(&args);
    assert!(out.status.success(), "{label} rr --rate: {}", stderr(&out));
    let r = &json_of(&out)["results"][0];
    assert!(r["samples"].as_u64().is_some_and(|n| n >= 900), "{label}: {r}");
}

/// Junk where a session header should be, on 20 connections: each is
/// answered with the file server's refusal or closed within 3 s, never
/// left hanging by the proxy.
fn junk_headers(label: &str, addr: &str) {
    let to: SocketAddr = addr.parse().unwrap();
    for i in 0..20u8 {
        let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(3)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let junk: Vec<u8> = (0..64).map(|k| k ^ i.wrapping_mul(37)).collect();
        let _ = s.write_all(&junk);
        // Read to the end: the refusal (if any), then the close.
        let mut b = Vec::new();
        if let Err(e) = s.read_to_end(&mut b) {
            assert!(
                !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
                "{label}: a junk connection hung after {} bytes",
                b.len()
            );
        }
    }
}

#[test]
fn lab_proxies_race_up_measure_down() {
    let name = "lab_proxies_race_up_measure_down";
    for var in ["STACKMETER_SOLIDFRAME_SRC", "STACKMETER_ASIO_2010_SRC"] {
        if std::env::var_os(var).is_none() {
            return crate::missing(
                name,
                &format!("{var} is not given (docs/lab.md, \"The proxy race\", says how to get the proxies' sources)"),
            );
        }
    }
    if let Ok(why) = std::env::var("STACKMETER_MISSING_PROXIES") {
        return crate::missing(name, &why);
    }
    if !is_root() {
        return crate::missing(name, "needs root (lab up)");
    }
    let proxies = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proxies");
    let built = Command::new("make").arg("-s").arg("-C").arg(&proxies).output().unwrap();
    assert!(
        built.status.success(),
        "make -C proxies: {}{}",
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
    let state = std::env::temp_dir().join(format!("stackmeter-lab-proxies-test-{}", std::process::id()));
    let lab = |args: &[&str]| {
        super::stackmeter()
            .arg("lab")
            .args(args)
            .env("STACKMETER_LAB_DIR", &state)
            .env("STACKMETER_PROXIES_DIR", proxies.join("build"))
            .output()
            .unwrap()
    };
    let up = lab(&["up", "solidframe", "asio-2010", "asio"]);
    let pids = super::lab::recorded_pids(&state);
    let result = std::panic::catch_unwind(|| {
        assert!(up.status.success(), "lab up: {}", stderr(&up));
        let want: Vec<String> = TARGETS.iter().map(|(l, a)| format!("{l}={a}")).collect();
        assert_eq!(String::from_utf8_lossy(&up.stdout).trim(), want.join("\n"));
        for (label, addr) in TARGETS {
            load(label, addr);
            under_load(label, addr);
        }
        for (label, addr) in &TARGETS[1..] {
            idle_flood_then_rr(addr);
            junk_headers(label, addr);
            load(label, addr);
        }
        let (a, b) = (TARGETS[1], TARGETS[2]);
        let suite = run(&[
            "suite",
            "proxy",
            "--quick",
            "--target",
            &format!("{}={}", a.0, a.1),
            "--target",
            &format!("{}={}", b.0, b.1),
            "--budget",
            "4",
            "--no-store",
            "--json",
        ]);
        assert!(suite.status.success(), "suite proxy: {}", stderr(&suite));
        let rows = json_of(&suite)["decision"]["rows"].clone();
        let labels: Vec<&str> = rows
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["label"].as_str())
            .collect();
        for want in ["total time", "all objects", "target's CPU per GiB"] {
            assert!(labels.contains(&want), "{want} in {labels:?}");
        }
    });
    let down = lab(&["down"]);
    assert!(down.status.success(), "lab down: {}", stderr(&down));
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    assert_eq!(pids.len(), 4, "the file server and three proxies recorded: {pids:?}");
    for pid in &pids {
        assert!(!alive(pid), "{pid} still runs");
    }
    assert!(!state.exists(), "state left in {}", state.display());
}
