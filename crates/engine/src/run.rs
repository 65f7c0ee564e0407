//! Running one checked test against a target: the test's client loop
//! called with its parameters (one function per test, chosen by one
//! `match` over [`Spec`]), its rows wrapped into the document's body, and
//! what only the run can know (its warnings, its histograms, why it
//! stopped).

use stackmeter_client::{ClientError, Endpoint, RowHistogram};
use stackmeter_results::{
    Body, CrrParams, Live, LoadParams, PingParams, RrParams, RrulParams, StreamParams, TrialRow, UdpBurstBody,
    UdpBurstParams, UdpMaxParams,
};
use stackmeter_spec::{Spec, CLOCK_AUTO};

/// What running one test produced, before it becomes a document.
pub struct Ran {
    /// The test's parameters and rows.
    pub body: Body,
    /// Why it stopped early, if it did.
    pub error: Option<ClientError>,
    /// The samples behind the rows' figures.
    pub histograms: Vec<RowHistogram>,
    /// Warnings only the run itself can know (not derived from figures).
    pub warnings: Vec<stackmeter_results::warnings::Warning>,
}

impl Ran {
    fn new(body: Body, error: Option<ClientError>, histograms: Vec<RowHistogram>) -> Ran {
        Ran {
            body,
            error,
            histograms,
            warnings: Vec::new(),
        }
    }

    /// A test that returns rows: `body` wraps them.
    fn rows<T>(o: stackmeter_client::Outcome<T>, body: impl FnOnce(Vec<T>) -> Body) -> Ran {
        Ran::new(body(o.rows), o.error, o.histograms)
    }
}

/// Runs `spec` against `endpoint` (the target's address and secret), the
/// measuring thread already placed; `cpu` is passed to tests that start
/// threads of their own; `live` sees rows as they finish.
pub fn run(spec: &Spec, endpoint: &Endpoint, cpu: Option<usize>, live: &mut dyn FnMut(Live)) -> Ran {
    match spec {
        Spec::Rr(p) => rr(p, endpoint, cpu, live),
        Spec::Crr(p) => crr(p, endpoint, cpu, live),
        Spec::Ping(p) => ping(p, endpoint, cpu, live),
        Spec::Stream(p) => stream(p, endpoint, cpu, live),
        Spec::UdpMax(p) => udp_max(p, endpoint, cpu, live),
        Spec::Load(p) => load(p, endpoint, cpu, live),
        Spec::Rrul(p) => rrul(p, endpoint, cpu, live),
        Spec::UdpBurst(p) => udp_burst(p, endpoint, cpu, live),
    }
}

/// `p` with its clock method chosen for `addr` when it was left to the
/// target: `same` when `addr` is this host's (loopback or an interface's
/// address), else `estimate`.
fn resolve_clock(
    p: Option<&stackmeter_results::StampParams>,
    addr: std::net::SocketAddr,
) -> Option<stackmeter_results::StampParams> {
    let mut p = p?.clone();
    if p.clock == CLOCK_AUTO {
        let local = stackmeter_sys::tstamp::is_local_ip(addr.ip());
        p.clock = if local { "same" } else { "estimate" }.into();
    }
    Some(p)
}

/// rr: closed or open loop, or a plain target.
fn rr(p: &RrParams, endpoint: &Endpoint, _cpu: Option<usize>, _live: &mut dyn FnMut(Live)) -> Ran {
    let p = &RrParams {
        timestamps: resolve_clock(p.timestamps.as_ref(), endpoint.addr),
        ..p.clone()
    };
    let o = match &p.open_loop {
        Some(ol) => stackmeter_client::rr_open(endpoint, p, ol),
        None if p.echo || p.raw => stackmeter_client::rr_plain(endpoint.addr, p),
        None => stackmeter_client::rr(endpoint, p),
    };
    Ran::rows(o, |results| {
        Body::Rr(stackmeter_results::RrBody {
            params: p.clone(),
            results,
        })
    })
}

/// crr.
fn crr(p: &CrrParams, endpoint: &Endpoint, _cpu: Option<usize>, _live: &mut dyn FnMut(Live)) -> Ran {
    let o = match p.echo || p.raw {
        true => stackmeter_client::crr_plain(endpoint.addr, p),
        false => stackmeter_client::crr(endpoint, p),
    };
    Ran::rows(o, |results| {
        Body::Crr(stackmeter_results::CrrBody {
            params: p.clone(),
            results,
        })
    })
}

/// ping (a stackmeter responder, or a plain echo server).
fn ping(p: &PingParams, endpoint: &Endpoint, _cpu: Option<usize>, _live: &mut dyn FnMut(Live)) -> Ran {
    let p = &PingParams {
        timestamps: resolve_clock(p.timestamps.as_ref(), endpoint.addr),
        ..p.clone()
    };
    Ran::rows(stackmeter_client::ping(endpoint, p), |results| {
        Body::Ping(stackmeter_results::PingBody {
            params: p.clone(),
            results,
        })
    })
}

/// stream.
fn stream(p: &StreamParams, endpoint: &Endpoint, cpu: Option<usize>, live: &mut dyn FnMut(Live)) -> Ran {
    let mut live_interval = |i: &stackmeter_results::Interval| live(Live::Interval(i));
    let o = match p.plain() {
        true => stackmeter_client::stream_plain(endpoint.addr, p, cpu, &mut live_interval),
        false => stackmeter_client::stream(endpoint, p, cpu, &mut live_interval),
    };
    let mut ran = Ran::new(
        Body::Stream(stackmeter_results::StreamBody {
            params: p.clone(),
            intervals: o.intervals,
            summary: o.summary.map(Box::new),
        }),
        o.error,
        Vec::new(),
    );
    ran.warnings.extend(o.warnings);
    if o.drain_timeout {
        ran.warnings
            .push(stackmeter_results::warnings::Warning::StreamDrainTimeout);
    }
    ran
}

/// udp-max.
fn udp_max(p: &UdpMaxParams, endpoint: &Endpoint, cpu: Option<usize>, live: &mut dyn FnMut(Live)) -> Ran {
    let o = stackmeter_client::udp_max(endpoint, p, cpu, &mut |n, trial| {
        live(Live::Trial(TrialRow { n, trial }));
    });
    Ran::new(
        Body::UdpMax(stackmeter_results::UdpMaxBody {
            params: p.clone(),
            result: o.result,
        }),
        o.error,
        Vec::new(),
    )
}

/// load.
fn load(p: &LoadParams, endpoint: &Endpoint, _cpu: Option<usize>, _live: &mut dyn FnMut(Live)) -> Ran {
    let o = stackmeter_client::load(endpoint, p);
    Ran::new(
        Body::Load(stackmeter_results::LoadBody {
            params: o.params,
            results: o.runs,
            summary: o.summary,
        }),
        o.error,
        o.histograms,
    )
}

/// rrul.
fn rrul(p: &RrulParams, endpoint: &Endpoint, cpu: Option<usize>, _live: &mut dyn FnMut(Live)) -> Ran {
    let o = stackmeter_client::rrul(endpoint, p, cpu, &mut |_| {});
    let r = stackmeter_results::rrul::RrulRows::build(&o.result, o.origin_ns);
    Ran::new(
        Body::Rrul(stackmeter_results::RrulBody {
            params: p.clone(),
            phases: r.phases,
            induced: r.induced,
            clock: r.clock,
            series: r.series,
            throughput: r.throughput,
        }),
        o.error,
        o.histograms,
    )
}

/// udp-burst.
fn udp_burst(p: &UdpBurstParams, endpoint: &Endpoint, _cpu: Option<usize>, _live: &mut dyn FnMut(Live)) -> Ran {
    let o = stackmeter_client::udp_burst(endpoint, p);
    Ran::rows(o, |results| {
        Body::UdpBurst(UdpBurstBody {
            params: p.clone(),
            results,
        })
    })
}
