//! The in-kernel responders for real (root): the XDP program answering
//! ping on a veth between two namespaces, its counters against the
//! client's; the sockmap echo answering rr --echo at every size with the
//! application reading nothing; nothing left attached when the loader is
//! killed with -9; and one line naming root when it is missing.

use crate::{is_root, json_of, missing, stderr, Server, VethPair, BIN};
use std::process::Command;

/// Whether `test` cannot run here: not root (it needs root for `what`)
/// or a stackmeter built without its BPF programs; says which, as a skip.
fn cannot_run(test: &str, what: &str) -> bool {
    if !is_root() {
        missing(test, &format!("needs root ({what})"));
        return true;
    }
    if let Some(why) = stackmeter_responder::in_kernel::not_built() {
        missing(test, &why);
        return true;
    }
    false
}

/// Sends SIGINT to `pid` (the serve command prints its counters then).
fn interrupt(pid: u32) {
    let out = Command::new("kill").args(["-INT", &pid.to_string()]).output().unwrap();
    assert!(out.status.success(), "kill -INT {pid}: {}", stderr(&out));
}

/// The number after `word ` in `line`.
fn number_after(line: &str, word: &str) -> u64 {
    let rest = line
        .split(&format!("{word} "))
        .nth(1)
        .unwrap_or_else(|| panic!("no '{word}' in {line}"));
    rest.split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn xdp_on_a_veth_answers_ping_and_counts_what_it_answered() {
    let test = "xdp_on_a_veth_answers_ping_and_counts_what_it_answered";
    let Some((net, serve)) = xdp_on_a_veth(test, "x", 9) else {
        return;
    };
    let c = &net.names[0];
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            c,
            BIN,
            "ping",
            "198.19.9.2:24680",
            "--count",
            "1000",
            "--json",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json_of(&out);
    let r = &v["results"][0];
    // Every payload checked by the client, and each reply the kernel's:
    // one time stamp for both server times.
    assert_eq!(
        (r["sent"].as_u64(), r["received"].as_u64()),
        (Some(1000), Some(1000)),
        "{r}"
    );
    assert_eq!(r["mismatched"].as_u64(), Some(0));
    assert_eq!(r["server_us"]["max"].as_f64(), Some(0.0), "{r}");
    interrupt(serve.pid());
    let line = serve.expect_log(&["in-kernel xdp", "answered"]);
    let warmup = v["params"]["warmup"].as_u64().unwrap();
    assert_eq!(number_after(&line, "answered"), 1000 + warmup, "{line}");
    assert_eq!(number_after(&line, "dropped"), 0, "{line}");
}

#[test]
fn sockmap_echoes_every_size_and_the_application_reads_nothing() {
    let test = "sockmap_echoes_every_size_and_the_application_reads_nothing";
    if cannot_run(test, "sockmap") {
        return;
    }
    let serve = Server::start(&["--in-kernel", "sockmap"]);
    let out = Command::new(BIN)
        .args([
            "rr",
            &serve.target(),
            "--echo",
            "--sizes",
            "1:1,64:64,1K:1K,16K:16K,64K:64K",
        ])
        .args(["--iterations", "200", "--json", "--no-store"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json_of(&out);
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    let mut bytes = 0;
    for r in rows {
        assert_eq!(r["rtt_us"]["count"].as_u64(), Some(200), "{r}");
        let (req, warm) = (
            r["req_bytes"].as_u64().unwrap(),
            v["params"]["warmup"].as_u64().unwrap(),
        );
        bytes += req * (200 + warm);
    }
    interrupt(serve.pid());
    let line = serve.expect_log(&["in-kernel sockmap"]);
    assert!(line.contains("application read 0 B"), "{line}");
    assert_eq!(
        number_after(&line, "message(s),"),
        bytes,
        "every byte sent came back from the kernel: {line}"
    );
}

/// Two namespaces joined by a veth pair (198.19.`net`.0/24, names with
/// `tag`), and `serve --in-kernel xdp` on the server's end, its program
/// attached; none when the test cannot run here (said as skipped).
fn xdp_on_a_veth(test: &str, tag: &str, net: u8) -> Option<(VethPair, Server)> {
    if cannot_run(test, "XDP") {
        return None;
    }
    let Some(pair) = VethPair::new(tag, net) else {
        missing(test, &crate::netns_unusable().unwrap_or_default());
        return None;
    };
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &pair.names[1], BIN, "serve"])
        .args(["--listen", &format!("198.19.{net}.2:24680")])
        .args(["--in-kernel", "xdp", "--interface", &pair.ifaces[1]]);
    let serve = Server::spawn(cmd);
    serve.expect_log(&["XDP answers UDP port 24680"]);
    Some((pair, serve))
}

/// `ip -d link show dev IF` in namespace `ns`: whether an XDP program is
/// attached.
fn xdp_attached(ns: &str, iface: &str) -> bool {
    let out = Command::new("ip")
        .args(["-n", ns, "-d", "link", "show", "dev", iface])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).contains("prog/xdp")
}

#[test]
fn nothing_stays_attached_after_the_loader_is_killed() {
    let test = "nothing_stays_attached_after_the_loader_is_killed";
    let Some((net, mut serve)) = xdp_on_a_veth(test, "k", 10) else {
        return;
    };
    let s = &net.names[1];
    assert!(xdp_attached(s, &net.ifaces[1]), "attached while it runs");
    let _ = serve.child.kill();
    let _ = serve.child.wait();
    assert!(!xdp_attached(s, &net.ifaces[1]), "still attached after kill -9");
    // The sockmap: its programs hang on a map only the process held.
    let mut echo = Server::start(&["--in-kernel", "sockmap"]);
    let Some(ids) = sk_skb_programs_of(echo.pid()) else {
        return missing(
            test,
            "bpftool cannot list programs (Debian package bpftool): the sockmap half was not checked",
        );
    };
    assert_eq!(ids.len(), 2, "the parser and the verdict, loaded by {}", echo.pid());
    let _ = echo.child.kill();
    let _ = echo.child.wait();
    // The kernel frees them as the last reference goes (RCU: soon).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let left = || ids.iter().filter(|id| program_exists(**id)).count();
    while left() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(left(), 0, "sockmap programs {ids:?} left after kill -9");
}

/// The ids of the BPF programs process `pid` holds (each program
/// descriptor's `prog_id:` in /proc/PID/fdinfo), if bpftool runs to check
/// them afterwards.
fn sk_skb_programs_of(pid: u32) -> Option<Vec<u64>> {
    Command::new("bpftool").arg("version").output().ok()?;
    let mut ids = Vec::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fdinfo")).ok()?.flatten() {
        let info = std::fs::read_to_string(fd.path()).unwrap_or_default();
        ids.extend(
            info.lines()
                .find_map(|l| l.strip_prefix("prog_id:"))
                .and_then(|v| v.trim().parse::<u64>().ok()),
        );
    }
    ids.sort_unstable();
    ids.dedup();
    Some(ids)
}

/// Whether BPF program `id` is still loaded.
fn program_exists(id: u64) -> bool {
    Command::new("bpftool")
        .args(["prog", "show", "id", &id.to_string()])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn without_root_the_in_kernel_responders_say_so_in_one_line() {
    let test = "without_root_the_in_kernel_responders_say_so_in_one_line";
    let probe = Command::new("runuser").args(["-u", "nobody", "--", "true"]).output();
    if !is_root() || !probe.is_ok_and(|o| o.status.success()) {
        return missing(test, "needs root, to run the command as nobody (runuser)");
    }
    for how in ["xdp", "sockmap"] {
        let out = Command::new("runuser")
            .args([
                "-u",
                "nobody",
                "--",
                BIN,
                "serve",
                "--listen",
                "127.0.0.1:24999",
                "--in-kernel",
                how,
            ])
            .args(["--interface", "lo"])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{how}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{how}: one line: {err}");
        assert!(
            err.contains("needs root") || err.contains("was not built"),
            "{how}: {err}"
        );
    }
}

/// `ping --layers` output: the segments add up (means) to the traced
/// mean, which lies inside the client's own mean round trip and covers
/// most of it: within 15% or 3 us (what is left out is entering and
/// leaving the client's two calls).
fn check_layers(out: &std::process::Output, what: &str) {
    assert!(out.status.success(), "{what}: {}", stderr(out));
    let v = json_of(out);
    let r = &v["results"][0];
    let l = &r["layers"];
    let count = v["params"]["count"].as_u64().unwrap();
    let trips = l["round_trips"].as_u64().unwrap();
    assert!(
        trips * 10 >= count * 9,
        "{what}: {trips} of {count} round trips traced: {l}"
    );
    let segments = l["segments"].as_array().unwrap();
    assert_eq!(segments[0]["from"], "client send call", "{what}: {l}");
    assert_eq!(segments[segments.len() - 1]["to"], "client has it", "{what}: {l}");
    let sum: f64 = segments.iter().map(|s| s["mean_us"].as_f64().unwrap()).sum();
    let (traced, rtt) = (
        l["traced_mean_us"].as_f64().unwrap(),
        l["rtt_mean_us"].as_f64().unwrap(),
    );
    assert!(
        (sum - traced).abs() < 1e-6 * traced.max(1.0),
        "{what}: segments {sum} vs traced {traced}"
    );
    assert!(
        traced <= rtt * 1.02,
        "{what}: traced {traced} us outside the client's {rtt} us"
    );
    assert!(
        rtt - traced <= (0.15 * rtt).max(3.0),
        "{what}: traced {traced} us of the client's {rtt} us"
    );
    assert!(
        l["untraced_p50_us"].as_f64().is_some(),
        "{what}: the tracer's overhead is measured"
    );
}

#[test]
fn ping_layers_add_up_on_loopback_and_between_namespaces() {
    let test = "ping_layers_add_up_on_loopback_and_between_namespaces";
    if cannot_run(test, "tracepoints") {
        return;
    }
    let out = Command::new(BIN)
        .args(["ping", "--layers", "--count", "300", "--json", "--no-store"])
        .args(["--affinity", "1", "--responder-affinity", "0"])
        .output()
        .unwrap();
    check_layers(&out, "loopback");
    // The responder's own calls are traced too (it is this process).
    let v = json_of(&out);
    let segments = v["results"][0]["layers"]["segments"].as_array().unwrap().clone();
    assert!(
        segments.iter().any(|s| s["from"] == "responder has it"),
        "the responder's calls: {segments:?}"
    );
    let Some(net) = VethPair::new("l", 11) else {
        return missing(test, &crate::netns_unusable().unwrap_or_default());
    };
    let [c, s] = &net.names;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", s, BIN, "serve", "--listen", "198.19.11.2:24680"]);
    let _serve = Server::spawn(cmd);
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            c,
            BIN,
            "ping",
            "198.19.11.2:24680",
            "--layers",
            "--count",
            "300",
        ])
        .args(["--json", "--no-store"])
        .output()
        .unwrap();
    check_layers(&out, "veth");
}
