//! One file per value: the function that builds its view.

pub mod comparison;
pub mod crr;
pub mod decision;
pub mod document;
pub mod fleet;
pub mod history;
pub mod latency;
pub mod live;
pub mod load;
pub mod ping;
pub mod plan;
pub mod report;
pub mod rr;
pub mod rrul;
pub mod runs;
pub mod spectrum;
pub mod split;
pub mod stream;
pub mod suite;
pub mod udp_max;
