//! A suite's outcome: each comparison against the first target (a fixed
//! number of repetitions), or B's decision against A (run until decided).
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
            .map(|t| {
                let process = t
                    .process
                    .as_ref()
                    .map(|p| format!(" ({})", p.describe()))
                    .unwrap_or_default();
                match variants {
                    false => format!("{}={}{process}", t.label, t.address),
                    true => format!("{}={}{process} (knobs: {})", t.label, t.address, t.knobs.describe()),
                }
            })
            .collect();
        let mut v = View::new();
        let design = match (&s.decide, &self.decision) {
            (Some(d), Some(dec)) => format!(
                "until decided: {} pair(s) of blocks in random order, budget {}",
                dec.pairs, d.budget
            ),
            _ => format!("{} repetitions per target, interleaved", self.repetitions),
        };
        v.push(Block::Title(format!(
            "stackmeter suite {}: {}; {design}{}",
            s.plan,
            targets.join(", "),
            self.run.map(|r| format!("; stored as run {r}")).unwrap_or_default()
        )));
        if let Some(n) = &s.note {
            v.push(Block::Note(n.clone()));
        }
        for c in &self.comparisons {
            v.extend(nested(c.view(style)));
        }
        if let Some(d) = &self.decision {
            v.extend(nested(d.view(style)));
        }
        v
    }

    fn title(&self) -> String {
        format!("stackmeter suite {}", self.suite.plan)
    }
}
