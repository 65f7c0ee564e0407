//! Medians, the centre every comparison row is built on, and the
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
