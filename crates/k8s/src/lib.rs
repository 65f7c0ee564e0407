//! The fleet as Kubernetes manifests, as pure code: `stackmeter fleet k8s`
//! prints what [`render`] returns. A crate of its own beside the fleet's
//! plan (`stackmeter-fleet`), which it reads and never changes: the plan
//! is what every fleet command needs, the manifests only `fleet k8s`.
//!
//! - `names.rs`: what Kubernetes accepts as a name, label, toleration or
//!   quantity; every option and node name is checked there first.
//! - `api.rs`: the API objects used, as typed values.
//! - `render.rs`: the options, and the objects built from a [`FleetPlan`]
//!   and the fleet file's text: a Namespace, a ConfigMap holding the file,
//!   a DaemonSet of responders (`stackmeter agent`) with a headless
//!   Service, and one Job per client node running its part of the plan.
//! - `yaml.rs`: the YAML writer (why there is one of our own: its doc).
//!
//! [`FleetPlan`]: stackmeter_fleet::FleetPlan

mod api;
mod names;
mod render;
mod yaml;

pub use names::{digest, is_dns_subdomain, key_values, K8sError, Toleration};
pub use render::{
    default_image, default_run, render, Manifests, Options, PullPolicy, SecretKey, Store, Tolerate, DEFAULT_JOB_TTL,
    DEFAULT_METRICS_PORT, FLEET_PATH, IMAGE_UID, SECRET_ENV, SECRET_KEY,
};
pub use yaml::documents;
