//! The fleet on a real Kubernetes cluster, made on this machine by
//! scripts/k8s-local: three nodes (network namespaces with their own
//! containerd, kubelet and kube-proxy), the control plane as host
//! processes, CoreDNS, and the image of this test's binary imported into
//! every node.
//!
//! One cluster for everything that needs one (a bring-up is the slow
//! part): the render of `fleet k8s` applied as docs/fleet.md says, with
//! the store's DSN and a shared secret from Secrets, against a real
//! PostgreSQL on the cluster's bridge; the pods where the plan puts them;
//! every Job complete, its JSON lines in `kubectl logs`, its results in
//! PostgreSQL (`fleet report`, `fleet compare`); Prometheus in the
//! cluster with deploy/prometheus/scrape.yml as it is (Kubernetes pod
//! discovery) finding every pair of the agents; the Helm chart installed
//! beside it; Pod Security admission's answers in baseline and restricted
//! namespaces; and `scripts/k8s-local down` leaving nothing behind.

use super::agent::{prometheus_api, prometheus_query};
use super::k8s::{run_for, text};
use crate::{is_root, missing, stackmeter, stderr};
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const K8S_LOCAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/k8s-local");
const SCRAPE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/prometheus/scrape.yml");
const CHART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/helm/stackmeter");
/// scripts/k8s-local's address on its bridge (the nodes' gateway).
const HOST: [u8; 4] = [198, 19, 100, 1];
const NODES: usize = 3;
/// The shared secret the responders ask for.
const MESH_SECRET: &str = "k8s-cluster-test-secret";

/// A cluster that `scripts/k8s-local up` made; taken down on drop when
/// the test did not take it down itself (a failed assertion).
struct Cluster {
    kubeconfig: String,
    kubectl: String,
    image: String,
    dir: PathBuf,
    up: bool,
}

impl Cluster {
    /// `scripts/k8s-local up --nodes N --bin BIN` (it builds the pieces
    /// first when they are not cached: that can take 15 minutes).
    fn up(nodes: usize) -> Result<Cluster, String> {
        let started = Instant::now();
        let bin = env!("CARGO_BIN_EXE_stackmeter");
        let o = run_for(
            Command::new(K8S_LOCAL).args(["up", "--nodes", &nodes.to_string(), "--bin", bin]),
            2400,
        )?;
        if !o.status.success() {
            return Err(format!("scripts/k8s-local up: {}", text(&o.stderr)));
        }
        let out = text(&o.stdout);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "up prints three lines: {out}");
        let field = |k: &str| -> String {
            lines
                .iter()
                .find_map(|l| l.strip_prefix(&format!("{k}=")))
                .unwrap_or_else(|| panic!("no {k}= line: {out}"))
                .to_string()
        };
        eprintln!(
            "scripts/k8s-local up --nodes {nodes}: {:.0} s\n{}",
            started.elapsed().as_secs_f64(),
            text(&o.stderr).trim()
        );
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("k8s-cluster-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Ok(Cluster {
            kubeconfig: field("KUBECONFIG"),
            kubectl: field("KUBECTL"),
            image: field("IMAGE"),
            dir,
            up: true,
        })
    }

    /// kubectl ARGS, bounded to two minutes.
    fn kubectl(&self, args: &[&str]) -> Output {
        run_for(
            Command::new(&self.kubectl)
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(args),
            120,
        )
        .unwrap()
    }

    /// kubectl ARGS, which must succeed: stdout.
    fn ok(&self, args: &[&str]) -> String {
        let o = self.kubectl(args);
        assert!(
            o.status.success(),
            "kubectl {}: {}{}",
            args.join(" "),
            text(&o.stdout),
            text(&o.stderr)
        );
        text(&o.stdout)
    }

    /// kubectl ARGS -o json, parsed.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&all)).unwrap()
    }

    /// Waits up to five minutes for `what` (`daemonset/NAME`,
    /// `deployment/NAME`) in namespace `ns` to be rolled out. When it is
    /// not, fails with what the pods and the namespace's events say (a
    /// first pod can wait minutes on a busy fresh machine; why it waited
    /// is what a reader of the failure needs).
    fn rollout(&self, ns: &str, what: &str) {
        let started = Instant::now();
        let wait = run_for(
            Command::new(&self.kubectl)
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(["-n", ns, "rollout", "status", what, "--timeout=300s"]),
            330,
        );
        match wait {
            Ok(o) if o.status.success() => {
                eprintln!("{what} rolled out ({:.0} s)", started.elapsed().as_secs_f64());
            }
            other => {
                let why = match other {
                    Ok(o) => format!("{}{}", text(&o.stdout), text(&o.stderr)),
                    Err(e) => e,
                };
                let pods = self.kubectl(&["-n", ns, "get", "pods", "-o", "wide"]);
                let events = self.kubectl(&["-n", ns, "get", "events", "--sort-by=.lastTimestamp"]);
                panic!(
                    "{what} not rolled out: {why}\n$ kubectl get pods -o wide\n{}\n$ kubectl get events\n{}",
                    text(&pods.stdout),
                    text(&events.stdout)
                );
            }
        }
    }

    /// `kubectl apply -f -` of `yaml` (ARGS before it): stdout and stderr.
    fn apply(&self, yaml: &str, args: &[&str]) -> Output {
        let file = self.dir.join(format!("apply-{}.yaml", yaml.len()));
        std::fs::write(&file, yaml).unwrap();
        let mut all = vec!["apply", "-f", file.to_str().unwrap()];
        all.extend(args);
        self.kubectl(&all)
    }

    /// `scripts/k8s-local down`: Ok(its report) when nothing is left.
    fn down(&mut self) -> Result<String, String> {
        self.up = false;
        let started = Instant::now();
        let o = run_for(Command::new(K8S_LOCAL).arg("down"), 600)?;
        let report = format!("{}{}", text(&o.stdout), text(&o.stderr));
        eprintln!(
            "scripts/k8s-local down: {:.0} s\n{}",
            started.elapsed().as_secs_f64(),
            report.trim()
        );
        match o.status.success() {
            true => Ok(report),
            false => Err(report),
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.up {
            let _ = self.down();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Polls `what` every second for at most `secs`; its last answer when it
/// said yes, a panic naming `about` when time ran out.
fn until<T>(secs: u64, about: &str, mut what: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = what() {
            return v;
        }
        assert!(Instant::now() < deadline, "{about}: not within {secs} s");
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The fleet: every pair of the three nodes both ways, at the nodes'
/// addresses (the responders' hostPort), five repetitions (enough for
/// `fleet compare`'s verdicts), a throughput test among them (the
/// exclusive class, kept apart across Jobs by PostgreSQL's locks).
fn fleet_toml(nodes: &[(String, String)]) -> String {
    let mut t = String::from(
        "name = \"local\"\nrepeat = 5\n\
         [[step]]\nname = \"latency\"\ntest = \"rr\"\nsizes = \"1:1\"\niterations = 100\nwarmup = 10\n\
         [[step]]\nname = \"echo\"\ntest = \"ping\"\ncount = 100\n\
         [[step]]\nname = \"bulk\"\ntest = \"stream\"\ntime = 1\n",
    );
    for (name, addr) in nodes {
        t += &format!("[[node]]\nname = \"{name}\"\naddress = \"{addr}\"\n");
    }
    t
}

/// The rendered manifests of `file` for run `run` (`extra` flags added).
fn render(c: &Cluster, file: &Path, run: &str, extra: &[&str]) -> String {
    let out = stackmeter()
        .args(["fleet", "k8s"])
        .arg(file)
        .args(["--run", run, "--image", &c.image, "--pull-policy", "Never"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "fleet k8s: {}", stderr(&out));
    text(&out.stdout)
}

/// Applies the render in the documented two steps and waits for every Job
/// of `run` to complete (a failed one fails the test with its log).
fn run_fleet(c: &Cluster, yaml: &str, run: &str, jobs: usize) {
    let o = c.apply(yaml, &["-l", "app.kubernetes.io/component!=client"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    c.rollout("stackmeter", "daemonset/stackmeter-responder");
    let o = c.apply(yaml, &["-l", "app.kubernetes.io/component=client"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let selector = format!("stackmeter/run={run}");
    let started = Instant::now();
    until(600, &format!("the Jobs of run {run}"), || {
        let list = c.json(&["-n", "stackmeter", "get", "jobs", "-l", &selector]);
        let items = list["items"].as_array().unwrap().clone();
        assert_eq!(items.len(), jobs, "one Job per client node");
        for j in &items {
            if j["status"]["failed"].as_u64().unwrap_or(0) > 0 {
                let name = j["metadata"]["name"].as_str().unwrap();
                let log = c.kubectl(&["-n", "stackmeter", "logs", &format!("job/{name}")]);
                panic!("Job {name} failed: {}{}", text(&log.stdout), text(&log.stderr));
            }
        }
        items
            .iter()
            .all(|j| j["status"]["succeeded"].as_u64() == Some(1))
            .then_some(())
    });
    eprintln!(
        "run {run}: {jobs} Jobs complete in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
#[ignore = "run alone by scripts/test, after the other tests"]
fn a_local_cluster_runs_the_fleet_the_chart_and_prometheus_and_goes_away_without_a_trace() {
    let test = "a_local_cluster_runs_the_fleet";
    // scripts/test could not build the cluster's pieces, or was asked not to.
    if let Ok(why) = std::env::var("STACKMETER_MISSING_K8S") {
        return missing(test, &why);
    }
    if !is_root() {
        return missing(test, "scripts/k8s-local needs root (namespaces, containerd, kubelets)");
    }
    let status = run_for(Command::new(K8S_LOCAL).arg("status"), 60).unwrap();
    if !text(&status.stdout).starts_with("no cluster is up") {
        return missing(
            test,
            &format!(
                "a local cluster (or its remains) is on this machine already; scripts/k8s-local down removes it: {}",
                text(&status.stdout)
            ),
        );
    }
    let mut cluster = match Cluster::up(NODES) {
        Ok(c) => c,
        Err(why) => return missing(test, &why),
    };
    let c = &cluster;
    let host = IpAddr::from(HOST);
    let pg = match stackmeter_store::testing::TempPostgres::start_on(&[host], &["198.19.0.0/16"]) {
        Ok(pg) => pg,
        Err(e) => return missing(test, &format!("no PostgreSQL on {host}: {e}")),
    };
    pg.database("k8s_local").unwrap();
    let dsn = pg.url_at(host, "k8s_local");

    // The nodes, as the cluster names them, and their addresses.
    let nodes_json = c.json(&["get", "nodes"]);
    let mut nodes: Vec<(String, String)> = nodes_json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let addr = n["status"]["addresses"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["type"] == "InternalIP")
                .unwrap()["address"]
                .as_str()
                .unwrap()
                .to_string();
            (n["metadata"]["name"].as_str().unwrap().to_string(), addr)
        })
        .collect();
    nodes.sort();
    assert_eq!(nodes.len(), NODES, "{nodes:?}");
    eprintln!("$ kubectl get nodes -o wide\n{}", c.ok(&["get", "nodes", "-o", "wide"]));

    // Step 2 of docs/fleet.md: the namespace and the Secrets.
    c.ok(&["create", "namespace", "stackmeter"]);
    c.ok(&[
        "-n",
        "stackmeter",
        "create",
        "secret",
        "generic",
        "stackmeter-db",
        &format!("--from-literal=dsn={dsn}"),
    ]);
    c.ok(&[
        "-n",
        "stackmeter",
        "create",
        "secret",
        "generic",
        "stackmeter-mesh",
        &format!("--from-literal=secret={MESH_SECRET}"),
    ]);
    let file = c.dir.join("fleet.toml");
    std::fs::write(&file, fleet_toml(&nodes)).unwrap();
    // The last node is tainted: only pods that tolerate it go there, and
    // the fleet's do (--toleration), responder and Job alike.
    let tainted = nodes[NODES - 1].0.clone();
    c.ok(&["taint", "nodes", &tainted, "stackmeter-test=dedicated:NoSchedule"]);
    let fleet_flags = [
        "--secret",
        "stackmeter-mesh",
        "--toleration",
        "stackmeter-test=dedicated:NoSchedule",
    ];
    let yaml_a = render(c, &file, "local-a", &fleet_flags);
    run_fleet(c, &yaml_a, "local-a", NODES);

    // The responders ask for the secret: without it a client is refused,
    // with it (the Secret's text in STACKMETER_SECRET, as the pods have
    // it) it measures. From this host, through node 1's hostPort.
    let target = format!("{}:24680", nodes[0].1);
    let without = stackmeter()
        .args(["rr", &target, "--no-store", "-n", "20", "--timeout-ms", "3000"])
        .env_remove("STACKMETER_SECRET")
        .output()
        .unwrap();
    assert!(!without.status.success(), "a client without the secret measured");
    eprintln!("without the secret: {}", stderr(&without).trim());
    let with = stackmeter()
        .args(["rr", &target, "--no-store", "-n", "20", "--timeout-ms", "3000"])
        .env("STACKMETER_SECRET", MESH_SECRET)
        .output()
        .unwrap();
    assert!(with.status.success(), "with the secret: {}", stderr(&with));

    // The pods are where the plan says: a responder on every node (the
    // tainted one included), each Job on its own node.
    let pods = c.json(&["-n", "stackmeter", "get", "pods"]);
    let pods = pods["items"].as_array().unwrap();
    let mut responders: Vec<&str> = pods
        .iter()
        .filter(|p| p["metadata"]["labels"]["app.kubernetes.io/component"] == "responder")
        .map(|p| p["spec"]["nodeName"].as_str().unwrap())
        .collect();
    responders.sort_unstable();
    let names: Vec<&str> = nodes.iter().map(|n| n.0.as_str()).collect();
    assert_eq!(responders, names, "one responder per node");
    let clients: Vec<&Value> = pods
        .iter()
        .filter(|p| p["metadata"]["labels"]["app.kubernetes.io/component"] == "client")
        .collect();
    assert_eq!(clients.len(), NODES);
    for p in &clients {
        assert_eq!(
            p["spec"]["nodeName"], p["metadata"]["labels"]["stackmeter/node"],
            "a Job's pod runs on the node it measures from"
        );
    }
    eprintln!(
        "$ kubectl -n stackmeter get pods -o wide\n{}",
        c.ok(&["-n", "stackmeter", "get", "pods", "-o", "wide"])
    );

    // Every test's JSON line is in its Job's log: 2 targets x 3 steps x 5.
    for (node, _) in &nodes {
        let job = clients
            .iter()
            .find(|p| p["metadata"]["labels"]["stackmeter/node"] == node.as_str())
            .unwrap()["metadata"]["labels"]["job-name"]
            .as_str()
            .unwrap()
            .to_string();
        // The container's log holds both streams: stderr's lines (where
        // the locks live, warnings) beside stdout's JSON lines.
        let log = c.ok(&["-n", "stackmeter", "logs", &format!("job/{job}")]);
        assert!(
            log.lines()
                .next()
                .is_some_and(|l| l.contains("PostgreSQL advisory locks")),
            "{job}: the exclusive class is kept by the store's locks: {log}"
        );
        let lines: Vec<Value> = log
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_eq!(lines.len(), (NODES - 1) * 3 * 5, "{job}: {log}");
        for l in &lines {
            assert_eq!(l["client"], node.as_str());
            assert_eq!(l["run"], "local-a");
            assert!(l["document"]["test"].is_string(), "{l}");
        }
    }

    // A second run, then the store's report and comparison.
    c.ok(&["-n", "stackmeter", "delete", "jobs", "-l", "stackmeter/run=local-a"]);
    let yaml_b = render(c, &file, "local-b", &fleet_flags);
    run_fleet(c, &yaml_b, "local-b", NODES);
    let store = |args: &[&str]| -> Value {
        let out = stackmeter().args(args).args(["--db", &dsn, "--json"]).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let report = store(&["fleet", "report", "local-a"]);
    let text_report = report.to_string();
    for (a, _) in &nodes {
        for (b, _) in &nodes {
            if a != b {
                assert!(
                    text_report.contains(&format!("\"client\":\"{a}\",\"target\":\"{b}\""))
                        || text_report.contains(&format!("\"target\":\"{b}\",\"client\":\"{a}\"")),
                    "pair {a}->{b} in the report"
                );
            }
        }
    }
    let cmp = store(&["fleet", "compare", "local-a", "local-b"]);
    eprintln!(
        "fleet compare local-a local-b: {} flagged, {} better",
        cmp["flagged"].as_array().map_or(0, Vec::len),
        cmp["improved"].as_array().map_or(0, Vec::len)
    );
    let out = stackmeter()
        .args(["fleet", "report", "local-a", "--db", &dsn])
        .output()
        .unwrap();
    eprintln!("$ stackmeter fleet report local-a\n{}", text(&out.stdout));

    // The chart tolerates nothing by default; the taint goes first.
    c.ok(&["taint", "nodes", &tainted, "stackmeter-test-"]);

    // The Helm chart's agent mesh beside the fleet, with its own secret,
    // in a namespace that enforces Pod Security's restricted level.
    let helm = Path::new(&c.kubectl).with_file_name("helm");
    let lint = run_for(Command::new(&helm).args(["lint", "--strict", CHART]), 120).unwrap();
    assert!(
        lint.status.success(),
        "helm lint: {}{}",
        text(&lint.stdout),
        text(&lint.stderr)
    );
    c.ok(&["create", "namespace", "mesh"]);
    c.ok(&[
        "label",
        "namespace",
        "mesh",
        "pod-security.kubernetes.io/enforce=restricted",
    ]);
    let (repo, tag) = c.image.rsplit_once(':').unwrap();
    let install = run_for(
        Command::new(&helm)
            .args(["install", "mesh", CHART, "--namespace", "mesh"])
            .args(["--kubeconfig", &c.kubeconfig])
            .args(["--set", &format!("image.repository={repo}")])
            .args(["--set", &format!("image.tag={tag}")])
            .args(["--set", "image.pullPolicy=Never"])
            .args(["--set", "secret.value=chart-secret"])
            .args(["--wait", "--timeout", "3m"]),
        240,
    )
    .unwrap();
    assert!(
        install.status.success(),
        "helm install: {}{}",
        text(&install.stdout),
        text(&install.stderr)
    );
    let chart_pods = c.json(&["-n", "mesh", "get", "pods", "-l", "app.kubernetes.io/instance=mesh"]);
    assert_eq!(chart_pods["items"].as_array().unwrap().len(), NODES);

    // Prometheus in the cluster, reading deploy/prometheus/scrape.yml as
    // it is: Kubernetes pod discovery, with the RBAC docs/fleet.md names.
    c.ok(&["create", "namespace", "monitoring"]);
    c.ok(&[
        "-n",
        "monitoring",
        "create",
        "configmap",
        "prometheus",
        &format!("--from-file=prometheus.yml={SCRAPE}"),
    ]);
    let prom_image = c.image.replace("/stackmeter:local", "/prometheus:0.316.0");
    let o = c.apply(&prometheus_yaml(&prom_image), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    c.rollout("monitoring", "deployment/prometheus");
    let prom_ip = c.ok(&[
        "-n",
        "monitoring",
        "get",
        "pods",
        "-l",
        "app=prometheus",
        "-o",
        "jsonpath={.items[0].status.podIP}",
    ]);
    let web: SocketAddr = format!("{prom_ip}:9090").parse().unwrap();
    until(60, "Prometheus answers", || {
        std::net::TcpStream::connect_timeout(&web, Duration::from_secs(1)).ok()
    });
    // Each agent probes the other two: six ping pair series per mesh.
    for ns in ["stackmeter", "mesh"] {
        let q = format!("stackmeter_probes_sent_total{{probe=\"ping\",namespace=\"{ns}\"}}");
        let series = until(120, &format!("{ns}'s pair series in Prometheus"), || {
            let r = prometheus_query(web, &q);
            (r.len() == NODES * (NODES - 1)).then_some(r)
        });
        for s in &series {
            let m = &s["metric"];
            assert_ne!(m["source"], m["target"], "{s}");
            assert!(m["pod"].as_str().is_some_and(|p| !p.is_empty()), "{s}");
        }
        eprintln!("prometheus: {} ping pair series from namespace {ns}", series.len());
    }
    let targets = prometheus_api(web, "/api/v1/targets?state=active");
    let k8s_targets: Vec<&Value> = targets["activeTargets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["labels"]["job"] == "stackmeter-kubernetes")
        .collect();
    assert_eq!(k8s_targets.len(), 2 * NODES, "the agents' pods only: {targets}");
    assert!(k8s_targets.iter().all(|t| t["health"] == "up"), "{targets}");

    // Pod Security admission: the same render in namespaces that enforce
    // each level. What the API server refuses, in its own words.
    let refused = admission(c, &file);
    eprintln!("admission:\n{refused}");

    drop(pg);
    let report = cluster
        .down()
        .unwrap_or_else(|left| panic!("down left things behind: {left}"));
    assert!(report.contains("nothing left"), "{report}");
}

/// Prometheus as a Deployment with its ConfigMap `prometheus`, allowed to
/// list and watch pods.
fn prometheus_yaml(image: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: ServiceAccount
metadata: {{name: prometheus, namespace: monitoring}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: stackmeter-test-prometheus}}
rules:
  - apiGroups: [""]
    resources: [pods]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: stackmeter-test-prometheus}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: stackmeter-test-prometheus}}
subjects: [{{kind: ServiceAccount, name: prometheus, namespace: monitoring}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: prometheus, namespace: monitoring}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: prometheus}}}}
  template:
    metadata: {{labels: {{app: prometheus}}}}
    spec:
      serviceAccountName: prometheus
      securityContext: {{runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, fsGroup: 65534, seccompProfile: {{type: RuntimeDefault}}}}
      containers:
        - name: prometheus
          image: {image}
          imagePullPolicy: Never
          args: [--config.file=/etc/prometheus/prometheus.yml, --storage.tsdb.path=/prometheus, --web.listen-address=:9090]
          ports: [{{containerPort: 9090, name: web}}]
          readinessProbe: {{httpGet: {{path: /-/ready, port: 9090}}, periodSeconds: 2}}
          securityContext: {{allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {{drop: [ALL]}}}}
          volumeMounts:
            - {{name: config, mountPath: /etc/prometheus}}
            - {{name: data, mountPath: /prometheus}}
      volumes:
        - {{name: config, configMap: {{name: prometheus}}}}
        - {{name: data, emptyDir: {{}}}}
"#
    )
}

/// Applies the render (without its Namespace) into namespaces that enforce
/// Pod Security's privileged, baseline and restricted levels, with and
/// without --host-network; checks what each refuses and returns a table of
/// it, the API server's words included.
fn admission(c: &Cluster, file: &Path) -> String {
    let mut table = String::new();
    for level in ["privileged", "baseline", "restricted"] {
        for host_network in [false, true] {
            let ns = format!("psa-{level}{}", if host_network { "-hostnet" } else { "" });
            c.ok(&["create", "namespace", &ns]);
            c.ok(&[
                "label",
                "namespace",
                &ns,
                &format!("pod-security.kubernetes.io/enforce={level}"),
            ]);
            let mut extra = vec!["--namespace", ns.as_str(), "--no-db"];
            if host_network {
                extra.push("--host-network");
            }
            let list: Value =
                serde_json::from_str(&render(c, file, "psa", &[&extra[..], &["--json"]].concat())).unwrap();
            let items: Vec<Value> = list["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|o| o["kind"] != "Namespace")
                .cloned()
                .collect();
            let body = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
            let o = c.apply(&body, &[]);
            assert!(o.status.success(), "apply into {ns}: {}", text(&o.stderr));
            let warnings: Vec<String> = text(&o.stderr)
                .lines()
                .filter(|l| l.starts_with("Warning:"))
                .map(str::to_string)
                .collect();
            // What the controllers were told when they made the pods.
            let (ds_refused, job_refused) = until(60, &format!("{ns}: pods made or refused"), || {
                let ev = c.json(&["-n", &ns, "get", "events", "--field-selector", "reason=FailedCreate"]);
                let refusals: Vec<(String, String)> = ev["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| {
                        (
                            e["involvedObject"]["kind"].as_str().unwrap_or("").to_string(),
                            e["message"].as_str().unwrap_or("").to_string(),
                        )
                    })
                    .collect();
                let pods = c.json(&["-n", &ns, "get", "pods"]);
                let made: Vec<String> = pods["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| {
                        p["metadata"]["labels"]["app.kubernetes.io/component"]
                            .as_str()
                            .unwrap_or("")
                            .to_string()
                    })
                    .collect();
                let ds = refusals.iter().find(|r| r.0 == "DaemonSet").map(|r| r.1.clone());
                let job = refusals.iter().find(|r| r.0 == "Job").map(|r| r.1.clone());
                let ds_done = ds.is_some() || made.iter().filter(|m| *m == "responder").count() == NODES;
                let job_done = job.is_some() || made.iter().filter(|m| *m == "client").count() == NODES;
                (ds_done && job_done).then_some((ds, job))
            });
            let expect_ds_refused = level != "privileged";
            let expect_job_refused = level != "privileged" && host_network;
            assert_eq!(ds_refused.is_some(), expect_ds_refused, "{ns}: {ds_refused:?}");
            assert_eq!(job_refused.is_some(), expect_job_refused, "{ns}: {job_refused:?}");
            if let Some(m) = &ds_refused {
                assert!(m.contains("hostPort"), "{ns}: {m}");
                assert_eq!(m.contains("hostNetwork"), host_network, "{ns}: {m}");
            }
            table += &format!(
                "{ns}: DaemonSet {}; Jobs {}; kubectl apply warned: {}\n",
                ds_refused.as_deref().unwrap_or("admitted"),
                job_refused.as_deref().unwrap_or("admitted"),
                if warnings.is_empty() {
                    "nothing".to_string()
                } else {
                    warnings.join(" | ")
                }
            );
            // The namespace goes, so its pods stop measuring.
            c.ok(&["delete", "namespace", &ns, "--wait=false"]);
        }
    }
    table
}
