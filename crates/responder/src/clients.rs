//! What each client address has open, for the limits per address
//! (docs/protocol.md 5.1): connections still sending their header, tests
//! running, and the token bucket of new connections per second. The rules
//! are pure (`stackmeter_proto::admit`); this is the table and its lock,
//! taken once when a connection comes, once when its header is judged and
//! once when it ends: never per message.

use crate::config::Config;
use stackmeter_proto::admit::{self, Bucket};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

/// Addresses kept before the table forgets those with nothing open.
const TIDY_AT: usize = 4096;

#[derive(Default)]
struct Client {
    /// Connections accepted and not yet past their header.
    waiting: usize,
    /// Sessions counted as tests (not the data sessions of a test).
    tests: usize,
    bucket: Option<Bucket>,
}

/// The table, shared by the accept loop and every session thread.
#[derive(Default)]
pub(crate) struct Clients {
    map: Mutex<HashMap<IpAddr, Client>>,
}

/// Why a connection was closed at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TurnedAway {
    /// Its address is in no allowed network.
    NotAllowed,
    /// Its address opened more connections per second than allowed.
    Rate,
    /// Its address has as many connections waiting for their header as allowed.
    Waiting,
}

impl Clients {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Client>> {
        // A thread that panicked holding the lock left counts, not broken
        // invariants: carry on with them.
        self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new connection from `ip` at `now_ns`: counted as waiting, or
    /// turned away.
    pub(crate) fn admit(&self, cfg: &Config, ip: IpAddr, now_ns: u64) -> Result<(), TurnedAway> {
        if !admit::allowed(&cfg.allow, ip) {
            return Err(TurnedAway::NotAllowed);
        }
        if cfg.max_connects_per_second == 0 && cfg.max_idle_per_client == 0 && cfg.limits.max_tests_per_client == 0 {
            return Ok(());
        }
        let mut map = self.lock();
        if map.len() >= TIDY_AT {
            let rate = cfg.max_connects_per_second;
            map.retain(|_, p| p.waiting > 0 || p.tests > 0 || p.bucket.is_some_and(|b| !b.full(rate, now_ns)));
        }
        let p = map.entry(ip).or_default();
        let rate = cfg.max_connects_per_second;
        if rate > 0
            && !p
                .bucket
                .get_or_insert_with(|| Bucket::new(rate, now_ns))
                .take(rate, now_ns)
        {
            return Err(TurnedAway::Rate);
        }
        if cfg.max_idle_per_client > 0 && p.waiting >= cfg.max_idle_per_client {
            return Err(TurnedAway::Waiting);
        }
        p.waiting += 1;
        Ok(())
    }

    /// A connection of `ip` is past its header (accepted, refused or
    /// gone); with `test`, it is a test that counts against the tests per
    /// address. Returns false (refuse it) when `ip` already runs `max` tests.
    pub(crate) fn judged(&self, cfg: &Config, ip: IpAddr, test: bool) -> bool {
        if cfg.max_idle_per_client == 0 && cfg.max_connects_per_second == 0 && cfg.limits.max_tests_per_client == 0 {
            return true;
        }
        let mut map = self.lock();
        let p = map.entry(ip).or_default();
        p.waiting = p.waiting.saturating_sub(1);
        if !test {
            return true;
        }
        let max = cfg.limits.max_tests_per_client as usize;
        if max > 0 && p.tests >= max {
            return false;
        }
        p.tests += 1;
        true
    }

    /// A test of `ip` ended.
    pub(crate) fn test_ended(&self, ip: IpAddr) {
        if let Some(p) = self.lock().get_mut(&ip) {
            p.tests = p.tests.saturating_sub(1);
        }
    }
}
