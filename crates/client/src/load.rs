//! load: many clients list and fetch objects from one target at once (the
//! proxy-load scenario, docs/scenarios.md), every byte checked,
//! per-request latency by object.
//!
//! Before the first run one untimed LIST fetches the catalogue; pattern
//! objects' expected bytes are generated once and shared read-only by every
//! client. Each run: every client opens its own connection and sends the
//! object-session header, then all wait at a barrier; from its release
//! (the run's start) each client LISTs, then fetches every object
//! `fetch_each` times (the whole list, then the whole list again). A client
//! times each request from the clock read before its send to the clock read
//! after the last body byte is received and checked (the check runs chunk by
//! chunk as bytes arrive, as a real client consumes data); samples go into
//! that client's own histograms, merged after the run. Wall time runs from
//! the barrier's release (the earliest clock read of any client right after
//! it) to the last client's end.

use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::handshake::open_objects;
use crate::outcome::summary_us;
use crate::sockets::{lost, recv_exact, send_all, AlignedBuf};
use stackmeter_proto::objects::{self as obj, Catalogue, Op, Response};
use stackmeter_recorder::{mean_ci95, Recorder};
use stackmeter_results::{LoadParams, LoadRun, LoadSummary, ObjectInfo, ObjectLatency, TargetUse};
use std::io::{self, Read};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// What a load test produced: the parameters with the target's catalogue
/// filled in, every finished run, the summary, and the error if one stopped
/// it or any request failed.
#[derive(Debug)]
pub struct LoadOutcome {
    /// `params` as given, with `objects` from the target's LIST.
    pub params: LoadParams,
    /// Finished runs.
    pub runs: Vec<LoadRun>,
    /// Means and intervals across runs.
    pub summary: Option<LoadSummary>,
    /// Why the test failed, if it did.
    pub error: Option<ClientError>,
    /// Every FETCH latency of each run, nanoseconds (row = run index,
    /// metric `latency_us`), for the results store.
    pub histograms: Vec<crate::outcome::RowHistogram>,
}

/// One object as the client knows it.
struct Obj {
    name: Vec<u8>,
    size: u64,
    crc32: u32,
    /// The expected bytes of a pattern object; `None` for a CRC-checked one.
    expected: Option<Vec<u8>>,
    /// The FETCH request bytes, built once.
    request: Vec<u8>,
}

/// The catalogue, shared by every client thread.
struct Cat {
    list_body: Vec<u8>,
    objects: Vec<Obj>,
}

/// Receive buffer per client, with up to [`RX_FULL_UP_TO`] clients.
const RX: usize = 256 << 10;
/// Beyond this many clients the receive buffers share [`RX_TOTAL`].
const RX_FULL_UP_TO: u32 = 2048;
/// All clients' receive buffers together, with many clients: 10,000
/// clients read in 52 KiB pieces (page multiples, at least [`RX_MIN`]).
const RX_TOTAL: usize = 512 << 20;
/// The smallest receive buffer per client.
const RX_MIN: usize = 16 << 10;

/// A client's receive size: the same for every run of up to 2,048 clients,
/// smaller with more, so 10,000 clients fit in one process.
fn rx_size(clients: u32) -> usize {
    if clients <= RX_FULL_UP_TO {
        return RX;
    }
    (RX_TOTAL / clients as usize / 4096 * 4096).clamp(RX_MIN, RX)
}

/// A timed request of one client, recorded into the run's histograms after
/// the run (a client keeps its few samples, not histograms of its own: 10,000
/// clients would hold gigabytes of empty buckets).
struct Sample {
    /// The object fetched; `None` for the LIST.
    object: Option<u16>,
    ns: u64,
}

/// Runs `params.repeat` runs against the responder at `endpoint`.
pub fn load(endpoint: &Endpoint, params: &LoadParams) -> LoadOutcome {
    let addr = endpoint.addr;
    let mut params = params.clone();
    let timeout = Duration::from_millis(params.timeout_ms);
    let cat = match catalogue(endpoint, timeout) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            return LoadOutcome {
                params,
                runs: vec![],
                summary: None,
                error: Some(e),
                histograms: vec![],
            }
        }
    };
    params.objects = cat
        .objects
        .iter()
        .map(|o| ObjectInfo {
            name: String::from_utf8_lossy(&o.name).into_owned(),
            size: o.size,
            verify: if o.expected.is_some() { "pattern" } else { "crc32" }.into(),
        })
        .collect();
    let mut runs = Vec::new();
    let mut merged: Vec<Recorder> = cat.objects.iter().map(|_| Recorder::new()).collect();
    let mut all = Recorder::new();
    let mut error = None;
    let mut histograms = Vec::new();
    for run in 1..=params.repeat {
        // Ctrl-C: the runs that finished are kept, the next one not started.
        if let Err(e) = crate::error::check_interrupt() {
            error = Some(e);
            break;
        }
        match one_run(endpoint, &cat, &params, run, timeout) {
            // Interrupted mid-run: its clients stopped early, so its rates
            // are not a run's; the finished runs stand.
            Ok(_) if crate::error::check_interrupt().is_err() => {
                error = Some(ClientError::Interrupted);
                break;
            }
            Ok((r, recs)) => {
                let mut this = Recorder::new();
                for (m, x) in merged.iter_mut().zip(&recs) {
                    m.merge(x);
                    all.merge(x);
                    this.merge(x);
                }
                histograms.push(crate::outcome::RowHistogram {
                    row: runs.len(),
                    metric: "latency_us",
                    ns: this,
                });
                if r.clients_completed == 0 && error.is_none() {
                    error = Some(ClientError::Lost {
                        addr,
                        what: format!(
                            "run {run}: no client completed ({})",
                            r.first_error.as_deref().unwrap_or("no error recorded")
                        ),
                    });
                }
                let stop = r.clients_completed == 0;
                runs.push(r);
                if stop {
                    break;
                }
            }
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    if error.is_none() {
        let errors: u64 = runs.iter().map(|r| r.errors).sum();
        if errors > 0 {
            let first = runs.iter().find_map(|r| r.first_error.clone()).unwrap_or_default();
            error = Some(ClientError::Lost {
                addr,
                what: format!("{errors} request(s) failed; first: {first}"),
            });
        }
    }
    let summary = summarise(&runs, &cat, &merged, &all);
    LoadOutcome {
        params,
        runs,
        summary,
        error,
        histograms,
    }
}

fn summarise(runs: &[LoadRun], cat: &Cat, merged: &[Recorder], all: &Recorder) -> Option<LoadSummary> {
    let col = |f: fn(&LoadRun) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
    Some(LoadSummary {
        wall_s: mean_ci95(&col(|r| r.wall_s))?,
        rate_kBps: mean_ci95(&col(|r| r.rate_kBps))?,
        rate_mbps: mean_ci95(&col(|r| r.rate_mbps))?,
        requests_per_s: mean_ci95(&col(|r| r.requests_per_s))?,
        by_object: by_object(cat, merged),
        latency_us: summary_us(all),
    })
}

fn by_object(cat: &Cat, recs: &[Recorder]) -> Vec<ObjectLatency> {
    cat.objects
        .iter()
        .zip(recs)
        .map(|(o, r)| ObjectLatency {
            name: String::from_utf8_lossy(&o.name).into_owned(),
            size: o.size,
            latency_us: summary_us(r),
        })
        .collect()
}

/// The untimed LIST before the first run.
/// Reads exactly `buf.len()` bytes.
fn recv_all(s: &mut TcpStream, buf: &mut [u8]) -> io::Result<()> {
    recv_exact(s, buf.len() as u64, buf)
}

/// Most bytes of pattern objects a catalogue may list (as the responder's
/// own limit on synthetic objects).
const MAX_PATTERN_BYTES: u64 = 1 << 30;

fn catalogue(endpoint: &Endpoint, timeout: Duration) -> Result<Cat, ClientError> {
    let addr = endpoint.addr;
    let mut s = open_objects(endpoint, timeout)?;
    let bad = |what: String| ClientError::Lost { addr, what };
    let mut req = [0u8; obj::REQUEST_LEN];
    let n = obj::emit_request(Op::List, b"", &mut req).unwrap_or(0);
    send_all(&mut s, &req[..n]).map_err(|e| lost(addr, "sending LIST", &e))?;
    let mut head = [0u8; obj::RESPONSE_LEN];
    recv_exact(&mut s, head.len() as u64, &mut head).map_err(|e| lost(addr, "waiting for the catalogue", &e))?;
    let r = Response::parse(&head).ok_or_else(|| bad("short LIST response".into()))?;
    let max = 4 + obj::MAX_OBJECTS * (obj::ENTRY_LEN + obj::MAX_NAME_LEN);
    if r.code != 0 || r.len as usize > max {
        return Err(bad(format!(
            "LIST answered with code {} and length {} (not a catalogue)",
            r.code, r.len
        )));
    }
    let mut body = vec![0u8; r.len as usize];
    recv_all(&mut s, &mut body).map_err(|e| lost(addr, "reading the catalogue", &e))?;
    let c = Catalogue::parse(&body).map_err(|e| bad(format!("bad catalogue: {e}")))?;
    if c.is_empty() {
        return Err(bad("the target's catalogue is empty (nothing to fetch)".into()));
    }
    // The client keeps the expected bytes of every pattern object: bound
    // what a (broken or hostile) catalogue can make it allocate.
    let pattern_bytes: u64 = c
        .entries()
        .filter(stackmeter_proto::objects::Entry::is_pattern)
        .map(|e| e.size)
        .sum();
    if pattern_bytes > MAX_PATTERN_BYTES {
        return Err(bad(format!(
            "the catalogue lists {pattern_bytes} bytes of pattern objects, more than the {MAX_PATTERN_BYTES} this client checks"
        )));
    }
    let mut objects = Vec::new();
    for (k, e) in c.entries().enumerate() {
        let expected = e.is_pattern().then(|| {
            let mut v = vec![0u8; e.size as usize];
            obj::fill(k as u64, 0, &mut v);
            v
        });
        let mut request = vec![0u8; obj::REQUEST_LEN + e.name.len()];
        // Cannot fail: the catalogue parser checked 1..=255 name bytes.
        let _ = obj::emit_request(Op::Fetch, e.name, &mut request);
        objects.push(Obj {
            name: e.name.to_vec(),
            size: e.size,
            crc32: e.crc32,
            expected,
            request,
        });
    }
    Ok(Cat {
        list_body: body,
        objects,
    })
}

/// What one client did in one run.
struct ClientRun {
    samples: Vec<Sample>,
    bytes: u64,
    verified: u64,
    errors: u64,
    requests: u64,
    start: Option<Instant>,
    end: Option<Instant>,
    completed: bool,
    first_error: Option<String>,
}

fn one_run(
    endpoint: &Endpoint,
    cat: &Arc<Cat>,
    p: &LoadParams,
    run: u32,
    timeout: Duration,
) -> Result<(LoadRun, Vec<Recorder>), ClientError> {
    let barrier = Arc::new(Barrier::new(p.clients as usize + 1));
    let mut handles = Vec::new();
    for _ in 0..p.clients {
        let (cat, b) = (cat.clone(), barrier.clone());
        let (each, rx, endpoint) = (p.fetch_each, rx_size(p.clients), *endpoint);
        let h = std::thread::Builder::new()
            .name("stackmeter-load".into())
            .stack_size(256 << 10)
            .spawn(move || client(&endpoint, &cat, each, rx, &b, timeout));
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                // The barrier would never open: let the started clients go
                // by filling the missing places from here, then report.
                for _ in handles.len()..p.clients as usize {
                    let b = barrier.clone();
                    std::thread::spawn(move || b.wait());
                }
                barrier.wait();
                for h in handles {
                    let _ = h.join();
                }
                return Err(ClientError::Local(io::Error::new(
                    e.kind(),
                    format!("cannot start client thread: {e}"),
                )));
            }
        }
    }
    // The target's process on this host, if it is one and not this one
    // (an embedded responder shares the clients' process): its usage from
    // here (every client connected) to the last client done.
    let process = Some(endpoint.addr)
        .filter(|a| stackmeter_sys::tstamp::is_local_ip(a.ip()))
        .and_then(stackmeter_sys::listener::listener)
        .filter(|l| l.pid != std::process::id());
    let used = process.as_ref().and_then(|l| stackmeter_sys::listener::usage(l.pid));
    barrier.wait();
    // Each client reads the clock right after the barrier: with 50 runnable
    // threads on 2 CPUs this thread may run again only when most clients
    // are done, so its own clock read would start the run late.
    let fallback = Instant::now();
    let mut starts = Vec::with_capacity(handles.len());
    let mut recs: Vec<Recorder> = cat.objects.iter().map(|_| Recorder::new()).collect();
    let mut list = Recorder::new();
    let mut all = Recorder::new();
    let (mut bytes, mut verified, mut errors, mut requests, mut completed) = (0, 0, 0, 0, 0u32);
    let mut end: Option<Instant> = None;
    let mut first_error = None;
    for h in handles {
        let c = match h.join() {
            Ok(c) => c,
            Err(_) => {
                errors += 1;
                first_error.get_or_insert_with(|| "a client thread panicked".to_string());
                continue;
            }
        };
        for x in &c.samples {
            match x.object {
                Some(k) => {
                    recs[k as usize].record(x.ns);
                    all.record(x.ns);
                }
                None => list.record(x.ns),
            }
        }
        bytes += c.bytes;
        verified += c.verified;
        errors += c.errors;
        requests += c.requests;
        completed += c.completed as u32;
        if let Some(e) = c.end {
            end = Some(end.map_or(e, |x: Instant| x.max(e)));
        }
        starts.extend(c.start);
        if first_error.is_none() {
            first_error = c.first_error;
        }
    }
    let target_use = process.zip(used).and_then(|(l, before)| target_use(l, &before, bytes));
    let start = starts.into_iter().min().unwrap_or(fallback);
    let wall = end.map_or(0.0, |e| e.saturating_duration_since(start).as_secs_f64());
    let per_s = |x: f64| if wall > 0.0 { x / wall } else { 0.0 };
    let r = LoadRun {
        run,
        wall_s: wall,
        bytes,
        verified_bytes: verified,
        errors,
        requests,
        rate_kBps: per_s(bytes as f64 / 1024.0),
        rate_mbps: per_s(bytes as f64 * 8.0 / 1e6),
        requests_per_s: per_s(requests as f64),
        latency_us: summary_us(&all),
        list_us: summary_us(&list),
        by_object: by_object(cat, &recs),
        clients_completed: completed,
        first_error,
        target_use,
    };
    Ok((r, recs))
}

/// The target process's CPU time and peak memory since `before`, per
/// GiB carried; `None` when its usage can no longer be read.
fn target_use(
    l: stackmeter_sys::listener::Listener,
    before: &stackmeter_sys::listener::Usage,
    bytes: u64,
) -> Option<TargetUse> {
    let after = stackmeter_sys::listener::usage(l.pid)?;
    let cpu_s = after.cpu_ns.saturating_sub(before.cpu_ns) as f64 / 1e9;
    let gib = bytes as f64 / f64::from(1u32 << 30);
    Some(TargetUse {
        pid: l.pid,
        command: l.command,
        cpu_s,
        cpu_s_per_gib: if bytes > 0 { cpu_s / gib } else { 0.0 },
        peak_rss_mib: after.peak_rss_kib as f64 / 1024.0,
    })
}

/// One client's run: connect before the barrier, then LIST and FETCH.
fn client(endpoint: &Endpoint, cat: &Cat, each: u32, rx: usize, barrier: &Barrier, timeout: Duration) -> ClientRun {
    let mut c = ClientRun {
        samples: Vec::with_capacity((1 + cat.objects.len() * each as usize).min(1024)),
        bytes: 0,
        verified: 0,
        errors: 0,
        requests: 0,
        start: None,
        end: None,
        completed: false,
        first_error: None,
    };
    let mut rx_buf = AlignedBuf::new(rx);
    let mut list_buf = vec![0u8; cat.list_body.len()];
    let conn = open_objects(endpoint, timeout);
    barrier.wait();
    c.start = Some(Instant::now());
    let mut s = match conn {
        Ok(s) => s,
        Err(e) => {
            c.errors += 1;
            c.first_error = Some(e.to_string());
            return c;
        }
    };
    let r = requests(&mut s, cat, each, &mut c, rx_buf.bytes_mut(), &mut list_buf);
    c.end = Some(Instant::now());
    match r {
        Ok(()) => c.completed = true,
        Err(e) => {
            c.errors += 1;
            c.first_error.get_or_insert(e);
        }
    }
    c
}

/// How a FETCH or LIST ended when it did not simply succeed.
enum Fail {
    /// The request failed but the session can go on (counted, not fatal).
    Soft(String),
    /// The connection or the framing is gone.
    Hard(String),
}

fn requests(
    s: &mut TcpStream,
    cat: &Cat,
    each: u32,
    c: &mut ClientRun,
    rx: &mut [u8],
    list_buf: &mut [u8],
) -> Result<(), String> {
    let mut list_req = [0u8; obj::REQUEST_LEN];
    obj::emit_request(Op::List, b"", &mut list_req);
    let t0 = Instant::now();
    let r = list(s, &list_req, list_buf, &cat.list_body);
    let t1 = Instant::now();
    c.requests += 1;
    match r {
        Ok(()) => c.samples.push(Sample {
            object: None,
            ns: t1.duration_since(t0).as_nanos() as u64,
        }),
        Err(Fail::Soft(e)) => soft(c, e),
        Err(Fail::Hard(e)) => return Err(e),
    }
    for _ in 0..each {
        for (k, o) in cat.objects.iter().enumerate() {
            // Ctrl-C: stop before the next request (the run is then
            // dropped by `run`, its figures being those of a part).
            if stackmeter_sys::interrupt::interrupted() {
                return Ok(());
            }
            let t0 = Instant::now();
            let r = fetch(s, o, rx);
            let t1 = Instant::now();
            c.requests += 1;
            match r {
                Ok(()) => {
                    c.samples.push(Sample {
                        object: Some(k as u16),
                        ns: t1.duration_since(t0).as_nanos() as u64,
                    });
                    c.bytes += o.size;
                    c.verified += o.size;
                }
                Err((got, Fail::Soft(e))) => {
                    c.bytes += got;
                    soft(c, e);
                }
                Err((got, Fail::Hard(e))) => {
                    c.bytes += got;
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

fn soft(c: &mut ClientRun, e: String) {
    c.errors += 1;
    c.first_error.get_or_insert(e);
}

fn hard(during: &str, e: io::Error) -> Fail {
    let what = if crate::error::is_timeout(&e) {
        format!("no data for the whole timeout while {during}")
    } else {
        format!("{during}: {e}")
    };
    Fail::Hard(what)
}

/// Reads a response head; a non-zero code becomes a soft failure with the
/// responder's reason (read, so the next request starts clean).
fn head(s: &mut TcpStream, during: &dyn Fn() -> String) -> Result<Response, Fail> {
    let mut h = [0u8; obj::RESPONSE_LEN];
    recv_exact(s, h.len() as u64, &mut h).map_err(|e| hard(&during(), e))?;
    let r = Response::parse(&h).ok_or_else(|| Fail::Hard("short response".into()))?;
    if r.code != 0 {
        if r.len as usize > obj::MAX_REASON_LEN {
            return Err(Fail::Hard(format!(
                "{}: error code {} with a {}-byte reason (at most {})",
                during(),
                r.code,
                r.len,
                obj::MAX_REASON_LEN
            )));
        }
        let mut reason = [0u8; obj::MAX_REASON_LEN];
        let n = r.len as usize;
        recv_all(s, &mut reason[..n]).map_err(|e| hard(&during(), e))?;
        let name = match r.code {
            obj::CODE_NOT_FOUND => "not found".to_string(),
            obj::CODE_BAD_REQUEST => "bad request".to_string(),
            obj::CODE_INTERNAL => "responder error".to_string(),
            c => format!("code {c}"),
        };
        let msg = format!("{}: {name}: {}", during(), String::from_utf8_lossy(&reason[..n]));
        return Err(if r.code == obj::CODE_BAD_REQUEST {
            Fail::Hard(msg)
        } else {
            Fail::Soft(msg)
        });
    }
    Ok(r)
}

fn list(s: &mut TcpStream, req: &[u8], buf: &mut [u8], want: &[u8]) -> Result<(), Fail> {
    send_all(s, req).map_err(|e| hard("sending LIST", e))?;
    let r = head(s, &|| "LIST".to_string())?;
    if r.len != want.len() as u64 {
        return Err(Fail::Hard(format!(
            "LIST: catalogue of {} bytes, {} before the run (the catalogue changed)",
            r.len,
            want.len()
        )));
    }
    recv_all(s, buf).map_err(|e| hard("reading the catalogue", e))?;
    if buf != want {
        return Err(Fail::Soft(
            "LIST: the catalogue differs from the one before the run".into(),
        ));
    }
    Ok(())
}

/// One FETCH, checked chunk by chunk. On failure also returns the body
/// bytes that did arrive.
#[inline]
fn fetch(s: &mut TcpStream, o: &Obj, rx: &mut [u8]) -> Result<(), (u64, Fail)> {
    let during = || format!("FETCH '{}'", String::from_utf8_lossy(&o.name));
    send_all(s, &o.request).map_err(|e| (0, hard(&during(), e)))?;
    // `during` formats only on an error: this runs inside the timed region.
    let r = head(s, &during).map_err(|f| (0, f))?;
    if r.len != o.size {
        return Err((
            0,
            Fail::Hard(format!("{}: {} bytes announced, {} listed", during(), r.len, o.size)),
        ));
    }
    let mut off = 0u64;
    let mut crc = obj::crc32_init();
    let mut good = true;
    while off < o.size {
        let want = (o.size - off).min(rx.len() as u64) as usize;
        let n = match s.read(&mut rx[..want]) {
            Ok(0) => {
                let e = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("closed after {off} of {} bytes", o.size),
                );
                return Err((off, hard(&during(), e)));
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err((off, hard(&during(), e))),
        };
        let got = &rx[..n];
        match &o.expected {
            Some(exp) => good &= exp[off as usize..off as usize + n] == *got,
            None => crc = obj::crc32_update(crc, got),
        }
        off += n as u64;
    }
    if o.expected.is_none() && obj::crc32_finish(crc) != o.crc32 {
        good = false;
    }
    if good {
        Ok(())
    } else {
        Err((
            o.size,
            Fail::Soft(format!("{}: the bytes received differ from the object", during())),
        ))
    }
}
