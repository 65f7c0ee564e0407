//! Warnings derived from a result: the things a reader must know before
//! trusting its figures. Computed once, stored in `Document::warnings`, so
//! the text and the JSON say the same.

use crate::doc::Document;
use crate::latency::Levels;

/// Every warning `doc`'s figures call for, in row order.
pub fn derive(doc: &Document) -> Vec<String> {
    let why = if pinned(doc) {
        "both sides were pinned, so look for other load or the host's scheduling (virtual CPUs)"
    } else {
        "client and responder probably shared a CPU part of the time; pin them (--affinity)"
    };
    doc.body.warnings(why)
}

/// A row whose latencies fall in two levels; `why` names the likely cause.
pub(crate) fn levels(name: String, l: Option<Levels>, why: &str) -> Option<String> {
    l.map(|l| {
        format!(
            "{name} has two levels, {:.1} us ({:.0}%) and {:.1} us ({:.0}%): {why}, and compare medians of several runs, not this one",
            l.low_us,
            100.0 * l.low_share,
            l.high_us,
            100.0 * (1.0 - l.low_share)
        )
    })
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

/// True when the measuring thread was pinned and so was the responder (as
/// far as stackmeter knows: an external responder's placement is its own).
fn pinned(doc: &Document) -> bool {
    doc.placement.client_cpu.is_some() && (doc.placement.responder_cpu.is_some() || !doc.target.embedded)
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
        assert!(super::derive(&ping_doc(50.0, None, None)).is_empty());
        let w = super::derive(&ping_doc(150.0, None, None));
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
        let unpinned = super::derive(&ping_doc(0.0, l, None));
        assert!(unpinned[0].contains("shared a CPU"), "{unpinned:?}");
        let pinned = super::derive(&ping_doc(0.0, l, Some(1)));
        assert!(pinned[0].contains("both sides were pinned"), "{pinned:?}");
    }
}
