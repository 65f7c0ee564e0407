//! The throughput core that `stream`, `udp-max`, `rrul`'s load and the
//! plain targets' stream share: `flows.rs` (TCP flows, many per thread,
//! epoll) and `pace.rs` (token-bucket pacing of UDP senders).

pub(crate) mod flows;
pub(crate) mod pace;
