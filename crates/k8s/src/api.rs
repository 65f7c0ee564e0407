//! The part of the Kubernetes API the fleet's manifests use, as typed
//! values: field names and nesting as the API has them (camelCase through
//! serde), empty optional fields left out. Only what the render sets is
//! here; anything else is the API server's default.

use serde::Serialize;
use std::collections::BTreeMap;

/// Labels or annotations.
pub type Map = BTreeMap<String, String>;

fn no(b: &bool) -> bool {
    !*b
}

/// metadata of every object.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ObjectMeta {
    /// Object name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace (namespaced objects).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Labels.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub labels: Map,
    /// Annotations.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub annotations: Map,
}

/// One object of the manifests, with its apiVersion and kind.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind")]
pub enum Object {
    /// v1 Namespace.
    Namespace {
        /// "v1".
        #[serde(rename = "apiVersion")]
        api_version: &'static str,
        /// metadata.
        metadata: ObjectMeta,
    },
    /// v1 ConfigMap.
    ConfigMap {
        /// "v1".
        #[serde(rename = "apiVersion")]
        api_version: &'static str,
        /// metadata.
        metadata: ObjectMeta,
        /// Its files.
        data: Map,
    },
    /// apps/v1 DaemonSet.
    DaemonSet {
        /// "apps/v1".
        #[serde(rename = "apiVersion")]
        api_version: &'static str,
        /// metadata.
        metadata: ObjectMeta,
        /// spec.
        spec: DaemonSetSpec,
    },
    /// v1 Service.
    Service {
        /// "v1".
        #[serde(rename = "apiVersion")]
        api_version: &'static str,
        /// metadata.
        metadata: ObjectMeta,
        /// spec.
        spec: ServiceSpec,
    },
    /// batch/v1 Job.
    Job {
        /// "batch/v1".
        #[serde(rename = "apiVersion")]
        api_version: &'static str,
        /// metadata.
        metadata: ObjectMeta,
        /// spec.
        spec: JobSpec,
    },
}

/// A label selector by equality.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Every label must match.
    pub match_labels: Map,
}

/// DaemonSet spec.
#[derive(Clone, Debug, Serialize)]
pub struct DaemonSetSpec {
    /// Which pods are its own.
    pub selector: LabelSelector,
    /// The pods.
    pub template: PodTemplate,
}

/// Job spec.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    /// Retries after a failed pod (0: a failed measurement is not rerun).
    pub backoff_limit: u32,
    /// Seconds the finished Job and its pods (and their logs) are kept.
    pub ttl_seconds_after_finished: u32,
    /// The pod.
    pub template: PodTemplate,
}

/// A pod template.
#[derive(Clone, Debug, Serialize)]
pub struct PodTemplate {
    /// Labels and annotations of the pods.
    pub metadata: ObjectMeta,
    /// The pods' spec.
    pub spec: PodSpec,
}

/// Pod spec.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    /// Node affinity (the Jobs' pinning).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Never for Jobs; Always (the default) for the DaemonSet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<&'static str>,
    /// The node's network namespace.
    #[serde(skip_serializing_if = "no")]
    pub host_network: bool,
    /// ClusterFirstWithHostNet with hostNetwork (cluster DNS names still resolve).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns_policy: Option<&'static str>,
    /// Which nodes.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub node_selector: Map,
    /// Taints tolerated.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<TolerationSpec>,
    /// No API token in the pod: nothing here talks to the API server.
    pub automount_service_account_token: bool,
    /// No service environment variables (they would only be noise).
    pub enable_service_links: bool,
    /// Pod-wide security settings.
    pub security_context: PodSecurityContext,
    /// Seconds between SIGTERM and SIGKILL.
    pub termination_grace_period_seconds: u32,
    /// The one container.
    pub containers: Vec<Container>,
    /// Volumes.
    pub volumes: Vec<Volume>,
}

/// Node affinity.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Affinity {
    /// Node affinity.
    pub node_affinity: NodeAffinity,
}

/// Required node affinity.
#[derive(Clone, Debug, Serialize)]
pub struct NodeAffinity {
    /// Required when scheduling.
    #[serde(rename = "requiredDuringSchedulingIgnoredDuringExecution")]
    pub required: NodeSelector,
}

/// Node selector terms (any one matches).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelector {
    /// Terms.
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

/// One term: every requirement holds.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelectorTerm {
    /// Requirements on the node object's fields (metadata.name).
    pub match_fields: Vec<Requirement>,
}

/// key operator values.
#[derive(Clone, Debug, Serialize)]
pub struct Requirement {
    /// Field.
    pub key: &'static str,
    /// In.
    pub operator: &'static str,
    /// Values.
    pub values: Vec<String>,
}

/// A toleration.
#[derive(Clone, Debug, Serialize)]
pub struct TolerationSpec {
    /// Taint key (none with operator Exists: every taint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Equal or Exists.
    pub operator: &'static str,
    /// Value (operator Equal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Effect (none: every effect).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
}

/// Pod security context.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSecurityContext {
    /// Refuse to start as root.
    pub run_as_non_root: bool,
    /// The image's user.
    pub run_as_user: u32,
    /// Its group.
    pub run_as_group: u32,
    /// The runtime's default seccomp profile.
    pub seccomp_profile: SeccompProfile,
}

/// Seccomp profile.
#[derive(Clone, Debug, Serialize)]
pub struct SeccompProfile {
    /// RuntimeDefault.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// A container.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    /// Name.
    pub name: &'static str,
    /// Image.
    pub image: String,
    /// Pull policy.
    pub image_pull_policy: &'static str,
    /// The whole command line (the image's entrypoint replaced).
    pub command: Vec<String>,
    /// Environment.
    pub env: Vec<EnvVar>,
    /// Ports.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    /// Readiness.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readiness_probe: Option<Probe>,
    /// Requests and limits.
    pub resources: ResourceRequirements,
    /// Container security settings.
    pub security_context: SecurityContext,
    /// Mounts.
    pub volume_mounts: Vec<VolumeMount>,
}

/// An environment variable: a value or a reference.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    /// Name.
    pub name: &'static str,
    /// A literal value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// A reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_from: Option<EnvSource>,
}

/// Where an environment variable's value comes from.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EnvSource {
    /// The downward API.
    FieldRef {
        /// status.podIP, spec.nodeName.
        #[serde(rename = "fieldPath")]
        field_path: &'static str,
    },
    /// A Secret's key.
    SecretKeyRef {
        /// Secret name.
        name: String,
        /// Its key.
        key: String,
    },
}

/// A container port.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerPort {
    /// IANA service name style (at most 15 characters).
    pub name: &'static str,
    /// Port in the container.
    pub container_port: u16,
    /// The same port on the node's address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_port: Option<u16>,
    /// TCP or UDP.
    pub protocol: &'static str,
}

/// A readiness probe on a TCP port.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    /// Connect to this port.
    pub tcp_socket: TcpSocket,
    /// Seconds before the first try.
    pub initial_delay_seconds: u32,
    /// Seconds between tries.
    pub period_seconds: u32,
    /// Seconds a try may take.
    pub timeout_seconds: u32,
}

/// tcpSocket.
#[derive(Clone, Debug, Serialize)]
pub struct TcpSocket {
    /// The port.
    pub port: u16,
}

/// Requests and limits.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ResourceRequirements {
    /// What the scheduler reserves.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub requests: Map,
    /// What the container may not exceed.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub limits: Map,
}

/// Container security settings.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SecurityContext {
    /// No setuid gains.
    pub allow_privilege_escalation: bool,
    /// The image cannot be written to.
    pub read_only_root_filesystem: bool,
    /// Capabilities.
    pub capabilities: Capabilities,
}

/// Capabilities dropped.
#[derive(Clone, Debug, Serialize)]
pub struct Capabilities {
    /// ALL.
    pub drop: Vec<&'static str>,
}

/// A volume mount.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMount {
    /// Volume name.
    pub name: &'static str,
    /// Where.
    pub mount_path: &'static str,
    /// Read only.
    #[serde(skip_serializing_if = "no")]
    pub read_only: bool,
}

/// A volume.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    /// Name.
    pub name: &'static str,
    /// A ConfigMap's files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapVolume>,
    /// A scratch folder of the pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty_dir: Option<EmptyDir>,
}

/// A ConfigMap as a volume.
#[derive(Clone, Debug, Serialize)]
pub struct ConfigMapVolume {
    /// Its name.
    pub name: String,
}

/// emptyDir: a folder of the pod's, on the node's disk, removed with
/// the pod. No size limit: exceeding one evicts the pod mid-measurement.
#[derive(Clone, Debug, Serialize)]
pub struct EmptyDir {}

/// Service spec.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    /// None: headless (DNS gives every ready pod's address).
    #[serde(rename = "clusterIP")]
    pub cluster_ip: &'static str,
    /// Which pods.
    pub selector: Map,
    /// Ports.
    pub ports: Vec<ServicePort>,
}

/// A Service port.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicePort {
    /// Name.
    pub name: &'static str,
    /// Port.
    pub port: u16,
    /// The pods' port.
    pub target_port: u16,
    /// TCP or UDP.
    pub protocol: &'static str,
}
