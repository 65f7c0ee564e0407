//! How a run until decided is decided, as one value stored with the run:
//! its level, its band, its budget, the seed of its A/B order, the rules
//! that a call held over the run, and the effect a row decides on. Every
//! rule's setting is here, so a stored run replays as it was decided
//! (`compare RUN`), whatever this version's defaults are.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The chance, over all rows together, that any row's interval ever
/// leaves out the truth.
pub const ALPHA: f64 = 0.05;

/// How a decided comparison runs: stored with the suite's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "DecideSettings")]
pub struct Settings {
    /// The chance, over all rows together, that any row's interval ever
    /// leaves out the truth (0.05).
    pub alpha: f64,
    /// The band around no change, as a fraction (0.02: +/-2%).
    pub tolerance: f64,
    /// The budget as given ("60s", "200 pairs").
    #[schemars(with = "String")]
    pub budget: Budget,
    /// The seed of the A/B order of each pair.
    pub seed: u64,
    /// No call before the pairs span this (a quarter of the budget), and
    /// the rules that a call held over the run (docs/methods.md); absent
    /// in runs stored before the rules, which are replayed without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<Floor>,
    /// What a row decides on: the median of its pairs' log-ratios, or
    /// (runs stored before it) their mean.
    #[serde(default)]
    pub effect: Effect,
}

/// Which rules a run is decided by: this version's, or an older one's
/// (for benchmarks that measure what a rule changes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    /// The median of the pairs, a call held over the run.
    All,
    /// The mean of the pairs, a call held over the run (runs before the
    /// median).
    Mean,
    /// The mean of the pairs and the sequence alone (runs before the
    /// rules that a call held).
    None,
}

impl Settings {
    /// A run's settings under `rules`: band `tolerance` (a fraction),
    /// `budget`, order seed `seed`, at [`ALPHA`].
    pub fn new(tolerance: f64, budget: Budget, seed: u64, rules: Rules) -> Settings {
        Settings {
            alpha: ALPHA,
            tolerance,
            floor: (rules != Rules::None).then(|| budget.quarter()),
            budget,
            seed,
            effect: match rules {
                Rules::All => Effect::Median,
                Rules::Mean | Rules::None => Effect::Mean,
            },
        }
    }
}

/// The figure of a row's pairs that a call is about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// The mean of ln(B/A), with a confidence sequence from its estimated
    /// variance (every run stored before the median).
    #[default]
    Mean,
    /// The median of ln(B/A), with a distribution-free confidence
    /// sequence (the typical pair: a few wild blocks cannot move it).
    Median,
}

/// Rule 0's bound: the pairs or the time a call waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Floor {
    /// This many pairs of the row.
    Pairs(usize),
    /// This many milliseconds from the start of the first pair.
    Millis(u64),
}

/// How long a run until decided may measure, as given: a length of time
/// or a number of pairs, and the words it was given in (what is stored
/// and printed).
#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    limit: Limit,
    text: String,
}

/// What a budget limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Wall time (checked between pairs).
    Time(Duration),
    /// Pairs of blocks.
    Pairs(usize),
}

impl Budget {
    /// A budget of time `d` that was not given in words (a default):
    /// written in seconds.
    pub fn time(d: Duration) -> Budget {
        Budget {
            limit: Limit::Time(d),
            text: format!("{}s", d.as_secs_f64()),
        }
    }

    /// What it limits.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// Whether it is spent after `pairs` pairs and `elapsed` since the
    /// first began.
    pub fn spent(&self, pairs: usize, elapsed: Duration) -> bool {
        match self.limit {
            Limit::Time(d) => elapsed >= d,
            Limit::Pairs(n) => pairs >= n,
        }
    }

    /// Rule 0's floor: a quarter of it (at least one pair).
    pub fn quarter(&self) -> Floor {
        match self.limit {
            Limit::Time(d) => Floor::Millis((d.as_millis() / 4) as u64),
            Limit::Pairs(n) => Floor::Pairs((n / 4).max(1)),
        }
    }
}

impl FromStr for Budget {
    type Err = BudgetError;
    /// `--budget`: a number of pairs (`200`, `200pairs`), or a length of
    /// time with its units (`60s`, `2m`, `1h30m`, `500ms`); above zero.
    fn from_str(s: &str) -> Result<Budget, BudgetError> {
        let t = s.trim();
        let pairs = t.strip_suffix("pairs").unwrap_or(t).trim();
        let limit = match pairs.parse::<usize>() {
            Ok(0) => return Err(BudgetError::Zero(s.into())),
            Ok(n) => Limit::Pairs(n),
            // A bare number is pairs (above); anything else must have units.
            Err(_) => match humantime::parse_duration(t) {
                Ok(d) if d.is_zero() => return Err(BudgetError::Zero(s.into())),
                Ok(d) => Limit::Time(d),
                Err(_) => return Err(BudgetError::NotABudget(s.into())),
            },
        };
        Ok(Budget { limit, text: s.into() })
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Budget {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Budget {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Budget, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// A `--budget` that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BudgetError {
    /// Zero pairs or no time.
    Zero(String),
    /// Neither a time with units nor a whole number of pairs.
    NotABudget(String),
}

impl fmt::Display for BudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetError::Zero(s) => write!(f, "--budget '{s}': must be above zero"),
            BudgetError::NotABudget(s) => write!(
                f,
                "--budget '{s}': expected a time with its units (60s, 2m, 1h30m, 500ms) or a whole number of pairs (200)"
            ),
        }
    }
}

impl std::error::Error for BudgetError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A budget keeps the words it was given, through JSON and back, and
    /// its floor is a quarter of it.
    #[test]
    fn a_budget_is_stored_as_given() {
        for (text, limit, floor) in [
            ("20s", Limit::Time(Duration::from_secs(20)), Floor::Millis(5000)),
            ("2m", Limit::Time(Duration::from_secs(120)), Floor::Millis(30000)),
            ("200 pairs", Limit::Pairs(200), Floor::Pairs(50)),
            ("3", Limit::Pairs(3), Floor::Pairs(1)),
        ] {
            let b: Budget = text.parse().unwrap();
            assert_eq!(
                (b.limit(), b.quarter(), b.to_string()),
                (limit, floor, text.to_string())
            );
            let json = serde_json::to_string(&b).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<Budget>(&json).unwrap(), b);
        }
        assert_eq!(Budget::time(Duration::from_secs(60)).to_string(), "60s");
        assert_eq!("0".parse::<Budget>(), Err(BudgetError::Zero("0".into())));
        assert!(matches!("soon".parse::<Budget>(), Err(BudgetError::NotABudget(_))));
        let b: Budget = "500ms".parse().unwrap();
        assert!(!b.spent(9, Duration::from_millis(499)) && b.spent(0, Duration::from_millis(500)));
    }
}
