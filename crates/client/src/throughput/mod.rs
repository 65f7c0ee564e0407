//! The throughput core that `stream`, `udp-max`, `rrul`'s load and the
//! plain targets' stream share: the worker threads and what they share
//! (`workers.rs`), TCP flows many per thread (`flows.rs`, epoll), the
//! paced UDP sender (`udp_sender.rs`, paced by `pace.rs`), the one
//! interval loop (`window.rs`) and the rates a row is made of
//! (`rates.rs`). The tests themselves (what a mark reads, what a row and
//! the summary say) stay in `stream.rs`, `udp_max.rs` and
//! `plain/stream.rs`.

pub(crate) mod flows;
pub(crate) mod pace;
pub(crate) mod rates;
pub(crate) mod udp_sender;
pub(crate) mod window;
pub(crate) mod workers;
