//! What a decided row comes to: its decision, when it came, and the spell
//! of difference a row that was not called may have held; the values the
//! rows hand out and the rules reason about.

/// A row's decision, B against A: what the run says of it. Faster and
/// slower are about the row's figure, whichever way it is better (for a
/// rate, faster is higher).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decided {
    /// B is better than A by more than the tolerance.
    Faster,
    /// B is worse than A by more than the tolerance.
    Slower,
    /// B and A differ by less than the tolerance.
    Equivalent,
    /// The budget was spent (or the run cut short) before any of these.
    Inconclusive,
}

/// A row's decision when it came: the pair it came at, the decision, and
/// the interval of the effect (ln(B/A)) then.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reached {
    /// The pair (counted from 1) that decided it.
    pub pair: usize,
    /// Which way (never inconclusive).
    pub decided: Decided,
    /// The interval of ln(B/A) at that pair.
    pub interval: Option<(f64, f64)>,
}

/// A difference that held over part of a row's pairs only: the run of
/// pairs on one side of its one change point (the largest step in the
/// cumulative sum of ln(B/A)) lies beyond the band and the other within
/// half of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spell {
    /// The pairs (counted from 1, both ends included) beyond the band.
    pub pairs: (usize, usize),
    /// The other pairs, inside it.
    pub not: (usize, usize),
    /// Which way B went over the spell.
    pub verdict: Decided,
    /// exp(mean ln(B/A)) over the spell.
    pub ratio: f64,
}
