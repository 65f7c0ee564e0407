//! stream: TCP or paced UDP throughput per interval and in total (the bps
//! tool's per-second table, a link datasheet's throughput rows). Its
//! parameters, intervals, summary and view.
//!
//! Naming follows the `bps` tool's table, from the client's point of view:
//! **sent** is the client-to-target direction and **received** the
//! target-to-client direction. Each is counted where it is received: sent
//! bytes by the responder (its Report), received bytes by the client. What
//! the senders counted is kept beside them ([`SenderBytes`]), so the
//! difference (bytes in flight at the end of the window) is visible.

use crate::figures::Figures;
use crate::label::format_size;
use serde::{Deserialize, Serialize};

/// Which way the payload flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Flow {
    /// Client to target.
    Up,
    /// Target to client.
    Down,
    /// Both at once, on separate connections.
    Bidir,
}

impl Flow {
    /// Whether the client sends.
    pub fn up(self) -> bool {
        matches!(self, Flow::Up | Flow::Bidir)
    }

    /// Whether the target sends.
    pub fn down(self) -> bool {
        matches!(self, Flow::Down | Flow::Bidir)
    }

    /// The flag value.
    pub fn name(self) -> &'static str {
        match self {
            Flow::Up => "up",
            Flow::Down => "down",
            Flow::Bidir => "bidir",
        }
    }
}

/// stream parameters.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamParams {
    /// Which way data flows.
    pub direction: Flow,
    /// Connections (TCP) or sockets (UDP) per direction.
    pub parallel: u32,
    /// Bytes per send call (TCP) or per datagram (UDP payload, stackmeter
    /// header included); also the receive size, and the "message" of kpps.
    pub length: u32,
    /// Measured seconds, after the omitted ones.
    pub time_s: f64,
    /// Seconds per interval row.
    pub interval_s: f64,
    /// Seconds at the start reported but left out of the summary (TCP
    /// slow start).
    pub omit_s: f64,
    /// Paced UDP instead of TCP.
    pub udp: bool,
    /// UDP offered rate as given (`200M` bits/s or `50kpps`).
    pub rate: Option<String>,
    /// UDP offered rate in datagrams per second, all sockets together.
    pub rate_pps: Option<f64>,
    /// MSG_ZEROCOPY on the client's TCP sends.
    pub zerocopy: bool,
    /// TCP_NODELAY on the data connections (off by default: Nagle
    /// coalesces small writes, as for iperf3).
    #[serde(default)]
    pub nodelay: bool,
    /// Bound on every network wait, milliseconds.
    pub timeout_ms: u64,
    /// A plain TCP discard server (`--discard`, RFC 863): no control
    /// session; `sent_*` are the client's send calls (documents stored
    /// before read as false).
    #[serde(default)]
    pub discard: bool,
    /// An iperf 2 server (`--iperf2`): each connection starts with iperf
    /// 2's 24-byte settings header; `sent_*` are the client's send calls.
    #[serde(default)]
    pub iperf2: bool,
    /// UDP datagrams per send call (UDP GSO, else sendmmsg); 1: one `send`
    /// each (documents stored before it read as 1).
    #[serde(default = "one")]
    pub batch: u32,
}

/// One datagram per call: what documents from before batching did.
fn one() -> u32 {
    1
}

impl StreamParams {
    /// True against a plain target (discard, iperf 2): the client counts
    /// what it sent, the target reports nothing.
    pub fn plain(&self) -> bool {
        self.discard || self.iperf2
    }
}

/// One interval row.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Interval {
    /// Start, seconds since the test began.
    pub start_s: f64,
    /// End, seconds since the test began.
    pub end_s: f64,
    /// Inside the omit period: shown, not summarised.
    pub omitted: bool,
    /// Client-to-target rate counted by the target.
    pub sent_mbps: f64,
    /// The same in thousands of `length`-byte messages per second.
    pub sent_kpps: f64,
    /// Target-to-client rate counted by the client.
    pub recv_mbps: f64,
    /// The same in thousands of messages per second.
    pub recv_kpps: f64,
    /// Both directions.
    pub total_mbps: f64,
    /// Both directions, thousands of messages per second.
    pub total_kpps: f64,
    /// Client-to-target bytes received by the target in this interval.
    pub sent_bytes: u64,
    /// Target-to-client bytes received by the client in this interval.
    pub recv_bytes: u64,
    /// TCP segments retransmitted by the senders in this interval.
    pub retransmits: Option<u64>,
    /// Congestion window of the senders at the interval's end, KiB (the
    /// client's sockets for up and bidir, the target's for down).
    pub cwnd_kib: Option<f64>,
    /// Smoothed RTT the senders' TCP saw at the interval's end, us.
    pub rtt_us: Option<f64>,
    /// UDP figures of this interval.
    pub udp: Option<UdpFigures>,
    /// Plain targets (discard, iperf 2): bytes the target's TCP
    /// acknowledged in this interval (TCP_INFO `tcpi_bytes_acked` of the
    /// client's sockets), the closest figure to what it received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked_bytes: Option<u64>,
    /// The same as a rate, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked_mbps: Option<f64>,
}

/// UDP loss figures, from the responder's counters.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UdpFigures {
    /// Datagrams the client sent.
    pub sent_datagrams: u64,
    /// Datagrams the target received (duplicates excluded).
    pub received_datagrams: u64,
    /// Sent minus received (in an interval: expected minus received, by
    /// sequence number, as the target sees it).
    pub lost: u64,
    /// lost / sent.
    pub loss_ratio: f64,
    /// Datagrams the target received twice.
    pub duplicates: u64,
    /// Datagrams that arrived after a later one.
    pub reordered: u64,
    /// RFC 3550 interarrival jitter at the target, us.
    pub jitter_us: f64,
}

/// min / median / max of the interval rates (a datasheet's min/typ/max).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Spread {
    /// Lowest interval.
    pub min: f64,
    /// Median interval.
    pub median: f64,
    /// Highest interval.
    pub max: f64,
}

/// What the senders counted over the summary window.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SenderBytes {
    /// Bytes the client's send calls accepted (client to target).
    pub client_sent_bytes: u64,
    /// Bytes the target's send calls accepted (target to client).
    pub target_sent_bytes: u64,
    /// Bytes received in each direction once the test was stopped and
    /// drained (from the final Report and the client's last reads): what
    /// was still in flight when the window closed arrives here.
    pub drained_sent_bytes: u64,
    /// Target-to-client bytes received after draining.
    pub drained_recv_bytes: u64,
}

/// CPU time of one side during the test.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuShare {
    /// User-mode seconds.
    pub user_s: f64,
    /// Kernel seconds.
    pub sys_s: f64,
    /// (user + sys) / wall time, in percent of one core.
    pub percent_of_core: f64,
}

/// CPU time of both sides.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuUse {
    /// The client's measuring threads (getrusage per thread).
    pub client: CpuShare,
    /// The responder's whole process, as it reported it; `None` when it
    /// cannot measure (an embedded stack).
    pub responder: Option<CpuShare>,
}

/// The stream summary over the measured window (omit period excluded).
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamSummary {
    /// Seconds in the window.
    pub duration_s: f64,
    /// Client-to-target rate counted by the target.
    pub sent_mbps: f64,
    /// Target-to-client rate counted by the client.
    pub recv_mbps: f64,
    /// Both.
    pub total_mbps: f64,
    /// Messages of `length` bytes, thousands per second, client to target.
    pub sent_kpps: f64,
    /// Messages, thousands per second, target to client.
    pub recv_kpps: f64,
    /// Both.
    pub total_kpps: f64,
    /// Client-to-target bytes the target received in the window.
    pub sent_bytes: u64,
    /// Target-to-client bytes the client received in the window.
    pub recv_bytes: u64,
    /// What the senders counted, and what arrived after draining.
    pub senders: SenderBytes,
    /// Spread of the interval totals, Mbit/s.
    pub interval_total_mbps: Spread,
    /// TCP segments retransmitted in the window (both senders).
    pub retransmits: Option<u64>,
    /// CPU time of client and responder over the whole test.
    pub cpu: CpuUse,
    /// UDP totals (UDP stream only).
    pub udp: Option<UdpFigures>,
    /// MSG_ZEROCOPY completions (with --zerocopy only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zerocopy: Option<Zerocopy>,
    /// Plain targets (discard, iperf 2): bytes the target's TCP
    /// acknowledged in the window (TCP_INFO `tcpi_bytes_acked` of the
    /// client's sockets), the closest figure to what it received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked_bytes: Option<u64>,
    /// The same as a rate, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked_mbps: Option<f64>,
}

/// What the kernel reported for MSG_ZEROCOPY sends.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Zerocopy {
    /// Sends whose completion the kernel reported.
    pub completed: u64,
    /// Of those, sends it copied after all (always, on loopback: the
    /// receiver would otherwise hold the sender's pages).
    pub copied: u64,
}

/// stream's figures: total (compared), sent and received Mbit/s.
pub(crate) fn figures(f: &mut Figures, p: &StreamParams, s: Option<&StreamSummary>) {
    let Some(s) = s else { return };
    let label = format!("{} {}", p.direction.name(), format_size(p.length as u64));
    for (series, value, compared) in [
        ("total", s.total_mbps, true),
        ("sent", s.sent_mbps, false),
        ("received", s.recv_mbps, false),
    ] {
        f.rate(0, &label, series, "Mbit/s", value, compared);
    }
    if let Some(a) = s.acked_mbps {
        f.rate(0, &label, "acked", "Mbit/s", a, false);
    }
}

/// A stream document's body: parameters, every interval, the totals.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamBody {
    /// Parameters.
    pub params: StreamParams,
    /// One row per interval, omitted ones included (flagged).
    pub intervals: Vec<Interval>,
    /// Totals over the measured window; None if the test failed before
    /// its first interval.
    pub summary: Option<Box<StreamSummary>>,
}

impl crate::TestBody for StreamBody {
    const KIND: crate::TestKind = crate::TestKind::Stream;
    const LOADS_THE_LINK: bool = true;
    type Params = StreamParams;

    fn empty(params: StreamParams) -> StreamBody {
        StreamBody {
            params,
            intervals: Vec::new(),
            summary: None,
        }
    }
    fn params(&self) -> &StreamParams {
        &self.params
    }
    fn is_empty(&self) -> bool {
        self.intervals.is_empty() && self.summary.is_none()
    }
    fn figures(&self, f: &mut Figures) {
        figures(f, &self.params, self.summary.as_deref());
    }
    fn warnings(&self, _run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning> {
        warnings(&self.params, self.summary.as_deref())
    }
    fn target_kind(p: &StreamParams) -> crate::TargetKind {
        p.target_kind()
    }
    fn not_measured(&self) -> Vec<crate::NotMeasured> {
        not_measured(&self.params, self.params.target_kind())
    }
}

impl StreamParams {
    /// The kind of target these parameters measure.
    pub fn target_kind(&self) -> crate::TargetKind {
        match (self.discard, self.iperf2) {
            (true, _) => crate::TargetKind::Discard,
            (_, true) => crate::TargetKind::Iperf2,
            _ => crate::TargetKind::Stackmeter,
        }
    }
}

/// What a stream cannot measure of a plain target `kind`.
fn not_measured(params: &StreamParams, kind: crate::TargetKind) -> Vec<crate::NotMeasured> {
    let item = crate::plain::not_measured;
    match kind {
        crate::TargetKind::Iperf2 if params.udp => vec![
            item(
                "intervals[].udp",
                "loss and jitter per interval; an iperf 2 server reports once, at the end, and summary.udp is that report, over the whole test",
            ),
            item("cpu.responder", "the responder's CPU time; only a stackmeter responder reports it"),
        ],
        crate::TargetKind::Discard | crate::TargetKind::Iperf2 => {
            let counter = match kind {
                crate::TargetKind::Discard => "a discard server counts nothing it can report",
                _ => "an iperf 2 server prints its own count on its side (lwiperf hands it to a callback); stackmeter does not read it",
            };
            vec![
                item(
                    "target-counted bytes",
                    &format!("{counter}; sent_* here are the client's send calls, and acked_* what the target's TCP acknowledged (TCP_INFO), the closest figure to what it received"),
                ),
                item("cpu.responder", "the responder's CPU time; only a stackmeter responder reports it"),
            ]
        }
        _ => Vec::new(),
    }
}

/// A stream's warnings: a paced UDP stream the client could not offer.
fn warnings(p: &StreamParams, s: Option<&StreamSummary>) -> Vec<crate::warnings::Warning> {
    let mut out = Vec::new();
    let Some(s) = s else { return out };
    if let (Some(u), Some(want)) = (&s.udp, p.rate_pps) {
        let offered = u.sent_datagrams as f64 / (s.duration_s.max(1e-9));
        if offered < 0.95 * want {
            out.push(crate::warnings::Warning::StreamUnderOffered { offered, wanted: want });
        }
    }
    out
}
