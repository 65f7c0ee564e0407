//! Histograms as bytes (HdrHistogram's V2 format, the one every
//! HdrHistogram implementation reads) for the results store, and the
//! points of a distribution function and of a percentile spectrum for
//! charts and tables.

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

/// One point of a percentile spectrum.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Percentile {
    /// The quantile, 0..=1.
    pub quantile: f64,
    /// The value at it (the bucket's highest equivalent value, at most
    /// the recorded maximum).
    pub value: u64,
    /// Samples at or below `value`.
    pub count: u64,
}

/// HdrHistogram's percentile distribution: 0%, 50%, 75%, 87.5%, ... (each
/// step halving the distance to 100%, `ticks` points per halving), until no
/// sample lies above the value; then the maximum at 100%.
pub fn spectrum(h: &Histogram<u64>, ticks: u32) -> Vec<Percentile> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Percentile> = h
        .iter_quantiles(ticks.max(1))
        .map(|v| Percentile {
            quantile: v.quantile_iterated_to(),
            value: h.highest_equivalent(v.value_iterated_to()).min(h.max()),
            count: 0,
        })
        .take_while(|p| p.quantile < 1.0)
        .collect();
    out.push(Percentile {
        quantile: 1.0,
        value: h.max(),
        count: 0,
    });
    for p in &mut out {
        p.count = h.count_between(0, p.value);
    }
    out
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

    #[test]
    fn spectrum_halves_towards_the_maximum() {
        let mut r = Recorder::new();
        for v in 1..=1000u64 {
            r.record(v);
        }
        let s = spectrum(r.histogram(), 1);
        assert_eq!(s[0].quantile, 0.0);
        let last = *s.last().unwrap();
        assert_eq!((last.quantile, last.value, last.count), (1.0, 1000, 1000));
        assert!(s
            .windows(2)
            .all(|w| w[0].quantile < w[1].quantile && w[0].value <= w[1].value));
        let median = s.iter().find(|p| p.quantile == 0.5).unwrap();
        assert!((499..=501).contains(&median.value) && median.count >= 500, "{median:?}");
        assert!(spectrum(&Histogram::<u64>::new(3).unwrap(), 1).is_empty());
    }
}
