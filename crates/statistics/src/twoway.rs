//! Which node, not which pair: a fleet's matrix of pairs (clients by
//! targets) fitted as one effect per node as a client plus one per node as
//! a target, by Tukey's median polish, as Pingmesh localises a fault from
//! its latency matrix. A node whose outgoing link slowed shows as a client
//! effect, one whose incoming link slowed as a target effect, and neither
//! is spread as noise over the node's pairs. Medians, so one odd pair moves
//! nothing; and each effect is tested: the node's pairs, the other effect
//! removed, against every other pair (Mann-Whitney), so an effect the noise
//! could make gets no verdict.

use crate::median::median;
use crate::mwu::mann_whitney_u;

/// The fit of a matrix (cells may be missing: a pair not measured).
#[derive(Clone, Debug, PartialEq)]
pub struct Polish {
    /// The overall level.
    pub overall: f64,
    /// One effect per row (node as a client).
    pub rows: Vec<f64>,
    /// One effect per column (node as a target).
    pub cols: Vec<f64>,
    /// What is left of each cell.
    pub residuals: Vec<Vec<Option<f64>>>,
}

/// Median polish of `cells` (rows by columns, values on a scale where
/// effects add: logarithms of times or rates, or log ratios), sweeping
/// rows then columns until nothing moves (at most 20 sweeps).
pub fn median_polish(cells: &[Vec<Option<f64>>]) -> Polish {
    let nr = cells.len();
    let nc = cells.iter().map(Vec::len).max().unwrap_or(0);
    let mut res: Vec<Vec<Option<f64>>> = cells
        .iter()
        .map(|r| (0..nc).map(|j| r.get(j).copied().flatten()).collect())
        .collect();
    let (mut rows, mut cols, mut overall) = (vec![0.0; nr], vec![0.0; nc], 0.0);
    for _ in 0..20 {
        let mut moved = 0.0f64;
        for (i, r) in res.iter_mut().enumerate() {
            let vals: Vec<f64> = r.iter().flatten().copied().collect();
            let m = median(&vals).unwrap_or(0.0);
            r.iter_mut().flatten().for_each(|v| *v -= m);
            rows[i] += m;
            moved = moved.max(m.abs());
        }
        let m = median(&cols).unwrap_or(0.0);
        cols.iter_mut().for_each(|c| *c -= m);
        overall += m;
        for j in 0..nc {
            let vals: Vec<f64> = res.iter().filter_map(|r| r[j]).collect();
            let m = median(&vals).unwrap_or(0.0);
            res.iter_mut().filter_map(|r| r[j].as_mut()).for_each(|v| *v -= m);
            cols[j] += m;
            moved = moved.max(m.abs());
        }
        let m = median(&rows).unwrap_or(0.0);
        rows.iter_mut().for_each(|r| *r -= m);
        overall += m;
        if moved < 1e-12 {
            break;
        }
    }
    Polish {
        overall,
        rows,
        cols,
        residuals: res,
    }
}

/// Whether a node's effect is more than noise: two-sided Mann-Whitney
/// p-value of the node's cells as a client (`row`) against every other
/// cell, each with the column effects removed; `None` without cells on
/// either side.
pub fn row_p(cells: &[Vec<Option<f64>>], fit: &Polish, row: usize) -> Option<f64> {
    let (mut mine, mut rest) = (Vec::new(), Vec::new());
    for (i, r) in cells.iter().enumerate() {
        for (j, v) in r.iter().enumerate() {
            if let Some(v) = v {
                let x = v - fit.cols.get(j).copied().unwrap_or(0.0);
                if i == row {
                    mine.push(x);
                } else {
                    rest.push(x);
                }
            }
        }
    }
    mann_whitney_u(&mine, &rest)
}

/// The same for a node as a target (`col`), with the row effects removed.
pub fn col_p(cells: &[Vec<Option<f64>>], fit: &Polish, col: usize) -> Option<f64> {
    let (mut mine, mut rest) = (Vec::new(), Vec::new());
    for (i, r) in cells.iter().enumerate() {
        for (j, v) in r.iter().enumerate() {
            if let Some(v) = v {
                let x = v - fit.rows.get(i).copied().unwrap_or(0.0);
                if j == col {
                    mine.push(x);
                } else {
                    rest.push(x);
                }
            }
        }
    }
    mann_whitney_u(&mine, &rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Six nodes, log values: noise, plus `up` on node 2's row (it sends
    /// slowly) and `down` on node 4's column (it receives slowly).
    fn matrix(up: f64, down: f64) -> Vec<Vec<Option<f64>>> {
        (0..6)
            .map(|i| {
                (0..6)
                    .map(|j| {
                        (i != j).then(|| {
                            let noise = ((i * 7 + j * 13) % 5) as f64 * 0.01;
                            noise + if i == 2 { up } else { 0.0 } + if j == 4 { down } else { 0.0 }
                        })
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_slow_direction_is_one_node_effect() {
        let m = matrix(0.0, 0.7);
        let fit = median_polish(&m);
        // Node 4 as a target carries the whole shift; no client does.
        assert!((fit.cols[4] - 0.7).abs() < 0.05, "{fit:?}");
        assert!(fit.rows.iter().all(|r| r.abs() < 0.05), "{fit:?}");
        assert!(fit.cols.iter().enumerate().all(|(j, c)| j == 4 || c.abs() < 0.05));
        assert!(col_p(&m, &fit, 4).unwrap() < 0.001);
        assert!(row_p(&m, &fit, 4).unwrap() > 0.05);
        assert!((0..6).filter(|&j| j != 4).all(|j| col_p(&m, &fit, j).unwrap() > 0.01));
    }

    #[test]
    fn both_directions_are_told_apart() {
        let m = matrix(0.5, 0.3);
        let fit = median_polish(&m);
        assert!(
            (fit.rows[2] - 0.5).abs() < 0.05 && (fit.cols[4] - 0.3).abs() < 0.05,
            "{fit:?}"
        );
        assert!(row_p(&m, &fit, 2).unwrap() < 0.001 && col_p(&m, &fit, 4).unwrap() < 0.001);
    }

    #[test]
    fn nothing_changed_is_no_effect() {
        let m = matrix(0.0, 0.0);
        let fit = median_polish(&m);
        assert!(fit.rows.iter().chain(&fit.cols).all(|e| e.abs() < 0.03), "{fit:?}");
        assert_eq!(median_polish(&[]).rows.len(), 0);
    }
}
