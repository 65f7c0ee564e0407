//! A suite's outcome: each comparison against the first target, and the
//! figures whose confidence goal was not reached.
use stackmeter_results::SuiteOutcome;

use crate::view::{nested, Block, View};
use stackmeter_results::{self};

impl crate::format::Render for SuiteOutcome {
    fn view(&self, style: &crate::format::Style) -> View {
        let s = &self.suite;
        // Variants of one target differ only in their knobs: name them all.
        let variants = s.targets.iter().any(|t| !t.knobs.is_default());
        let targets: Vec<String> = s
            .targets
            .iter()
            .map(|t| match variants {
                false => format!("{}={}", t.label, t.address),
                true => format!("{}={} (knobs: {})", t.label, t.address, t.knobs.describe()),
            })
            .collect();
        let mut v = View::new();
        v.push(Block::Title(format!(
            "stackmeter suite {}: {}; {} repetitions per target, interleaved{}",
            s.plan,
            targets.join(", "),
            self.repetitions,
            self.run.map(|r| format!("; stored as run {r}")).unwrap_or_default()
        )));
        if let Some(n) = &s.note {
            v.push(Block::Note(n.clone()));
        }
        for c in &self.comparisons {
            v.extend(nested(c.view(style)));
        }
        if !self.not_converged.is_empty() {
            v.blank();
            v.push(Block::Warning(format!(
                "the confidence interval goal was NOT reached for {} figure(s); treat these verdicts with care:",
                self.not_converged.len()
            )));
            for m in &self.not_converged {
                v.line(format!("  {m}"));
            }
        }
        v
    }

    fn title(&self) -> String {
        format!("stackmeter suite {}", self.suite.plan)
    }
}
