//! The interval loop of every throughput test (`stream`, and `stream`
//! against a plain target): the first mark before the workers go, then a
//! mark at every interval end, each difference to the previous one a row.
//! The calling thread sleeps between marks (at most 50 ms at a time, so
//! Ctrl-C and a worker's error are seen); the workers move the bytes.

use crate::error::ClientError;
use crate::throughput::workers::Crew;
use stackmeter_results::{Interval, StreamParams};
use std::time::{Duration, Instant};

/// The interval ends, seconds from the start: every `interval_s`, the end
/// of the omitted seconds, and the end of the test.
pub(crate) fn boundaries(p: &StreamParams) -> Vec<f64> {
    let total = p.omit_s + p.time_s;
    let mut boundaries: Vec<f64> = (1..)
        .map(|k| k as f64 * p.interval_s)
        .take_while(|&t| t < total - 1e-9)
        .collect();
    if p.omit_s > 0.0 && !boundaries.iter().any(|&t| (t - p.omit_s).abs() < 1e-9) {
        boundaries.push(p.omit_s);
    }
    boundaries.push(total);
    boundaries.sort_by(f64::total_cmp);
    boundaries
}

/// What the interval loop saw of a test's window.
pub(crate) struct Window<M> {
    /// When the workers were let go.
    pub(crate) start: Instant,
    /// The mark where the omitted seconds ended, which the summary starts
    /// from; `None` when the test stopped before it.
    pub(crate) first: Option<M>,
    /// The last mark taken.
    pub(crate) last: M,
    /// Ctrl-C closed the window early.
    pub(crate) cut: bool,
}

impl<M> Window<M> {
    /// How the test ends once its summary is made: interrupted when
    /// Ctrl-C cut the window.
    pub(crate) fn end(&self) -> Result<(), ClientError> {
        match self.cut {
            true => Err(ClientError::Interrupted),
            false => Ok(()),
        }
    }
}

/// Takes the first mark (`mark(0.0)`, before any worker moves a byte, so
/// the window starts at the same instant for every counter it reads),
/// opens the crew's gate, then at every boundary takes a mark (`mark` of
/// the seconds since the gate opened) and makes the row from the previous
/// one (`row(previous, this, omitted)`), which `live` sees and `rows`
/// keeps. Ends at the last boundary, when the crew stops (a worker's
/// error), or at Ctrl-C: the interval in progress then ends there
/// (shorter, its rates over its own length) and the test stops as at its
/// planned end, so the summary covers what ran.
pub(crate) fn intervals<M: Copy>(
    p: &StreamParams,
    crew: &Crew,
    mut mark: impl FnMut(f64) -> Result<M, ClientError>,
    row: impl Fn(&M, &M, bool) -> Interval,
    live: &mut dyn FnMut(&Interval),
    rows: &mut Vec<Interval>,
) -> Result<Window<M>, ClientError> {
    let zero = mark(0.0)?;
    crew.go.open();
    let start = Instant::now();
    let mut w = Window {
        start,
        first: if p.omit_s > 0.0 { None } else { Some(zero) },
        last: zero,
        cut: false,
    };
    for b in boundaries(p) {
        let due = start + Duration::from_secs_f64(b);
        while !crew.stopped() {
            let now = Instant::now();
            w.cut = stackmeter_sys::interrupt::interrupted();
            if now >= due || w.cut {
                break;
            }
            std::thread::sleep((due - now).min(Duration::from_millis(50)));
        }
        if crew.stopped() {
            break;
        }
        let m = mark(start.elapsed().as_secs_f64())?;
        let r = row(&w.last, &m, b <= p.omit_s + 1e-9 && p.omit_s > 0.0);
        live(&r);
        rows.push(r);
        if w.first.is_none() && b >= p.omit_s - 1e-9 {
            w.first = Some(m);
        }
        w.last = m;
        if w.cut {
            break;
        }
    }
    Ok(w)
}
