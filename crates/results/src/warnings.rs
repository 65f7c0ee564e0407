//! Warnings derived from a result: the things a reader must know before
//! trusting its figures. Computed once, stored in `Document::warnings`, so
//! the text and the JSON say the same.

use crate::latency::Levels;

/// What of a run bears on how its figures read: whether both sides were
/// pinned, and whether the target was a plain server (which sets no
/// TCP_NODELAY of its own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunContext {
    /// The measuring thread was pinned and so was the responder (as far as
    /// stackmeter knows: an external responder's placement is its own).
    pub pinned: bool,
    /// The target was a plain server (echo, raw, discard, iperf 2).
    pub plain: bool,
}

/// The delayed-ACK timer's steps: Linux acknowledges a lone segment after
/// 40 ms at least (TCP_DELACK_MIN) and 200 ms at most (TCP_DELACK_MAX), and
/// other stacks within the same range; a level that far above the other
/// is a segment held back for it.
const DELAYED_ACK_US: [(f64, f64); 2] = [(30_000.0, 50_000.0), (180_000.0, 220_000.0)];

/// A row whose latencies fall in two levels, with what most likely made
/// them: Nagle's algorithm waiting for a delayed ACK when the step between
/// the levels is the timer's (or a plain server's replies are more than
/// one segment), else where client and responder ran.
pub(crate) fn levels(name: String, l: Option<Levels>, run: &RunContext) -> Option<String> {
    let l = l?;
    let step = l.high_us - l.low_us;
    let at_timer = DELAYED_ACK_US.iter().any(|(lo, hi)| (*lo..=*hi).contains(&step));
    let why = if at_timer || (run.plain && step > 10_000.0) {
        format!(
            "the upper level is {:.0} ms above the lower, the delayed-ACK timer's step: one end held a segment back (Nagle's algorithm) until the other's delayed ACK came; a plain server without TCP_NODELAY does this to replies of more than one segment",
            step / 1000.0
        )
    } else if run.pinned {
        "both sides were pinned, so look for other load or the host's scheduling (virtual CPUs)".into()
    } else {
        "the client was not pinned, so it and the responder may have shared a CPU part of the time; pin both (--affinity, and the responder's own)".into()
    };
    Some(format!(
        "{name} has two levels, {:.1} us ({:.0}%) and {:.1} us ({:.0}%): {why}, and compare medians of several runs, not this one",
        l.low_us,
        100.0 * l.low_share,
        l.high_us,
        100.0 * (1.0 - l.low_share)
    ))
}

/// What a reader must know about a row's timestamp split.
pub(crate) fn split_warning(
    name: &str,
    ts: Option<&crate::split::Timestamps>,
    s: Option<&crate::split::SplitUs>,
) -> Option<String> {
    let ts = ts?;
    let Some(s) = s else {
        return Some(format!(
            "{name}timestamps were asked for, but the responder wrote no stamps (mode none): it does not know the flag or has no kernel timestamps, so there is no split"
        ));
    };
    if s.negative > 0 || s.unbalanced > 0 {
        let why = if ts.clock == "estimate" {
            "the clock offset is an estimate; a part below it reads negative"
        } else {
            "the stamps disagree with the timer: a clock was stepped, or the clocks are not the same"
        };
        return Some(format!(
            "{name}{} of {} exchanges have a negative part and {} do not add up to their RTT: {why}",
            s.negative, s.samples, s.unbalanced
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::*;

    fn ping_doc(lag: f64, levels: Option<Levels>, client_cpu: Option<usize>) -> Document {
        Document {
            schema: SCHEMA.into(),
            target: Target {
                name: "embedded".into(),
                address: "127.0.0.1:1".into(),
                embedded: true,
                kind: TargetKind::Stackmeter,
            },
            body: Body::Ping(crate::PingBody {
                params: PingParams {
                    size: 64,
                    count: 1,
                    warmup: 0,
                    interval_us: 100,
                    slow_us: 1000,
                    timeout_ms: 1000,
                    echo: false,
                    timestamps: None,
                    layers: false,
                },
                results: vec![PingResult {
                    sent: 1,
                    received: 1,
                    max_send_lag_us: lag,
                    levels,
                    ..PingResult::empty(64)
                }],
            }),
            placement: Placement {
                client_cpu,
                responder_cpu: client_cpu,
            },
            knobs: Default::default(),
            env: Env::default(),
            complete: true,
            error: None,
            warnings: vec![],
            not_measured: vec![],
        }
    }

    #[test]
    fn lag_beyond_the_interval_is_a_warning() {
        assert!(ping_doc(50.0, None, None).derive_warnings().is_empty());
        let w = ping_doc(150.0, None, None).derive_warnings();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("fell behind") && w[0].contains("150 us"), "{w:?}");
    }

    #[test]
    fn two_levels_name_the_likely_cause() {
        let l = Some(Levels {
            low_us: 3.5,
            high_us: 6.5,
            low_share: 0.6,
        });
        let unpinned = ping_doc(0.0, l, None).derive_warnings();
        assert!(unpinned[0].contains("may have shared a CPU"), "{unpinned:?}");
        let pinned = ping_doc(0.0, l, Some(1)).derive_warnings();
        assert!(pinned[0].contains("both sides were pinned"), "{pinned:?}");
        // A step of the delayed-ACK timer is Nagle's, however placed: the
        // 1 MiB echo through socat, 3.1 ms and 45.5 ms.
        let nagle = Some(Levels {
            low_us: 3100.4,
            high_us: 45489.1,
            low_share: 0.51,
        });
        for cpu in [None, Some(1)] {
            let w = ping_doc(0.0, nagle, cpu).derive_warnings();
            assert!(w[0].contains("delayed-ACK") && !w[0].contains("CPU"), "{w:?}");
        }
    }
}
