//! What every thread of a running agent shares: its name and address,
//! the probe plan, the pairs, the metrics and the stop signal. Built once
//! by `run` (lib.rs) and handed to each thread behind an `Arc`.

use crate::mesh::{Mesh, Plan, Stop};
use crate::metrics::Metrics;
use crate::peers::{Left, Peer};
use crate::summary::Probing;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What every thread of a running agent shares.
pub(crate) struct Ctx {
    /// This agent's name: the `source` label.
    pub source: String,
    /// Its responder's bound address (the self-exclusion rule's).
    pub listen: SocketAddr,
    /// Which periodic probes, and the interval.
    pub plan: Plan,
    /// No answer within this is a lost probe.
    pub timeout: Duration,
    /// The shared secret the probes prove (and the responder asks for).
    pub secret: Option<stackmeter_proto::auth::Key>,
    /// Monotonic time the rounds count from, ns.
    pub epoch_ns: u64,
    /// How probes are sent, for the stored summaries.
    pub probing: Probing,
    /// The registry the scrapes encode.
    pub metrics: Arc<Metrics>,
    /// The pairs now.
    pub mesh: Mesh,
    /// Ends every thread's waits.
    pub stop: Stop,
    /// The peers last left out, and why (logged when it changes).
    pub left_out: Mutex<Vec<(Peer, Left)>>,
}
