//! A run as the store keeps it: one type from the moment a command starts
//! it to the moment it is listed, spooled or copied to another store, and
//! a stored run read back with its id and what its tests hold.

use serde::{Deserialize, Serialize};
use stackmeter_results::Env;
use std::collections::BTreeMap;

/// A run: one measuring command, suite or fleet node's part, with the
/// host it ran on and the identity that survives copies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Its identity, the same in every store it is copied to.
    pub uid: String,
    /// Start, UTC RFC 3339.
    pub started: String,
    /// End, if it ended.
    pub finished: Option<String>,
    /// "single", "suite" or "fleet".
    pub kind: String,
    /// Suite plan name or file.
    pub plan: Option<String>,
    /// "running", "complete", "partial" or "failed".
    pub status: String,
    /// The process that wrote it (tells a crash from a live run).
    pub pid: u32,
    /// stackmeter's version.
    pub tool_version: String,
    /// The host that ran it.
    pub hostname: String,
    /// Its kernel.
    pub kernel: String,
    /// Its CPU model.
    pub cpu_model: String,
    /// Its CPU count.
    pub cpus: u32,
    /// The command line (JSON text in a spool file, as in the store).
    #[serde(with = "json_text")]
    pub command: Vec<String>,
    /// Suite settings (repeat, quick, ...); `{}` for a single command
    /// (JSON text in a spool file, as in the store).
    #[serde(with = "json_text")]
    pub settings: serde_json::Value,
    /// What the user said the run measured (`--attr KEY=VALUE`: commit,
    /// firmware, nic, ...); the host facts above are attributes too (the
    /// store's `run_attributes` view joins them).
    #[serde(default)]
    pub attrs: BTreeMap<String, String>,
}

impl Run {
    /// A run that starts now (`env.time`), `running`, with a new identity.
    pub fn start(kind: &str, plan: Option<&str>, env: &Env, settings: serde_json::Value, pid: u32) -> Run {
        Run {
            uid: crate::uid::new_uid(),
            started: env.time.clone(),
            finished: None,
            kind: kind.into(),
            plan: plan.map(Into::into),
            status: "running".into(),
            pid,
            tool_version: env.version.clone(),
            hostname: env.hostname.clone(),
            kernel: env.kernel.clone(),
            cpu_model: env.cpu_model.clone(),
            cpus: env.cpus as u32,
            command: env.command.clone(),
            settings,
            attrs: BTreeMap::new(),
        }
    }

    /// The run with the user's attributes.
    pub fn with_attrs(mut self, attrs: BTreeMap<String, String>) -> Run {
        self.attrs = attrs;
        self
    }
}

/// A run read back: its id in this store, and what its tests hold.
#[derive(Clone, Debug, Serialize)]
pub struct StoredRun {
    /// Run id in this store.
    pub id: i64,
    /// The run.
    #[serde(flatten)]
    pub run: Run,
    /// Tests stored.
    pub tests: usize,
    /// Distinct labels, in order of first appearance.
    pub labels: Vec<String>,
    /// Distinct test names, in order of first appearance.
    pub test_names: Vec<String>,
}

/// A value as its JSON text (serde `with`): how the store's `command` and
/// `settings` columns hold them, and so the spool's files.
mod json_text {
    use serde::de::DeserializeOwned;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&serde_json::to_string(v).map_err(serde::ser::Error::custom)?)
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        let text = String::deserialize(d)?;
        serde_json::from_str(&text).map_err(serde::de::Error::custom)
    }
}
