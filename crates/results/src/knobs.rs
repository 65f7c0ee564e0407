//! The real-time knobs of a test (`nice -n -20` and `chrt --rr 99`, as the
//! UDP echo write-up used them, plus locked memory and busy polling): what
//! was asked for, and what the kernel reported in force on the measuring
//! thread when the test ended. Every document carries them, so two results
//! that differ only in their knobs say so.

use serde::{Deserialize, Serialize};

/// The knobs asked for, by flags or by a suite variant.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct KnobRequest {
    /// `fifo:N`, `rr:N` or `nice:N` for the measuring thread; `None`:
    /// left as the process started.
    pub priority: Option<String>,
    /// Lock the client's memory (`mlockall`).
    pub mlock: bool,
    /// `SO_BUSY_POLL` microseconds on every measuring socket.
    pub busy_poll_us: Option<u32>,
}

impl KnobRequest {
    /// True when nothing is asked for.
    pub fn is_default(&self) -> bool {
        *self == KnobRequest::default()
    }

    /// "rr:99, mlock, busy-poll 50 us", or "default".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = &self.priority {
            parts.push(p.clone());
        }
        if self.mlock {
            parts.push("mlock".into());
        }
        if let Some(us) = self.busy_poll_us {
            parts.push(format!("busy-poll {us} us"));
        }
        match parts.is_empty() {
            true => "default".into(),
            false => parts.join(", "),
        }
    }
}

/// The knobs as the kernel reported them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KnobState {
    /// Scheduling policy of the measuring thread: `other`, `fifo`, `rr`,
    /// `batch`, `idle`.
    pub policy: String,
    /// Its real-time priority (0 unless `fifo` or `rr`).
    pub rt_priority: u32,
    /// Its nice value.
    pub nice: i32,
    /// Locked memory of the client process, KiB (`VmLck`).
    pub locked_kib: u64,
    /// `SO_BUSY_POLL` read back from a measuring socket; `None`: not set.
    pub busy_poll_us: Option<u32>,
}

impl KnobState {
    /// In words: "real-time priority 99, round robin (SCHED_RR), 14336 KiB
    /// of memory locked, busy polling 50 us per receive".
    pub fn describe(&self) -> String {
        let mut s = match self.policy.as_str() {
            "fifo" => format!("real-time priority {} (SCHED_FIFO)", self.rt_priority),
            "rr" => format!("real-time priority {}, round robin (SCHED_RR)", self.rt_priority),
            "other" => format!("normal priority (SCHED_OTHER), nice {}", self.nice),
            "batch" => format!("batch scheduling (SCHED_BATCH), nice {}", self.nice),
            "idle" => "idle scheduling (SCHED_IDLE)".into(),
            p => format!("scheduling policy {p}, nice {}", self.nice),
        };
        if self.locked_kib > 0 {
            s.push_str(&format!(", {} KiB of memory locked", self.locked_kib));
        }
        if let Some(us) = self.busy_poll_us {
            s.push_str(&format!(", busy polling {us} us per receive"));
        }
        s
    }
}

/// A document's knobs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Knobs {
    /// What was asked for.
    pub requested: KnobRequest,
    /// What the kernel reported on the measuring thread as the test ended
    /// (`None` in documents from before knobs were recorded).
    pub client: Option<KnobState>,
}

impl Knobs {
    /// The line a view prints: asked for and read back, in words.
    pub fn line(&self) -> String {
        let asked = match self.requested.is_default() {
            true => "nothing asked (--priority, --mlock, --busy-poll)".to_string(),
            false => format!("asked {}", self.requested.describe()),
        };
        match &self.client {
            Some(c) => format!(
                "client scheduling: {asked}; the measuring thread ran at {}",
                c.describe()
            ),
            None => format!("client scheduling: {asked}; not read back"),
        }
    }
}
