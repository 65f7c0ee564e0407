//! Medians and what is built on them, in one place for every crate: the
//! median (sorting a copy, or selecting in place when a loop cannot
//! afford the copy), the median absolute deviation, and the
//! Hodges-Lehmann shift between two samples.

/// The median of `xs` (mean of the middle two for an even count); `None`
/// when empty. NaNs sort last.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    Some(median_sorted(&v))
}

/// The median of an already sorted, non-empty slice.
pub(crate) fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median of a non-empty slice, found by selection, reordering it
/// (no copy, no full sort: for loops over many short series).
pub fn median_in_place(xs: &mut [f64]) -> f64 {
    let n = xs.len();
    let (_, &mut upper, _) = xs.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        upper
    } else {
        // The lower middle is the largest of the elements before n / 2.
        let lower = xs[..n / 2].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        0.5 * (lower + upper)
    }
}

/// A sample's centre and spread, robustly: its median and the median
/// absolute deviation from it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// The median absolute deviation from the median.
    pub mad: f64,
    /// The median.
    pub median: f64,
}

/// The median absolute deviation from the median, and the median itself;
/// `None` when empty. Times [`MAD_TO_SD`] it estimates a normal's standard
/// deviation; Iglewicz and Hoaglin's modified z-score is 0.6745 (x -
/// median) / MAD.
pub fn mad(xs: &[f64]) -> Option<Spread> {
    let med = median(xs)?;
    let mut dev: Vec<f64> = xs.iter().map(|x| (x - med).abs()).collect();
    Some(Spread {
        mad: median_in_place(&mut dev),
        median: med,
    })
}

/// The median absolute deviation's consistency factor for the normal:
/// 1 / Phi^-1(3/4).
pub const MAD_TO_SD: f64 = 1.482_602;

/// Hodges-Lehmann estimate of the shift B - A: the median of every
/// pairwise difference. `None` when either side is empty.
pub fn hodges_lehmann(a: &[f64], b: &[f64]) -> Option<f64> {
    let d: Vec<f64> = b.iter().flat_map(|y| a.iter().map(move |x| y - x)).collect();
    median(&d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_place_medians_and_the_mad_agree_with_sorting() {
        for xs in [vec![3.0, 1.0, 2.0], vec![4.0, 1.0, 3.0, 2.0], vec![5.0]] {
            assert_eq!(median_in_place(&mut xs.clone()), median(&xs).unwrap());
        }
        assert_eq!(
            mad(&[1.0, 2.0, 3.0, 4.0, 100.0]),
            Some(Spread { mad: 1.0, median: 3.0 })
        );
        assert_eq!(mad(&[]), None);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn hodges_lehmann_of_a_pure_shift_is_the_shift() {
        let a = [10.0, 11.0, 12.0, 13.0];
        let b: Vec<f64> = a.iter().map(|x| x + 5.0).collect();
        assert_eq!(hodges_lehmann(&a, &b), Some(5.0));
    }
}
