//! Tick values: steps of 1-2-5 and kin, chosen so that neighbouring labels
//! keep apart, in the unit that suits the range; an axis widened to the
//! ticks when it snaps.

use super::model::{Axis, TickFormat};
use super::scale::scale_unit;
use super::text::{text_width, ASCENT, DESCENT};

/// Which direction an axis runs on the page: its labels are as wide as
/// their text along x, one line high along y.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Along {
    X,
    Y,
}

/// A labelled value of an axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    pub value: f64,
    pub label: String,
}

/// Font size of tick labels.
pub(super) const TICK: f64 = 11.0;

/// A way of choosing round values: every multiple of a step, or on a log
/// scale the given multiples of every `every`-th power of ten.
#[derive(Clone, Copy, Debug)]
enum Scheme {
    Linear(f64),
    Log(&'static [f64], i32),
    /// A percentile axis (values 1/(1-q)): the median and the nines,
    /// p50, p90, p99, p99.9, ... (2 and every power of ten).
    Nines,
}

const EVERY_DIGIT: &[f64] = &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
const ONE_TWO_FIVE: &[f64] = &[1.0, 2.0, 5.0];
const ONE_THREE: &[f64] = &[1.0, 3.0];
const ONE: &[f64] = &[1.0];

impl Scheme {
    /// Its values from `lo` to `hi` (inclusive, a hair of tolerance).
    fn values(&self, lo: f64, hi: f64) -> Vec<f64> {
        let mut out = Vec::new();
        if !(lo.is_finite() && hi.is_finite() && hi >= lo) {
            return out;
        }
        match *self {
            Scheme::Linear(step) => {
                let (a, b) = ((lo / step - 1e-9).ceil(), (hi / step + 1e-9).floor());
                if b - a > 1000.0 {
                    return out;
                }
                let mut k = a;
                while k <= b {
                    let v = k * step;
                    out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
                    k += 1.0;
                }
            }
            Scheme::Nines => {
                let tens = Scheme::Log(ONE, 1).values(lo.max(10.0), hi);
                out.extend([2.0].into_iter().filter(|v| *v >= lo && *v <= hi).chain(tens));
            }
            Scheme::Log(mults, every) => {
                if lo <= 0.0 {
                    return out;
                }
                let first = (lo.log10().floor() as i32).div_euclid(every) * every;
                let mut d = first;
                while d as f64 <= hi.log10().ceil() && out.len() < 1000 {
                    for m in mults {
                        let v = m * 10f64.powi(d);
                        if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                            out.push(v);
                        }
                    }
                    d += every;
                }
            }
        }
        out
    }

    /// The largest value of the scheme at or below `v`.
    fn floor(&self, v: f64) -> Option<f64> {
        let lo = match *self {
            Scheme::Linear(step) => v - step * 1.5,
            Scheme::Log(_, every) => v / 10f64.powi(every + 1),
            Scheme::Nines => v / 100.0,
        };
        self.values(lo, v).pop()
    }

    /// The smallest value of the scheme at or above `v`.
    fn ceil(&self, v: f64) -> Option<f64> {
        let hi = match *self {
            Scheme::Linear(step) => v + step * 1.5,
            Scheme::Log(_, every) => v * 10f64.powi(every + 1),
            Scheme::Nines => v * 100.0,
        };
        self.values(v, hi).first().copied()
    }
}

/// A tick value in at most a few significant digits, never "-0".
pub(super) fn number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".into();
    }
    let d = (3 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{v:.d$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

impl Axis {
    /// Position of `v` on the axis, 0 at `min` to 1 at `max` (a little
    /// past either end at most).
    pub(super) fn norm(&self, v: f64) -> f64 {
        let (a, b, v) = if self.log {
            (self.min.max(1e-12).ln(), self.max.max(1e-12).ln(), v.max(1e-12).ln())
        } else {
            (self.min, self.max, v)
        };
        if b > a {
            ((v - a) / (b - a)).clamp(-0.05, 1.05)
        } else {
            0.5
        }
    }

    fn usable(&self) -> bool {
        self.min.is_finite() && self.max.is_finite() && self.max >= self.min && (!self.log || self.max > 0.0)
    }

    /// The unit the labels are written in, and what to divide values by.
    pub fn shown_unit(&self) -> (String, f64) {
        let largest = self.min.abs().max(self.max.abs());
        scale_unit(&self.unit, largest)
    }

    /// The axis' name as written beside it: "rtt (ms, log scale)".
    pub fn title(&self) -> String {
        let (unit, _) = self.shown_unit();
        let mut extra: Vec<&str> = Vec::new();
        if !unit.is_empty() {
            extra.push(&unit);
        }
        if self.log && self.format == TickFormat::Number {
            extra.push("log scale");
        }
        match (self.label.is_empty(), extra.is_empty()) {
            (_, true) => self.label.clone(),
            (true, false) => extra.join(", "),
            (false, false) => format!("{} ({})", self.label, extra.join(", ")),
        }
    }

    /// The label of the value `v`.
    fn label_of(&self, v: f64, div: f64) -> String {
        match self.format {
            TickFormat::Percentile => {
                let q = 100.0 * (1.0 - 1.0 / v.max(1.0));
                let s = format!("{q:.4}");
                let s = s.trim_end_matches('0').trim_end_matches('.');
                format!("p{s}")
            }
            TickFormat::Number => {
                let v = v / div;
                // Plain numbers of no unit keep an SI suffix when large.
                if self.unit.is_empty() && v.abs() >= 1e4 {
                    let (d, s) = match v.abs() {
                        a if a >= 1e9 => (1e9, "G"),
                        a if a >= 1e6 => (1e6, "M"),
                        _ => (1e3, "k"),
                    };
                    format!("{}{s}", number(v / d))
                } else {
                    number(v)
                }
            }
        }
    }

    fn ticks_of(&self, values: &[f64]) -> Vec<Tick> {
        let (_, div) = self.shown_unit();
        values
            .iter()
            .map(|&v| Tick {
                value: v,
                label: self.label_of(v, div),
            })
            .collect()
    }

    /// True when neighbouring labels of `ticks` keep apart on an axis
    /// `pixels` long.
    pub(super) fn fits(&self, ticks: &[Tick], pixels: f64, along: Along) -> bool {
        let extent = |t: &Tick| match along {
            Along::X => text_width(&t.label, TICK, false),
            Along::Y => (ASCENT + DESCENT) * TICK,
        };
        // Room between labels, and a least distance between ticks so an
        // axis of short labels does not turn into a ruler.
        let (gap, least) = match along {
            Along::X => (10.0, 40.0),
            Along::Y => (8.0, 22.0),
        };
        ticks.windows(2).all(|w| {
            let d = (self.norm(w[1].value) - self.norm(w[0].value)).abs() * pixels;
            d >= least && d >= (extent(&w[0]) + extent(&w[1])) / 2.0 + gap
        })
    }

    /// The round-value schemes worth trying for this axis, densest first.
    fn schemes(&self) -> Vec<Scheme> {
        let linear = || -> Vec<Scheme> {
            let span = self.max - self.min;
            if !(span.is_finite() && span > 0.0) {
                return Vec::new();
            }
            let e = (span / 40.0).log10().floor() as i32;
            (e..e + 4)
                .flat_map(|e| ONE_TWO_FIVE.iter().map(move |m| Scheme::Linear(m * 10f64.powi(e))))
                .collect()
        };
        if !self.log {
            return linear();
        }
        if self.format == TickFormat::Percentile {
            // Only round percentiles: the nines, then sparser powers of ten.
            let mut out = vec![Scheme::Nines];
            out.extend([2, 3, 5, 10].map(|every| Scheme::Log(ONE, every)));
            return out;
        }
        let mut out = Vec::new();
        if self.format == TickFormat::Number {
            out.push(Scheme::Log(EVERY_DIGIT, 1));
        }
        out.push(Scheme::Log(ONE_TWO_FIVE, 1));
        out.push(Scheme::Log(ONE_THREE, 1));
        for every in [1, 2, 3, 5, 10, 20] {
            out.push(Scheme::Log(ONE, every));
        }
        if self.format == TickFormat::Number {
            out.extend(linear());
        }
        out
    }

    /// The axis as drawn `pixels` long, and its ticks: the densest scheme
    /// whose labels keep apart, preferring (on a log axis) powers of ten
    /// and their 1-2-5 or 1-3 steps to plain steps; at least two labels
    /// where any two fit. An axis that snaps is widened, scheme by scheme,
    /// to that scheme's values around the range; the axis returned no
    /// longer snaps (it is drawn as it is).
    pub fn drawn(&self, pixels: f64, along: Along) -> (Axis, Vec<Tick>) {
        let plain = Axis {
            snap: false,
            ..self.clone()
        };
        if !self.usable() {
            return (plain, Vec::new());
        }
        let tried: Vec<(Scheme, Axis, Vec<Tick>)> = self
            .schemes()
            .into_iter()
            .filter_map(|s| {
                let mut a = plain.clone();
                if self.snap {
                    a.min = s.floor(a.min).unwrap_or(a.min);
                    a.max = s.ceil(a.max).unwrap_or(a.max);
                }
                let t = a.ticks_of(&s.values(a.min, a.max));
                a.fits(&t, pixels, along).then_some((s, a, t))
            })
            .collect();
        let least = |n: usize, log_only: bool| {
            tried
                .iter()
                .find(|(s, _, t)| t.len() >= n && (!log_only || matches!(s, Scheme::Log(..) | Scheme::Nines)))
        };
        let best = match self.log {
            true => least(3, true).or_else(|| least(2, true)).or_else(|| least(2, false)),
            false => least(2, false),
        };
        match best.or_else(|| tried.iter().max_by_key(|(_, _, t)| t.len())) {
            Some((_, a, t)) => (a.clone(), t.clone()),
            None => (plain, Vec::new()),
        }
    }

    /// The labelled values of the axis drawn `pixels` long.
    pub fn ticks(&self, pixels: f64, along: Along) -> Vec<Tick> {
        self.drawn(pixels, along).1
    }
}
