//! The Kubernetes render of a fleet, through the crate's public API: the
//! golden render of examples/lab-fleet.toml held byte for byte
//! (tests/golden/lab-fleet.yaml; `STACKMETER_WRITE_GOLDEN=1` rewrites it
//! after a deliberate change), and the rules every render keeps.

use serde_json::Value;
use stackmeter_fleet::{Fleet, FleetPlan, StepInfo, StepSource};
use stackmeter_k8s::{self as k8s, Options, Store, Tolerate, Toleration};
use stackmeter_results::TestKind;

const LAB: &str = include_str!("../../../examples/lab-fleet.toml");

/// The plan of a fleet file with `[[step]]` tables (each with a name and
/// a test: what the engine resolves them into, as far as the plan needs).
fn plan(text: &str) -> FleetPlan {
    let fleet = Fleet::parse(text).unwrap();
    let StepSource::Steps(tables) = &fleet.steps else {
        panic!("the test fleets give [[step]] tables")
    };
    let steps: Vec<StepInfo> = tables
        .iter()
        .map(|t| StepInfo {
            name: t["name"].as_str().unwrap().to_string(),
            test: TestKind::from_name(t["test"].as_str().unwrap()).unwrap(),
        })
        .collect();
    fleet.plan(&steps)
}

/// The options the golden file is rendered with: the defaults, with a
/// fixed run name and image (the default image carries the version).
fn golden_options() -> Options {
    let mut o = Options::new("lab-golden".into());
    o.image = "stackmeter:golden".into();
    o
}

#[test]
fn the_golden_render_of_the_example_fleet_holds() {
    let m = k8s::render(&plan(LAB), LAB, &golden_options()).unwrap();
    let yaml = m.yaml();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/lab-fleet.yaml");
    if std::env::var_os("STACKMETER_WRITE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &yaml).unwrap();
    }
    let held = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        held == yaml,
        "{} differs from the render: check the change, then run STACKMETER_WRITE_GOLDEN=1 cargo test -p stackmeter-fleet --test k8s",
        path.display()
    );
}

/// The objects as JSON values.
fn objects(m: &k8s::Manifests) -> Vec<Value> {
    let list: Value = serde_json::from_str(&m.json()).unwrap();
    assert_eq!(list["kind"], "List");
    list["items"].as_array().unwrap().clone()
}

fn of_kind<'a>(objs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objs.iter().filter(|o| o["kind"] == kind).collect()
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect()
}

#[test]
fn one_job_per_client_node_with_tests_each_pinned_and_with_the_same_run() {
    let p = plan(LAB);
    let m = k8s::render(&p, LAB, &golden_options()).unwrap();
    let objs = objects(&m);
    let kinds: Vec<&str> = objs.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds[..4], ["Namespace", "ConfigMap", "DaemonSet", "Service"]);
    let jobs = of_kind(&objs, "Job");
    let want: Vec<&str> = p
        .nodes
        .iter()
        .filter(|n| n.client && p.for_client(&n.name).next().is_some())
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(want, ["pc-a1", "pc-a2", "pc-b1", "pc-b2"]);
    assert_eq!(jobs.len(), want.len());
    for (job, node) in jobs.iter().zip(&want) {
        let pod = &job["spec"]["template"]["spec"];
        let cmd = strings(&pod["containers"][0]["command"]);
        assert_eq!(
            cmd,
            [
                "stackmeter",
                "fleet",
                "run",
                k8s::FLEET_PATH,
                "--node",
                node,
                "--run",
                "lab-golden"
            ]
        );
        let term = &pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchFields"][0];
        assert_eq!(term["key"], "metadata.name");
        assert_eq!(strings(&term["values"]), [*node]);
        assert_eq!(job["spec"]["backoffLimit"], 0);
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(job["metadata"]["labels"]["stackmeter/run"], "lab-golden");
        let name = job["metadata"]["name"].as_str().unwrap();
        assert!(
            k8s::is_dns_subdomain(name) && name.len() <= 63 && name.contains(node),
            "{name}"
        );
        let env = &pod["containers"][0]["env"];
        let db = env
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "STACKMETER_DB")
            .unwrap();
        assert_eq!(db["valueFrom"]["secretKeyRef"]["name"], "stackmeter-db");
        assert_eq!(db["valueFrom"]["secretKeyRef"]["key"], "dsn");
    }
    // The fleet file itself, as written, is what every pod reads.
    let cm = of_kind(&objs, "ConfigMap")[0];
    assert_eq!(cm["data"]["fleet.toml"], LAB);
    // The responders: the agent's command line, on the fleet's port.
    let ds = of_kind(&objs, "DaemonSet")[0];
    let c = &ds["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        strings(&c["command"]),
        [
            "stackmeter",
            "agent",
            "--listen",
            "0.0.0.0:24680",
            "--metrics",
            "0.0.0.0:24681",
            "--peers-dns",
            "stackmeter-responder.stackmeter.svc.cluster.local:24680",
            "--name",
            "$(POD_IP)"
        ]
    );
    let ports = c["ports"].as_array().unwrap();
    assert_eq!(ports.len(), 3);
    for (p, proto) in ports[..2].iter().zip(["TCP", "UDP"]) {
        assert_eq!(
            (p["containerPort"].as_u64(), p["hostPort"].as_u64()),
            (Some(24680), Some(24680))
        );
        assert_eq!(p["protocol"], proto);
    }
    assert_eq!(ports[2]["name"], "metrics");
    assert_eq!(c["readinessProbe"]["tcpSocket"]["port"], 24680);
    assert_eq!(c["securityContext"]["capabilities"]["drop"][0], "ALL");
    let svc = of_kind(&objs, "Service")[0];
    assert_eq!(svc["spec"]["clusterIP"], "None");
    assert_eq!(svc["spec"]["selector"], ds["spec"]["selector"]["matchLabels"]);
    // Every object is in the namespace and carries the common labels.
    for o in &objs {
        assert_eq!(o["metadata"]["labels"]["app.kubernetes.io/name"], "stackmeter");
        if o["kind"] != "Namespace" {
            assert_eq!(o["metadata"]["namespace"], "stackmeter");
        }
    }
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
}

#[test]
fn options_reach_every_pod() {
    let mut o = golden_options();
    o.host_network = true;
    o.tolerate = Tolerate::These(vec![Toleration::parse("dedicated=net:NoSchedule").unwrap()]);
    o.cpu_limit = Some("2".into());
    o.memory_limit = Some("1Gi".into());
    o.labels = k8s::key_values("--label", &["team=net".into()]).unwrap();
    o.node_selector = k8s::key_values("--node-selector", &["role=pc".into()]).unwrap();
    o.store = Store::None;
    o.namespace = "bench".into();
    let m = k8s::render(&plan(LAB), LAB, &o).unwrap();
    let objs = objects(&m);
    for o in &objs {
        assert_eq!(o["metadata"]["labels"]["team"], "net");
    }
    let pods: Vec<&Value> = objs
        .iter()
        .filter(|o| o["kind"] == "DaemonSet" || o["kind"] == "Job")
        .map(|o| &o["spec"]["template"]["spec"])
        .collect();
    assert_eq!(pods.len(), 5);
    for p in &pods {
        assert_eq!(p["hostNetwork"], true);
        assert_eq!(p["dnsPolicy"], "ClusterFirstWithHostNet");
        assert_eq!(p["tolerations"][0]["key"], "dedicated");
        assert_eq!(p["tolerations"][0]["operator"], "Equal");
        assert_eq!(p["tolerations"][0]["effect"], "NoSchedule");
        let c = &p["containers"][0];
        assert_eq!(c["resources"]["limits"]["cpu"], "2");
        assert_eq!(c["resources"]["requests"]["memory"], "128Mi");
        assert!(c["env"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["name"] != "STACKMETER_DB"));
        assert_eq!(strings(&c["command"]).last(), Some(&"--no-store"));
    }
    let ds = of_kind(&objs, "DaemonSet")[0];
    assert_eq!(ds["spec"]["template"]["spec"]["nodeSelector"]["role"], "pc");
    assert!(strings(&ds["spec"]["template"]["spec"]["containers"][0]["command"])
        .contains(&"stackmeter-responder.bench.svc.cluster.local:24680"));
    // Without the store's locks the exclusive class is not kept across Jobs.
    assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
    assert!(m.warnings[0].starts_with("--no-db: the Jobs share no locks"));

    o.tolerate = Tolerate::All;
    let objs = objects(&k8s::render(&plan(LAB), LAB, &o).unwrap());
    let t = &of_kind(&objs, "DaemonSet")[0]["spec"]["template"]["spec"]["tolerations"];
    assert_eq!(t, &serde_json::json!([{ "operator": "Exists" }]));
}

#[test]
fn a_shared_secret_reaches_every_pod_from_its_secret() {
    let mut o = golden_options();
    o.secret = Some(k8s::SecretKey {
        name: "mesh-secret".into(),
        key: k8s::SECRET_KEY.into(),
    });
    let objs = objects(&k8s::render(&plan(LAB), LAB, &o).unwrap());
    let containers: Vec<&Value> = objs
        .iter()
        .filter(|o| o["kind"] == "DaemonSet" || o["kind"] == "Job")
        .map(|o| &o["spec"]["template"]["spec"]["containers"][0])
        .collect();
    assert_eq!(containers.len(), 5, "the responders and four Jobs");
    for c in containers {
        let env = c["env"].as_array().unwrap();
        let secret: Vec<&Value> = env.iter().filter(|e| e["name"] == k8s::SECRET_ENV).collect();
        assert_eq!(secret.len(), 1, "{env:?}");
        assert_eq!(
            secret[0]["valueFrom"],
            serde_json::json!({ "secretKeyRef": { "name": "mesh-secret", "key": "secret" } })
        );
        // Its text, never a file flag: nothing on the command line names it.
        assert!(!strings(&c["command"]).iter().any(|a| a.contains("secret")));
        // The store's Secret is still there beside it.
        assert!(env.iter().any(|e| e["name"] == "STACKMETER_DB"));
    }
    // Without --secret no pod reads one.
    let objs = objects(&k8s::render(&plan(LAB), LAB, &golden_options()).unwrap());
    assert!(!serde_json::to_string(&objs).unwrap().contains(k8s::SECRET_ENV));
}

fn render_err(text: &str, o: &Options) -> k8s::K8sError {
    k8s::render(&plan(text), text, o).unwrap_err()
}

#[test]
fn what_kubernetes_would_refuse_is_refused_here() {
    let o = golden_options();
    let e = render_err(&LAB.replace("\"pc-a2\"", "\"PC_A2\""), &o);
    assert!(e.in_file);
    assert!(
        e.message.starts_with("node 'PC_A2' is not a Kubernetes node name"),
        "{e}"
    );
    // A board (no client, no Job) may keep a name Kubernetes would refuse.
    assert!(k8s::render(&plan(&LAB.replace("\"board-a1\"", "\"Board_A1\"")), LAB, &o).is_ok());
    let text = LAB.replace(
        "name = \"pc-b2\"\naddress = \"198.51.100.12\"",
        "name = \"pc-b2\"\naddress = \"198.51.100.12\"\nport = 5000",
    );
    let e = render_err(&text, &o);
    assert!(
        e.message
            .starts_with("node 'pc-b2' has port 5000 and node 'pc-a1' port 24680"),
        "{e}"
    );
    let big = format!("{LAB}\n#{}\n", "x".repeat(1_000_000));
    let e = render_err(&big, &o);
    assert!(
        e.in_file && e.message.ends_with("the fleet file must be under 1000000 bytes"),
        "{e}"
    );
    let flag = |f: &dyn Fn(&mut Options)| {
        let mut o = golden_options();
        f(&mut o);
        let e = render_err(LAB, &o);
        assert!(!e.in_file, "{e}");
        e.message
    };
    assert!(flag(&|o| o.namespace = "Bench".into()).starts_with("--namespace 'Bench': "));
    assert!(flag(&|o| o.run = "run 1".into()).starts_with("--run 'run 1': "));
    assert!(flag(&|o| o.run = "x".repeat(64)).starts_with("--run '"));
    assert!(flag(&|o| o.image = "a b".into()).starts_with("--image 'a b': "));
    assert!(flag(&|o| o.metrics_port = 24680).starts_with("--metrics-port 24680: "));
    assert!(flag(&|o| o.cpu = Some("lots".into())).starts_with("--cpu 'lots': "));
    assert_eq!(
        flag(&|o| o.cpu_limit = Some("50m".into())),
        "--cpu 100m is above --cpu-limit 50m: a request cannot exceed its limit"
    );
    assert!(flag(&|o| o.memory_limit = Some("1Mi".into())).starts_with("--memory 128Mi is above --memory-limit 1Mi"));
    assert!(flag(&|o| o.store = Store::Secret {
        name: "DB".into(),
        key: "dsn".into()
    })
    .starts_with("--db-secret 'DB': "));
    assert!(flag(&|o| o.secret = Some(k8s::SecretKey {
        name: "Mesh_Secret".into(),
        key: k8s::SECRET_KEY.into()
    }))
    .starts_with("--secret 'Mesh_Secret': "));
    assert!(flag(&|o| {
        o.labels.insert("app.kubernetes.io/name".into(), "x".into());
    })
    .starts_with("--label app.kubernetes.io/name: stackmeter sets this label itself"));
    assert!(k8s::PullPolicy::parse("Sometimes")
        .unwrap_err()
        .message
        .starts_with("--pull-policy 'Sometimes': "));
}

#[test]
fn long_node_names_give_distinct_job_names_within_63() {
    // Node names that share a long prefix, as cloud node names do.
    let a = "gke-production-cluster-default-pool-8f9e8a7b-x7kq";
    let b = "gke-production-cluster-default-pool-8f9e8a7b-y2mn";
    let text = format!(
        "name = \"f\"\n[[step]]\nname = \"l\"\ntest = \"rr\"\n[[node]]\nname = \"{a}\"\naddress = \"10.0.0.1\"\n[[node]]\nname = \"{b}\"\naddress = \"10.0.0.2\"\n"
    );
    let objs = objects(&k8s::render(&plan(&text), &text, &golden_options()).unwrap());
    let names: Vec<&str> = of_kind(&objs, "Job")
        .iter()
        .map(|j| j["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2);
    assert_ne!(names[0], names[1]);
    for n in names {
        assert!(n.len() <= 63 && k8s::is_dns_subdomain(n) && !n.contains('.'), "{n}");
    }
}

#[test]
fn the_default_run_name_is_a_label_value() {
    assert_eq!(k8s::default_run("lab", "20250102T030405Z"), "lab-20250102T030405Z");
    let long = k8s::default_run(&format!("{}-", "f".repeat(50)), "20250102T030405Z");
    assert_eq!(long.len(), 63);
    assert!(long.ends_with("f-20250102T030405Z"), "{long}");
    let mut o = golden_options();
    o.run = long;
    assert!(k8s::render(&plan(LAB), LAB, &o).is_ok());
}
