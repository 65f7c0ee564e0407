//! What a test returns: the rows it finished, the error that stopped it,
//! and the full distribution behind each row's figures (a stream test:
//! its intervals and summary); and the helpers every timed loop shares to
//! turn samples into a row's figures.

use stackmeter_recorder::{bimodal, Recorder, Summary};
use stackmeter_results::{Interval, Levels, StreamSummary};

/// Rows a test finished, and the error that stopped it, if one did.
#[derive(Debug)]
pub struct Outcome<T> {
    /// Finished rows, in order.
    pub rows: Vec<T>,
    /// Why the test stopped early.
    pub error: Option<crate::error::ClientError>,
    /// The full distribution behind each finished row's figures, in
    /// nanoseconds (for the results store and reports).
    pub histograms: Vec<RowHistogram>,
}

impl<T> Outcome<T> {
    /// A test that stopped with `e` before its first row.
    pub(crate) fn failed(e: crate::error::ClientError) -> Outcome<T> {
        Outcome {
            rows: Vec::new(),
            error: Some(e),
            histograms: Vec::new(),
        }
    }
}

/// What a stream test produced (against a responder or a plain target):
/// every interval it finished, the summary if it got that far, and the
/// error that stopped it, if any.
#[derive(Debug, Default)]
pub struct StreamOutcome {
    /// Interval rows, omitted ones included.
    pub intervals: Vec<Interval>,
    /// Totals over the measured window.
    pub summary: Option<StreamSummary>,
    /// Why the test stopped early.
    pub error: Option<crate::error::ClientError>,
    /// The responder set the drain-timeout flag on its final report.
    pub drain_timeout: bool,
    /// What the reader must know that only the run could tell (a plain
    /// target that sent no report).
    pub warnings: Vec<stackmeter_results::warnings::Warning>,
}

impl StreamOutcome {
    /// What `run` filled in as it went, with the error it returned.
    pub(crate) fn of(run: impl FnOnce(&mut StreamOutcome) -> Result<(), crate::error::ClientError>) -> StreamOutcome {
        let mut out = StreamOutcome::default();
        if let Err(e) = run(&mut out) {
            out.error.get_or_insert(e);
        }
        out
    }
}

/// Every sample behind one figure of one row.
#[derive(Debug)]
pub struct RowHistogram {
    /// Index of the row in [`Outcome::rows`].
    pub row: usize,
    /// The JSON key of the figure it backs (`rtt_us`, `connect_us`, ...).
    pub metric: &'static str,
    /// The samples, nanoseconds.
    pub ns: Recorder,
}

impl RowHistogram {
    /// The samples as the store keeps them: the encoding's name and the
    /// bytes (HdrHistogram's V2 log encoding, `stackmeter_recorder::serial`).
    pub fn encoded(&self) -> (&'static str, Vec<u8>) {
        (
            stackmeter_recorder::serial::ENCODING,
            stackmeter_recorder::serial::encode(self.ns.histogram()),
        )
    }
}

/// Runs `one` for every size pair, one row and one RTT histogram each;
/// stops at the first error, keeping the rows already measured (rr, both
/// closed and open loop).
pub(crate) fn per_pair<T>(
    sizes: &[stackmeter_results::SizePair],
    mut one: impl FnMut(stackmeter_results::SizePair) -> Result<(T, Recorder), crate::error::ClientError>,
) -> Outcome<T> {
    let mut out = Outcome {
        rows: Vec::new(),
        error: None,
        histograms: Vec::new(),
    };
    for pair in sizes {
        match one(*pair) {
            Ok((row, ns)) => {
                out.histograms.push(RowHistogram {
                    row: out.rows.len(),
                    metric: "rtt_us",
                    ns,
                });
                out.rows.push(row);
                if let Err(e) = crate::error::check_interrupt() {
                    out.error = Some(e);
                    break;
                }
            }
            Err(e) => {
                out.error = Some(e);
                break;
            }
        }
    }
    out
}

/// Nanosecond samples summarised in microseconds.
pub(crate) fn summary_us(r: &Recorder) -> Option<Summary> {
    Summary::of(r).map(|s| s.scaled(1000.0))
}

/// Two levels in the samples, in microseconds, if any.
pub(crate) fn levels(r: &Recorder) -> Option<Levels> {
    bimodal(r.histogram()).map(|m| Levels {
        low_us: m.low / 1000.0,
        high_us: m.high / 1000.0,
        low_share: m.low_share,
    })
}
