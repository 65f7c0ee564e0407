//! A series: the runs of one figure in order, each with its repetitions.
//! Stored flat (every value in one vector, runs as start offsets), so a
//! series of 10,000 runs of 1,000 repetitions costs two allocations, and
//! appending a run is amortised O(its repetitions).

use crate::error::HistoryError;

/// The runs of one figure in order; run `i`'s repetitions are
/// `values[starts[i]..starts[i + 1]]`. Every value is finite and above
/// zero, every run has at least one repetition (the constructors check).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    values: Vec<f64>,
    /// `starts[0] == 0`, one more entry than runs, the last is `values.len()`.
    starts: Vec<usize>,
}

impl Series {
    /// An empty series.
    pub fn new() -> Series {
        Series {
            values: Vec::new(),
            starts: vec![0],
        }
    }

    /// A series from one vector of repetitions per run.
    pub fn from_runs<R: AsRef<[f64]>>(runs: &[R]) -> Result<Series, HistoryError> {
        let mut s = Series::new();
        s.values.reserve(runs.iter().map(|r| r.as_ref().len()).sum());
        s.starts.reserve(runs.len());
        for r in runs {
            s.push_run(r.as_ref())?;
        }
        Ok(s)
    }

    /// A series from every value in order and the number of repetitions
    /// of each run.
    pub fn from_flat(values: Vec<f64>, run_lengths: &[usize]) -> Result<Series, HistoryError> {
        let lengths: usize = run_lengths.iter().sum();
        if lengths != values.len() {
            return Err(HistoryError::RunLengths {
                values: values.len(),
                lengths,
            });
        }
        let mut starts = Vec::with_capacity(run_lengths.len() + 1);
        starts.push(0);
        let mut at = 0;
        for (run, &len) in run_lengths.iter().enumerate() {
            check_run(run, &values[at..at + len])?;
            at += len;
            starts.push(at);
        }
        Ok(Series { values, starts })
    }

    /// Appends one run's repetitions.
    pub fn push_run(&mut self, repetitions: &[f64]) -> Result<(), HistoryError> {
        check_run(self.runs(), repetitions)?;
        self.values.extend_from_slice(repetitions);
        self.starts.push(self.values.len());
        Ok(())
    }

    /// Number of runs.
    pub fn runs(&self) -> usize {
        self.starts.len() - 1
    }

    /// True when there is no run.
    pub fn is_empty(&self) -> bool {
        self.runs() == 0
    }

    /// Run `i`'s repetitions. Panics when `i >= self.runs()`, as slicing does.
    pub fn run(&self, i: usize) -> &[f64] {
        &self.values[self.starts[i]..self.starts[i + 1]]
    }

    /// Every value, run after run.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Every run's repetitions, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[f64]> + '_ {
        self.starts.windows(2).map(|w| &self.values[w[0]..w[1]])
    }
}

fn check_run(run: usize, repetitions: &[f64]) -> Result<(), HistoryError> {
    if repetitions.is_empty() {
        return Err(HistoryError::EmptyRun { run });
    }
    match repetitions.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
        Some(repetition) => Err(HistoryError::NotPositive {
            run,
            repetition,
            value: repetitions[repetition],
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_constructors_and_push_give_the_same_series() {
        let a = Series::from_runs(&[vec![1.0, 2.0], vec![3.0], vec![4.0, 5.0, 6.0]]).unwrap();
        let b = Series::from_flat(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 1, 3]).unwrap();
        let mut c = Series::new();
        for r in [&[1.0, 2.0][..], &[3.0], &[4.0, 5.0, 6.0]] {
            c.push_run(r).unwrap();
        }
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(a.runs(), 3);
        assert_eq!(a.run(2), &[4.0, 5.0, 6.0]);
        assert_eq!(a.iter().map(<[f64]>::len).collect::<Vec<_>>(), vec![2, 1, 3]);
    }

    #[test]
    fn bad_runs_are_named() {
        assert_eq!(
            Series::from_runs(&[vec![1.0], vec![]]),
            Err(HistoryError::EmptyRun { run: 1 })
        );
        assert_eq!(
            Series::from_runs(&[vec![1.0], vec![2.0, 0.0]]),
            Err(HistoryError::NotPositive {
                run: 1,
                repetition: 1,
                value: 0.0
            })
        );
        assert!(matches!(
            Series::from_runs(&[vec![f64::NAN]]),
            Err(HistoryError::NotPositive { run: 0, .. })
        ));
        assert_eq!(
            Series::from_flat(vec![1.0, 2.0], &[1, 2]),
            Err(HistoryError::RunLengths { values: 2, lengths: 3 })
        );
    }
}
