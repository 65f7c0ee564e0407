//! The search for the highest load whose loss stays within a goal, after
//! MLRsearch (RFC 9971; FD.io CSIT), as pure code: the caller runs trials
//! and reports them; [`Search::next_step`] says what to try next.
//!
//! - A load is classified by a duration-weighted vote over its trials: it
//!   is an **upper bound** once the trials whose loss ratio exceeds the goal
//!   add up to more than `exceed_ratio` of the duration sum goal, and a
//!   **lower bound** once the other trials add up to at least the rest.
//!   Until then it gets more trials.
//! - The **relevant lower bound** is the largest lower bound below the
//!   smallest upper bound; the search ends when the two are within the
//!   relative `width` (or no load passes, or the highest load passes).
//! - The first upper bound's forwarding rate (what arrived per second)
//!   is the first guess below it, as MLRsearch does; further guesses step
//!   down by a widening relative step until a load passes, then bisect.
//! - Conditional throughput: the duration-weighted mean forwarding rate of
//!   the passing trials at the relevant lower bound.

/// What the search was asked to find.
#[derive(Clone, Copy, Debug)]
pub struct Goal {
    /// Highest loss ratio a trial may show and still count as passing.
    pub loss: f64,
    /// Share of the duration sum that failing trials must exceed.
    pub exceed_ratio: f64,
    /// Trial seconds needed per load for a decision.
    pub duration_sum: f64,
    /// Relative width (upper - lower) / upper at which to stop.
    pub width: f64,
}

/// Trials at one load.
#[derive(Clone, Debug, Default)]
struct Load {
    load: f64,
    good_s: f64,
    bad_s: f64,
    /// Sum over passing trials of (received per second * duration).
    good_fwd: f64,
    /// Highest received rate of any trial here.
    fwd_max: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Class {
    Upper,
    Lower,
    Undecided,
}

/// What to do next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Next {
    /// Run a trial at this load (units per second, as given to `new`).
    Trial(f64),
    /// The search is over.
    Done(Answer),
}

/// The answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Answer {
    /// Relevant lower bound (0 when no load passed).
    pub lower: f64,
    /// Smallest upper bound (None when the highest load passed).
    pub upper: Option<f64>,
    /// Conditional throughput at the lower bound.
    pub conditional: f64,
    /// Whether the width goal was met (or the highest load passed).
    pub converged: bool,
}

/// The search state.
#[derive(Clone, Debug)]
pub struct Search {
    goal: Goal,
    min_load: f64,
    loads: Vec<Load>,
    current: f64,
    /// Relative step for the next guess below an upper bound while no
    /// load has passed yet.
    step: f64,
    guessed_from_forwarding: bool,
}

impl Search {
    /// A search between `max_load` (tried first) and `min_load` (below it,
    /// a load counts as "nothing passes").
    pub fn new(goal: Goal, max_load: f64, min_load: f64) -> Search {
        Search {
            goal,
            min_load: min_load.min(max_load),
            loads: Vec::new(),
            current: max_load,
            step: (4.0 * goal.width).min(0.5),
            guessed_from_forwarding: false,
        }
    }

    /// Records a trial at `load`: it ran `duration` seconds, `sent` units
    /// left, `received` arrived.
    pub fn record(&mut self, load: f64, duration: f64, sent: u64, received: u64) {
        let loss = if sent == 0 {
            1.0
        } else {
            sent.saturating_sub(received) as f64 / sent as f64
        };
        let i = match self.loads.iter().position(|l| l.load == load) {
            Some(i) => i,
            None => {
                self.loads.push(Load {
                    load,
                    ..Load::default()
                });
                self.loads.len() - 1
            }
        };
        let l = &mut self.loads[i];
        if duration > 0.0 {
            l.fwd_max = l.fwd_max.max(received as f64 / duration);
        }
        if loss <= self.goal.loss {
            l.good_s += duration;
            l.good_fwd += received as f64;
        } else {
            l.bad_s += duration;
        }
    }

    fn class(&self, l: &Load) -> Class {
        let sum = self.goal.duration_sum;
        if l.bad_s > self.goal.exceed_ratio * sum {
            Class::Upper
        } else if l.good_s >= (1.0 - self.goal.exceed_ratio) * sum {
            Class::Lower
        } else {
            Class::Undecided
        }
    }

    fn upper(&self) -> Option<&Load> {
        self.loads
            .iter()
            .filter(|l| self.class(l) == Class::Upper)
            .min_by(|a, b| a.load.total_cmp(&b.load))
    }

    fn lower_below(&self, ub: Option<f64>) -> Option<&Load> {
        self.loads
            .iter()
            .filter(|l| self.class(l) == Class::Lower && ub.is_none_or(|u| l.load < u))
            .max_by(|a, b| a.load.total_cmp(&b.load))
    }

    /// Makes `load` an upper bound whatever its short trials said: a final,
    /// longer trial at it failed, forwarding `forwarding` per second (a
    /// queue on the path had hidden the excess from the short trials). No
    /// short trial at or above that forwarding rate is trusted any more
    /// either, and the next guess is the forwarding rate, as after the
    /// first upper bound.
    pub fn reject(&mut self, load: f64, forwarding: f64) {
        if !self.loads.iter().any(|l| l.load == load) {
            self.loads.push(Load {
                load,
                ..Load::default()
            });
        }
        let bad = self.goal.duration_sum * 2.0;
        for l in self
            .loads
            .iter_mut()
            .filter(|l| l.load == load || (l.load >= forwarding && l.good_s > 0.0))
        {
            l.bad_s = l.bad_s.max(bad);
            l.good_s = 0.0;
            l.good_fwd = 0.0;
            l.fwd_max = forwarding;
        }
        self.guessed_from_forwarding = false;
        self.current = load;
    }

    /// The bounds known now (for a search stopped early).
    pub fn bounds(&self) -> Answer {
        let ub = self.upper().map(|l| l.load);
        let lb = self.lower_below(ub);
        Answer {
            lower: lb.map_or(0.0, |l| l.load),
            upper: ub,
            conditional: lb.map_or(0.0, |l| l.good_fwd / l.good_s.max(1e-12)),
            converged: false,
        }
    }

    /// The next trial, or the answer.
    pub fn next_step(&mut self) -> Next {
        let undecided = self
            .loads
            .iter()
            .find(|l| l.load == self.current)
            .is_none_or(|l| self.class(l) == Class::Undecided);
        if undecided {
            return Next::Trial(self.current);
        }
        let ub = self.upper().map(|l| (l.load, l.bad_s + l.good_s));
        let lb = self
            .lower_below(ub.map(|u| u.0))
            .map(|l| (l.load, l.good_fwd / l.good_s.max(1e-12)));
        let answer = |converged| {
            Next::Done(Answer {
                lower: lb.map_or(0.0, |l| l.0),
                upper: ub.map(|u| u.0),
                conditional: lb.map_or(0.0, |l| l.1),
                converged,
            })
        };
        let Some((ub_load, _)) = ub else {
            // Only passing loads: the highest passed.
            return answer(true);
        };
        let next = match lb {
            Some((lb_load, _)) => {
                if (ub_load - lb_load) / ub_load <= self.goal.width {
                    return answer(true);
                }
                (lb_load + ub_load) / 2.0
            }
            None => {
                let fwd = self.forwarding_at(ub_load);
                let guess = if !self.guessed_from_forwarding && fwd > 0.0 && fwd < ub_load {
                    self.guessed_from_forwarding = true;
                    fwd * (1.0 - self.goal.loss)
                } else {
                    let g = ub_load * (1.0 - self.step);
                    self.step = (self.step * 2.0).min(0.9);
                    g
                };
                if guess < self.min_load {
                    if self.current == self.min_load {
                        return answer(false);
                    }
                    self.min_load
                } else {
                    guess
                }
            }
        };
        self.current = next;
        Next::Trial(next)
    }

    /// The highest received rate any trial at `load` saw.
    fn forwarding_at(&self, load: f64) -> f64 {
        self.loads.iter().find(|l| l.load == load).map_or(0.0, |l| l.fwd_max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOAL: Goal = Goal {
        loss: 0.0,
        exceed_ratio: 0.5,
        duration_sum: 3.0,
        width: 0.01,
    };

    /// Runs a search against a link that forwards up to `capacity` per
    /// second and loses the excess; `noise(n)` may spoil trial n.
    fn run(goal: Goal, max: f64, capacity: f64, noise: impl Fn(usize) -> bool) -> (Answer, usize) {
        let mut s = Search::new(goal, max, 1.0);
        for n in 0..1000 {
            match s.next_step() {
                Next::Trial(load) => {
                    let sent = load as u64;
                    let mut received = sent.min(capacity as u64);
                    if noise(n) {
                        received = received.saturating_sub(sent / 100 + 1);
                    }
                    s.record(load, 1.0, sent, received);
                }
                Next::Done(a) => return (a, n),
            }
        }
        panic!("no answer in 1000 trials");
    }

    #[test]
    fn a_rejected_answer_sends_the_search_below_it() {
        // A link of 100 whose queue hides 3% excess from short trials:
        // short trials pass up to 103, the final one at the answer fails
        // above 100.
        let mut s = Search::new(GOAL, 200.0, 1.0);
        let mut finals = 0;
        let answer = loop {
            match s.next_step() {
                Next::Trial(load) => {
                    let received = if load <= 103.0 { load as u64 } else { 100 };
                    s.record(load, 1.0, load as u64, received);
                }
                Next::Done(a) if a.lower > 100.0 => {
                    finals += 1;
                    s.reject(a.lower, 100.0);
                }
                Next::Done(a) => break a,
            }
        };
        assert_eq!(finals, 1, "one failed final trial is enough to land below the link");
        assert!(answer.lower <= 100.0 && answer.lower >= 99.0, "{answer:?}");
        assert!(answer.upper.unwrap() >= 100.0, "{answer:?}");
    }

    #[test]
    fn finds_capacity_within_width() {
        let (a, trials) = run(GOAL, 1_000_000.0, 123_456.0, |_| false);
        assert!(a.converged);
        assert!(a.lower <= 123_456.0 && a.lower >= 123_456.0 * 0.99, "{a:?}");
        let u = a.upper.unwrap();
        assert!(u > 123_456.0 && (u - a.lower) / u <= 0.01, "{a:?}");
        assert!((a.conditional - a.lower).abs() < 1.0);
        assert!(trials < 40, "{trials} trials");
    }

    #[test]
    fn highest_load_passing_ends_at_once() {
        let (a, trials) = run(GOAL, 1000.0, 5000.0, |_| false);
        assert_eq!((a.lower, a.upper, a.converged), (1000.0, None, true));
        assert_eq!(trials, 2, "two passing trials decide a 3 s sum of 1 s trials");
    }

    #[test]
    fn one_noisy_trial_does_not_decide_a_load() {
        // Every 7th trial loses 1% at any load: the vote outweighs it.
        let (a, _) = run(GOAL, 1_000_000.0, 200_000.0, |n| n % 7 == 3);
        assert!(a.lower >= 200_000.0 * 0.98 && a.lower <= 200_000.0, "{a:?}");
    }

    #[test]
    fn nothing_passing_is_reported_as_zero() {
        let (a, _) = run(GOAL, 1000.0, 0.0, |_| false);
        assert_eq!(a.lower, 0.0);
        assert!(!a.converged);
    }

    #[test]
    fn loss_goal_allows_some_loss() {
        let goal = Goal { loss: 0.1, ..GOAL };
        // Capacity 100k: a load of 110k loses 9.1% and passes a 10% goal.
        let (a, _) = run(goal, 1_000_000.0, 100_000.0, |_| false);
        assert!(a.lower > 105_000.0 && a.lower <= 111_112.0, "{a:?}");
    }
}
