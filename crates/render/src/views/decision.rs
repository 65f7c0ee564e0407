//! A decided comparison's view: a headline naming which side won where,
//! then per step and figure a table in the hand-made comparison's columns
//! (both sides, the difference of their medians) with the decision, the
//! ratio B/A of the pairs and the interval it was decided on, and the
//! pairs it took; a chart of the ratios with their intervals; then the
//! count of each verdict, why the run stopped, the correction across
//! rows and the method in one sentence (the whole of it is in the JSON).
use stackmeter_results::{percent_words, Decided, DecidedRow, Decision};
use stackmeter_statistics::decide::{Effect, Floor};
use stackmeter_statistics::Direction;

use crate::chart::{Axis, Chart, Kind, Trace};
use crate::view::{percent, Block, Col, Table, View};

/// How much better B is than A at the ratio `r`, in percent of A
/// (negative: worse), as `DecidedRow::percent` is from the row's ratio.
fn better_by(r: f64, direction: Direction) -> f64 {
    match direction {
        Direction::LowerIsBetter => (1.0 - r) * 100.0,
        Direction::HigherIsBetter => (r - 1.0) * 100.0,
    }
}

/// What the interval says of a row not decided: which way, when it
/// leaves out 1 ("slower by 0.7-10.8% (inconclusive against +/-5%)"), or
/// that it could be either ("inconclusive: 2.1% faster to 3.0% slower").
fn open_words(r: &DecidedRow, tolerance: f64) -> String {
    let band = percent(tolerance);
    let Some((lo, hi)) = r.interval else {
        return "inconclusive (too few pairs for an interval)".into();
    };
    let (a, b) = (better_by(lo, r.direction), better_by(hi, r.direction));
    let (least, most) = (a.min(b), a.max(b));
    if least > 0.0 {
        format!("faster by {least:.1}-{most:.1}% (inconclusive against +/-{band}%)")
    } else if most < 0.0 {
        format!(
            "slower by {:.1}-{:.1}% (inconclusive against +/-{band}%)",
            -most, -least
        )
    } else {
        format!("inconclusive: {} to {}", percent_words(most), percent_words(least))
    }
}

/// A row's spell in words: "rr 1 B:1 KiB: not stationary: b was 41.2%
/// slower over pairs 1-30 (0.0-1.2 s) only, not over pairs 31-500; no call
/// from a spell".
fn spell_words(d: &Decision, r: &DecidedRow) -> Option<String> {
    let s = r.spell.as_ref()?;
    let how = match s.verdict {
        Decided::Faster => format!("{:.1}% faster", better_by(s.ratio, r.direction)),
        Decided::Slower => format!("{:.1}% slower", -better_by(s.ratio, r.direction)),
        Decided::Equivalent | Decided::Inconclusive => return None,
    };
    let when = s
        .seconds
        .map(|(a, b)| format!(" ({a:.1}-{b:.1} s)"))
        .unwrap_or_default();
    Some(format!(
        "{} {}: not stationary: {} was {how} over pairs {}-{}{when} only, not over pairs {}-{}; no call from a spell",
        r.step, r.label, d.b, s.pairs.0, s.pairs.1, s.not.0, s.not.1
    ))
}

/// The decision cell: "4.6% slower", "equivalent within +/-2%", or what
/// the interval of a row not decided says.
fn words(r: &DecidedRow, tolerance: f64) -> String {
    match r.verdict {
        Decided::Faster | Decided::Slower => percent_words(r.percent),
        Decided::Equivalent => format!("equivalent within +/-{}%", percent(tolerance)),
        Decided::Inconclusive => open_words(r, tolerance),
    }
}

/// "1 B:1 MiB by 17.4%" for each row, joined.
fn by_list(rows: &[&DecidedRow]) -> String {
    let each: Vec<String> = rows
        .iter()
        .map(|r| format!("{} by {:.1}%", r.label, r.percent.abs()))
        .collect();
    each.join(", ")
}

/// The headline: which side won where, in words ("c is slower than rust
/// on 2 of 8 sizes (1 B:1 MiB by 17.4%, ...); equivalent within +/-5% on
/// 4; 2 inconclusive (budget of 30s spent)").
fn headline(d: &Decision) -> String {
    let rows: Vec<&DecidedRow> = d.rows.iter().collect();
    let noun = match rows.first() {
        Some(f) if rows.iter().all(|r| r.test.rows_noun() == f.test.rows_noun()) => f.test.rows_noun(),
        _ => "rows",
    };
    let of = |v: Decided| -> Vec<&DecidedRow> { rows.iter().copied().filter(|r| r.verdict == v).collect() };
    let (faster, slower, same, open) = (
        of(Decided::Faster),
        of(Decided::Slower),
        of(Decided::Equivalent),
        of(Decided::Inconclusive),
    );
    let n = rows.len();
    let mut parts = Vec::new();
    for (list, way) in [(&faster, "faster"), (&slower, "slower")] {
        if list.is_empty() {
            continue;
        }
        // The first clause names A and the rows; the second is short.
        parts.push(match parts.is_empty() {
            true => format!("{way} than {} on {} of {n} {noun} ({})", d.a, list.len(), by_list(list)),
            false => format!("{way} on {} ({})", list.len(), by_list(list)),
        });
    }
    let mut line = match parts.is_empty() {
        true => format!("{} is neither faster nor slower than {} on any of {n} {noun}", d.b, d.a),
        false => format!("{} is {}", d.b, parts.join(" and ")),
    };
    if !same.is_empty() {
        line += &format!(
            "; equivalent within +/-{}% on {}",
            percent(d.settings.tolerance),
            same.len()
        );
    }
    if !open.is_empty() {
        line += &format!("; {} inconclusive ({})", open.len(), d.stop);
    }
    line
}

/// The method in one sentence, from the run's settings (the whole of it
/// is the decision's `method`, in the JSON).
fn short_method(d: &Decision) -> String {
    let s = &d.settings;
    let effect = match s.effect {
        Effect::Median => "the median of each row's pair ratios (the typical pair), with a confidence sequence valid at every look whatever their distribution (Howard and Ramdas 2022)",
        Effect::Mean => "the geometric mean of each row's pair ratios, with a confidence sequence valid at every look (Howard et al. 2021)",
    };
    let hold = match s.floor {
        Some(Floor::Millis(ms)) => format!(
            "; no call before {} s, and only when the difference held over the run",
            ms as f64 / 1000.0
        ),
        Some(Floor::Pairs(n)) => format!("; no call before {n} pairs, and only when the difference held over the run"),
        None => String::new(),
    };
    format!(
        "{effect}; decided when the interval lies wholly outside +/-{}% or wholly inside{hold} (the whole method: JSON `method`, docs/methods.md)",
        percent(s.tolerance)
    )
}

/// One table's rows share a figure: test, step, series, stat.
fn same_section(a: &DecidedRow, b: &DecidedRow) -> bool {
    (a.test, &a.step, &a.series, &a.stat) == (b.test, &b.step, &b.series, &b.stat)
}

/// "latency-grid (rr): rtt p50 of each block, us (lower is better)": the
/// step (and its test when the step is named otherwise) and the figure.
fn title(r: &DecidedRow) -> String {
    let what = match r.step.as_str() {
        "" => r.test.to_string(),
        s if s == r.test.name() => s.to_string(),
        s => format!("{s} ({})", r.test),
    };
    let stat = match r.stat.as_str() {
        "value" => String::new(),
        s => format!(" {s}"),
    };
    let better = r.direction.word();
    format!(
        "{what}: {}{stat} of each block, {} ({better} is better)",
        r.series, r.unit
    )
}

/// The interval "lo-hi" with enough decimals (three at least) that
/// neither end reads as an edge of the band (1 + tolerance, or its
/// inverse) when it is not on it: an interval that ends just inside the
/// band never prints the band's own edge.
fn interval_text((lo, hi): (f64, f64), tolerance: f64) -> String {
    let edges = [1.0 + tolerance, 1.0 / (1.0 + tolerance)];
    let mut p = 3;
    while p < 6
        && [lo, hi]
            .iter()
            .any(|v| edges.iter().any(|e| v != e && format!("{v:.p$}") == format!("{e:.p$}")))
    {
        p += 1;
    }
    format!("{lo:.p$}-{hi:.p$}")
}

/// Decimals of a table's value columns.
fn decimals(rows: &[&DecidedRow]) -> usize {
    crate::view::decimals(rows.iter().flat_map(|r| [r.median_a, r.median_b]))
}

fn table(d: &Decision, rows: &[&DecidedRow]) -> Table {
    let unit = &rows[0].unit;
    let p = decimals(rows);
    Table {
        cols: vec![
            Col::text(rows[0].test.row_label(), 0),
            Col::num(&format!("A: {} ({unit})", d.a), 0),
            Col::num(&format!("B: {} ({unit})", d.b), 0),
            Col::num(&format!("Difference of medians ({unit})"), 0),
            Col::text("B vs A", 0),
            Col::num(
                match d.settings.effect {
                    Effect::Median => "B/A, typical pair",
                    Effect::Mean => "B/A of pairs",
                },
                0,
            ),
            Col::num("interval (95% for all rows, at any look)", 0),
            Col::num("pairs", 0),
        ],
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    r.label.clone(),
                    format!("{:.p$}", r.median_a),
                    format!("{:.p$}", r.median_b),
                    format!("{:+.p$}", r.median_b - r.median_a),
                    words(r, d.settings.tolerance),
                    format!("{:.3}", r.ratio),
                    r.interval
                        .map_or_else(|| "-".into(), |i| interval_text(i, d.settings.tolerance)),
                    r.pairs.to_string(),
                ]
            })
            .collect(),
        ..Table::default()
    }
}

/// B/A per row with the interval it was decided on, around 1, on a log
/// axis; the band is drawn as a second line pair's worth of words in the
/// title.
fn chart(d: &Decision, rows: &[&DecidedRow]) -> Chart {
    let (mut lo, mut hi) = (1.0 / (1.0 + d.settings.tolerance), 1.0 + d.settings.tolerance);
    for r in rows {
        let (a, b) = r.interval.unwrap_or((r.ratio, r.ratio));
        for v in [r.ratio, a, b] {
            if v.is_finite() && v > 0.0 {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    let points = rows.iter().enumerate().map(|(i, r)| (i as f64, r.ratio));
    let series = Trace {
        errors: rows
            .iter()
            .map(|r| r.interval.unwrap_or((f64::NAN, f64::NAN)))
            .collect(),
        kind: Kind::Points { radius: 4.0 },
        ..Trace::line(format!("B/A: {} / {}, interval", d.b, d.a), 1, points.collect())
    };
    Chart {
        categories: rows.iter().map(|r| r.label.clone()).collect(),
        hline: Some(1.0),
        ..Chart::new(
            "decision",
            format!(
                "{}: B / A per row, with the interval it was decided on (band +/-{}%)",
                rows[0].series,
                percent(d.settings.tolerance)
            ),
            Axis::linear("", -0.6, rows.len() as f64 - 0.4),
            Axis::log("B / A", lo / 1.02, hi * 1.02).snapped(),
            vec![series],
        )
    }
}

impl crate::format::Render for Decision {
    fn view(&self, _style: &crate::format::Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(format!(
            "stackmeter decide: A = {} (baseline), B = {}",
            self.a, self.b
        )));
        v.line(headline(self));
        v.line(
            "(A block is one run of a step's test against one target; a pair is a block of each, back to back, \
             in random order.)"
                .to_string(),
        );
        let mut i = 0;
        while i < self.rows.len() {
            let first = &self.rows[i];
            let rows: Vec<&DecidedRow> = self.rows[i..].iter().take_while(|r| same_section(first, r)).collect();
            i += rows.len();
            v.push(Block::Heading(title(first)));
            v.push(Block::Table(table(self, &rows)));
            v.push(Block::Chart(chart(self, &rows)));
        }
        v.blank();
        let [faster, slower, same, open] = self.counts();
        v.line(format!(
            "Decided, B ({}) vs A ({}): {faster} faster, {slower} slower, {same} equivalent within +/-{}%, {open} inconclusive; stopped: {} after {} pair(s)",
            self.b,
            self.a,
            percent(self.settings.tolerance),
            self.stop,
            self.pairs
        ));
        for r in self.serial_rows() {
            v.push(Block::Warning(format!(
                "{} {}: its pairs are autocorrelated (lag-1 r = {:.2}): a target that carries state from one block to the next can make the error rate exceed alpha",
                r.step, r.label, r.serial
            )));
        }
        for r in &self.rows {
            if let Some(w) = spell_words(self, r) {
                v.push(Block::Warning(w));
            }
        }
        v.line(format!("Correction: {}.", self.correction));
        v.line(format!("Method: {}.", short_method(self)));
        v
    }

    fn title(&self) -> String {
        format!("stackmeter decide {} vs {}", self.b, self.a)
    }
}
