//! JSON Schemas (draft 2020-12) of every JSON output, generated from the
//! typed values themselves, so a schema cannot drift from what is printed.
//! `docs/schema/` keeps a copy of each (a test fails when one is stale),
//! and `stackmeter schema NAME` prints them.

use schemars::schema_for;

/// Every output's name, in the order of [`schemas`] (its help and
/// `stackmeter schema` list them from here).
pub const NAMES: [&str; 11] = [
    "document",
    "comparison",
    "decision",
    "suite",
    "runs",
    "report",
    "percentiles",
    "row",
    "fleet-report",
    "fleet-comparison",
    "history",
];

/// Every output's schema: its name and the schema.
pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("document", schema_for!(crate::doc::Document).to_value()),
        ("comparison", schema_for!(crate::comparison::Comparison).to_value()),
        ("decision", schema_for!(crate::decision::Decision).to_value()),
        ("suite", schema_for!(crate::suite::SuiteOutcome).to_value()),
        ("runs", schema_for!(crate::runs::RunList).to_value()),
        ("report", schema_for!(crate::report::RunReport).to_value()),
        ("percentiles", schema_for!(crate::spectrum::Spectrum).to_value()),
        ("row", schema_for!(crate::live::Live<'static>).to_value()),
        ("fleet-report", schema_for!(crate::fleet::FleetReport).to_value()),
        (
            "fleet-comparison",
            schema_for!(crate::fleet::FleetComparison).to_value(),
        ),
        ("history", schema_for!(crate::history::History).to_value()),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_schema_is_named_once_in_order() {
        let names: Vec<&str> = super::schemas().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, super::NAMES);
    }

    /// docs/schema/NAME.schema.json holds what the types generate; run
    /// with STACKMETER_WRITE_SCHEMAS=1 to write them after a change.
    #[test]
    fn the_shipped_schemas_are_the_generated_ones() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema");
        let write = std::env::var_os("STACKMETER_WRITE_SCHEMAS").is_some();
        for (name, schema) in super::schemas() {
            let path = dir.join(format!("{name}.schema.json"));
            let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
            if write {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &text).unwrap();
            }
            let shipped = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                shipped == text,
                "{} is stale: run STACKMETER_WRITE_SCHEMAS=1 cargo test -p stackmeter-results schema",
                path.display()
            );
        }
    }
}
