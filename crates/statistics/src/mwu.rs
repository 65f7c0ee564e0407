//! The Mann-Whitney U test (Wilcoxon rank-sum): does one side tend to
//! give larger values than the other? Rank-based, so one wild repetition
//! does not decide it; benchstat uses it for the same reason.

use crate::dist::normal_cdf;

/// Two-sided p-value of the Mann-Whitney U test of `a` against `b`, from
/// the normal approximation with tie correction and continuity
/// correction. `None` when a side is empty. 1.0 when every value is tied.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    // Average ranks over ties; collect sum of t^3 - t for the correction.
    let mut rank_sum_a = 0.0;
    let mut ties = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && all[j].0 == all[i].0 {
            j += 1;
        }
        let avg_rank = (i + 1 + j) as f64 / 2.0; // ranks i+1 ..= j
        let t = (j - i) as f64;
        ties += t * t * t - t;
        rank_sum_a += avg_rank * all[i..j].iter().filter(|v| v.1).count() as f64;
        i = j;
    }
    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let u = rank_sum_a - n1f * (n1f + 1.0) / 2.0;
    let mean = n1f * n2f / 2.0;
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return Some(1.0);
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    Some((2.0 * (1.0 - normal_cdf(z))).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_sides_are_not_different() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!(mann_whitney_u(&a, &a).unwrap() > 0.9);
        assert_eq!(mann_whitney_u(&[2.0, 2.0], &[2.0, 2.0]), Some(1.0));
        assert_eq!(mann_whitney_u(&[], &[1.0]), None);
    }

    #[test]
    fn separated_sides_are_different() {
        let a: Vec<f64> = (0..10).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..10).map(|i| 100.0 + i as f64).collect();
        let p = mann_whitney_u(&a, &b).unwrap();
        // Normal approximation for complete separation with n = 10 + 10:
        // U = 0, mean 50, sd 13.229 -> z = 3.742 -> p = 0.00018.
        assert!((p - 0.000_18).abs() < 0.000_02, "{p}");
    }

    #[test]
    fn symmetric_in_its_arguments() {
        let a = [1.0, 3.0, 3.0, 7.0, 9.0];
        let b = [2.0, 3.0, 8.0, 10.0, 11.0, 12.0];
        assert_eq!(mann_whitney_u(&a, &b), mann_whitney_u(&b, &a));
    }
}
