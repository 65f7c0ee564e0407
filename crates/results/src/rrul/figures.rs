//! rrul's figures: per phase, the probes' round trip and one-way delays,
//! the latency the load induced, and the throughput each way.

use super::{phase_label, Induced, Phase};
use crate::figures::Figures;

/// rrul's figures: per phase, the probe RTT (compared), the one-way
/// delays, the induced latency (compared) and the throughput each way
/// (compared where the phase loads that direction).
pub(crate) fn figures(f: &mut Figures, phases: &[Phase], induced: &[Induced]) {
    for (i, p) in phases.iter().enumerate() {
        let label = phase_label(i, &p.name);
        if let Some(s) = &p.rtt_us {
            f.latency(i, &label, "rtt", s, true);
        }
        if let Some(s) = &p.owd_up_us {
            f.latency(i, &label, "owd up", s, false);
        }
        if let Some(s) = &p.owd_down_us {
            f.latency(i, &label, "owd down", s, false);
        }
        if let Some(d) = induced.iter().find(|d| d.phase == label).filter(|_| p.name != "idle") {
            f.delay(i, &label, "induced rtt p50", d.rtt_p50_us, true);
            f.delay(i, &label, "induced rtt p99", d.rtt_p99_us, true);
        }
        let loads = |dir: &str| p.name == dir || p.name == "bidir";
        if loads("down") {
            f.rate(i, &label, "down", "Mbit/s", p.down_mbps, true);
        }
        if loads("up") {
            f.rate(i, &label, "up", "Mbit/s", p.up_mbps, true);
        }
    }
}
