//! A single measuring command, from checked flags to a stored result:
//! open the store (before measuring, so a bad `--db` costs nothing), pick
//! or start the target, place the measuring thread, run, store.

use crate::error::Error;
use crate::execute::{execute, Event, Measured};
use crate::record::Storing;
use stackmeter_client::auth::Key;
use stackmeter_responder::ObjectSource;
use stackmeter_results::Placement;
use stackmeter_spec::Spec;

/// A measured single command, and what to tell the user beside it.
pub struct Single {
    /// The test.
    pub measured: Measured,
    /// Why the result could not be stored (a full disk, a locked or
    /// damaged file): the command prints it and fails after the result.
    pub not_stored: Option<Error>,
    /// The run it was stored as (none: not stored, or spooled).
    pub run: Option<i64>,
    /// The line to print when the result went to the spool (PostgreSQL
    /// could not be reached): it is kept, and this says how to send it.
    pub spooled: Option<String>,
}

/// How a single measuring command runs, as its flags say.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    /// TARGET, as given; none: an embedded responder.
    pub target: Option<String>,
    /// `--affinity`: the measuring thread's CPU.
    pub affinity: Option<usize>,
    /// `--responder-affinity`: the embedded responder's CPU.
    pub responder_affinity: Option<usize>,
    /// `--priority`, `--mlock`, `--busy-poll`.
    pub knobs: stackmeter_results::KnobRequest,
    /// Where the result is stored.
    pub storing: Storing,
}

/// A measurement ready to run: how, what, and the embedded responder's
/// catalogue (object mode is off unless the test fetches objects).
#[derive(Debug)]
pub struct Planned {
    /// How to run.
    pub setup: Setup,
    /// What to measure.
    pub spec: Spec,
    /// Objects of an embedded responder.
    pub objects: ObjectSource,
}

/// Runs a planned measurement against a target that asks for `secret`
/// (the embedded responder too); `on` sees its start and live rows.
pub fn single(p: &Planned, secret: Option<Key>, on: &mut dyn FnMut(Event)) -> Result<Single, Error> {
    let f = &p.setup;
    let mut store = crate::record::open_for_measuring(&f.storing)?;
    // Refused knobs stop the command before anything starts; applied only
    // for the test, after the embedded responder's threads exist, so they
    // do not inherit the client's priority.
    let knobs = f.knobs.clone();
    crate::knobs::check(&knobs)?;
    let (affinity, responder_affinity) = cpus_of(p);
    let chosen = crate::target::choose(
        f.target.as_deref(),
        responder_affinity,
        p.objects.clone(),
        p.spec.target_kind(),
        secret,
    )?;
    if let Some(cpu) = affinity {
        // A stream's workers pin themselves; the measuring thread only
        // wakes at interval ends and stays off their CPU's queue.
        let placed = match p.spec.pins_its_workers() {
            true => stackmeter_sys::check_cpu(cpu),
            false => stackmeter_sys::pin_current_thread(cpu),
        };
        placed.map_err(|e| Error::flag(format!("--affinity {cpu}: {e}")))?;
    }
    // Each connection holds a descriptor, and an embedded responder one
    // more; a stream's senders keep a duplicate of each for TCP_INFO.
    let connections = p.spec.descriptors();
    if connections > 0 {
        let _ = crate::target::raise_fd_limit(stackmeter_responder::Log::Quiet, connections);
    }
    let placement = Placement {
        client_cpu: affinity,
        responder_cpu: responder_affinity,
    };
    let how = crate::execute::How {
        placement,
        knobs,
        secret,
    };
    let measured = execute(&p.spec, chosen.target.clone(), chosen.addr, how, on);
    // A plain server measured as a responder gave nothing worth keeping
    // under the responder's label: not stored.
    let plain = matches!(measured.error, Some(stackmeter_client::ClientError::PlainTarget { .. }));
    let saved = match store.as_mut().filter(|_| !plain) {
        Some(r) => crate::record::save_single(
            &mut r.writer,
            f.storing.label.as_deref(),
            &r.attrs,
            &measured.doc,
            &measured.histograms,
        ),
        None => Ok(None),
    };
    let (run, not_stored) = match saved {
        Ok(run) => (run, None),
        Err(e) => (None, Some(e)),
    };
    let spooled = store.as_ref().and_then(|r| r.writer.note());
    Ok(Single {
        measured,
        not_stored,
        run,
        spooled,
    })
}

/// Where the measuring thread and an embedded responder run: as the flags
/// say; for a test traced layer by layer against an embedded responder
/// with neither flag, where this process may run on two CPUs or more, the
/// client on the second of them and the responder on the first
/// (unpinned, the scheduler puts the two on one CPU or on two from one run
/// to the next, a round trip 4x apart on loopback, and the tracer's cost,
/// the traced run against the untraced one beside it, would be that
/// placement's).
fn cpus_of(p: &Planned) -> (Option<usize>, Option<usize>) {
    let f = &p.setup;
    let unplaced = f.target.is_none() && f.affinity.is_none() && f.responder_affinity.is_none();
    let allowed = stackmeter_sys::listener::allowed_cpus();
    match (unplaced && p.spec.traces_layers(), allowed.as_slice()) {
        (true, [first, second, ..]) => (Some(*second), Some(*first)),
        _ => (f.affinity, f.responder_affinity),
    }
}
