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

/// A `--layers` row: every timed exchange traced (`count` of them), no
/// record lost, the segments' means adding up to the traced mean, which
/// is the client's own mean (its clock reads are the first and the last
/// point), the first and last points the client's, the untraced run's
/// median there. Returns the segments' (from, to) names.
fn check_row_layers(r: &serde_json::Value, count: u64, last: &str, what: &str) -> Vec<(String, String)> {
    let l = &r["layers"];
    assert_eq!(
        (l["round_trips"].as_u64(), l["exchanges"].as_u64()),
        (Some(count), Some(count)),
        "{what}: every round trip traced: {l}"
    );
    assert_eq!(l["lost_records"].as_u64(), Some(0), "{what}: {l}");
    let segments = l["segments"].as_array().unwrap();
    assert_eq!(segments[0]["from"], "client send call", "{what}: {l}");
    assert_eq!(segments[segments.len() - 1]["to"], "client has it", "{what}: {l}");
    assert_eq!(segments[segments.len() - 1]["from"], last, "{what}: {l}");
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
        (traced - rtt).abs() < 0.01 * rtt,
        "{what}: traced {traced} us is the client's {rtt} us"
    );
    assert!(
        l["untraced_p50_us"].as_f64().is_some(),
        "{what}: the tracer's cost is measured"
    );
    segments
        .iter()
        .map(|s| (s["from"].as_str().unwrap().into(), s["to"].as_str().unwrap().into()))
        .collect()
}

/// Whether a segment named `from` -> `to` is among `segments`.
fn has(segments: &[(String, String)], from: &str, to: &str) -> bool {
    segments.iter().any(|(f, t)| f == from && t == to)
}

#[test]
fn ping_layers_trace_every_round_trip_on_loopback_and_between_namespaces() {
    let test = "ping_layers_trace_every_round_trip_on_loopback_and_between_namespaces";
    if cannot_run(test, "tracepoints") {
        return;
    }
    let out = Command::new(BIN)
        .args(["ping", "--layers", "--count", "20000", "--json", "--no-store"])
        .args(["--affinity", "1", "--responder-affinity", "0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json_of(&out);
    // The whole path on loopback, the responder's own read and send
    // included (it is this process).
    let segments = check_row_layers(&v["results"][0], 20000, "reply on the socket", "loopback");
    for (from, to) in [
        ("request queued", "request at the driver"),
        ("request received", "request to the stack"),
        ("request on the socket", "responder has it"),
        ("responder has it", "responder sends"),
        ("responder sends", "reply queued"),
    ] {
        assert!(has(&segments, from, to), "{from} -> {to}: {segments:?}");
    }
    let Some(net) = VethPair::new("l", 11) else {
        return missing(test, &crate::netns_unusable().unwrap_or_default());
    };
    let [c, s] = &net.names;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", s, BIN, "serve", "--listen", "198.19.11.2:24680"]);
    let _serve = Server::spawn(cmd);
    let out = Command::new("ip")
        .args(["netns", "exec", c, BIN, "ping", "198.19.11.2:24680", "--layers"])
        .args(["--count", "2000", "--json", "--no-store"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // The responder in the other namespace is not this process: its
    // socket is seen, its calls are not.
    let segments = check_row_layers(&json_of(&out)["results"][0], 2000, "reply on the socket", "veth");
    assert!(
        has(&segments, "request on the socket", "responder has it"),
        "{segments:?}"
    );
}

#[test]
fn ping_layers_through_the_xdp_responder_turn_around_at_the_driver() {
    let test = "ping_layers_through_the_xdp_responder_turn_around_at_the_driver";
    if cannot_run(test, "XDP and tracepoints") {
        return;
    }
    let serve = Server::start_on("127.0.0.1:24931", &["--in-kernel", "xdp", "--interface", "lo"]);
    serve.expect_log(&["XDP answers UDP port"]);
    let out = Command::new(BIN)
        .args([
            "ping",
            &serve.target(),
            "--layers",
            "--count",
            "2000",
            "--json",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let segments = check_row_layers(&json_of(&out)["results"][0], 2000, "reply on the socket", "xdp");
    assert!(
        has(&segments, "request to the stack", "reply received"),
        "the same skb turned around by XDP: {segments:?}"
    );
    assert!(!segments.iter().any(|(f, _)| f == "responder has it"), "{segments:?}");
}

/// `rr --layers ARGS` against `target` ("" for the embedded responder),
/// stored under `label` in `db` (or not stored), as JSON.
fn rr_layers(target: &str, args: &[&str], label: Option<(&str, &std::path::Path)>) -> serde_json::Value {
    let mut cmd = Command::new(BIN);
    cmd.arg("rr");
    if !target.is_empty() {
        cmd.arg(target);
    }
    cmd.args(["--layers", "--json"]).args(args);
    match label {
        Some((l, db)) => cmd.args(["--label", l]).env("STACKMETER_DB", db),
        None => cmd.arg("--no-store"),
    };
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "rr {target} {args:?}: {}", stderr(&out));
    json_of(&out)
}

#[test]
fn rr_layers_follow_each_transaction_through_the_application_and_the_sockmap() {
    let test = "rr_layers_follow_each_transaction_through_the_application_and_the_sockmap";
    if cannot_run(test, "sockmap and tracepoints") {
        return;
    }
    // Against stackmeter's responder: a request, then a response of
    // another size, the responder reading all of one before writing the
    // other.
    let v = rr_layers("", &["--sizes", "1:1K,1:100K,100K:1", "-n", "300"], None);
    for r in v["results"].as_array().unwrap() {
        let what = format!("serve {}:{}", r["req_bytes"], r["resp_bytes"]);
        let segments = check_row_layers(r, 300, "response on the socket", &what);
        for (from, to) in [
            ("request to the stack", "request on the socket"),
            ("request on the socket", "responder has it"),
            ("responder has it", "responder writes the end"),
            ("responder writes the end", "response's last byte queued"),
        ] {
            assert!(has(&segments, from, to), "{what}: {from} -> {to}: {segments:?}");
        }
    }
    // The echo in the application and in the kernel, stored, then
    // reported side by side.
    let db = std::path::PathBuf::from(concat!(env!("CARGO_TARGET_TMPDIR"), "/layers-report.db"));
    let _ = std::fs::remove_file(&db);
    let app = Server::start(&["--plain-echo"]);
    let sockmap = Server::start(&["--in-kernel", "sockmap"]);
    let sizes = ["--echo", "--sizes", "1K:1K,100K:100K", "-n", "300"];
    for (server, label) in [(&app, "app"), (&sockmap, "sockmap")] {
        let v = rr_layers(&server.target(), &sizes, Some((label, &db)));
        for r in v["results"].as_array().unwrap() {
            let what = format!("{label} {}", r["req_bytes"]);
            let segments = check_row_layers(r, 300, "response on the socket", &what);
            let read = segments.iter().any(|(f, _)| f == "responder has it");
            assert_eq!(
                read,
                label == "app",
                "{what}: the application reads, the sockmap never: {segments:?}"
            );
            assert!(
                segments.iter().any(|(_, t)| t == "responder writes the end"),
                "{what}: the echo's write of the last byte (the sockmap's in its worker): {segments:?}"
            );
        }
    }
    report_draws_waterfalls(&db);
}

/// `report app` draws each row's waterfall; `report app sockmap` draws
/// both runs in one waterfall per row, side by side, as a browser lays it
/// out (a screenshot is left in target/tmp/layers-report.png).
fn report_draws_waterfalls(db: &std::path::Path) {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let report = |sources: &[&str], name: &str| {
        let page = dir.join(name);
        let out = Command::new(BIN)
            .arg("report")
            .args(sources)
            .arg("-o")
            .arg(&page)
            .env("STACKMETER_DB", db)
            .output()
            .unwrap();
        assert!(out.status.success(), "report {sources:?}: {}", stderr(&out));
        (page.clone(), std::fs::read_to_string(page).unwrap())
    };
    let (_, one) = report(&["app"], "layers-report-one.html");
    assert_eq!(
        one.matches("data-chart=\"waterfall\"").count(),
        2,
        "a waterfall per row"
    );
    let (page, two) = report(&["app", "sockmap"], "layers-report.html");
    assert_eq!(
        two.matches("data-chart=\"waterfall\"").count(),
        2,
        "one per row, both runs in it"
    );
    let svg = two.split("data-chart=\"waterfall\"").nth(1).unwrap();
    assert!(
        svg.contains(">app</text>") && svg.contains(">sockmap</text>"),
        "both panels"
    );
    assert!(
        svg.contains("sockmap: 300 round trips traced of 300, 0 records lost; the tracer&#39;s cost")
            || svg.contains("sockmap: 300 round trips traced of 300, 0 records lost; the tracer's cost"),
        "the cost under it"
    );
    // The page's own script marks each chart the browser laid out.
    let dom = chromium(&page, &["--dump-dom"]);
    let tags: Vec<&str> = dom
        .split("data-chart=\"waterfall\"")
        .skip(1)
        .map(|rest| rest.split('>').next().unwrap_or(""))
        .collect();
    assert_eq!(tags.len(), 2, "{}", &dom[..dom.len().min(2000)]);
    assert!(tags.iter().all(|t| t.contains("data-drawn=\"yes\"")), "{tags:?}");
    let png = dir.join("layers-report.png");
    chromium(
        &page,
        &[&format!("--screenshot={}", png.display()), "--window-size=1300,2400"],
    );
    assert!(png.exists(), "no screenshot {}", png.display());
}

/// Headless Chromium on a local page with `args`, in a fresh profile;
/// its stdout.
fn chromium(page: &std::path::Path, args: &[&str]) -> String {
    let profile = page.with_extension("chromium-profile");
    let _ = std::fs::remove_dir_all(&profile);
    let out = Command::new("timeout")
        .args([
            "90",
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args([
            "--no-first-run",
            "--disable-background-networking",
            "--force-device-scale-factor=1",
        ])
        .args(args)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .env("HOME", &profile)
        .stderr(std::process::Stdio::null())
        .output()
        .expect("chromium is installed (.ci/run installs it)");
    let _ = std::fs::remove_dir_all(&profile);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn nothing_of_the_tracer_stays_after_it_is_killed() {
    let test = "nothing_of_the_tracer_stays_after_it_is_killed";
    if cannot_run(test, "tracepoints") {
        return;
    }
    let mut child = Command::new(BIN)
        .args(["ping", "--layers", "--count", "200000", "--no-store"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Its programs, once the traced run has started (the untraced one
    // first: a few seconds here).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut ids = Vec::new();
    while ids.len() < 7 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let Some(now) = sk_skb_programs_of(child.id()) else {
            let _ = child.kill();
            let _ = child.wait();
            return missing(test, "bpftool cannot list programs (Debian package bpftool)");
        };
        ids = now;
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(ids.len() >= 7, "the tracer's programs while it runs: {ids:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let left = || ids.iter().filter(|id| program_exists(**id)).count();
    while left() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(left(), 0, "tracer programs {ids:?} left after kill -9");
}
