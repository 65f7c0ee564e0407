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

/// Which margin of the matrix an effect belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// A row (a node as a client).
    Row,
    /// A column (a node as a target).
    Col,
}

/// One row's or column's effect, fitted and tested.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Effect {
    /// Row or column.
    pub side: Side,
    /// Its index on that side.
    pub index: usize,
    /// exp(effect): how many times worse its cells are than the others',
    /// the other side's effects removed (cells on a log scale).
    pub factor: f64,
    /// Its cells.
    pub cells: usize,
    /// Mann-Whitney p-value of its cells against every other cell.
    pub p_value: f64,
}

/// Every row's and column's effect in `cells` (a log scale where larger
/// is worse), with its p-value ([`row_p`], [`col_p`]); none when the
/// matrix has fewer than three rows or three columns.
pub fn effects(cells: &[Vec<Option<f64>>]) -> Vec<Effect> {
    let cols = cells.first().map_or(0, Vec::len);
    if cells.len() < 3 || cols < 3 {
        return Vec::new();
    }
    let fit = median_polish(cells);
    let mut out = Vec::new();
    for (side, effects) in [(Side::Row, &fit.rows), (Side::Col, &fit.cols)] {
        for (k, e) in effects.iter().enumerate() {
            let (p, n) = match side {
                Side::Row => (row_p(cells, &fit, k), cells[k].iter().flatten().count()),
                Side::Col => (col_p(cells, &fit, k), cells.iter().filter(|r| r[k].is_some()).count()),
            };
            let Some(p) = p else { continue };
            out.push(Effect {
                side,
                index: k,
                factor: e.exp(),
                cells: n,
                p_value: p,
            });
        }
    }
    out
}

/// How far an effect must stand from the others of its group to be an
/// outlier: Iglewicz and Hoaglin's modified z-score, 0.6745 (x - median)
/// / MAD, whose usual cut is 3.5.
pub const OUTLIER_Z: f64 = 3.5;

/// One candidate for [`standing_out`]: its group (the effects it is
/// weighed against: same figure and side), its factor and p-value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// Its group.
    pub group: usize,
    /// How many times worse.
    pub factor: f64,
    /// Its p-value.
    pub p_value: f64,
}

/// Of `all`, those whose p-value adjusted across all of them
/// (Benjamini-Hochberg) is below `alpha`, whose factor is at least
/// `factor`, and whose effect stands out among its group's
/// ([`OUTLIER_Z`]): as (index into `all`, adjusted p-value), worst first.
/// The last rule keeps an effect that load gave many nodes a little of
/// from being named beside the one that is broken.
pub fn standing_out(all: &[Candidate], alpha: f64, factor: f64) -> Vec<(usize, f64)> {
    let q = crate::fdr::adjust(&all.iter().map(|c| c.p_value).collect::<Vec<_>>());
    let mut out: Vec<(usize, f64)> = (0..all.len())
        .filter(|&i| {
            let peers: Vec<f64> = all
                .iter()
                .filter(|o| o.group == all[i].group)
                .map(|o| o.factor.ln())
                .collect();
            q[i] < alpha && all[i].factor >= factor && outlier_z(all[i].factor.ln(), &peers) >= OUTLIER_Z
        })
        .map(|i| (i, q[i]))
        .collect();
    out.sort_by(|a, b| all[b.0].factor.total_cmp(&all[a.0].factor));
    out
}

/// The modified z-score of `x` among `all` (which holds it): infinite
/// when the others agree exactly and `x` is above them.
fn outlier_z(x: f64, all: &[f64]) -> f64 {
    let Some(crate::Spread { mad, median: med }) = crate::mad(all) else {
        return 0.0;
    };
    match mad > 0.0 {
        true => 0.6745 * (x - med) / mad,
        false if x > med => f64::INFINITY,
        false => 0.0,
    }
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
