//! The list of stored runs.
use stackmeter_results::RunList;

use crate::view::{Block, Col, Table, View};

impl crate::format::Render for RunList {
    fn view(&self, _style: &crate::format::Style) -> View {
        let mut v = View::new();
        if self.runs.is_empty() {
            v.line("no stored runs");
            return v;
        }
        // The attributes column only when some run has attributes.
        let with_attrs = self.runs.iter().any(|r| !r.attrs.is_empty());
        let mut cols = vec!["id", "time (UTC)", "status", "label", "test", "key figure"];
        if with_attrs {
            cols.push("attributes");
        }
        v.push(Block::Table(Table {
            cols: cols
                .iter()
                .enumerate()
                .map(|(i, h)| if i == 0 { Col::num(h, 4) } else { Col::text(h, 0) })
                .collect(),
            rows: self
                .runs
                .iter()
                .map(|r| {
                    let mut row = vec![
                        r.id.to_string(),
                        r.time.clone(),
                        r.status.clone(),
                        r.label.clone(),
                        r.test.clone(),
                        r.key_figure.clone(),
                    ];
                    if with_attrs {
                        let list: Vec<String> = r.attrs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                        row.push(list.join(" "));
                    }
                    row
                })
                .collect(),
            ..Table::default()
        }));
        v
    }

    fn title(&self) -> String {
        "stackmeter runs".into()
    }
}
