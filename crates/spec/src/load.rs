//! load: many clients at once, each listing and fetching every object of
//! the target's catalogue, every byte checked (the proxy load). Its
//! options, checks and run.

use super::common::{at_least_one, within, Options, SpecError};
use crate::time::Millis;
use serde::Deserialize;
use stackmeter_results::LoadParams;
use stackmeter_results::TestKind;

const CLIENTS: u32 = 50;
const MAX_CLIENTS: u32 = 10_000;
const FETCH_EACH: u32 = 2;
const REPEAT: u32 = 3;
const MAX_REPEAT: u32 = 1000;
/// Fetching 8.8 MB through a slow proxy can take a while.
const TIMEOUT_MS: u64 = 10_000;
/// `--quick` runs at most this many clients.
const QUICK_CLIENTS: u32 = 10;

/// load's flags and plan keys.
#[derive(clap::Args, Deserialize, Clone, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct LoadOptions {
    /// Concurrent clients, one connection and thread each (a 256 KiB receive buffer each; beyond 2,048 clients 512 MiB shared out, at least 16 KiB each).
    #[arg(long, default_value_t = CLIENTS)]
    pub clients: u32,
    /// Times each client fetches every object per run.
    #[arg(long, default_value_t = FETCH_EACH)]
    pub fetch_each: u32,
    /// Runs (mean and 95% interval across them). In a suite each repetition is one run.
    #[arg(long, default_value_t = REPEAT)]
    pub repeat: u32,
    /// Bound on every network wait.
    #[arg(long, value_name = "MS", default_value_t = Millis(TIMEOUT_MS))]
    pub timeout_ms: Millis,
}

super::common::defaults_from_flags!(LoadOptions);

impl Options for LoadOptions {
    const KIND: TestKind = TestKind::Load;

    type Params = LoadParams;

    fn params(&self) -> Result<LoadParams, SpecError> {
        Ok(LoadParams {
            clients: within("clients", self.clients, 1, MAX_CLIENTS)?,
            fetch_each: at_least_one("fetch_each", self.fetch_each)?,
            repeat: within("repeat", self.repeat, 1, MAX_REPEAT)?,
            timeout_ms: self.timeout_ms.0,
            objects: Vec::new(),
        })
    }

    fn quick(&mut self) {
        self.clients = self.clients.min(QUICK_CLIENTS);
    }

    const ABOUT: &'static str =
        "Many clients at once, each listing and fetching every object, every byte checked (direct or through a proxy)";

    fn descriptors(p: &LoadParams) -> usize {
        2 * p.clients as usize
    }
}
