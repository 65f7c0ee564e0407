//! A test's document: its title line, the knobs in force, the test's own
//! blocks, and what every test ends with (tail notes, what was not
//! measured, warnings, an early stop).
use stackmeter_results::Document;

use crate::view::{Block, View};

impl crate::format::Render for Document {
    fn view(&self, style: &crate::format::Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(self.first_line()));
        if !self.knobs.requested.is_default()
            || self
                .knobs
                .client
                .as_ref()
                .is_some_and(|c| c.policy != "other" || c.nice != 0 || c.locked_kib > 0)
        {
            v.line(self.knobs.line());
        }
        if let (true, Some(e)) = (self.body.is_empty(), &self.error) {
            // Nothing was measured: no empty tables, only why.
            v.line(format!("nothing measured: {e}"));
            return v;
        }
        let counts = crate::views::view_of(&self.body, &mut v, style.units);
        tail_note(&mut v, &counts);
        if !self.not_measured.is_empty() {
            v.blank();
        }
        for n in &self.not_measured {
            v.push(Block::Note(format!(
                "not measured ({}): {}: {}",
                self.target.kind.describe(),
                n.figure,
                n.why
            )));
        }
        for w in &self.warnings {
            v.push(Block::Warning(w.clone()));
        }
        if let Some(e) = &self.error {
            v.line(format!(
                "incomplete: the test stopped early ({e}); the figures above cover what ran before that"
            ));
        }
        v
    }

    fn title(&self) -> String {
        self.first_line()
    }
}

/// Says when a tail percentile rests on one or two samples (docs/methods.md,
/// "Tails need samples");
/// `counts` are the sample counts behind the view's percentiles.
fn tail_note(v: &mut View, counts: &[u64]) {
    let Some(&n) = counts.iter().min() else { return };
    if n > 0 && n < 1000 {
        let above = ((1.0 - 0.99) * n as f64).floor() as u64;
        v.blank();
        v.push(Block::Note(format!(
            "with {n} samples, p99.9 is the largest sample and p99 has {above} sample(s) above it; use 1000+ samples before reading tails"
        )));
    }
}
