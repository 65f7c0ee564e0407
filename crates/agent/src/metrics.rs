//! The agent's Prometheus metrics: one registry of `prometheus-client`
//! families, every per-pair series labelled `source` (this agent's
//! `--name`) and `target` (the peer's label, `peers.rs`), encoded for a
//! scrape in the format it asked for (`exposition.rs`).
//!
//! Series (names in seconds and `_total` as Prometheus names them):
//!
//! | family | type | labels |
//! |---|---|---|
//! | `stackmeter_rtt_seconds` | histogram | source, target, probe (`ping`, `rr`) |
//! | `stackmeter_probes_sent_total` | counter | source, target, probe |
//! | `stackmeter_probes_lost_total` | counter | source, target, probe |
//! | `stackmeter_one_way_delay_seconds` | histogram | source, target, direction (`up`: agent to peer, `down`) |
//! | `stackmeter_clock_offset_seconds` | gauge | source, target |
//! | `stackmeter_clock_offset_bound_seconds` | gauge | source, target |
//! | `stackmeter_stream_throughput_bytes_per_second` | gauge | source, target (with `--tests stream`) |
//! | `stackmeter_stream_tests_total`, `stackmeter_stream_failures_total` | counter | source, target |
//! | `stackmeter_peers` | gauge | source |
//! | `stackmeter_agent_info` | info (a gauge of 1 in the 0.0.4 text) | source, node, version |
//!
//! Histogram buckets ([`buckets`]): exponential, 20% apart, from 10 us to
//! 10 s (10 us x 1.2^k, k = 0..76, each bound rounded to two significant
//! digits so the `le` labels stay short: 77 bounds and +Inf).
//! `histogram_quantile` interpolates linearly inside the bucket that holds
//! the quantile, so a p99 read from these is within one bucket's width,
//! at most 20% (about 10% when the samples spread over the bucket) of the
//! exact figure, at every scale: a 15 us loopback round trip and a 150 ms
//! WAN one are read equally well, where the default Prometheus buckets
//! (5 ms to 10 s) would put every LAN round trip into the first. 10 us is
//! below any round trip through two kernels, and 10 s the longest
//! `--timeout-ms`, so nothing answered lands in +Inf. The cost is 80
//! lines per histogram series; the 0.1%-precise distributions go to the
//! results store with each summary instead.

use crate::exposition::{self, Format};
use crate::window::OneWay;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::AtomicU64;

/// Lowest bucket bound, seconds.
pub const LOWEST: f64 = 10e-6;
/// Growth from one bound to the next.
pub const FACTOR: f64 = 1.2;
/// Number of bounds (the highest is about 10 s).
pub const BOUNDS: i32 = 77;

/// The histogram buckets' upper bounds, seconds (see the module doc).
pub fn buckets() -> Vec<f64> {
    (0..BOUNDS)
        .map(|k| {
            let exact = LOWEST * FACTOR.powi(k);
            // Two significant digits, through the decimal text so the
            // bound is the short number the label shows.
            format!("{exact:.1e}").parse::<f64>().unwrap_or(exact)
        })
        .collect()
}

fn histogram() -> Histogram {
    Histogram::new(buckets())
}

/// A pair and a probe kind.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProbeLabels {
    /// This agent.
    pub source: String,
    /// The peer.
    pub target: String,
    /// `ping` or `rr`.
    pub probe: &'static str,
}

/// A pair and a direction.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WayLabels {
    source: String,
    target: String,
    direction: &'static str,
}

/// A pair.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PairLabels {
    source: String,
    target: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InfoLabels {
    source: String,
    node: String,
    version: String,
}

type Hist = Family<ProbeLabels, Histogram, fn() -> Histogram>;
type WayHist = Family<WayLabels, Histogram, fn() -> Histogram>;
type FloatGauge = Gauge<f64, AtomicU64>;

/// Every family of the agent, and the registry that encodes them.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    source: String,
    rtt: Hist,
    sent: Family<ProbeLabels, Counter>,
    lost: Family<ProbeLabels, Counter>,
    one_way: WayHist,
    offset: Family<PairLabels, FloatGauge>,
    bound: Family<PairLabels, FloatGauge>,
    stream_rate: Family<PairLabels, FloatGauge>,
    stream_tests: Family<PairLabels, Counter>,
    stream_failures: Family<PairLabels, Counter>,
    peers: Family<SourceLabels, Gauge>,
}

impl Metrics {
    /// The families of agent `source` on node `node`, version `version`;
    /// the stream families only when `stream` probes run.
    pub fn new(source: &str, node: &str, version: &str, stream: bool) -> Metrics {
        let mut registry = Registry::default();
        let rtt = Hist::new_with_constructor(histogram as fn() -> Histogram);
        let sent = Family::<ProbeLabels, Counter>::default();
        let lost = Family::<ProbeLabels, Counter>::default();
        let one_way = WayHist::new_with_constructor(histogram as fn() -> Histogram);
        let offset = Family::<PairLabels, FloatGauge>::default();
        let bound = Family::<PairLabels, FloatGauge>::default();
        let stream_rate = Family::<PairLabels, FloatGauge>::default();
        let stream_tests = Family::<PairLabels, Counter>::default();
        let stream_failures = Family::<PairLabels, Counter>::default();
        let peers = Family::<SourceLabels, Gauge>::default();
        registry.register(
            "stackmeter_agent",
            "The agent's name (the source label of its series), the node it runs on and its version",
            Info::new(InfoLabels {
                source: source.into(),
                node: node.into(),
                version: version.into(),
            }),
        );
        registry.register("stackmeter_peers", "Peers this agent probes now", peers.clone());
        registry.register_with_unit(
            "stackmeter_rtt",
            "Round-trip time of the probes answered in time (ping: UDP echo; rr: 1-byte request and response on a kept TCP connection)",
            Unit::Seconds,
            rtt.clone(),
        );
        registry.register("stackmeter_probes_sent", "Probes sent", sent.clone());
        registry.register(
            "stackmeter_probes_lost",
            "Probes with no answer within the timeout (a connection or send that failed counts too)",
            lost.clone(),
        );
        registry.register_with_unit(
            "stackmeter_one_way_delay",
            "One-way delay of the pings, up (agent to peer) and down, from the peer responder's stamps and the clock offset estimated per peer (values below 0 within the bound count as 0)",
            Unit::Seconds,
            one_way.clone(),
        );
        registry.register_with_unit(
            "stackmeter_clock_offset",
            "The peer's clock minus this agent's, estimated from the recent pings with the least time outside the peer",
            Unit::Seconds,
            offset.clone(),
        );
        registry.register_with_unit(
            "stackmeter_clock_offset_bound",
            "Error bound of the clock offset, and so of every one-way delay",
            Unit::Seconds,
            bound.clone(),
        );
        if stream {
            registry.register_with_unit(
                "stackmeter_stream_throughput",
                "Receiver throughput of the last throughput probe",
                Unit::Other("bytes_per_second".into()),
                stream_rate.clone(),
            );
            registry.register("stackmeter_stream_tests", "Throughput probes run", stream_tests.clone());
            registry.register(
                "stackmeter_stream_failures",
                "Throughput probes that failed",
                stream_failures.clone(),
            );
        }
        let m = Metrics {
            registry,
            source: source.into(),
            rtt,
            sent,
            lost,
            one_way,
            offset,
            bound,
            stream_rate,
            stream_tests,
            stream_failures,
            peers,
        };
        // Shown from the first scrape: an agent with no peer yet says 0.
        m.set_peers(0);
        m
    }

    fn probe_labels(&self, target: &str, probe: &'static str) -> ProbeLabels {
        ProbeLabels {
            source: self.source.clone(),
            target: target.into(),
            probe,
        }
    }

    fn pair(&self, target: &str) -> PairLabels {
        PairLabels {
            source: self.source.clone(),
            target: target.into(),
        }
    }

    /// Creates a new peer's series at zero, so a pair shows up in the
    /// first scrape after it is known, answered or not.
    pub fn add_pair(&self, target: &str, kinds: &[&'static str]) {
        for k in kinds {
            let l = self.probe_labels(target, k);
            let _ = self.sent.get_or_create(&l);
            let _ = self.lost.get_or_create(&l);
            let _ = self.rtt.get_or_create(&l);
        }
    }

    /// Removes every series of a peer no longer probed.
    pub fn remove_pair(&self, target: &str) {
        for k in ["ping", "rr"] {
            let l = self.probe_labels(target, k);
            self.sent.remove(&l);
            self.lost.remove(&l);
            self.rtt.remove(&l);
        }
        for direction in ["up", "down"] {
            self.one_way.remove(&WayLabels {
                source: self.source.clone(),
                target: target.into(),
                direction,
            });
        }
        let p = self.pair(target);
        for f in [&self.offset, &self.bound, &self.stream_rate] {
            f.remove(&p);
        }
        self.stream_tests.remove(&p);
        self.stream_failures.remove(&p);
    }

    /// The number of peers probed.
    pub fn set_peers(&self, n: usize) {
        let _ = self
            .peers
            .get_or_create(&SourceLabels {
                source: self.source.clone(),
            })
            .set(n as i64);
    }

    /// A probe of kind `probe` went to `target`.
    pub fn sent(&self, target: &str, probe: &'static str) {
        self.sent.get_or_create(&self.probe_labels(target, probe)).inc();
    }

    /// A probe got no answer in time.
    pub fn lost(&self, target: &str, probe: &'static str) {
        self.lost.get_or_create(&self.probe_labels(target, probe)).inc();
    }

    /// A probe was answered after `rtt_ns`.
    pub fn answered(&self, target: &str, probe: &'static str, rtt_ns: u64) {
        self.rtt
            .get_or_create(&self.probe_labels(target, probe))
            .observe(rtt_ns as f64 / 1e9);
    }

    /// A ping's one-way delays and the clock estimate behind them.
    pub fn one_way(&self, target: &str, ow: &OneWay) {
        for (direction, ns) in [("up", ow.up_ns), ("down", ow.down_ns)] {
            let l = WayLabels {
                source: self.source.clone(),
                target: target.into(),
                direction,
            };
            self.one_way.get_or_create(&l).observe(ns.max(0.0) / 1e9);
        }
        let p = self.pair(target);
        self.offset.get_or_create(&p).set(ow.offset_ns / 1e9);
        self.bound.get_or_create(&p).set(ow.bound_ns / 1e9);
    }

    /// A throughput probe ended: its receiver rate in bytes/s, or `None`
    /// when it failed.
    pub fn stream(&self, target: &str, bytes_per_s: Option<f64>) {
        let p = self.pair(target);
        self.stream_tests.get_or_create(&p).inc();
        match bytes_per_s {
            Some(r) => {
                self.stream_rate.get_or_create(&p).set(r);
            }
            None => {
                self.stream_failures.get_or_create(&p).inc();
            }
        }
    }

    /// The exposition in `format`.
    pub fn encode(&self, format: Format) -> String {
        let mut open = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut open, &self.registry);
        match format {
            Format::OpenMetrics => open,
            Format::Text => exposition::to_text(&open),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_about_20_percent_apart_from_10_us_to_10_s() {
        let b = buckets();
        assert_eq!(b.len(), 77);
        assert_eq!(b[0], 1e-5);
        assert!(b[76] >= 10.0 && b[76] < 12.0, "{}", b[76]);
        for w in b.windows(2) {
            let r = w[1] / w[0];
            assert!((1.1..=1.3).contains(&r), "{} -> {}", w[0], w[1]);
        }
        // Short labels: two significant digits.
        for x in &b {
            assert_eq!(format!("{x:.1e}").parse::<f64>().unwrap(), *x);
        }
    }

    #[test]
    fn every_pair_series_has_source_and_target_and_both_formats_encode() {
        let m = Metrics::new("a", "node-1", "0.2.0", false);
        m.add_pair("b", &["ping", "rr"]);
        m.sent("b", "ping");
        m.answered("b", "ping", 42_000);
        m.sent("b", "rr");
        m.lost("b", "rr");
        m.one_way(
            "b",
            &OneWay {
                up_ns: 20_000.0,
                down_ns: -5.0,
                offset_ns: 1.5e9,
                bound_ns: 21_000.0,
            },
        );
        m.set_peers(1);
        let open = m.encode(Format::OpenMetrics);
        assert!(open.ends_with("# EOF\n"));
        assert!(open.contains("stackmeter_probes_sent_total{source=\"a\",target=\"b\",probe=\"ping\"} 1\n"));
        assert!(open.contains("stackmeter_probes_lost_total{source=\"a\",target=\"b\",probe=\"rr\"} 1\n"));
        assert!(open.contains("stackmeter_rtt_seconds_count{source=\"a\",target=\"b\",probe=\"ping\"} 1\n"));
        assert!(open.contains("stackmeter_clock_offset_seconds{source=\"a\",target=\"b\"} 1.5\n"));
        assert!(open.contains("stackmeter_agent_info{source=\"a\",node=\"node-1\",version=\"0.2.0\"} 1\n"));
        for line in open.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            if name.starts_with("stackmeter_peers") || name.starts_with("stackmeter_agent") {
                continue;
            }
            assert!(line.contains("source=\"a\"") && line.contains("target=\"b\""), "{line}");
        }
        // The 42 us ping is in the 43 us bucket and every one above.
        assert!(
            open.contains("stackmeter_rtt_seconds_bucket{le=\"4.3e-5\",source=\"a\",target=\"b\",probe=\"ping\"} 1\n")
                || open.contains(
                    "stackmeter_rtt_seconds_bucket{le=\"0.000043\",source=\"a\",target=\"b\",probe=\"ping\"} 1\n"
                ),
            "{open}"
        );
        let text = m.encode(Format::Text);
        assert!(!text.contains("# EOF") && !text.contains("# UNIT"));
        assert!(text.contains("# TYPE stackmeter_probes_sent_total counter\n"));
        assert!(text.contains("# TYPE stackmeter_agent_info gauge\n"));
        // A peer that leaves takes its series with it.
        m.remove_pair("b");
        let after = m.encode(Format::Text);
        assert!(!after.contains("target=\"b\""), "{after}");
    }
}
