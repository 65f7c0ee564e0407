//! The locks a fleet's work items take, named as numbers: one key per
//! node of a fleet, held exclusively by a test of the exclusive class
//! (throughput) and shared by every other test. So two throughput tests
//! never share a node, and no latency test runs beside a throughput test
//! on either of its ends, while latency tests may run side by side.
//!
//! The keys are PostgreSQL advisory lock keys (`pg_advisory_lock(bigint)`):
//! the store takes them, in ascending order so two takers of overlapping
//! sets cannot deadlock.

use serde::Serialize;

/// How a work item holds its two nodes' keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LockMode {
    /// Alone on both nodes (the exclusive class).
    Exclusive,
    /// Beside other shared holders, never beside an exclusive one.
    Shared,
}

/// The lock key of node `node` in fleet `fleet`: the first 8 bytes of
/// FNV-1a 64 of "stackmeter fleet FLEET node NODE", as a signed 64-bit
/// number. Stable across hosts, versions and runs of the same fleet.
pub fn lock_key(fleet: &str, node: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in "stackmeter fleet "
        .bytes()
        .chain(fleet.bytes())
        .chain(" node ".bytes())
        .chain(node.bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    i64::from_ne_bytes(h.to_ne_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_distinct() {
        // Fixed: hosts (and versions) of one fleet must agree on every key.
        assert_eq!(lock_key("lab", "a"), 3_505_329_866_500_553_882);
        assert_ne!(lock_key("lab", "a"), lock_key("lab", "b"));
        assert_ne!(lock_key("lab", "a"), lock_key("lab2", "a"));
        assert_ne!(lock_key("la", "ba"), lock_key("lab", "a"));
        let mut keys: Vec<i64> = (0..10_000).map(|i| lock_key("f", &format!("n{i}"))).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 10_000);
    }
}
