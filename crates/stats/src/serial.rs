//! Histograms as bytes (HdrHistogram's V2 format, the one every
//! HdrHistogram implementation reads) for the results store, and the
//! points of a distribution function for charts.

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;

/// Name of the encoding [`encode`] writes, as stored next to the bytes.
pub const ENCODING: &str = "hdrhistogram-v2";

/// Why bytes did not decode into a histogram.
#[derive(Debug)]
pub struct DecodeError(String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not an HdrHistogram V2 histogram: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

/// The histogram in HdrHistogram's V2 encoding (uncompressed).
pub fn encode(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    // Cannot fail: writing to a Vec does not fail, and a histogram built
    // by Recorder has counts the V2 format can hold.
    V2Serializer::new()
        .serialize(h, &mut out)
        .expect("serializing a histogram into memory");
    out
}

/// A histogram from [`encode`]'s bytes.
pub fn decode(bytes: &[u8]) -> Result<Histogram<u64>, DecodeError> {
    let mut r = bytes;
    Deserializer::new()
        .deserialize(&mut r)
        .map_err(|e| DecodeError(format!("{e:?}")))
}

/// The empirical distribution function at every distinct recorded value:
/// (value, fraction of samples at or below it), ascending.
pub fn cdf(h: &Histogram<u64>) -> Vec<(u64, f64)> {
    let n = h.len() as f64;
    if n == 0.0 {
        return Vec::new();
    }
    let mut seen = 0u64;
    h.iter_recorded()
        .map(|v| {
            seen += v.count_at_value();
            (h.highest_equivalent(v.value_iterated_to()), seen as f64 / n)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Recorder;

    #[test]
    fn round_trip_keeps_every_count() {
        let mut r = Recorder::new();
        for v in [1_000u64, 1_500, 1_500, 90_000, 3_000_000] {
            r.record(v);
        }
        let back = decode(&encode(r.histogram())).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.value_at_quantile(0.5), r.histogram().value_at_quantile(0.5));
        assert_eq!(back.max(), r.histogram().max());
        assert!(decode(b"nonsense").is_err());
    }

    #[test]
    fn cdf_ends_at_one() {
        let mut r = Recorder::new();
        for v in 1..=100u64 {
            r.record(v * 10);
        }
        let c = cdf(r.histogram());
        assert_eq!(c.len(), 100);
        assert_eq!(c.last().unwrap().1, 1.0);
        assert!(c.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
    }
}
