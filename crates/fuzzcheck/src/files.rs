//! What stackmeter reads from files: TOML plans (a user's `suite
//! plan.toml`) and stored documents (the `document` column of the store,
//! which `show`, `compare` and `report` read back and render). Bad input
//! must be an error, never a panic; a document that reads must render in
//! every format and survive a JSON round trip unchanged.

use stackmeter_render::{render, Format, Style};
use stackmeter_results::Document;

/// A TOML plan, checked and in its quick form, as `suite` loads it.
pub fn plan(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let [full, quick] = [false, true].map(|q| stackmeter_spec::plan::parse(text, q));
    if let Ok(p) = &full {
        assert!(!p.steps.is_empty(), "a plan without steps was accepted");
    }
    // Every error can be shown at its place, whatever the text.
    if let Err(e) = &full {
        let shown = e.show("fuzz.toml", text);
        assert!(shown.starts_with("fuzz.toml"), "{shown}");
    }
    // spec::plan: "whether a plan is valid does not depend on --quick".
    assert_eq!(
        full.is_ok(),
        quick.is_ok(),
        "full: {:?}, quick: {:?}",
        full.err(),
        quick.err()
    );
}

/// A stored document (`stackmeter/1` JSON).
pub fn document(data: &[u8]) {
    let Ok(doc) = serde_json::from_slice::<Document>(data) else {
        return;
    };
    let _ = stackmeter_results::figures(&doc);
    let _ = doc.derive_warnings();
    for f in [Format::Text, Format::Md, Format::Html, Format::Json] {
        let _ = render(&doc, f, &Style::default());
    }
    let once = serde_json::to_string(&doc).expect("a document serializes");
    let back: Document = serde_json::from_str(&once).expect("a serialized document reads back");
    assert_eq!(
        serde_json::to_string(&back).expect("serializes"),
        once,
        "JSON round trip"
    );
}
