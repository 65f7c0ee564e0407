//! Detects distributions with two clear levels.
//!
//! On a small machine an unpinned client and responder land on the same CPU
//! or on different CPUs, and loopback RTT then takes one of two values (3.5
//! or 6.5 us here). A median of such a run is a coin toss, so stackmeter
//! warns. The test: bin the samples on a log scale (8 bins per octave,
//! about 9% wide), smooth, find the two largest peaks that each hold at
//! least 10% of the samples, are at least 1.3x apart, and have a valley
//! between them below a third of the smaller peak.

use hdrhistogram::Histogram;

/// Two levels found in one distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Modes {
    /// Centre of the lower level, in the histogram's unit.
    pub low: f64,
    /// Centre of the higher level.
    pub high: f64,
    /// Share of the samples at or below the valley, 0..1.
    pub low_share: f64,
}

const BINS_PER_OCTAVE: f64 = 8.0;
const MIN_SHARE: f64 = 0.10;
const MIN_RATIO: f64 = 1.3;
const VALLEY: f64 = 1.0 / 3.0;
const MIN_SAMPLES: u64 = 20;

/// Two clear levels in `h`, if there are.
pub fn bimodal(h: &Histogram<u64>) -> Option<Modes> {
    if h.len() < MIN_SAMPLES {
        return None;
    }
    // The far tail (above p99.9) says nothing about levels; leave it out.
    let lo = h.min().max(1) as f64;
    let hi = h.value_at_quantile(0.999).max(1) as f64;
    let nbins = ((hi / lo).log2() * BINS_PER_OCTAVE).floor() as usize + 1;
    let mut bins = vec![0f64; nbins];
    for v in h.iter_recorded() {
        let x = v.value_iterated_to().max(1) as f64;
        if x > hi {
            continue;
        }
        let i = (((x / lo).log2() * BINS_PER_OCTAVE).floor() as usize).min(nbins - 1);
        bins[i] += v.count_at_value() as f64;
    }
    let total: f64 = bins.iter().sum();
    let smooth: Vec<f64> = (0..nbins)
        .map(|i| {
            let a = if i > 0 { bins[i - 1] } else { 0.0 };
            let c = if i + 1 < nbins { bins[i + 1] } else { 0.0 };
            (a + 2.0 * bins[i] + c) / 4.0
        })
        .collect();
    let peaks: Vec<usize> = (0..nbins)
        .filter(|&i| {
            let left = if i > 0 { smooth[i - 1] } else { 0.0 };
            let right = if i + 1 < nbins { smooth[i + 1] } else { 0.0 };
            smooth[i] > 0.0 && smooth[i] >= left && smooth[i] > right
        })
        .collect();
    let centre = |i: usize| lo * 2f64.powf((i as f64 + 0.5) / BINS_PER_OCTAVE);
    let mut best: Option<(f64, Modes)> = None;
    for (n, &a) in peaks.iter().enumerate() {
        for &b in &peaks[n + 1..] {
            if centre(b) / centre(a) < MIN_RATIO {
                continue;
            }
            let (v, &valley) = smooth[a..=b]
                .iter()
                .enumerate()
                .min_by(|x, y| x.1.total_cmp(y.1))
                .map(|(k, val)| (a + k, val))
                .unwrap_or((a, &0.0));
            if valley > VALLEY * smooth[a].min(smooth[b]) {
                continue;
            }
            let low_share = bins[..=v].iter().sum::<f64>() / total;
            if low_share < MIN_SHARE || 1.0 - low_share < MIN_SHARE {
                continue;
            }
            let strength = smooth[a].min(smooth[b]);
            if best.is_none_or(|(s, _)| strength > s) {
                best = Some((
                    strength,
                    Modes {
                        low: centre(a),
                        high: centre(b),
                        low_share,
                    },
                ));
            }
        }
    }
    best.map(|(_, m)| m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Recorder;

    /// A deterministic spread of `n` values around `centre` (+-4%).
    fn cluster(r: &mut Recorder, centre: u64, n: u64) {
        for i in 0..n {
            r.record(centre - centre / 25 + (i * 7919 % 1000) * centre / 12_500);
        }
    }

    #[test]
    fn two_cpu_placements_are_flagged() {
        let mut r = Recorder::new();
        cluster(&mut r, 3_500, 600);
        cluster(&mut r, 6_500, 400);
        let m = bimodal(r.histogram()).expect("two levels");
        assert!((3_000.0..4_000.0).contains(&m.low), "{m:?}");
        assert!((6_000.0..7_200.0).contains(&m.high), "{m:?}");
        assert!((0.5..0.7).contains(&m.low_share), "{m:?}");
    }

    #[test]
    fn one_level_with_a_tail_is_not() {
        let mut r = Recorder::new();
        cluster(&mut r, 6_500, 990);
        for i in 0..10 {
            r.record(20_000 + i * 3_000);
        }
        assert_eq!(bimodal(r.histogram()), None);
    }

    #[test]
    fn a_small_second_level_is_not() {
        let mut r = Recorder::new();
        cluster(&mut r, 3_500, 950);
        cluster(&mut r, 6_500, 50);
        assert_eq!(bimodal(r.histogram()), None);
    }
}
