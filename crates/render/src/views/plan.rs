//! A fleet plan (`fleet plan`): its nodes, steps and the order of waves.

use crate::view::{Block, Col, Table, View};
use stackmeter_fleet::FleetPlan;

impl crate::format::Render for FleetPlan {
    fn view(&self, _style: &crate::format::Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(self.title()));
        let items = self.items().count();
        v.line(format!(
            "{} node(s), {} pair(s) measured ({} skipped), {} step(s) x {} repetition(s): {items} test(s) in {} wave(s)",
            self.nodes.len(),
            self.pairs.len(),
            self.skipped.len(),
            self.steps.len(),
            self.repeat,
            self.waves.len()
        ));
        v.push(Block::Heading("Nodes".into()));
        v.push(Block::Table(Table {
            cols: vec![
                Col::text("node", 0),
                Col::text("responder", 0),
                Col::text("client", 0),
                Col::num("tests as client", 0),
                Col::text("labels", 0),
            ],
            rows: self
                .nodes
                .iter()
                .map(|n| {
                    vec![
                        n.name.clone(),
                        n.target(),
                        if n.client { "yes" } else { "no" }.into(),
                        self.for_client(&n.name).count().to_string(),
                        n.labels
                            .iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(","),
                    ]
                })
                .collect(),
            ..Table::default()
        }));
        v.push(Block::Heading("Steps".into()));
        v.push(Block::Table(Table {
            cols: vec![Col::text("step", 0), Col::text("test", 0), Col::text("class", 0)],
            rows: self
                .steps
                .iter()
                .map(|s| {
                    let exclusive = self.waves.iter().any(|w| w.step == s.name && w.exclusive);
                    vec![
                        s.name.clone(),
                        s.test.name().into(),
                        if exclusive {
                            "exclusive (alone on both nodes)"
                        } else {
                            "shared"
                        }
                        .into(),
                    ]
                })
                .collect(),
            ..Table::default()
        }));
        v.push(Block::Heading("Order".into()));
        v.push(Block::Table(Table {
            cols: vec![
                Col::num("wave", 0),
                Col::num("rep", 0),
                Col::text("step", 0),
                Col::num("round", 0),
                Col::text("client -> target", 0),
            ],
            rows: self
                .waves
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    vec![
                        (i + 1).to_string(),
                        (w.repetition + 1).to_string(),
                        w.step.clone(),
                        if w.exclusive {
                            (w.round + 1).to_string()
                        } else {
                            "-".into()
                        },
                        w.items
                            .iter()
                            .map(|it| format!("{}->{}", it.client, it.target))
                            .collect::<Vec<_>>()
                            .join(" "),
                    ]
                })
                .collect(),
            ..Table::default()
        }));
        for s in &self.skipped {
            v.push(Block::Note(format!("skipped {} -> {}: {}", s.client, s.target, s.why)));
        }
        v.line("Each client runs its own tests in wave order, one at a time; an exclusive test holds both nodes' locks alone, a shared one beside other shared ones.");
        v
    }

    fn title(&self) -> String {
        format!("stackmeter fleet plan: {}", self.fleet)
    }
}
