//! Warnings: the things a reader must know before trusting a result's
//! figures, as one typed enum ([`Warning`]) whose text is written here and
//! nowhere else. The tests' bodies say which apply (`TestBody::warnings`),
//! the client and the engine add what only the run knows; a document
//! stores each as its text (`Document::warnings`), so the text and the
//! JSON say the same and documents stored before read as they were.

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

/// Something a reader must know before trusting the figures.
#[derive(Clone, Debug, PartialEq)]
pub enum Warning {
    /// A row's latencies fall in two levels.
    TwoLevels {
        /// The row ("rtt", "1 B:1 KiB").
        row: String,
        /// The levels.
        levels: Levels,
        /// What most likely made them.
        cause: LevelsCause,
    },
    /// Timestamps were asked for and the responder wrote none.
    NoStamps {
        /// The row, when the test has several.
        row: Option<String>,
    },
    /// A timestamp split with parts that do not read right.
    SplitOff {
        /// The row, when the test has several.
        row: Option<String>,
        /// Exchanges with a negative part.
        negative: u64,
        /// Exchanges split.
        samples: u64,
        /// Exchanges whose parts do not add up to their round trip.
        unbalanced: u64,
        /// The clocks' offset was estimated (else the clocks disagree).
        estimated: bool,
    },
    /// An open-loop rr row's client fell behind its schedule.
    RrBehindSchedule {
        /// The row.
        row: String,
        /// Requests per second asked for, and achieved.
        requested: f64,
        /// See `requested`.
        achieved: f64,
        /// Requests sent more than one per-connection interval late.
        late: u64,
        /// Requests in all.
        samples: u64,
        /// The send lag's p99 and max, us, when measured.
        lag_us: Option<(f64, f64)>,
    },
    /// TCP retransmitted segments on a closed-loop rr row's connection:
    /// frames were lost on the path (an emulated NIC drops them silently
    /// when its receive FIFO is full), and each loss costs a
    /// retransmission timeout that the row's slow transactions carry.
    RrRetransmits {
        /// The row.
        row: String,
        /// Segments the client's TCP retransmitted (TCP_INFO).
        retransmits: u32,
        /// The row's transactions, warm-up included.
        transactions: u64,
        /// Its slowest round trip, us.
        max_us: f64,
    },
    /// A scheduled ping's client fell behind its schedule.
    PingBehindSchedule {
        /// The latest a datagram left after its due time, us.
        lag_us: f64,
        /// The interval, us.
        interval_us: u64,
    },
    /// load requests that failed.
    LoadFailed {
        /// How many.
        errors: u64,
    },
    /// udp-max trials that could not send their load.
    UdpMaxShortSend {
        /// How many.
        trials: usize,
    },
    /// udp-max trials whose datagrams partly arrived after sending stopped.
    UdpMaxHeld {
        /// How many.
        trials: usize,
        /// The share above which a trial is counted.
        share: f64,
        /// The largest share.
        most: f64,
    },
    /// udp-max final trials that lost more than the goal.
    UdpMaxFinalFailed {
        /// How many.
        trials: usize,
        /// Their length, s.
        duration_s: f64,
        /// The first one's offered rate, kpps.
        kpps: f64,
        /// Its loss, a fraction.
        loss: f64,
    },
    /// udp-max's search did not reach its width goal.
    UdpMaxNotConverged {
        /// Its bounds, kpps.
        lower_kpps: f64,
        /// See `lower_kpps`; none when no trial failed.
        upper_kpps: Option<f64>,
    },
    /// A paced UDP stream offered less than asked.
    StreamUnderOffered {
        /// Datagrams per second offered, and asked for.
        offered: f64,
        /// See `offered`.
        wanted: f64,
    },
    /// rrul probes lost.
    RrulProbesLost {
        /// Lost, of sent.
        lost: u64,
        /// See `lost`.
        sent: u64,
    },
    /// No rrul probe came back with the responder's stamps.
    RrulNoStamps,
    /// udp-burst replies that were not an intact answer to their burst.
    BurstMismatched {
        /// How many.
        replies: u64,
    },
    /// udp-burst replies the client's own queue dropped.
    BurstClientDrops {
        /// How many.
        replies: u64,
    },
    /// The client's own drops could not be read.
    BurstClientDropsUnknown,
    /// A stream's data sessions had not ended 2 s after Stop.
    StreamDrainTimeout,
    /// The responder's longest test was shorter than the one asked for.
    ResponderTimeLimit {
        /// Its limit, s.
        max_s: u32,
        /// Seconds measured, and asked for.
        measured_s: f64,
        /// See `measured_s`.
        asked_s: f64,
    },
    /// The responder's highest rate bound the stream.
    ResponderRateLimit {
        /// Its limit, Mbit/s.
        max_mbps: f64,
        /// UDP: the datagrams per second sent instead (none: TCP down,
        /// where the responder paces its own sending).
        sent_pps: Option<f64>,
        /// The rate asked for, as given (none: as fast as possible).
        asked: Option<String>,
    },
    /// A discard target sent data back.
    DiscardReturned {
        /// Bytes it returned.
        bytes: u64,
    },
    /// An iperf 2 server reported on some UDP streams only.
    Iperf2Reports {
        /// Streams it reported on, of those sent.
        reported: usize,
        /// See `reported`.
        streams: usize,
    },
}

/// What most likely made a row's two levels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LevelsCause {
    /// The step is the delayed-ACK timer's (or a plain server's replies
    /// span segments): Nagle's algorithm waiting for a delayed ACK.
    DelayedAck {
        /// The step between the levels, ms.
        step_ms: f64,
    },
    /// Both sides were pinned: other load, or the host's scheduling.
    Pinned,
    /// The client was not pinned: it and the responder may have shared a CPU.
    NotPinned,
}

impl LevelsCause {
    /// What most likely made two levels, and what to do, in words.
    fn words(&self) -> String {
        match self {
            LevelsCause::DelayedAck { step_ms } => format!(
                "the upper level is {step_ms:.0} ms above the lower, the delayed-ACK timer's step: one end held a segment back (Nagle's algorithm) until the other's delayed ACK came; a plain server without TCP_NODELAY does this to replies of more than one segment"
            ),
            LevelsCause::Pinned => "both sides were pinned, so look for other load or the host's scheduling (virtual CPUs)".into(),
            LevelsCause::NotPinned => "the client was not pinned, so it and the responder may have shared a CPU part of the time; pin both (--affinity, and the responder's own)".into(),
        }
    }
}

impl Warning {
    /// [`Warning::RrBehindSchedule`] in words.
    fn behind_schedule(&self) -> String {
        let Warning::RrBehindSchedule {
            row,
            requested,
            achieved,
            late,
            samples,
            lag_us,
        } = self
        else {
            return String::new();
        };
        let lag = lag_us
            .map(|(p99, max)| format!(", send lag p99 {p99:.0} us, max {max:.0} us"))
            .unwrap_or_default();
        let lower = if *achieved < 0.99 * requested {
            " and the load was lower than asked"
        } else {
            ""
        };
        format!(
            "{row}: the client fell behind its schedule (requested {requested:.0}/s, achieved {achieved:.0}/s; {late} of {samples} requests left more than one per-connection interval late{lag}): the latencies include that lag{lower}"
        )
    }
}

/// "ROW: " where a warning names its row, else "".
fn row(r: &Option<String>) -> String {
    r.as_ref().map(|r| format!("{r}: ")).unwrap_or_default()
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::TwoLevels { row, levels: l, cause } => write!(
                f,
                "{row} has two levels, {:.1} us ({:.0}%) and {:.1} us ({:.0}%): {}, and compare medians of several runs, not this one",
                l.low_us,
                100.0 * l.low_share,
                l.high_us,
                100.0 * (1.0 - l.low_share),
                cause.words()
            ),
            Warning::NoStamps { row: r } => write!(
                f,
                "{}timestamps were asked for, but the responder wrote no stamps (mode none): it does not know the flag or has no kernel timestamps, so there is no split",
                row(r)
            ),
            Warning::SplitOff { row: r, negative, samples, unbalanced, estimated } => {
                let why = match estimated {
                    true => "the clock offset is an estimate; a part below it reads negative",
                    false => "the stamps disagree with the timer: a clock was stepped, or the clocks are not the same",
                };
                write!(
                    f,
                    "{}{negative} of {samples} exchanges have a negative part and {unbalanced} do not add up to their RTT: {why}",
                    row(r)
                )
            }
            Warning::RrBehindSchedule { .. } => f.write_str(&self.behind_schedule()),
            Warning::RrRetransmits {
                row,
                retransmits,
                transactions,
                max_us,
            } => write!(
                f,
                "{row}: the client's TCP retransmitted {retransmits} segment(s) over {transactions} transactions \
                 (TCP_INFO): frames were lost between here and the target, or an answer was late enough for a \
                 probe; a lost frame waits for a retransmission timeout (the slowest round trip took {:.1} ms); \
                 on an emulated board, its NIC's receive buffer may overflow (docs/lab.md)",
                max_us / 1000.0
            ),
            Warning::PingBehindSchedule { lag_us, interval_us } => write!(
                f,
                "the client fell behind its schedule (a datagram left up to {lag_us:.0} us after its due time, more than the {interval_us} us interval)"
            ),
            Warning::LoadFailed { errors } => write!(
                f,
                "{errors} request(s) failed (wrong bytes, an error answer, or a broken connection): the rates count only what arrived"
            ),
            Warning::UdpMaxShortSend { trials } => write!(
                f,
                "{trials} trial(s) could not send their load (the client was busy, or a full socket buffer held it back) and counted as failing: the answer is a lower bound of what the target forwards; run with the client pinned and nothing else on its CPU"
            ),
            Warning::UdpMaxHeld { trials, share, most } => write!(
                f,
                "in {trials} trial(s) more than {:.1}% of the datagrams arrived only after sending had stopped (up to {:.1}%): a queue on the path held them, and a queue can make a short trial pass a load the link cannot carry; the final trial (--final-trial) is what confirms the answer",
                100.0 * share,
                100.0 * most
            ),
            Warning::UdpMaxFinalFailed { trials, duration_s, kpps, loss } => write!(
                f,
                "{trials} final trial(s) of {duration_s:.0} s lost more than the goal where shorter trials had passed (the first at {kpps:.2} kpps lost {:.3}%): loss appeared only late, as a queue filled; the search went on below",
                100.0 * loss
            ),
            Warning::UdpMaxNotConverged { lower_kpps, upper_kpps } => write!(
                f,
                "the search did not reach its width goal: the answer lies between {lower_kpps:.2} kpps and {} kpps; give it more time (--max-trials) or a wider --width",
                upper_kpps.map(|u| format!("{u:.2}")).unwrap_or_else(|| "?".into())
            ),
            Warning::StreamUnderOffered { offered, wanted } => write!(
                f,
                "the client offered {offered:.0} datagrams/s, below the {wanted:.0}/s asked for: the client (or its socket buffer) was the limit, not the target"
            ),
            Warning::RrulProbesLost { lost, sent } => write!(
                f,
                "{lost} of {sent} latency probes were lost: the latency figures describe the probes that came back, and a queue that drops probes hides its worst delays"
            ),
            Warning::RrulNoStamps => f.write_str("no probe came back with the responder's stamps: no one-way delays"),
            Warning::BurstMismatched { replies } => write!(
                f,
                "{replies} reply(ies) were not an intact answer to their burst (wrong bytes, or late for an earlier burst): raise --timeout-ms if they were late"
            ),
            Warning::BurstClientDrops { replies } => write!(
                f,
                "the client's own receive queue dropped {replies} reply(ies) (the kernel's count for its socket): that loss is this host's, not the target's; raise net.core.rmem_max"
            ),
            Warning::BurstClientDropsUnknown => f.write_str(
                "the client's own drops could not be read (no /proc/net/udp line for its socket, as under an LD_PRELOAD stack): part of the loss may be this host's",
            ),
            Warning::ResponderTimeLimit { max_s, measured_s, asked_s } => write!(
                f,
                "the responder allows at most {max_s} s per test; measured {measured_s} s of the {asked_s} asked"
            ),
            Warning::ResponderRateLimit { max_mbps, sent_pps: Some(pps), asked } => write!(
                f,
                "the responder allows at most {max_mbps} Mbit/s per test; sent {pps:.0} datagrams/s instead of {}",
                asked.clone().unwrap_or_else(|| "as fast as possible".into())
            ),
            Warning::ResponderRateLimit { max_mbps, sent_pps: None, .. } => write!(
                f,
                "the responder sends at most {max_mbps} Mbit/s per test (its highest rate)"
            ),
            Warning::StreamDrainTimeout => f.write_str(
                "the responder's data sessions had not all ended 2 s after Stop: its final counts may miss their last bytes",
            ),
            Warning::DiscardReturned { bytes } => write!(
                f,
                "the target sent {bytes} bytes back: it is not a discard server (an echo server?), and its replies, which the client does not read while it sends, fill both ends' buffers until the stream stalls (the rates above fall toward 0); measure an echo server with rr --echo"
            ),
            Warning::Iperf2Reports { reported, streams } => write!(
                f,
                "the iperf 2 server reported on {reported} of {streams} UDP stream(s) (none after 10 FINs): what those streams delivered is unknown (is it an iperf 2 server?)"
            ),
        }
    }
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
pub(crate) fn levels(row: String, l: Option<Levels>, run: &RunContext) -> Option<Warning> {
    let l = l?;
    let step = l.high_us - l.low_us;
    let at_timer = DELAYED_ACK_US.iter().any(|(lo, hi)| (*lo..=*hi).contains(&step));
    let cause = if at_timer || (run.plain && step > 10_000.0) {
        LevelsCause::DelayedAck { step_ms: step / 1000.0 }
    } else if run.pinned {
        LevelsCause::Pinned
    } else {
        LevelsCause::NotPinned
    };
    Some(Warning::TwoLevels { row, levels: l, cause })
}

/// What a reader must know about a row's timestamp split.
pub(crate) fn split_warning(
    row: Option<String>,
    ts: Option<&crate::split::Timestamps>,
    s: Option<&crate::split::SplitUs>,
) -> Option<Warning> {
    let ts = ts?;
    let Some(s) = s else {
        return Some(Warning::NoStamps { row });
    };
    (s.negative > 0 || s.unbalanced > 0).then(|| Warning::SplitOff {
        row,
        negative: s.negative,
        samples: s.samples,
        unbalanced: s.unbalanced,
        estimated: ts.clock == "estimate",
    })
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
