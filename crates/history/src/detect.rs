//! Where the changes are, in two stages.
//!
//! 1. **Search** (seeded binary segmentation, Kovacs, Li, Buhlmann and
//!    Munk 2020): a fixed grid of intervals at every scale (the whole
//!    series, halves, quarters ... down to a few runs, each layer shifted
//!    by half an interval), each scanned once for its best split with
//!    prefix sums. A segment takes the best split among its own and
//!    those of the grid's intervals inside it; if that split passes a
//!    loose threshold (ten times alpha, as Otava's first pass) the
//!    segment is cut there and both sides are searched again. Short
//!    intervals find a change near the end of the series or two changes
//!    close together, which a scan of the whole segment would miss. Cost:
//!    O(n log n) for the grid, O(n) per level of cuts.
//! 2. **Pruning** (as Otava's merge step, with a p-value that allows for
//!    the search): each candidate is tested on the runs between its two
//!    neighbours, with the p-value of the *largest* standardised
//!    difference over that stretch, times the number of such stretches
//!    in the series ([`split_p`]); the weakest candidate above alpha
//!    goes, its neighbours are tested again, until every one left passes.

use crate::model::Prepared;
use crate::pvalue::{normal_equivalent, scan_p};

/// How much looser the search's threshold is than the final alpha.
const SEARCH_LOOSENESS: f64 = 10.0;
/// Shortest interval of the grid, in units of `min_segment`.
const SHORTEST: usize = 3;

/// A change point the pruning kept: where, how strong.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Found {
    /// First run after the change.
    pub index: usize,
    /// Two-sided p-value, allowing for the search over positions between
    /// the neighbouring change points.
    pub p_value: f64,
}

/// The p-value of a split at `k` of `s..e`: the chance that noise gives a
/// standardised difference this large anywhere in `s..e` (the search over
/// positions), times the number of stretches as long as `s..e` the series
/// holds (the search over where the stretch is: its ends are change points
/// the search chose too). Without the second factor, a short episode of
/// slightly slow runs anywhere in a long series would pass as two changes.
pub fn split_p(prep: &Prepared, s: usize, k: usize, e: usize, m: usize) -> f64 {
    let z = normal_equivalent(prep.z(s, k, e).abs(), prep.df);
    let stretches = prep.len() as f64 / (e - s) as f64;
    (scan_p(z, e - s, m) * stretches).min(1.0)
}

/// Change points of the prepared series at level `alpha`, each side of
/// each at least `m` runs.
pub fn detect(prep: &Prepared, m: usize, alpha: f64) -> Vec<Found> {
    let candidates = search(prep, m, (alpha * SEARCH_LOOSENESS).min(0.5));
    prune(prep, candidates, m, alpha)
}

/// One interval of the grid and its best split.
#[derive(Clone, Copy, Debug)]
struct Scanned {
    s: usize,
    e: usize,
    k: usize,
    z: f64,
}

/// The seeded intervals of a series of `n` runs, longest first: layer j
/// has intervals of length n / 2^j, 2^(j+1) - 1 of them, evenly spaced
/// from the start to the end (so consecutive ones overlap by half).
fn grid(n: usize, shortest: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut count = 1usize;
    let mut len = n;
    while len >= shortest && count < 2 * n {
        let last_start = n - len;
        for i in 0..count {
            let s = if count == 1 { 0 } else { i * last_start / (count - 1) };
            out.push((s, s + len));
        }
        count = 2 * count + 1;
        len = n * 2 / (count + 1);
    }
    out
}

/// Stage 1: candidate change points, sorted.
fn search(prep: &Prepared, m: usize, loose: f64) -> Vec<usize> {
    let n = prep.len();
    let mut scanned: Vec<Scanned> = grid(n, SHORTEST * m)
        .into_iter()
        .skip(1) // the whole series is scanned as the first segment
        .filter_map(|(s, e)| prep.best_split(s, e, m).map(|(k, z)| Scanned { s, e, k, z }))
        .collect();
    // Largest |z| first; on a tie the shorter interval, then the earlier.
    scanned.sort_by(|a, b| {
        b.z.abs()
            .total_cmp(&a.z.abs())
            .then((a.e - a.s).cmp(&(b.e - b.s)))
            .then(a.s.cmp(&b.s))
    });
    let mut found = Vec::new();
    let mut stack = vec![(0usize, n)];
    while let Some((s, e)) = stack.pop() {
        let own = prep.best_split(s, e, m).map(|(k, z)| Scanned { s, e, k, z });
        let inner = scanned.iter().find(|c| c.s >= s && c.e <= e).copied();
        let best = match (own, inner) {
            (Some(a), Some(b)) if b.z.abs() > a.z.abs() => Some(b),
            (Some(a), _) => Some(a),
            (None, b) => b,
        };
        let Some(best) = best else { continue };
        let z = normal_equivalent(best.z.abs(), prep.df);
        if scan_p(z, best.e - best.s, m) < loose {
            found.push(best.k);
            stack.push((s, best.k));
            stack.push((best.k, e));
        }
    }
    found.sort_unstable();
    found
}

/// Stage 2: drops the weakest candidate while any fails `alpha`.
fn prune(prep: &Prepared, mut cps: Vec<usize>, m: usize, alpha: f64) -> Vec<Found> {
    let n = prep.len();
    let bounds = |cps: &[usize], j: usize| {
        let s = if j == 0 { 0 } else { cps[j - 1] };
        let e = cps.get(j + 1).copied().unwrap_or(n);
        (s, e)
    };
    let mut p: Vec<f64> = (0..cps.len())
        .map(|j| {
            let (s, e) = bounds(&cps, j);
            split_p(prep, s, cps[j], e, m)
        })
        .collect();
    loop {
        let weakest = p
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(j, &pj)| (j, pj));
        let Some((j, pj)) = weakest else { break };
        if pj < alpha {
            break;
        }
        cps.remove(j);
        p.remove(j);
        for i in [j.wrapping_sub(1), j] {
            if i < cps.len() {
                let (s, e) = bounds(&cps, i);
                p[i] = split_p(prep, s, cps[i], e, m);
            }
        }
    }
    cps.into_iter()
        .zip(p)
        .map(|(index, p_value)| Found { index, p_value })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_covers_every_scale_and_both_ends() {
        let g = grid(100, 9);
        assert_eq!(g[0], (0, 100));
        assert!(g.iter().all(|&(s, e)| e <= 100 && e - s >= 9));
        assert!(g.iter().any(|&(s, e)| s == 0 && e < 20));
        assert!(g.iter().any(|&(s, e)| e == 100 && s > 80));
        // About two intervals per shortest length per layer: O(n) of them.
        assert!(g.len() < 4 * 100 / 9 * 2, "{}", g.len());
    }
}
