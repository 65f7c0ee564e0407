//! The fleet as Kubernetes objects: the options checked, then the
//! Namespace, the ConfigMap with the fleet file, the responders'
//! DaemonSet and headless Service, and one Job per client node of the
//! plan, built as typed values (`api.rs`).

use crate::api::{
    Affinity, Capabilities, ConfigMapVolume, Container, ContainerPort, DaemonSetSpec, EmptyDir, EnvSource, EnvVar,
    JobSpec, LabelSelector, Map, NodeAffinity, NodeSelector, NodeSelectorTerm, Object, ObjectMeta, PodSecurityContext,
    PodSpec, PodTemplate, Probe, Requirement, ResourceRequirements, SeccompProfile, SecurityContext, ServicePort,
    ServiceSpec, TcpSocket, TolerationSpec, Volume, VolumeMount,
};
use crate::names::{
    digest, is_data_key, is_dns_label, is_dns_subdomain, is_label_value, quantity, K8sError, Toleration, LABEL_RULE,
    SUBDOMAIN_RULE,
};
use stackmeter_fleet::FleetPlan;

/// Where the fleet file is mounted in every pod.
pub const FLEET_PATH: &str = "/etc/stackmeter/fleet.toml";

/// The metrics port when none is given: the one after stackmeter's
/// responder port, outside the 9100-9999 range where Prometheus's
/// exporters (node_exporter and the rest) take their ports, so that with
/// hostNetwork it does not collide with an exporter already on the node.
pub const DEFAULT_METRICS_PORT: u16 = 24681;

/// The image's user and group (deploy/Containerfile makes them).
pub const IMAGE_UID: u32 = 10001;

/// Seconds a finished Job and its pod's log are kept: a day.
pub const DEFAULT_JOB_TTL: u32 = 86_400;

/// How the kubelet gets the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullPolicy {
    /// Pull only when the node does not have it.
    IfNotPresent,
    /// Pull every time.
    Always,
    /// Never pull: the image must be on every node already.
    Never,
}

impl PullPolicy {
    /// From `--pull-policy`.
    pub fn parse(s: &str) -> Result<PullPolicy, K8sError> {
        match s {
            "IfNotPresent" => Ok(PullPolicy::IfNotPresent),
            "Always" => Ok(PullPolicy::Always),
            "Never" => Ok(PullPolicy::Never),
            _ => Err(K8sError::flag(format!(
                "--pull-policy '{s}': expected IfNotPresent, Always or Never"
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            PullPolicy::IfNotPresent => "IfNotPresent",
            PullPolicy::Always => "Always",
            PullPolicy::Never => "Never",
        }
    }
}

/// Which taints the pods tolerate.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Tolerate {
    /// Only what Kubernetes adds itself (not-ready and unreachable nodes).
    #[default]
    None,
    /// The ones listed.
    These(Vec<Toleration>),
    /// Every taint (`--tolerate-all`).
    All,
}

/// Where the Jobs (and the agents) store results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Store {
    /// `STACKMETER_DB` from this Secret's key (a PostgreSQL DSN).
    Secret {
        /// Secret name.
        name: String,
        /// Its key.
        key: String,
    },
    /// Nothing stored: results only in the pods' logs.
    None,
}

/// A key of a Kubernetes Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretKey {
    /// Secret name.
    pub name: String,
    /// Its key.
    pub key: String,
}

/// The key of the shared secret's Secret (`--secret NAME`).
pub const SECRET_KEY: &str = "secret";

/// The variable the binary reads the shared secret's text from
/// (`stackmeter_engine::secret::ENV_SECRET`; this crate does not depend on
/// the engine).
pub const SECRET_ENV: &str = "STACKMETER_SECRET";

/// Everything `stackmeter fleet k8s` takes besides the fleet.
#[derive(Clone, Debug)]
pub struct Options {
    /// Namespace of every object.
    pub namespace: String,
    /// Image of every container.
    pub image: String,
    /// Its pull policy.
    pub pull_policy: PullPolicy,
    /// The fleet run's name: every Job gets the same.
    pub run: String,
    /// Pods on the node's network namespace.
    pub host_network: bool,
    /// Taints tolerated (responders and clients).
    pub tolerate: Tolerate,
    /// Node labels the responders' nodes must have.
    pub node_selector: Map,
    /// CPU request and limit, memory request and limit (quantities).
    pub cpu: Option<String>,
    /// CPU limit.
    pub cpu_limit: Option<String>,
    /// Memory request.
    pub memory: Option<String>,
    /// Memory limit.
    pub memory_limit: Option<String>,
    /// The agents' metrics port.
    pub metrics_port: u16,
    /// Labels on every object (and pod).
    pub labels: Map,
    /// The results store.
    pub store: Store,
    /// Seconds a finished Job is kept.
    pub job_ttl: u32,
    /// The shared secret (docs/protocol.md 10) every responder asks for and
    /// every client proves: a Secret's key, given to the containers as
    /// `STACKMETER_SECRET`. An environment variable, not a mounted file:
    /// the binary refuses a secret file that its group or others may read,
    /// and a Secret volume's files belong to root (or, with an fsGroup,
    /// are group-readable), so uid 10001 could not use one.
    pub secret: Option<SecretKey>,
}

impl Options {
    /// The defaults, for fleet run `run`.
    pub fn new(run: String) -> Options {
        Options {
            namespace: "stackmeter".into(),
            image: default_image(),
            pull_policy: PullPolicy::IfNotPresent,
            run,
            host_network: false,
            tolerate: Tolerate::None,
            node_selector: Map::new(),
            cpu: Some("100m".into()),
            cpu_limit: None,
            memory: Some("128Mi".into()),
            memory_limit: None,
            metrics_port: DEFAULT_METRICS_PORT,
            labels: Map::new(),
            store: Store::Secret {
                name: "stackmeter-db".into(),
                key: "dsn".into(),
            },
            job_ttl: DEFAULT_JOB_TTL,
            secret: None,
        }
    }
}

/// `stackmeter:VERSION`, this build's version.
pub fn default_image() -> String {
    format!("stackmeter:{}", env!("CARGO_PKG_VERSION"))
}

/// The default run name: the fleet's name and a UTC time `stamp`
/// (`20250102T030405Z`), the name shortened so the whole is a label value.
pub fn default_run(fleet: &str, stamp: &str) -> String {
    let room = 63usize.saturating_sub(stamp.len() + 1);
    let mut name: String = fleet.chars().take(room).collect();
    while name.ends_with(['-', '.', '_']) {
        name.pop();
    }
    match name.is_empty() {
        true => stamp.to_string(),
        false => format!("{name}-{stamp}"),
    }
}

/// The rendered manifests, and what the operator must know about them.
#[derive(Clone, Debug)]
pub struct Manifests {
    /// The objects, in the order they are applied.
    pub objects: Vec<Object>,
    /// Lines for stderr: not errors, but what the manifests cannot do.
    pub warnings: Vec<String>,
}

impl Manifests {
    /// YAML, one document per object.
    pub fn yaml(&self) -> String {
        let docs: Vec<serde_json::Value> = self
            .objects
            .iter()
            .map(|o| serde_json::to_value(o).unwrap_or_default())
            .collect();
        super::yaml::documents(&docs)
    }

    /// One JSON `v1 List` of the objects (`kubectl apply -f` takes it too).
    pub fn json(&self) -> String {
        let list = serde_json::json!({ "apiVersion": "v1", "kind": "List", "items": self.objects });
        serde_json::to_string_pretty(&list).unwrap_or_default() + "\n"
    }
}

/// The most fleet file a ConfigMap holds (1 MiB with room for the rest
/// of the object).
const MAX_CONFIG: usize = 1_000_000;

const RESPONDER: &str = "stackmeter-responder";
const CONFIG: &str = "stackmeter-fleet";
const NAME_KEY: &str = "app.kubernetes.io/name";
const INSTANCE_KEY: &str = "app.kubernetes.io/instance";
const COMPONENT_KEY: &str = "app.kubernetes.io/component";
const RUN_KEY: &str = "stackmeter/run";
const NODE_KEY: &str = "stackmeter/node";

fn check(o: &Options, plan: &FleetPlan) -> Result<u16, K8sError> {
    if !is_dns_label(&o.namespace) {
        return Err(K8sError::flag(format!(
            "--namespace '{}': a namespace is {LABEL_RULE}",
            o.namespace
        )));
    }
    if o.image.is_empty() || o.image.contains(char::is_whitespace) || o.image.chars().any(char::is_control) {
        return Err(K8sError::flag(format!(
            "--image '{}': give an image reference without spaces (REGISTRY/NAME:TAG)",
            o.image
        )));
    }
    if !is_label_value(&o.run) || o.run.is_empty() {
        return Err(K8sError::flag(format!(
            "--run '{}': the run's name labels its Jobs, so it is 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
            o.run
        )));
    }
    if !is_label_value(&plan.fleet) {
        return Err(K8sError::file(format!(
            "fleet name '{}': it labels every object, so it ends with a letter or digit",
            plan.fleet
        )));
    }
    for k in o.labels.keys() {
        if [NAME_KEY, INSTANCE_KEY, COMPONENT_KEY, RUN_KEY, NODE_KEY].contains(&k.as_str()) {
            return Err(K8sError::flag(format!(
                "--label {k}: stackmeter sets this label itself; choose another key"
            )));
        }
    }
    if let Store::Secret { name, key } = &o.store {
        if !is_dns_subdomain(name) {
            return Err(K8sError::flag(format!(
                "--db-secret '{name}': a Secret's name is {SUBDOMAIN_RULE}"
            )));
        }
        if !is_data_key(key) {
            return Err(K8sError::flag(format!(
                "Secret key '{key}': letters, digits, '-', '_' or '.'"
            )));
        }
    }
    if let Some(SecretKey { name, key }) = &o.secret {
        if !is_dns_subdomain(name) {
            return Err(K8sError::flag(format!(
                "--secret '{name}': a Secret's name is {SUBDOMAIN_RULE}"
            )));
        }
        if !is_data_key(key) {
            return Err(K8sError::flag(format!(
                "Secret key '{key}': letters, digits, '-', '_' or '.'"
            )));
        }
    }
    for (flag, q) in [
        ("--cpu", &o.cpu),
        ("--cpu-limit", &o.cpu_limit),
        ("--memory", &o.memory),
        ("--memory-limit", &o.memory_limit),
    ] {
        if let Some(q) = q {
            if quantity(q).is_none() {
                return Err(K8sError::flag(format!(
                    "{flag} '{q}': expected a quantity such as 250m, 2, 128Mi or 1Gi"
                )));
            }
        }
    }
    for (req, lim, rf, lf) in [
        (&o.cpu, &o.cpu_limit, "--cpu", "--cpu-limit"),
        (&o.memory, &o.memory_limit, "--memory", "--memory-limit"),
    ] {
        if let (Some(r), Some(l)) = (req, lim) {
            if quantity(r) > quantity(l) {
                return Err(K8sError::flag(format!(
                    "{rf} {r} is above {lf} {l}: a request cannot exceed its limit"
                )));
            }
        }
    }
    if o.job_ttl == 0 {
        return Err(K8sError::flag(
            "--job-ttl 0: give the seconds a finished Job is kept (its log goes with it)",
        ));
    }
    let Some(first) = plan.nodes.first() else {
        return Err(K8sError::file("the fleet has no nodes"));
    };
    let port = first.port;
    if let Some(n) = plan.nodes.iter().find(|n| n.port != port) {
        return Err(K8sError::file(format!(
            "node '{}' has port {} and node '{}' port {port}: the DaemonSet's responders all listen on one port; give every node the same",
            n.name, n.port, first.name
        )));
    }
    if o.metrics_port == 0 || o.metrics_port == port {
        return Err(K8sError::flag(format!(
            "--metrics-port {}: give a port (1-65535) other than the responders' {port}",
            o.metrics_port
        )));
    }
    if o.tolerate == Tolerate::These(Vec::new()) {
        return Err(K8sError::flag("--toleration: none given"));
    }
    Ok(port)
}

/// The client nodes that get a Job: those of the plan with tests.
fn client_nodes(plan: &FleetPlan) -> Vec<&str> {
    plan.nodes
        .iter()
        .filter(|n| n.client && plan.for_client(&n.name).next().is_some())
        .map(|n| n.name.as_str())
        .collect()
}

/// `stackmeter-NODE-RUNMARK`, NODE with dots as dashes and shortened
/// (with a digest of the whole, to stay unique) so the name is a DNS label
/// of at most 63: the Job's pods carry it as a label value.
fn job_name(node: &str, run_mark: &str) -> String {
    let slug = node.replace('.', "-");
    let room = 63 - "stackmeter-".len() - 1 - run_mark.len();
    let slug = match slug.len() <= room {
        true => slug,
        false => {
            let mut s = slug[..room - 5].to_string();
            while s.ends_with('-') {
                s.pop();
            }
            format!("{s}-{}", digest(node, 4))
        }
    };
    format!("stackmeter-{slug}-{run_mark}")
}

/// The manifests of `plan`, whose fleet file is `text`.
pub fn render(plan: &FleetPlan, text: &str, o: &Options) -> Result<Manifests, K8sError> {
    let port = check(o, plan)?;
    if text.len() > MAX_CONFIG {
        return Err(K8sError::file(format!(
            "{} bytes: a ConfigMap holds at most 1 MiB, so the fleet file must be under {MAX_CONFIG} bytes",
            text.len()
        )));
    }
    let clients = client_nodes(plan);
    let jobs = job_names(&clients, &digest(&o.run, 8))?;
    let mut common = o.labels.clone();
    common.insert(NAME_KEY.into(), "stackmeter".into());
    common.insert(INSTANCE_KEY.into(), plan.fleet.clone());
    let cx = Context { o, common };

    let mut ns_labels = cx.common.clone();
    // hostPort (and hostNetwork) are what the Pod Security Standards'
    // baseline level forbids; the containers themselves meet "restricted".
    ns_labels.insert("pod-security.kubernetes.io/enforce".into(), "privileged".into());
    let namespace = Object::Namespace {
        api_version: "v1",
        metadata: ObjectMeta {
            name: Some(o.namespace.clone()),
            labels: ns_labels,
            ..ObjectMeta::default()
        },
    };
    let config = Object::ConfigMap {
        api_version: "v1",
        metadata: cx.meta(CONFIG, cx.with(&[(COMPONENT_KEY, "config")])),
        data: Map::from([("fleet.toml".to_string(), text.to_string())]),
    };
    let (daemonset, service) = responders(&cx, &plan.fleet, port);
    let mut objects = vec![namespace, config, daemonset, service];
    objects.extend(jobs.iter().map(|(name, node)| client_job(&cx, name, node)));
    Ok(Manifests {
        objects,
        warnings: warnings(plan, o, clients.is_empty()),
    })
}

/// What every object of one render shares: the options and the labels.
struct Context<'a> {
    o: &'a Options,
    common: Map,
}

impl Context<'_> {
    /// The common labels with `extra`.
    fn with(&self, extra: &[(&str, &str)]) -> Map {
        let mut m = self.common.clone();
        for (k, v) in extra {
            m.insert((*k).to_string(), (*v).to_string());
        }
        m
    }

    /// Metadata of an object `name` in the namespace.
    fn meta(&self, name: &str, labels: Map) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(self.o.namespace.clone()),
            labels,
            annotations: Map::new(),
        }
    }
}

/// One Job name per client node, each a Kubernetes node name; two nodes
/// whose names shorten to the same Job name are an error.
fn job_names<'a>(clients: &[&'a str], run_mark: &str) -> Result<Vec<(String, &'a str)>, K8sError> {
    let mut jobs: Vec<(String, &str)> = Vec::new();
    for n in clients {
        if !is_dns_subdomain(n) {
            return Err(K8sError::file(format!(
                "node '{n}' is not a Kubernetes node name ({SUBDOMAIN_RULE}): its Job is pinned to the node of that name; rename it in the fleet file to the name `kubectl get nodes` shows"
            )));
        }
        let name = job_name(n, run_mark);
        if let Some((_, other)) = jobs.iter().find(|(j, _)| *j == name) {
            return Err(K8sError::file(format!(
                "nodes '{other}' and '{n}' give the same Job name {name}: shorten one of the names"
            )));
        }
        jobs.push((name, n));
    }
    Ok(jobs)
}

/// The responders: a DaemonSet of agents on every node (hostPort, scrape
/// annotations, a readiness probe) and the headless Service that names them.
fn responders(cx: &Context, fleet: &str, port: u16) -> (Object, Object) {
    let o = cx.o;
    let responder_labels = cx.with(&[(COMPONENT_KEY, "responder")]);
    let selector = Map::from([
        (NAME_KEY.to_string(), "stackmeter".to_string()),
        (INSTANCE_KEY.to_string(), fleet.to_string()),
        (COMPONENT_KEY.to_string(), "responder".to_string()),
    ]);
    let service_dns = format!("{RESPONDER}.{}.svc.cluster.local:{port}", o.namespace);
    let mut agent = vec![
        "stackmeter".to_string(),
        "agent".into(),
        "--listen".into(),
        format!("0.0.0.0:{port}"),
        "--metrics".into(),
        format!("0.0.0.0:{}", o.metrics_port),
        "--peers-dns".into(),
        service_dns,
        "--name".into(),
        "$(POD_IP)".into(),
    ];
    if o.store == Store::None {
        agent.push("--no-store".into());
    }
    let mut agent_env = vec![
        field("POD_IP", "status.podIP"),
        field("NODE_NAME", "spec.nodeName"),
        value("HOME", "/tmp"),
    ];
    agent_env.extend(db_env(&o.store));
    agent_env.extend(secret_env(&o.secret));
    let mut pod = pod_spec(o, container(o, "responder", agent, agent_env));
    pod.node_selector = o.node_selector.clone();
    pod.node_selector.insert("kubernetes.io/os".into(), "linux".into());
    let c = &mut pod.containers[0];
    // (name, port, protocol, on the node's address too)
    let ports = [
        ("responder-tcp", port, "TCP", true),
        ("responder-udp", port, "UDP", true),
        ("metrics", o.metrics_port, "TCP", false),
    ];
    c.ports = ports
        .iter()
        .map(|&(name, p, protocol, host)| ContainerPort {
            name,
            container_port: p,
            host_port: host.then_some(p),
            protocol,
        })
        .collect();
    c.readiness_probe = Some(Probe {
        tcp_socket: TcpSocket { port },
        initial_delay_seconds: 1,
        period_seconds: 10,
        timeout_seconds: 2,
    });
    let daemonset = Object::DaemonSet {
        api_version: "apps/v1",
        metadata: cx.meta(RESPONDER, responder_labels.clone()),
        spec: DaemonSetSpec {
            selector: LabelSelector {
                match_labels: selector.clone(),
            },
            template: PodTemplate {
                metadata: ObjectMeta {
                    labels: responder_labels.clone(),
                    annotations: Map::from([
                        ("prometheus.io/scrape".to_string(), "true".to_string()),
                        ("prometheus.io/port".to_string(), o.metrics_port.to_string()),
                        ("prometheus.io/path".to_string(), "/metrics".to_string()),
                    ]),
                    ..ObjectMeta::default()
                },
                spec: pod,
            },
        },
    };
    let service = Object::Service {
        api_version: "v1",
        metadata: cx.meta(RESPONDER, responder_labels),
        spec: ServiceSpec {
            cluster_ip: "None",
            selector,
            ports: ports
                .iter()
                .map(|&(name, p, protocol, _)| ServicePort {
                    name,
                    port: p,
                    target_port: p,
                    protocol,
                })
                .collect(),
        },
    };
    (daemonset, service)
}

/// The Job `name` that runs the fleet's tests from `node`, pinned to it.
fn client_job(cx: &Context, name: &str, node: &str) -> Object {
    let o = cx.o;
    let labels = cx.with(&[(COMPONENT_KEY, "client"), (RUN_KEY, &o.run), (NODE_KEY, node)]);
    let mut command: Vec<String> = [
        "stackmeter",
        "fleet",
        "run",
        FLEET_PATH,
        "--node",
        node,
        "--run",
        &o.run,
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    if o.store == Store::None {
        command.push("--no-store".into());
    }
    let mut env = vec![value("HOME", "/tmp")];
    env.extend(db_env(&o.store));
    env.extend(secret_env(&o.secret));
    let mut pod = pod_spec(o, container(o, "client", command, env));
    pod.restart_policy = Some("Never");
    pod.affinity = Some(pinned(node));
    Object::Job {
        api_version: "batch/v1",
        metadata: cx.meta(name, labels.clone()),
        spec: JobSpec {
            backoff_limit: 0,
            ttl_seconds_after_finished: o.job_ttl,
            template: PodTemplate {
                metadata: ObjectMeta {
                    labels,
                    ..ObjectMeta::default()
                },
                spec: pod,
            },
        },
    }
}

/// What the operator should know about the manifests.
fn warnings(plan: &FleetPlan, o: &Options, no_clients: bool) -> Vec<String> {
    let mut warnings = Vec::new();
    if no_clients {
        warnings.push("no client node has tests in the plan: the manifests have no Job".into());
    }
    let exclusive_clients = plan
        .items()
        .filter(|i| i.lock == stackmeter_fleet::LockMode::Exclusive)
        .map(|i| i.client.as_str())
        .collect::<std::collections::BTreeSet<_>>();
    if o.store == Store::None && exclusive_clients.len() > 1 {
        warnings.push(format!(
            "--no-db: the Jobs share no locks (they are PostgreSQL's), so the throughput tests of {} client nodes may overlap on a node",
            exclusive_clients.len()
        ));
    }
    warnings
}

fn field(name: &'static str, path: &'static str) -> EnvVar {
    EnvVar {
        name,
        value: None,
        value_from: Some(EnvSource::FieldRef { field_path: path }),
    }
}

fn value(name: &'static str, v: &str) -> EnvVar {
    EnvVar {
        name,
        value: Some(v.to_string()),
        value_from: None,
    }
}

fn db_env(store: &Store) -> Option<EnvVar> {
    match store {
        Store::Secret { name, key } => Some(EnvVar {
            name: "STACKMETER_DB",
            value: None,
            value_from: Some(EnvSource::SecretKeyRef {
                name: name.clone(),
                key: key.clone(),
            }),
        }),
        Store::None => None,
    }
}

fn secret_env(secret: &Option<SecretKey>) -> Option<EnvVar> {
    secret.as_ref().map(|s| EnvVar {
        name: SECRET_ENV,
        value: None,
        value_from: Some(EnvSource::SecretKeyRef {
            name: s.name.clone(),
            key: s.key.clone(),
        }),
    })
}

/// Required affinity to the node whose object is named `node`.
fn pinned(node: &str) -> Affinity {
    Affinity {
        node_affinity: NodeAffinity {
            required: NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_fields: vec![Requirement {
                        key: "metadata.name",
                        operator: "In",
                        values: vec![node.to_string()],
                    }],
                }],
            },
        },
    }
}

fn container(o: &Options, name: &'static str, command: Vec<String>, env: Vec<EnvVar>) -> Container {
    let mut resources = ResourceRequirements::default();
    for (key, request, limit) in [("cpu", &o.cpu, &o.cpu_limit), ("memory", &o.memory, &o.memory_limit)] {
        if let Some(q) = request {
            resources.requests.insert(key.into(), q.clone());
        }
        if let Some(q) = limit {
            resources.limits.insert(key.into(), q.clone());
        }
    }
    Container {
        name,
        image: o.image.clone(),
        image_pull_policy: o.pull_policy.name(),
        command,
        env,
        ports: Vec::new(),
        readiness_probe: None,
        resources,
        security_context: SecurityContext {
            allow_privilege_escalation: false,
            read_only_root_filesystem: true,
            capabilities: Capabilities { drop: vec!["ALL"] },
        },
        volume_mounts: vec![
            VolumeMount {
                name: "fleet",
                mount_path: "/etc/stackmeter",
                read_only: true,
            },
            VolumeMount {
                name: "tmp",
                mount_path: "/tmp",
                read_only: false,
            },
        ],
    }
}

fn pod_spec(o: &Options, c: Container) -> PodSpec {
    let tolerations = match &o.tolerate {
        Tolerate::None => Vec::new(),
        Tolerate::All => vec![TolerationSpec {
            key: None,
            operator: "Exists",
            value: None,
            effect: None,
        }],
        Tolerate::These(list) => list
            .iter()
            .map(|t| TolerationSpec {
                key: Some(t.key.clone()),
                operator: if t.value.is_some() { "Equal" } else { "Exists" },
                value: t.value.clone(),
                effect: t.effect.clone(),
            })
            .collect(),
    };
    PodSpec {
        affinity: None,
        restart_policy: None,
        node_selector: Map::new(),
        host_network: o.host_network,
        dns_policy: o.host_network.then_some("ClusterFirstWithHostNet"),
        tolerations,
        automount_service_account_token: false,
        enable_service_links: false,
        security_context: PodSecurityContext {
            run_as_non_root: true,
            run_as_user: IMAGE_UID,
            run_as_group: IMAGE_UID,
            seccomp_profile: SeccompProfile { kind: "RuntimeDefault" },
        },
        termination_grace_period_seconds: 10,
        containers: vec![c],
        volumes: vec![
            Volume {
                name: "fleet",
                config_map: Some(ConfigMapVolume { name: CONFIG.into() }),
                empty_dir: None,
            },
            Volume {
                name: "tmp",
                config_map: None,
                empty_dir: Some(EmptyDir {}),
            },
        ],
    }
}
