//! The measuring client: opens sockets to a responder and times exchanges.
//!
//! Each test is a function from parameters to typed rows
//! (`stackmeter-results`), built on plain blocking socket calls (`connect`,
//! `send`, `recv` through the C library), so an `LD_PRELOAD` user-space
//! stack intercepts the whole data path. The timed loops read the monotonic
//! clock right before the first byte is handed to the kernel and right after
//! the last byte is received; nothing allocates, formats or locks between
//! the two reads, and the sample goes into a histogram after the second.
//!
//! A test that fails part-way returns the rows it finished together with the
//! error ([`Outcome`]), so nothing measured is dropped.

mod conn;
mod control;
mod crr;
mod error;
mod load;
mod open_rr;
mod pace;
mod ping;
mod rr;
mod stream;
mod target;
mod udpmax;

pub use crr::crr;
pub use error::ClientError;
pub use load::{load, LoadOutcome};
pub use open_rr::{rr_open, schedule};
pub use ping::ping;
pub use rr::rr;
pub use stream::{stream, StreamOutcome};
pub use target::resolve;
pub use udpmax::{udp_max, UdpMaxOutcome};

use stackmeter_results::Levels;
use stackmeter_stats::{bimodal, Recorder, Summary};

/// Rows a test finished, and the error that stopped it, if one did.
#[derive(Debug)]
pub struct Outcome<T> {
    /// Finished rows, in order.
    pub rows: Vec<T>,
    /// Why the test stopped early.
    pub error: Option<ClientError>,
    /// The full distribution behind each finished row's figures, in
    /// nanoseconds (for the results store and reports).
    pub histograms: Vec<RowHistogram>,
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

/// Runs `one` for every size pair, one row and one RTT histogram each;
/// stops at the first error, keeping the rows already measured (rr, both
/// closed and open loop).
fn per_pair<T>(
    sizes: &[stackmeter_results::SizePair],
    mut one: impl FnMut(stackmeter_results::SizePair) -> Result<(T, Recorder), ClientError>,
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
fn summary_us(r: &Recorder) -> Option<Summary> {
    Summary::of(r).map(|s| s.scaled(1000.0))
}

/// Two levels in the samples, in microseconds, if any.
fn levels(r: &Recorder) -> Option<Levels> {
    bimodal(r.histogram()).map(|m| Levels {
        low_us: m.low / 1000.0,
        high_us: m.high / 1000.0,
        low_share: m.low_share,
    })
}
