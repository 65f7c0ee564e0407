//! One specification against one target, as one typed value: the
//! document (with its envelope: target, placement, environment,
//! completeness, warnings), the histograms behind its figures, and the
//! error that stopped it. The single measuring commands and every step of
//! a suite run through here, so a document is assembled in one place.

use stackmeter_client::auth::Key;
use stackmeter_client::{ClientError, Endpoint, RowHistogram};
use stackmeter_results::{Document, Env, KnobRequest, Knobs, Live, Placement, Target};
use stackmeter_spec::Spec;
use std::net::SocketAddr;

/// What a running test reports before it ends.
pub enum Event<'a> {
    /// The test starts: the document without rows (parameters, target,
    /// placement), for a display to print its head.
    Started(&'a Document),
    /// A row finished (a stream interval, a udp-max trial).
    Row(Live<'a>),
}

/// A finished (or broken-off) test.
pub struct Measured {
    /// The result; `complete` is false when the test stopped early, and
    /// then holds every row that finished.
    pub doc: Document,
    /// The full distributions behind the rows' latency figures.
    pub histograms: Vec<RowHistogram>,
    /// Why the test stopped early.
    pub error: Option<ClientError>,
}

/// How one test runs besides its specification.
#[derive(Clone, Debug, Default)]
pub struct How {
    /// Where the caller placed the measuring thread and the responder.
    pub placement: Placement,
    /// Real-time knobs, applied to the calling thread for this test only.
    pub knobs: KnobRequest,
    /// The shared secret the target asks for (`secret::load`), if any.
    pub secret: Option<Key>,
}

/// Runs `spec` against `addr` (named `target` in the document) from the
/// calling thread, which the caller has placed; the knobs apply for the
/// test and are read back as it ends; `on` sees the start and every live
/// row.
pub fn execute(spec: &Spec, target: Target, addr: SocketAddr, how: How, on: &mut dyn FnMut(Event)) -> Measured {
    let mut doc = Document {
        schema: stackmeter_results::SCHEMA.into(),
        target,
        body: spec.empty_body(),
        placement: how.placement,
        knobs: Knobs {
            requested: how.knobs,
            client: None,
        },
        env: env(stackmeter_sys::unix_now_ms()),
        complete: false,
        error: None,
        warnings: Vec::new(),
        not_measured: Vec::new(),
    };
    // The parameters record the flags, so they say what kind of target
    // this is, whoever built the envelope.
    doc.target.kind = spec.target_kind();
    doc.not_measured = doc.body.not_measured();
    let applied = match crate::knobs::apply(&doc.knobs.requested) {
        Ok(a) => a,
        Err(e) => {
            // The callers check the knobs before measuring; this is a
            // refusal that came later (a limit lowered meanwhile).
            let e = ClientError::Local(std::io::Error::other(e.to_string()));
            doc.error = Some(e.to_string());
            return Measured {
                doc,
                histograms: Vec::new(),
                error: Some(e),
            };
        }
    };
    on(Event::Started(&doc));
    let endpoint = Endpoint::new(addr, how.secret);
    let ran = crate::run::run(spec, &endpoint, doc.placement.client_cpu, &mut |row| {
        on(Event::Row(row));
    });
    doc.knobs.client = Some(crate::knobs::in_force());
    crate::knobs::undo(applied);
    doc.body = ran.body;
    doc.complete = ran.error.is_none();
    doc.error = ran.error.as_ref().map(std::string::ToString::to_string);
    doc.warnings = doc.derive_warnings();
    doc.warnings.extend(ran.warnings.iter().map(ToString::to_string));
    Measured {
        doc,
        histograms: ran.histograms,
        error: ran.error,
    }
}

/// The host, tool and command line, at `unix_ms` (Unix milliseconds).
pub fn env(unix_ms: u64) -> Env {
    let h = stackmeter_sys::host();
    Env {
        tool: "stackmeter".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        time: stackmeter_sys::utc_rfc3339(unix_ms / 1000),
        hostname: h.hostname,
        kernel: h.kernel,
        cpu_model: h.cpu_model,
        cpus: h.cpus,
        command: std::env::args().collect(),
        time_ms: Some(unix_ms),
    }
}
