//! Views of values built by hand: a plain target's document and a
//! spectrum without points, in every format.

use stackmeter_render::{render, Format, Style};
use stackmeter_results::{PingParams, Spectrum, SpectrumRow};

#[test]
fn a_plain_echo_document_names_its_target_and_what_it_lacks() {
    let body = stackmeter_results::Body::Ping(stackmeter_results::PingBody {
        params: PingParams {
            size: 64,
            count: 1,
            warmup: 0,
            interval_us: 0,
            slow_us: 1000,
            timeout_ms: 1000,
            echo: true,
            timestamps: None,
            layers: false,
        },
        results: vec![stackmeter_results::PingResult::empty(64)],
    });
    let doc = stackmeter_results::Document {
        schema: stackmeter_results::SCHEMA.into(),
        target: stackmeter_results::Target {
            name: "127.0.0.1:7".into(),
            address: "127.0.0.1:7".into(),
            embedded: false,
            kind: body.target_kind(),
        },
        not_measured: body.not_measured(),
        body,
        placement: stackmeter_results::Placement::default(),
        knobs: Default::default(),
        env: stackmeter_results::Env::default(),
        complete: true,
        error: None,
        warnings: vec![],
    };
    let text = render(&doc, Format::Text, &Style::default());
    assert!(
        text.starts_with("stackmeter ping -> 127.0.0.1:7 (plain echo server); client not pinned"),
        "{text}"
    );
    assert!(
        text.contains("not measured (plain echo server): server_us: time inside the responder;"),
        "{text}"
    );
    let json = serde_json::to_value(&doc).unwrap();
    assert_eq!(json["target"]["kind"], "echo");
    assert_eq!(json["not_measured"][0]["figure"], "server_us");
    let old = json
        .to_string()
        .replace(r#","kind":"echo""#, "")
        .replace(r#""not_measured""#, r#""ignored""#);
    let back: stackmeter_results::Document = serde_json::from_str(&old).unwrap();
    assert_eq!(back.target.kind, stackmeter_results::TargetKind::Stackmeter);
    assert!(back.not_measured.is_empty());
}

#[test]
fn a_row_without_points_renders_in_every_format() {
    let s = Spectrum {
        schema: stackmeter_results::SCHEMA.into(),
        run: 1,
        rows: vec![SpectrumRow {
            label: "a".into(),
            test: stackmeter_results::TestKind::Load,
            step: String::new(),
            repetition: 0,
            row: "4 KiB".into(),
            metric: "latency_us".into(),
            count: 0,
            points: Vec::new(),
        }],
    };
    for f in [Format::Text, Format::Md, Format::Json, Format::Html] {
        assert!(render(&s, f, &Style::default()).contains("load"), "{f:?}");
    }
}
