//! The columns and cells every latency table shares.
use stackmeter_results::latency_text as num;
use stackmeter_results::LatencyUs;

use crate::view::Col;

/// How many deep-tail columns (p99.99, p99.999) a table of `summaries`
/// needs: as many as the deepest one has samples for.
pub fn tails<'a>(summaries: impl IntoIterator<Item = &'a LatencyUs>) -> usize {
    summaries
        .into_iter()
        .map(|s| usize::from(s.p9999.is_some()) + usize::from(s.p99999.is_some()))
        .max()
        .unwrap_or(0)
}

/// The latency columns every latency table shares, with `tails` deep-tail
/// columns (0 to 2, see [`tails`]).
pub fn latency_cols(tails: usize) -> Vec<Col> {
    let deep = ["p99.99", "p99.999"];
    ["min", "mean", "p50", "p90", "p99", "p99.9"]
        .iter()
        .chain(deep.iter().take(tails))
        .chain(["max", "stddev"].iter())
        .map(|h| Col::num(h, 7))
        .collect()
}

/// A summary's cells under [`latency_cols`]`(tails)`, with precision to
/// match; "-" for a deep tail this summary has too few samples for.
pub fn latency_cells(s: &LatencyUs, tails: usize) -> Vec<String> {
    let deep = [s.p9999, s.p99999];
    let mut c: Vec<String> = [s.min, s.mean, s.p50, s.p90, s.p99, s.p999]
        .iter()
        .map(|&v| num(v))
        .collect();
    c.extend(deep.iter().take(tails).map(|v| v.map_or("-".into(), num)));
    c.extend([num(s.max), num(s.stddev)]);
    c
}

#[cfg(test)]
mod tests {
    /// The precision the latency tables have always had (README's
    /// examples): two decimals, one from 1,000 us, none from 100,000.
    #[test]
    fn latency_cells_keep_their_precision() {
        let got: Vec<String> = [58.9, 999.994, 1470.26, 123_456.4]
            .iter()
            .map(|&v| super::num(v))
            .collect();
        assert_eq!(got, ["58.90", "999.99", "1470.3", "123456"]);
    }
}
