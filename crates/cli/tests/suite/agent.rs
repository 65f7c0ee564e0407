//! The agent mesh for real: `stackmeter agent` processes on 127.0.0.1
//! probing each other, their `/metrics` scraped over HTTP, checked with
//! `promtool check metrics`, and a real Prometheus (Debian's
//! `prometheus`, started here with its own data folder and port) scraping
//! them and answering queries for every pair. Also: a peer that is down
//! counts as loss on its pair only, a peers file edited while the agent
//! runs, the one-line errors, and the shipped Prometheus and Grafana
//! files (deploy/) checked against what the agent exports.

use crate::{missing, stackmeter};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Probe interval in these tests.
const INTERVAL_MS: &str = "100";

/// A folder of this test's own, removed on drop.
pub(crate) struct Dir(pub(crate) PathBuf);

impl Dir {
    pub(crate) fn new(name: &str) -> Dir {
        let p = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("agent-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }

    pub(crate) fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A port nothing listens on now (TCP and UDP are both free on it in
/// practice: the kernel hands out one counter for both).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running `stackmeter agent`, its stderr collected; killed on drop.
struct Agent {
    child: Child,
    name: String,
    metrics: SocketAddr,
    lines: Arc<Mutex<Vec<String>>>,
    ready: mpsc::Receiver<()>,
}

impl Agent {
    fn start(name: &str, listen: u16, metrics: u16, peers: &Path, extra: &[&str]) -> Agent {
        Agent::start_in(None, name, listen, metrics, peers, extra)
    }

    /// [`Agent::start`] with a HOME of its own (its spool is there).
    fn start_in(home: Option<&Path>, name: &str, listen: u16, metrics: u16, peers: &Path, extra: &[&str]) -> Agent {
        let listen: SocketAddr = ([127, 0, 0, 1], listen).into();
        let metrics: SocketAddr = ([127, 0, 0, 1], metrics).into();
        let mut cmd = stackmeter();
        if let Some(h) = home {
            cmd.env("HOME", h).env("XDG_DATA_HOME", h.join(".local/share"));
        }
        let mut child = cmd
            .args([
                "agent",
                "--listen",
                &listen.to_string(),
                "--metrics",
                &metrics.to_string(),
            ])
            .arg("--peers")
            .arg(peers)
            .args(["--name", name, "--interval-ms", INTERVAL_MS])
            .args(extra)
            .env("NODE_NAME", format!("node-of-{name}"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the agent starts");
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, ready) = mpsc::channel();
        let l = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("metrics on http://") {
                    let _ = tx.send(());
                }
                l.lock().unwrap().push(line);
            }
        });
        Agent {
            child,
            name: name.into(),
            metrics,
            lines,
            ready,
        }
    }

    /// Waits for the start line.
    fn wait_ready(&self) {
        if self.ready.recv_timeout(Duration::from_secs(10)).is_err() {
            panic!("agent {} did not start: {:?}", self.name, self.log());
        }
    }

    fn log(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The log lines containing every one of `parts`, waiting up to 10 s for one.
    fn expect_log(&self, parts: &[&str]) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let found: Vec<String> = self
                .log()
                .into_iter()
                .filter(|l| parts.iter().all(|p| l.contains(p)))
                .collect();
            if !found.is_empty() {
                return found;
            }
            assert!(Instant::now() < deadline, "no line with {parts:?} in {:#?}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `/metrics` as curl gets it (no Accept header: the 0.0.4 text).
    fn scrape(&self) -> String {
        http_get(self.metrics, "/metrics", None).1
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET `path` over HTTP/1.0; (status line and headers, body).
pub(crate) fn http_get(addr: SocketAddr, path: &str, accept: Option<&str>) -> (String, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let accept = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{accept}\r\n").unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).expect("an HTTP response");
    let (head, body) = all.split_once("\r\n\r\n").expect("headers and a body");
    (head.to_string(), body.to_string())
}

/// The value of the sample `name{labels...}` whose labels include every
/// `k="v"` of `want`.
fn value(text: &str, name: &str, want: &[(&str, &str)]) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (series, v) = l.rsplit_once(' ')?;
        let (n, labels) = series.split_once('{').unwrap_or((series, ""));
        let all = want.iter().all(|(k, val)| labels.contains(&format!("{k}=\"{val}\"")));
        (n == name && all).then(|| v.parse().ok())?
    })
}

/// Runs `promtool ARGS` with `stdin`; None when promtool cannot run.
pub(crate) fn promtool(args: &[&str], stdin: &str) -> Option<std::process::Output> {
    let mut c = Command::new("promtool")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).ok()?;
    c.wait_with_output().ok()
}

/// Three agents, a, b and c, each with a peers file naming the other two.
fn mesh(dir: &Dir, prefix: &str, extra: &[&str]) -> Vec<Agent> {
    let names: Vec<String> = ["a", "b", "c"].iter().map(|n| format!("{prefix}{n}")).collect();
    let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
    let agents: Vec<Agent> = (0..3)
        .map(|i| {
            let text: String = (0..3)
                .filter(|j| *j != i)
                .map(|j| format!("{} 127.0.0.1:{}\n", names[j], ports[j].0))
                .collect();
            let peers = dir.file(&format!("{}.peers", names[i]), &format!("# the other two\n{text}"));
            Agent::start(&names[i], ports[i].0, ports[i].1, &peers, extra)
        })
        .collect();
    for a in &agents {
        a.wait_ready();
    }
    agents
}

/// Waits up to `secs` for `ok` on each agent's scrape.
fn until(agents: &[Agent], secs: u64, ok: impl Fn(&Agent, &str) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let scrapes: Vec<String> = agents.iter().map(Agent::scrape).collect();
        if agents.iter().zip(&scrapes).all(|(a, s)| ok(a, s)) {
            return scrapes;
        }
        assert!(Instant::now() < deadline, "not reached in {secs} s: {scrapes:#?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn peers_of<'a>(agents: &'a [Agent], a: &Agent) -> Vec<&'a Agent> {
    agents.iter().filter(|p| p.name != a.name).collect()
}

#[test]
fn agent_mesh_of_three_exports_every_pair_promtool_passes_and_prometheus_sees_six_pairs() {
    let dir = Dir::new("mesh");
    let db = dir.0.join("results.db");
    let db = db.to_str().unwrap();
    let agents = mesh(&dir, "m", &["--db", db, "--store-every-s", "1"]);
    let kinds = ["ping", "rr"];
    let sent = |s: &str, src: &Agent, dst: &Agent, k: &str| {
        value(
            s,
            "stackmeter_probes_sent_total",
            &[("source", &src.name), ("target", &dst.name), ("probe", k)],
        )
    };
    // A few intervals: 2 pair series per probe kind on every agent.
    let first = until(&agents, 20, |a, s| {
        peers_of(&agents, a)
            .iter()
            .all(|p| kinds.iter().all(|k| sent(s, a, p, k).is_some_and(|n| n >= 3.0)))
    });
    std::thread::sleep(Duration::from_millis(600));
    for (a, s1) in agents.iter().zip(&first) {
        let s2 = a.scrape();
        let pair_series = s2
            .lines()
            .filter(|l| l.starts_with("stackmeter_probes_sent_total{"))
            .count();
        assert_eq!(pair_series, 4, "2 peers x 2 kinds on {}: {s2}", a.name);
        for p in peers_of(&agents, a) {
            for k in kinds {
                let (before, after) = (sent(s1, a, p, k).unwrap(), sent(&s2, a, p, k).unwrap());
                assert!(after > before, "{}->{} {k}: {before} then {after}", a.name, p.name);
                let labels = [("source", a.name.as_str()), ("target", p.name.as_str()), ("probe", k)];
                let answered = value(&s2, "stackmeter_rtt_seconds_count", &labels).unwrap();
                assert!(answered > 0.0, "{}->{} {k} answered", a.name, p.name);
                let pair = [("source", a.name.as_str()), ("target", p.name.as_str())];
                assert!(value(&s2, "stackmeter_clock_offset_bound_seconds", &pair).is_some());
            }
        }
        // Its own name is never a target, and the info maps it to its node.
        assert!(!s2.contains(&format!("target=\"{}\"", a.name)));
        let info = [("source", a.name.as_str()), ("node", &format!("node-of-{}", a.name))];
        assert_eq!(value(&s2, "stackmeter_agent_info", &info), Some(1.0), "{s2}");
    }
    // Scrape size of one agent with 2 peers, for the report.
    let s = agents[0].scrape();
    eprintln!(
        "one scrape of {} (2 peers): {} bytes, {} lines",
        agents[0].name,
        s.len(),
        s.lines().count()
    );
    // OpenMetrics for a scraper that asks for it.
    let prom_accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let (head, open) = http_get(agents[0].metrics, "/metrics", Some(prom_accept));
    assert!(head.contains("application/openmetrics-text; version=1.0.0"), "{head}");
    assert!(open.ends_with("# EOF\n") && open.contains("# TYPE stackmeter_agent info"));
    let (head, _) = http_get(agents[0].metrics, "/other", None);
    assert!(
        head.starts_with("HTTP/1.0 404") || head.starts_with("HTTP/1.1 404"),
        "{head}"
    );

    let Some(out) = promtool(&["check", "metrics"], &s) else {
        return missing("agent mesh", "promtool cannot run (Debian package prometheus)");
    };
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // A real Prometheus scrapes the three and answers for the 6 pairs.
    let pods: Vec<(SocketAddr, String)> = agents
        .iter()
        .map(|a| (a.metrics, format!("stackmeter-{}", a.name)))
        .collect();
    let pods: Vec<(SocketAddr, &str)> = pods.iter().map(|(a, n)| (*a, n.as_str())).collect();
    let Some(prom) = Prometheus::start(&pods) else {
        return missing("agent mesh", "prometheus cannot run (Debian package prometheus)");
    };
    let pairs = prom.until(
        "count by (source, target) (stackmeter_probes_sent_total{probe=\"ping\"})",
        6,
    );
    let mut seen: Vec<String> = pairs
        .iter()
        .map(|r| {
            format!(
                "{}->{}",
                r["metric"]["source"].as_str().unwrap(),
                r["metric"]["target"].as_str().unwrap()
            )
        })
        .collect();
    seen.sort();
    assert_eq!(seen, ["ma->mb", "ma->mc", "mb->ma", "mb->mc", "mc->ma", "mc->mb"]);
    // The shipped relabel rules kept the three agents' metrics ports and
    // nothing else, each labelled with its pod and namespace.
    let targets = prom.api("/api/v1/targets");
    let active = targets["activeTargets"].as_array().unwrap();
    let mut scraped: Vec<&str> = active.iter().map(|t| t["labels"]["pod"].as_str().unwrap()).collect();
    scraped.sort_unstable();
    assert_eq!(
        scraped,
        ["stackmeter-ma", "stackmeter-mb", "stackmeter-mc"],
        "{targets}"
    );
    assert!(
        active
            .iter()
            .all(|t| t["labels"]["namespace"] == "mesh" && t["health"] == "up"),
        "{targets}"
    );
    assert_eq!(targets["droppedTargets"].as_array().map(Vec::len), Some(2), "{targets}");
    // The dashboard's p99 per pair, read from the buckets.
    let p99 = prom.until(
        "histogram_quantile(0.99, sum by (source, target, le) (rate(stackmeter_rtt_seconds_bucket{probe=\"rr\"}[10s])))",
        6,
    );
    for r in &p99 {
        let v: f64 = r["value"][1].as_str().unwrap().parse().unwrap();
        assert!(v > 0.0 && v < 1.0, "p99 {v} s: {r}");
    }
    drop(prom);

    // Each pair's summaries are stored as ping and rr documents.
    let out = stackmeter().args(["runs", "--db", db, "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = runs.to_string();
    for label in ["ma->mb", "mc->ma"] {
        assert!(text.contains(&format!("\"{label}\"")), "no {label} in {text}");
    }
    assert!(text.contains("\"ping\"") && text.contains("\"rr\""), "{text}");
}

/// A Prometheus server of this test: its own data folder and web port;
/// stopped and its folder removed on drop, also when the test fails.
pub(crate) struct Prometheus {
    child: Child,
    web: SocketAddr,
    _dir: Dir,
}

impl Prometheus {
    /// Starts one that scrapes every second the agents at `pods` (metrics
    /// address, pod name) as Kubernetes pod discovery would show them, through
    /// the shipped scrape config's Kubernetes relabel rules (the pods come
    /// from a file here: Debian's Prometheus is built without Kubernetes
    /// discovery). Two decoys, a pod of another app and an agent's
    /// responder port, must be dropped by those rules and never scraped.
    /// None when it cannot run.
    fn start(pods: &[(SocketAddr, &str)]) -> Option<Prometheus> {
        let dir = Dir::new("prometheus");
        let pod = |addr: String, name: &str, app: &str, port: &str| {
            serde_json::json!({
                "targets": [addr],
                "labels": {
                    "__meta_kubernetes_namespace": "mesh",
                    "__meta_kubernetes_pod_name": name,
                    "__meta_kubernetes_pod_label_app_kubernetes_io_name": app,
                    "__meta_kubernetes_pod_container_port_name": port,
                }
            })
        };
        let mut groups: Vec<Value> = pods
            .iter()
            .map(|(a, name)| pod(a.to_string(), name, "stackmeter", "metrics"))
            .collect();
        groups.push(pod(format!("127.0.0.1:{}", free_port()), "web-1", "web", "metrics"));
        groups.push(pod(
            format!("127.0.0.1:{}", free_port()),
            pods[0].1,
            "stackmeter",
            "responder",
        ));
        let targets = dir.file("pods.json", &Value::Array(groups).to_string());
        let config = dir.file(
            "prometheus.yml",
            &format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: stackmeter-kubernetes\n    file_sd_configs:\n      - files: ['{}']\n        refresh_interval: 1s\n{}",
                targets.display(),
                kubernetes_relabel_rules()
            ),
        );
        Prometheus::run(dir, &config)
    }

    /// Starts one that scrapes `targets` (metrics addresses) every second
    /// with a static scrape config; None when it cannot run.
    pub(crate) fn start_static(targets: &[SocketAddr]) -> Option<Prometheus> {
        let dir = Dir::new("prometheus-static");
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = dir.file(
            "prometheus.yml",
            &format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: stackmeter\n    static_configs:\n      - targets: [{}]\n",
                list.join(", ")
            ),
        );
        Prometheus::run(dir, &config)
    }

    /// Prometheus on a free port of 127.0.0.1 with `config`, its data in
    /// `dir`; None when it cannot start.
    fn run(dir: Dir, config: &Path) -> Option<Prometheus> {
        let web: SocketAddr = ([127, 0, 0, 1], free_port()).into();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.0.join("data").display()))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let p = Prometheus { child, web, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&web, Duration::from_secs(1)).is_ok()
                && http_get(web, "/-/ready", None).0.contains(" 200 ")
            {
                return Some(p);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("prometheus on {web} not ready in 30 s");
    }

    /// GET an API path; its `data`.
    fn api(&self, path: &str) -> Value {
        prometheus_api(self.web, path)
    }

    /// The answer of an instant query `q`.
    fn query(&self, q: &str) -> Vec<Value> {
        prometheus_query(self.web, q)
    }

    /// Asks `q` until it has `n` results (up to 30 s).
    pub(crate) fn until(&self, q: &str, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let r = self.query(q);
            if r.len() == n {
                return r;
            }
            assert!(Instant::now() < deadline, "{q}: {} results, not {n}: {r:?}", r.len());
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// GET a path of the HTTP API of the Prometheus at `web`; its `data`.
pub(crate) fn prometheus_api(web: SocketAddr, path: &str) -> Value {
    let (head, body) = http_get(web, path, None);
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {head}\n{body}"));
    assert_eq!(v["status"], "success", "{body}");
    v["data"].clone()
}

/// The answer of the instant query `q` to the Prometheus at `web`.
pub(crate) fn prometheus_query(web: SocketAddr, q: &str) -> Vec<Value> {
    let enc: String = q
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    prometheus_api(web, &format!("/api/v1/query?query={enc}"))["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn agent_counts_a_down_peer_as_loss_on_its_pair_only_and_follows_its_peers_file() {
    let dir = Dir::new("down");
    let (a_port, b_port, down) = (free_port(), free_port(), free_port());
    let a_peers = dir.file(
        "a.peers",
        &format!("db 127.0.0.1:{b_port}\ngone 127.0.0.1:{down}\n127.0.0.1:{a_port}   # itself\n"),
    );
    let b_peers = dir.file("b.peers", &format!("da 127.0.0.1:{a_port}\n"));
    // b first, so that every probe of a to b finds it up.
    let b = Agent::start("db", b_port, free_port(), &b_peers, &["--no-store"]);
    b.wait_ready();
    let a = Agent::start("da", a_port, free_port(), &a_peers, &["--no-store"]);
    a.wait_ready();
    a.expect_log(&[
        &format!("peer 127.0.0.1:{a_port}"),
        "its own listen address: not probed",
    ]);
    // Pings to the closed port time out after 1 s; rr is refused at once.
    let s = &until(std::slice::from_ref(&a), 20, |_, s| {
        value(
            s,
            "stackmeter_probes_lost_total",
            &[("target", "gone"), ("probe", "ping")],
        )
        .is_some_and(|n| n >= 5.0)
    })[0];
    for k in ["ping", "rr"] {
        let gone = [("source", "da"), ("target", "gone"), ("probe", k)];
        let sent = value(s, "stackmeter_probes_sent_total", &gone).unwrap();
        let lost = value(s, "stackmeter_probes_lost_total", &gone).unwrap();
        // Every probe is lost; pings still within their timeout are not yet.
        assert!(
            lost > 0.0 && lost <= sent && sent - lost <= 12.0,
            "{k}: sent {sent}, lost {lost}"
        );
        assert_eq!(value(s, "stackmeter_rtt_seconds_count", &gone), Some(0.0));
        let live = [("source", "da"), ("target", "db"), ("probe", k)];
        assert!(value(s, "stackmeter_probes_sent_total", &live).unwrap() >= 5.0);
        assert_eq!(
            value(s, "stackmeter_probes_lost_total", &live),
            Some(0.0),
            "{k} to db: {s}"
        );
    }
    assert!(!s.contains(&format!("target=\"127.0.0.1:{a_port}\"")), "never itself");
    // One line per kind when the peer stops answering, not one per probe.
    let ping = a.expect_log(&["peer gone", "ping: no answer within 1000 ms"]);
    let rr = a.expect_log(&["peer gone", "rr: cannot reach"]);
    assert_eq!((ping.len(), rr.len()), (1, 1), "{:#?}", a.log());
    // b saw nothing of it (b probed a before a was up: those are lost).
    let bs = b.scrape();
    let b_lost = value(
        &bs,
        "stackmeter_probes_lost_total",
        &[("target", "da"), ("probe", "ping")],
    );
    let b_sent = value(
        &bs,
        "stackmeter_probes_sent_total",
        &[("target", "da"), ("probe", "ping")],
    );
    assert!(b_lost.unwrap() < b_sent.unwrap() / 2.0, "{bs}");
    assert!(!bs.contains("target=\"gone\""));

    // The file is read again when it changes: a bad line is one line with
    // its number, and the peers stay; then gone leaves with its series.
    std::fs::write(
        &a_peers,
        format!("db 127.0.0.1:{b_port}\ngone 127.0.0.1:{down} extra\n"),
    )
    .unwrap();
    let bad = a.expect_log(&[
        "a.peers: line 2: ",
        "expected ADDR:PORT or NAME ADDR:PORT",
        "keeping the 2 peers",
    ]);
    assert_eq!(bad.len(), 1);
    std::fs::write(&a_peers, format!("db 127.0.0.1:{b_port}\n")).unwrap();
    a.expect_log(&["peers: 1 from", "removed gone"]);
    let s = a.scrape();
    assert!(!s.contains("target=\"gone\""), "{s}");
    assert!(s.contains("target=\"db\""));
}

#[test]
fn agent_stream_probes_run_when_asked_and_are_stored() {
    let dir = Dir::new("stream");
    let srv = crate::Server::start(&[]);
    let peers = dir.file("s.peers", &format!("srv {}\n", srv.target()));
    let db = dir.0.join("results.db");
    let db = db.to_str().unwrap();
    let extra = [
        "--tests",
        "stream",
        "--stream-every-s",
        "5",
        "--db",
        db,
        "--store-every-s",
        "1",
    ];
    let a = Agent::start("sa", free_port(), free_port(), &peers, &extra);
    a.wait_ready();
    a.expect_log(&["a 2 s stream every 5 s, one peer at a time"]);
    let pair = [("source", "sa"), ("target", "srv")];
    let s = &until(std::slice::from_ref(&a), 30, |_, s| {
        value(s, "stackmeter_stream_tests_total", &pair).is_some_and(|n| n >= 1.0)
    })[0];
    let rate = value(s, "stackmeter_stream_throughput_bytes_per_second", &pair).unwrap();
    assert!(rate > 0.0, "{s}");
    assert_eq!(value(s, "stackmeter_stream_failures_total", &pair), None, "{s}");
    assert!(
        !s.contains("stackmeter_probes_sent_total{"),
        "no ping or rr asked for: {s}"
    );
    if let Some(out) = promtool(&["check", "metrics"], s) {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // Stored as a stream document of the pair.
    std::thread::sleep(Duration::from_millis(1500));
    let out = stackmeter().args(["runs", "--db", db, "--json"]).output().unwrap();
    let runs = String::from_utf8_lossy(&out.stdout);
    assert!(runs.contains("\"sa->srv\"") && runs.contains("\"stream\""), "{runs}");
}

#[test]
fn agent_summaries_go_to_postgresql_and_to_the_spool_when_it_cannot_be_reached() {
    let pg = match stackmeter_store::testing::TempPostgres::shared() {
        Ok(pg) => pg,
        Err(why) => return missing("agent on PostgreSQL", &format!("no PostgreSQL server: {why}")),
    };
    let url = pg.database("agent_mesh").unwrap();
    let dir = Dir::new("pg");
    let (a_port, b_port) = (free_port(), free_port());
    let b_peers = dir.file("b.peers", &format!("pa 127.0.0.1:{a_port}\n"));
    let a_peers = dir.file("a.peers", &format!("pb 127.0.0.1:{b_port}\n"));
    let every = ["--store-every-s", "1"];
    let b = Agent::start(
        "pb",
        b_port,
        free_port(),
        &b_peers,
        &[&["--db", url.as_str()][..], &every].concat(),
    );
    b.wait_ready();
    // a's database is a PostgreSQL server that is not there: its summaries
    // go to the spool of its HOME, with one line saying how to send them.
    let down = format!("postgres://stackmeter@127.0.0.1:{}/nowhere", free_port());
    let home = dir.0.join("home-a");
    let extra = [&["--db", down.as_str()][..], &every].concat();
    let a = Agent::start_in(Some(&home), "pa", a_port, free_port(), &a_peers, &extra);
    a.wait_ready();
    let spooled = a.expect_log(&["stackmeter store flush"]);
    assert!(spooled[0].contains("warn:"), "{spooled:?}");
    let spool = home.join(".local/share/stackmeter/spool");
    let files = std::fs::read_dir(&spool).map_or(0, Iterator::count);
    assert!(files > 0, "a's spool holds its summaries: {}", spool.display());
    std::thread::sleep(Duration::from_millis(1500));
    let out = stackmeter().args(["runs", "--db", &url, "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = String::from_utf8_lossy(&out.stdout);
    assert!(runs.contains("\"pb->pa\""), "b's summaries in PostgreSQL: {runs}");
    assert!(!runs.contains("\"pa->pb\""), "a's went to its spool: {runs}");
}

#[test]
fn agent_stream_probes_wait_for_the_fleets_locks_in_postgresql() {
    let pg = match stackmeter_store::testing::TempPostgres::shared() {
        Ok(pg) => pg,
        Err(why) => return missing("agent stream locks", &format!("no PostgreSQL server: {why}")),
    };
    let url = pg.database("agent_locks").unwrap();
    let at = stackmeter_store::Location::parse(std::ffi::OsStr::new(&url)).unwrap();
    let srv = crate::Server::start(&[]);
    let dir = Dir::new("locks");
    let peers = dir.file("l.peers", &format!("srv {}\n", srv.target()));
    // Node srv is in a test of fleet lab, as a fleet run's throughput test
    // would hold it.
    let key = stackmeter_fleet::lock_key("lab", "srv");
    let held = stackmeter_store::Locks::acquire(&at, &[key], Duration::from_secs(5)).unwrap();
    let extra = [
        "--tests",
        "stream",
        "--stream-every-s",
        "5",
        "--stream-locks",
        "lab",
        "--db",
        &url,
    ];
    let a = Agent::start("la", free_port(), free_port(), &peers, &extra);
    a.wait_ready();
    let busy = a.expect_log(&["stream to srv: a node of it is in another test"]);
    assert_eq!(busy.len(), 1);
    let pair = [("source", "la"), ("target", "srv")];
    assert_eq!(value(&a.scrape(), "stackmeter_stream_tests_total", &pair), None);
    // Released: the next try runs the probe.
    drop(held);
    until(std::slice::from_ref(&a), 30, |_, s| {
        value(s, "stackmeter_stream_tests_total", &pair).is_some_and(|n| n >= 1.0)
    });
    // Without a PostgreSQL store the locks are a usage error.
    let out = stackmeter()
        .args([
            "agent",
            "--listen",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
            "--tests",
            "stream",
        ])
        .args(["--stream-locks", "lab", "--db", dir.0.join("x.db").to_str().unwrap()])
        .arg("--peers")
        .arg(&peers)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--stream-locks lab: the locks need a PostgreSQL store"),
        "{err}"
    );
}

#[test]
fn agents_with_a_shared_secret_measure_each_other_and_turn_away_one_without() {
    let key = crate::auth::secret_file("agent-mesh", "the mesh's own secret", 0o600);
    let dir = Dir::new("secret");
    let (a_port, b_port) = (free_port(), free_port());
    let b_peers = dir.file("b.peers", &format!("sa 127.0.0.1:{a_port}\n"));
    let a_peers = dir.file("a.peers", &format!("sb 127.0.0.1:{b_port}\n"));
    let b = Agent::start(
        "sb",
        b_port,
        free_port(),
        &b_peers,
        &["--no-store", "--secret-file", &key],
    );
    b.wait_ready();
    b.expect_log(&["authentication on"]);
    let a = Agent::start(
        "sa",
        a_port,
        free_port(),
        &a_peers,
        &["--no-store", "--secret-file", &key],
    );
    a.wait_ready();
    // One without the secret is refused by b (rr) and not answered (ping).
    let c_peers = dir.file("c.peers", &format!("sb 127.0.0.1:{b_port}\n"));
    let c = Agent::start("sc", free_port(), free_port(), &c_peers, &["--no-store"]);
    c.wait_ready();
    let pair = |src: &str, k: &'static str| {
        [
            ("source", src.to_string()),
            ("target", "sb".to_string()),
            ("probe", k.to_string()),
        ]
    };
    let get = |s: &str, name: &str, l: &[(&str, String); 3]| {
        let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
        value(s, name, &l)
    };
    let s = &until(std::slice::from_ref(&a), 20, |_, s| {
        get(s, "stackmeter_rtt_seconds_count", &pair("sa", "ping")).is_some_and(|n| n >= 5.0)
            && get(s, "stackmeter_rtt_seconds_count", &pair("sa", "rr")).is_some_and(|n| n >= 5.0)
    })[0];
    assert_eq!(
        get(s, "stackmeter_probes_lost_total", &pair("sa", "rr")),
        Some(0.0),
        "{s}"
    );
    c.expect_log(&["peer sb", "rr: ", "refused the session: authentication"]);
    let cs = c.scrape();
    assert_eq!(
        get(&cs, "stackmeter_rtt_seconds_count", &pair("sc", "rr")),
        Some(0.0),
        "{cs}"
    );
    assert_eq!(
        get(&cs, "stackmeter_rtt_seconds_count", &pair("sc", "ping")),
        Some(0.0),
        "{cs}"
    );
}

#[test]
fn agent_failures_are_one_line_each() {
    let dir = Dir::new("errors");
    // A bad peers line: exit 2, the file and the line number.
    let bad = dir.file("bad.peers", "# lab\nb 127.0.0.1:7001\n\nboard1:24680\n");
    let out = stackmeter()
        .args([
            "agent",
            "--listen",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
            "--no-store",
        ])
        .arg("--peers")
        .arg(&bad)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.peers: line 4: 'board1:24680': board1:24680 is not an IP address and port"),
        "{err}"
    );
    // The metrics port in use: exit 1, naming it.
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = busy.local_addr().unwrap().to_string();
    let good = dir.file("good.peers", "");
    let out = stackmeter()
        .args(["agent", "--listen", "127.0.0.1:0", "--metrics", &at, "--no-store"])
        .arg("--peers")
        .arg(&good)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("--metrics {at}: cannot listen")), "{err}");
    // A name that does not resolve: one warning, and the agent serves on.
    let metrics: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let mut child = Kill(
        stackmeter()
            .args([
                "agent",
                "--listen",
                "127.0.0.1:0",
                "--metrics",
                &metrics.to_string(),
                "--no-store",
            ])
            .args(["--peers-dns", "no-such-peer.invalid:24680", "--name", "lonely"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stderr.take().unwrap()).lines();
    let warn = loop {
        // The resolver gives up within its own timeouts; the line comes then.
        let l = lines.next().expect("a line").unwrap();
        if l.contains("does not resolve") {
            break l;
        }
    };
    assert!(
        warn.contains("warn: --peers-dns no-such-peer.invalid:24680: the name does not resolve"),
        "{warn}"
    );
    let (head, body) = http_get(metrics, "/metrics", None);
    assert!(head.contains(" 200 "), "{head}");
    assert!(body.contains("stackmeter_peers{source=\"lonely\"} 0"), "{body}");
    // SIGTERM stops it cleanly, exit 0.
    let _ = Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status();
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l.ends_with("info: stopped")), "{rest:#?}");
    // A store that cannot be written: one warning per period, and the
    // probes and metrics go on.
    let peers = dir.file("one.peers", &format!("nobody 127.0.0.1:{}\n", free_port()));
    let blocked = dir.file("not-a-folder", "");
    let db = blocked.join("results.db");
    let a = Agent::start(
        "st",
        free_port(),
        free_port(),
        &peers,
        &["--db", db.to_str().unwrap(), "--store-every-s", "1"],
    );
    a.wait_ready();
    let warn = a.expect_log(&["warn: results store: ", "summaries of this period not stored"]);
    assert!(warn[0].contains("not-a-folder"), "{warn:?}");
    let s = a.scrape();
    assert!(
        value(
            &s,
            "stackmeter_probes_sent_total",
            &[("target", "nobody"), ("probe", "ping")]
        )
        .unwrap()
            > 0.0
    );
    drop(a);
    // A --peers-dns without a port is a usage error.
    let out = stackmeter()
        .args([
            "agent",
            "--listen",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
            "--peers-dns",
            "mesh",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--peers-dns mesh: expected NAME:PORT"));
}

/// A child process killed on drop (a failed assertion leaves none behind).
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The repository's deploy/ folder.
fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy").join(path)
}

/// The relabel rules of the shipped config's Kubernetes job: the end of
/// the file, from its `relabel_configs:` on.
fn kubernetes_relabel_rules() -> String {
    let text = std::fs::read_to_string(deploy("prometheus/scrape.yml")).unwrap();
    let job = text
        .find("job_name: stackmeter-kubernetes")
        .expect("the Kubernetes job");
    let at = job + text[job..].find("    relabel_configs:\n").expect("its relabel rules");
    text[at..].to_string()
}

/// The Kubernetes discovery block of the shipped config.
const POD_DISCOVERY: &str = "    kubernetes_sd_configs:\n      - role: pod\n";

#[test]
fn agent_scrape_config_passes_promtool() {
    let text = std::fs::read_to_string(deploy("prometheus/scrape.yml")).unwrap();
    assert_eq!(text.matches(POD_DISCOVERY).count(), 1, "one pod-role discovery block");
    assert!(text.contains("__meta_kubernetes_pod_label_app_kubernetes_io_name"));
    assert!(text.contains("static_configs:"), "the lab job");
    // Debian's Prometheus is built without Kubernetes discovery (its
    // NEWS.Debian: the client library's dependencies), so its promtool
    // rejects the kubernetes_sd_configs key itself. Everything else, the
    // lab job and every relabel rule of the Kubernetes job included, is
    // checked with that block swapped for file discovery.
    let dir = Dir::new("scrape-config");
    dir.file("pods.json", "[]");
    let swapped = text.replace(POD_DISCOVERY, "    file_sd_configs:\n      - files: [pods.json]\n");
    let path = dir.file("scrape.yml", &swapped);
    let Some(out) = promtool(&["check", "config", path.to_str().unwrap()], "") else {
        return missing("scrape config", "promtool cannot run (Debian package prometheus)");
    };
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(said.contains("SUCCESS") && !said.contains("WARNING"), "{said}");
}

#[test]
fn agent_dashboard_queries_only_metrics_the_agent_exports() {
    let text = std::fs::read_to_string(deploy("grafana/stackmeter-mesh.json")).unwrap();
    let dash: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    // Every series name an agent exports (histograms by their three
    // sample names), from the agent's own registry with every family on
    // and a series in each (a family without one prints nothing).
    let m = stackmeter_agent::Metrics::new("a", "n", "v", true);
    m.add_pair("b", &["ping", "rr"]);
    m.set_peers(1);
    m.one_way(
        "b",
        &stackmeter_agent::window::OneWay {
            up_ns: 1.0,
            down_ns: 1.0,
            offset_ns: 0.0,
            bound_ns: 1.0,
        },
    );
    m.stream("b", Some(1.0));
    m.stream("b", None);
    let exposition = m.encode(stackmeter_agent::Format::Text);
    let mut names: Vec<String> = Vec::new();
    for l in exposition.lines().filter_map(|l| l.strip_prefix("# TYPE ")) {
        let (name, kind) = l.split_once(' ').unwrap();
        if kind == "histogram" {
            names.extend(["_bucket", "_sum", "_count"].map(|s| format!("{name}{s}")));
        } else {
            names.push(name.to_string());
        }
    }
    let mut exprs = Vec::new();
    collect_exprs(&dash, &mut exprs);
    assert!(exprs.len() >= 4, "{exprs:?}");
    for e in &exprs {
        let used = metric_names(e);
        assert!(!used.is_empty(), "no stackmeter_ metric in {e}");
        for n in used {
            assert!(
                names.contains(&n),
                "{n} (in {e}) is not exported; the agent exports {names:?}"
            );
        }
    }
    // The pair heatmap: source rows by target columns, of the RTT p99.
    let panels = dash["panels"].as_array().unwrap();
    let matrix = panels
        .iter()
        .find(|p| {
            p["transformations"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["id"] == "groupingToMatrix"))
        })
        .expect("a source-by-target matrix panel");
    let t = &matrix["transformations"][0]["options"];
    assert_eq!(
        (t["rowField"].as_str(), t["columnField"].as_str()),
        (Some("source"), Some("target"))
    );
    assert!(matrix.to_string().contains("histogram_quantile(0.99"));
    assert!(exprs.iter().any(|e| e.contains("stackmeter_probes_lost_total")));
}

fn collect_exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr", Value::String(s)) => out.push(s.clone()),
                    // A template variable's query of label values.
                    ("query" | "definition", Value::String(s)) if s.contains("stackmeter_") => out.push(s.clone()),
                    _ => collect_exprs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_exprs(x, out)),
        _ => {}
    }
}

/// The `stackmeter_...` identifiers in a PromQL expression.
fn metric_names(expr: &str) -> Vec<String> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(at) = expr[i..].find("stackmeter_") {
        let start = i + at;
        let before_ok = start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
        let mut end = start;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_' || b[end] == b':') {
            end += 1;
        }
        if before_ok {
            out.push(expr[start..end].to_string());
        }
        i = end;
    }
    out
}
