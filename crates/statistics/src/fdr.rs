//! Many verdicts at once: when a comparison judges dozens of rows, or a
//! fleet comparison hundreds of pairs and figures, some will pass p < 0.05
//! by chance alone (120 tests at 0.05: about 6 false flags when nothing
//! changed). Benjamini and Hochberg's step-up procedure keeps the expected
//! share of false discoveries among the rows flagged at or below `q`. It
//! holds for independent tests and for positively dependent ones (PRDS:
//! Benjamini and Yekutieli, 2001), which is what a run-level load that
//! slows many pairs a little produces; Bonferroni would hold without it
//! but, at hundreds of tests, leave no verdict with five repetitions a
//! side. Also: the smallest p-value a Mann-Whitney test of n against m
//! repetitions can give, so a reader learns when no verdict can survive
//! the correction, and how many repetitions would be needed.

use crate::dist::normal_cdf;
use serde::{Deserialize, Serialize};

/// The method's name and its level, as outputs print it.
pub const METHOD: &str = "Benjamini-Hochberg";

/// Benjamini-Hochberg adjusted p-values (q-values), in the order given:
/// a row is a discovery at level `q` when its adjusted p-value is below
/// `q`. NaN p-values (no test) stay NaN and do not count as tests.
pub fn adjust(p: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_finite()).collect();
    let m = idx.len() as f64;
    idx.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![f64::NAN; p.len()];
    let mut running = 1.0f64;
    for (rank, &i) in idx.iter().enumerate().rev() {
        let adjusted = (p[i] * m / (rank as f64 + 1.0)).min(1.0);
        running = running.min(adjusted);
        out[i] = running;
    }
    out
}

/// The smallest two-sided p-value the Mann-Whitney test of `n1` against
/// `n2` repetitions can give (no ties, the sides entirely apart), by the
/// same normal approximation `mann_whitney_u` uses.
pub fn smallest_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let (a, b) = (n1 as f64, n2 as f64);
    let mean = a * b / 2.0;
    let var = a * b / 12.0 * (a + b + 1.0);
    let z = (mean - 0.5).max(0.0) / var.sqrt();
    (2.0 * (1.0 - normal_cdf(z))).min(1.0)
}

/// The fewest repetitions a side with which the clearest row of `tests`
/// could survive the correction at level `q` (its p-value at or below
/// q / tests), or `None` beyond 1,000.
pub fn repetitions_needed(tests: usize, q: f64) -> Option<usize> {
    let bar = q / tests.max(1) as f64;
    (2..=1000).find(|&n| smallest_p(n, n) <= bar)
}

/// How a set of verdicts was corrected, as outputs print and JSON keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Correction {
    /// [`METHOD`].
    pub method: String,
    /// The false discovery rate kept (0.05).
    pub q: f64,
    /// How many rows were judged together (those with enough repetitions).
    pub tests: usize,
    /// The fewest repetitions a side among them.
    pub repetitions: usize,
    /// The smallest p-value that many repetitions can give.
    pub smallest_p: f64,
    /// True when a row that changed alone cannot pass, whatever its data:
    /// the smallest p-value these repetitions allow is above `q / tests`.
    pub alone_cannot_pass: bool,
    /// How many rows must change together (each with the smallest
    /// p-value) for any to pass; 1 when one alone can.
    pub rows_together: usize,
    /// Repetitions a side with which one row alone could pass.
    pub repetitions_needed: Option<usize>,
}

impl Correction {
    /// Corrects `p` (one per row; NaN for a row without a test) at level
    /// `q`; `reps` are the repetitions (A, B) of the rows with a test.
    /// Returns the correction and each row's adjusted p-value.
    pub fn of(p: &[f64], reps: &[(usize, usize)], q: f64) -> (Correction, Vec<f64>) {
        let adjusted = adjust(p);
        let tests = p.iter().filter(|x| x.is_finite()).count();
        let fewest = reps.iter().map(|&(a, b)| a.min(b)).min().unwrap_or(0);
        let (a, b) = reps.iter().copied().min_by_key(|&(a, b)| a.min(b)).unwrap_or((0, 0));
        let smallest = smallest_p(a, b);
        let c = Correction {
            method: METHOD.into(),
            q,
            tests,
            repetitions: fewest,
            smallest_p: smallest,
            alone_cannot_pass: tests > 0 && smallest * tests as f64 > q,
            rows_together: ((smallest * tests as f64 / q).ceil() as usize).max(1),
            repetitions_needed: repetitions_needed(tests, q),
        };
        (c, adjusted)
    }

    /// One line for a reader: the method and level, and, when no verdict
    /// can survive it, why and how many repetitions would do.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "verdicts corrected for {} rows judged together: {} at a false discovery rate of {}",
            self.tests, self.method, self.q
        );
        if self.alone_cannot_pass {
            s.push_str(&format!(
                "; with {} repetitions a side no p-value is below {:.3}, so a row that changed alone cannot pass (it needs p <= {:.1e}), only {} or more that changed together: repeat {} or more times to judge rows one by one",
                self.repetitions,
                self.smallest_p,
                self.q / self.tests as f64,
                self.rows_together,
                self.repetitions_needed.map_or("many".into(), |n| n.to_string())
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjusted_values_follow_the_step_up_rule() {
        // Benjamini and Hochberg's own kind of example: sorted p and m = 5.
        let p = [0.01, 0.04, 0.03, 0.005, 0.5];
        let q = adjust(&p);
        // p(1)=0.005 -> 0.025; p(2)=0.01 -> 0.025; p(3)=0.03 -> 0.05;
        // p(4)=0.04 -> 0.05; p(5)=0.5 -> 0.5.
        let want = [0.025, 0.05, 0.05, 0.025, 0.5];
        for (g, w) in q.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{q:?}");
        }
        // Monotone in p, never below p, at most 1.
        assert!(q.iter().zip(p).all(|(a, b)| *a >= b && *a <= 1.0));
    }

    #[test]
    fn nan_is_not_a_test() {
        let q = adjust(&[0.01, f64::NAN, 0.02]);
        assert!(q[1].is_nan());
        assert!((q[0] - 0.02).abs() < 1e-12 && (q[2] - 0.02).abs() < 1e-12);
    }

    #[test]
    fn five_a_side_cannot_survive_many_tests() {
        // About 0.01 at 5 against 5 (0.012 by the normal approximation with
        // its continuity correction; the exact test gives 0.008).
        let p = smallest_p(5, 5);
        assert!(p > 0.008 && p < 0.013, "{p}");
        assert_eq!(
            crate::mann_whitney_u(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]),
            Some(p)
        );
        // 120 tests at q = 0.05: the bar is 0.05/120; five a side cannot
        // reach it, and the number needed can.
        let need = repetitions_needed(120, 0.05).unwrap();
        assert!(need > 5 && smallest_p(need, need) <= 0.05 / 120.0);
        assert!(smallest_p(need - 1, need - 1) > 0.05 / 120.0);
        assert_eq!(repetitions_needed(1, 0.05), Some(4));
    }

    #[test]
    fn a_correction_says_when_no_verdict_can_pass() {
        // One row at the smallest p-value five a side allow, among 120.
        let mut p = vec![0.5; 120];
        p[7] = smallest_p(5, 5);
        let (c, q) = Correction::of(&p, &vec![(5, 5); 120], 0.05);
        assert!(c.alone_cannot_pass && c.tests == 120 && c.repetitions == 5);
        assert!(q[7] >= 0.05, "{}", q[7]);
        assert_eq!(c.rows_together, (p[7] * 120.0 / 0.05_f64).ceil() as usize);
        assert!(c.describe().contains("repeat"), "{}", c.describe());
        // As many rows at it together do pass.
        let mut p = vec![0.5; 120];
        p.iter_mut().take(c.rows_together).for_each(|x| *x = smallest_p(5, 5));
        let (_, q) = Correction::of(&p, &vec![(5, 5); 120], 0.05);
        assert!(q[0] < 0.05, "{}", q[0]);
        let (c, _) = Correction::of(&[0.001, f64::NAN], &[(10, 10)], 0.05);
        assert!(!c.alone_cannot_pass && c.tests == 1 && c.rows_together == 1);
        assert!(!c.describe().contains("repeat"));
    }
}
