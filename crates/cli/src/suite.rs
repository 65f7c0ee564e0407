//! `stackmeter suite`: run a plan against labelled targets, repetitions
//! interleaved (A B A B, never all A then all B), store every test as it
//! completes, and print the comparison of each target against the first.
//!
//! With no `--target` it starts its own responders on loopback as child
//! processes: this binary's `serve` (label `rust`) and, when it can be
//! found, the C responder (label `c`); without the C responder it compares
//! two Rust responder processes, so the verdict machinery still shows
//! (A against A should come out "no significant difference").

use crate::args::StoreArgs;
use crate::compare_cmd::{print, Metric};
use crate::comparison::{self, Side};
use crate::fail;
use crate::plan::{Plan, Spec};
use clap::Args;
use stackmeter_client::{ClientError, RowHistogram};
use stackmeter_results::{Body, Document, Placement, Target};
use stackmeter_store::{NewRun, NewTest, RunInfo, Store, StoredTest};
use std::io::{IsTerminal, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct SuiteArgs {
    /// Built-in plan (latency-grid, bps, link, udp-echo) or a TOML plan file (docs/suite.md).
    #[arg(default_value = "latency-grid")]
    pub plan: String,
    /// A target as LABEL=ADDR (HOST, HOST:PORT); two or more. The first is the baseline.
    /// None: responders started here on loopback.
    #[arg(long = "target", value_name = "LABEL=ADDR")]
    pub targets: Vec<String>,
    /// Repetitions per target (interleaved).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Scale counts and durations down (demos, CI).
    #[arg(long)]
    pub quick: bool,
    /// Repeat until the CONF% confidence interval of the mean is within
    /// +/-WIDTH/2 % for every compared figure (netperf -I), e.g. 99,5.
    #[arg(long, value_name = "CONF,WIDTH")]
    pub confidence: Option<String>,
    /// Most repetitions with --confidence.
    #[arg(long, default_value_t = 30)]
    pub max_repeat: usize,
    /// Latency figure compared per repetition.
    #[arg(long, value_enum, default_value = "mean")]
    pub metric: Metric,
    /// Print JSON (the comparisons) instead of tables; no progress bar.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// A target of the suite.
struct Tgt {
    label: String,
    name: String,
    addr: SocketAddr,
}

/// Responder processes the suite started; killed on drop and on Ctrl-C.
#[derive(Clone, Default)]
struct Children(Arc<Mutex<Vec<Child>>>);

impl Children {
    fn kill_all(&self) {
        if let Ok(mut v) = self.0.lock() {
            for c in v.iter_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
            v.clear();
        }
    }
}

/// Where the C responder binary is: `$STACKMETER_C_RESPONDER`, else the
/// one cargo built with this binary (`crates/cli/build.rs`), else
/// `c-responder/stackmeter-responder` in a folder above this executable or
/// the current directory (the repository, after `make -C c-responder`).
pub fn c_responder() -> Result<Option<PathBuf>, String> {
    if let Some(p) = std::env::var_os("STACKMETER_C_RESPONDER").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(Some(p))
        } else {
            Err(format!("STACKMETER_C_RESPONDER={}: no such file", p.display()))
        };
    }
    if let Some(p) = option_env!("STACKMETER_C_RESPONDER_BUILT").map(PathBuf::from) {
        if p.is_file() {
            return Ok(Some(p));
        }
    }
    let exe = std::env::current_exe().ok();
    let cwd = std::env::current_dir().ok();
    for base in exe.iter().chain(cwd.iter()) {
        for dir in base.ancestors() {
            let p = dir.join("c-responder").join("stackmeter-responder");
            if p.is_file() {
                return Ok(Some(p));
            }
        }
    }
    Ok(None)
}

/// A port free for TCP and UDP on 127.0.0.1 right now.
fn free_port() -> std::io::Result<u16> {
    for _ in 0..20 {
        let t = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = t.local_addr()?.port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(std::io::Error::other("no port free for both TCP and UDP"))
}

/// Starts `program args --listen 127.0.0.1:PORT` and waits (5 s at most)
/// until it accepts connections.
fn spawn_responder(children: &Children, program: &std::path::Path, args: &[&str]) -> Result<SocketAddr, String> {
    let port = free_port().map_err(|e| format!("cannot find a free port: {e}"))?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut child = Command::new(program)
        .args(args)
        .args(["--listen", &addr.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            break;
        }
        if let Ok(Some(st)) = child.try_wait() {
            return Err(format!(
                "{} exited ({st}) before it listened on {addr}",
                program.display()
            ));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{} did not listen on {addr} within 5 s", program.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Ok(mut v) = children.0.lock() {
        v.push(child);
    }
    Ok(addr)
}

/// CPUs for the local responders and the measuring thread (responders on
/// 0, client on 1), when the machine has two or more: on a 2-core machine
/// unpinned placement flips loopback RTT between two levels and would make
/// even A against A differ.
fn local_placement() -> Option<(usize, usize)> {
    (stackmeter_sys::host().cpus >= 2).then_some((0, 1))
}

/// The local responders of the default suite, and a note saying which.
/// They are started from this thread while it is pinned to the responder
/// CPU, so they inherit that affinity whatever binary they are.
fn local_targets(children: &Children) -> Result<(Vec<Tgt>, Option<String>), String> {
    if let Some((responder_cpu, _)) = local_placement() {
        stackmeter_sys::pin_current_thread(responder_cpu)
            .map_err(|e| format!("cannot pin to CPU {responder_cpu}: {e}"))?;
    }
    let me = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let rust = |children: &Children| spawn_responder(children, &me, &["serve", "--quiet"]);
    let tgt = |label: &str, addr: SocketAddr| Tgt {
        label: label.into(),
        name: addr.to_string(),
        addr,
    };
    match c_responder()? {
        Some(c) => {
            let a = rust(children)?;
            let b = spawn_responder(children, &c, &[])?;
            Ok((vec![tgt("rust", a), tgt("c", b)], None))
        }
        None => {
            let a = rust(children)?;
            let b = rust(children)?;
            Ok((
                vec![tgt("rust-a", a), tgt("rust-b", b)],
                Some("C responder not found (c-responder/stackmeter-responder or $STACKMETER_C_RESPONDER): comparing two Rust responder processes, A against A, which should show no significant difference".into()),
            ))
        }
    }
}

fn parse_targets(list: &[String]) -> Result<Vec<Tgt>, (i32, String)> {
    let mut out: Vec<Tgt> = Vec::new();
    for t in list {
        let Some((label, addr)) = t.split_once('=').filter(|(l, a)| !l.is_empty() && !a.is_empty()) else {
            return Err((
                2,
                format!("--target '{t}': expected LABEL=ADDR, e.g. app=192.0.2.7:5000"),
            ));
        };
        if out.iter().any(|x| x.label == label) {
            return Err((2, format!("--target '{t}': label '{label}' given twice")));
        }
        let a = stackmeter_client::resolve(addr, stackmeter_proto::DEFAULT_PORT)
            .map_err(|e| (e.exit_code(), e.to_string()))?;
        out.push(Tgt {
            label: label.into(),
            name: addr.into(),
            addr: a,
        });
    }
    if out.len() == 1 {
        return Err((
            2,
            "suite compares targets: give two or more --target LABEL=ADDR, or none".into(),
        ));
    }
    Ok(out)
}

/// "99,5" -> (0.99, 0.05).
fn parse_confidence(s: &str) -> Result<(f64, f64), String> {
    let bad = || format!("--confidence '{s}': expected CONF,WIDTH in percent, e.g. 99,5");
    let (c, w) = s.split_once(',').ok_or_else(bad)?;
    let (c, w): (f64, f64) = (
        c.trim().parse().map_err(|_| bad())?,
        w.trim().parse().map_err(|_| bad())?,
    );
    if !((50.0..100.0).contains(&c) && w > 0.0 && w < 100.0) {
        return Err(bad());
    }
    Ok((c / 100.0, w / 100.0))
}

fn run_test(spec: &Spec, addr: SocketAddr, cpu: Option<usize>) -> (Body, Option<ClientError>, Vec<RowHistogram>) {
    match spec {
        Spec::Rr(p) => {
            let o = stackmeter_client::rr(addr, p);
            (
                Body::Rr {
                    params: p.clone(),
                    results: o.rows,
                },
                o.error,
                o.histograms,
            )
        }
        Spec::Crr(p) => {
            let o = stackmeter_client::crr(addr, p);
            (
                Body::Crr {
                    params: p.clone(),
                    results: o.rows,
                },
                o.error,
                o.histograms,
            )
        }
        Spec::Ping(p) => {
            let o = stackmeter_client::ping(addr, p);
            (
                Body::Ping {
                    params: p.clone(),
                    results: o.rows,
                },
                o.error,
                o.histograms,
            )
        }
        Spec::Stream(p) => {
            let o = stackmeter_client::stream(addr, p, cpu, &mut |_| {});
            let body = Body::Stream {
                params: p.clone(),
                intervals: o.intervals,
                summary: o.summary.map(Box::new),
            };
            (body, o.error, Vec::new())
        }
        Spec::Load(p) => {
            let o = stackmeter_client::load(addr, p);
            (
                Body::Load {
                    params: o.params,
                    results: o.runs,
                    summary: o.summary,
                },
                o.error,
                o.histograms,
            )
        }
        Spec::UdpMax(p) => {
            let o = stackmeter_client::udp_max(addr, p, cpu, 200);
            (
                Body::UdpMax {
                    params: p.clone(),
                    result: o.result,
                },
                o.error,
                Vec::new(),
            )
        }
    }
}

/// One finished test in memory: label, step, document.
type Done = (String, String, Document);

/// Settings kept with the run: what the output is rendered from.
fn settings(
    a: &SuiteArgs,
    plan: &Plan,
    targets: &[Tgt],
    conf: Option<(f64, f64)>,
    note: &Option<String>,
) -> serde_json::Value {
    serde_json::json!({
        "plan": plan.name,
        "targets": targets.iter().map(|t| serde_json::json!({"label": t.label, "name": t.name, "address": t.addr.to_string()})).collect::<Vec<_>>(),
        "repeat": a.repeat,
        "quick": a.quick,
        "confidence": conf.map(|(c, w)| vec![c, w]),
        "max_repeat": a.max_repeat,
        "metric": a.metric.name(),
        "note": note,
    })
}

fn metric_from(name: &str) -> Metric {
    match name {
        "p50" => Metric::P50,
        "p99" => Metric::P99,
        _ => Metric::Mean,
    }
}

/// Convergence of every compared figure per label: the lines to warn with
/// (empty when reached everywhere).
fn convergence_misses(done: &[Done], metric: &str, conf: (f64, f64)) -> Vec<String> {
    let mut series: Vec<(String, Vec<f64>)> = Vec::new();
    for (label, step, doc) in done {
        for f in stackmeter_results::figures(doc) {
            if f.compared && (f.stat == metric || f.stat == "value") {
                let key = format!("{label} {step} {} {} {}", f.series, f.stat, f.row_label);
                match series.iter_mut().find(|s| s.0 == key) {
                    Some(s) => s.1.push(f.value),
                    None => series.push((key, vec![f.value])),
                }
            }
        }
    }
    series
        .iter()
        .filter_map(|(k, v)| {
            let c = stackmeter_compare::converged(v, conf.0, conf.1);
            (!c.reached).then(|| format!("{k}: +/-{:.1}% after {} repetitions", c.half_width * 100.0, c.n))
        })
        .collect()
}

/// The suite's output, from its settings and finished tests: what `suite`
/// prints and what `show RUN` prints again.
fn render(settings: &serde_json::Value, run: Option<i64>, done: &[Done], json: bool) -> String {
    let metric = metric_from(settings["metric"].as_str().unwrap_or("mean"));
    let labels: Vec<String> = settings["targets"]
        .as_array()
        .map(|t| t.iter().filter_map(|x| x["label"].as_str().map(String::from)).collect())
        .unwrap_or_default();
    // Repetitions: how often the first target ran the first step.
    let reps = match (labels.first(), done.first()) {
        (Some(l), Some(first)) => done.iter().filter(|d| &d.0 == l && d.1 == first.1).count(),
        _ => 0,
    };
    let side = |label: &str| -> (Side<'_>, Vec<String>) {
        let mine: Vec<&Done> = done.iter().filter(|d| d.0 == label).collect();
        (
            Side {
                name: label.to_string(),
                docs: mine.iter().map(|d| &d.2).collect(),
            },
            mine.iter().map(|d| d.1.clone()).collect(),
        )
    };
    let mut comparisons = Vec::new();
    if let Some(first) = labels.first() {
        let (a, sa) = side(first);
        for other in labels.iter().skip(1) {
            let (b, sb) = side(other);
            comparisons.push(comparison::build(&a, &sa, &b, &sb, metric.name()));
        }
    }
    let misses = settings["confidence"]
        .as_array()
        .and_then(|c| Some((c.first()?.as_f64()?, c.get(1)?.as_f64()?)))
        .map(|conf| convergence_misses(done, metric.name(), conf))
        .unwrap_or_default();
    let note = settings["note"].as_str();
    if json {
        let v = serde_json::json!({
            "schema": stackmeter_results::SCHEMA,
            "suite": settings,
            "run": run,
            "tests": done.len(),
            "comparisons": comparisons,
            "not_converged": misses,
        });
        // Cannot fail: a Value always serializes.
        return serde_json::to_string_pretty(&v).expect("a JSON value serializes") + "\n";
    }
    let mut o = String::new();
    let targets: Vec<String> = settings["targets"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|x| {
                    format!(
                        "{}={}",
                        x["label"].as_str().unwrap_or(""),
                        x["address"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    o.push_str(&format!(
        "stackmeter suite {}: {}; {} repetitions per target, interleaved{}\n",
        settings["plan"].as_str().unwrap_or(""),
        targets.join(", "),
        reps,
        run.map(|r| format!("; stored as run {r}")).unwrap_or_default()
    ));
    if let Some(n) = note {
        o.push_str(&format!("note: {n}\n"));
    }
    for c in &comparisons {
        o.push('\n');
        o.push_str(&comparison::text(c));
    }
    if !misses.is_empty() {
        o.push_str(&format!(
            "\nWARNING: the confidence interval goal was NOT reached for {} figure(s); treat these verdicts with care:\n",
            misses.len()
        ));
        for m in &misses {
            o.push_str(&format!("  {m}\n"));
        }
    }
    o
}

/// `show RUN` of a suite run.
pub fn render_stored(run: &RunInfo, tests: &[StoredTest], json: bool) -> String {
    let done: Vec<Done> = tests
        .iter()
        .map(|t| (t.label.clone(), t.step.clone(), t.doc.clone()))
        .collect();
    render(&run.settings, Some(run.id), &done, json)
}

pub fn run(a: SuiteArgs) -> i32 {
    if a.repeat == 0 {
        return fail(2, "--repeat must be at least 1");
    }
    if a.store.label.is_some() {
        return fail(2, "--label does not apply to suite: label each --target as LABEL=ADDR");
    }
    let conf = match a.confidence.as_deref().map(parse_confidence).transpose() {
        Ok(c) => c,
        Err(e) => return fail(2, e),
    };
    if conf.is_some() && a.max_repeat < a.repeat {
        return fail(2, "--max-repeat must be at least --repeat");
    }
    let plan = match crate::plan::load(&a.plan, a.quick) {
        Ok(p) => p,
        Err(e) => return fail(2, e),
    };
    let mut store = match crate::record::open_for_measuring(&a.store) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let children = Children::default();
    let local = a.targets.is_empty();
    let placement = match local_placement().filter(|_| local) {
        Some((r, c)) => Placement {
            client_cpu: Some(c),
            responder_cpu: Some(r),
        },
        None => Placement::default(),
    };
    let (targets, note) = if local {
        let t = local_targets(&children);
        if let Some(cpu) = placement.client_cpu {
            if let Err(e) = stackmeter_sys::pin_current_thread(cpu) {
                children.kill_all();
                return fail(1, format!("cannot pin the measuring thread to CPU {cpu}: {e}"));
            }
        }
        match t {
            Ok(t) => t,
            Err(e) => {
                children.kill_all();
                return fail(1, format!("cannot start the local responders: {e}"));
            }
        }
    } else {
        match parse_targets(&a.targets) {
            Ok(t) => (t, None),
            Err((code, e)) => return fail(code, e),
        }
    };
    if let Some(n) = &note {
        eprintln!("stackmeter: note: {n}");
    }
    if let Err(e) = stackmeter_sys::interrupt::catch_interrupts() {
        children.kill_all();
        return fail(1, format!("cannot catch Ctrl-C: {e}"));
    }
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let env = crate::measure::env(time);
    let settings = settings(&a, &plan, &targets, conf, &note);
    let run_id = match store.as_mut() {
        Some(s) => match s.begin_run(&NewRun {
            kind: "suite",
            plan: Some(&plan.name),
            env: &env,
            settings: settings.clone(),
            pid: std::process::id(),
        }) {
            Ok(id) => Some(id),
            Err(e) => {
                children.kill_all();
                return fail(1, e);
            }
        },
        None => None,
    };
    watch_interrupt(&a, run_id, &children);
    let progress = std::io::stderr().is_terminal() && !a.json;
    let per_rep = plan.steps.len() * targets.len();
    let mut done: Vec<Done> = Vec::new();
    let mut failure: Option<ClientError> = None;
    let mut rep = 0;
    'reps: loop {
        for step in &plan.steps {
            for t in &targets {
                if progress {
                    let total = per_rep * a.repeat.max(rep + 1);
                    let k = done.len();
                    let bar = 30 * k / total.max(1);
                    eprint!(
                        "\r[{}{}] {k}/{total} {} {} repetition {}   ",
                        "#".repeat(bar),
                        ".".repeat(30 - bar),
                        step.name,
                        t.label,
                        rep + 1
                    );
                }
                let started = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let (body, error, hists) = run_test(&step.spec, t.addr, placement.client_cpu);
                let mut doc = Document {
                    schema: stackmeter_results::SCHEMA.into(),
                    target: Target {
                        name: t.name.clone(),
                        address: t.addr.to_string(),
                        embedded: false,
                    },
                    body,
                    placement: placement.clone(),
                    env: crate::measure::env(started),
                    complete: error.is_none(),
                    error: error.as_ref().map(|e| e.to_string()),
                    warnings: Vec::new(),
                };
                doc.warnings = stackmeter_results::warnings::derive(&doc);
                if let (Some(s), Some(run)) = (store.as_mut(), run_id) {
                    let saved = s.add_test(
                        run,
                        &NewTest {
                            label: &t.label,
                            repetition: rep,
                            step: &step.name,
                            doc: &doc,
                            histograms: crate::record::histograms(&hists),
                            intervals: crate::record::intervals(&doc),
                        },
                    );
                    if let Err(e) = saved {
                        eprintln!("stackmeter: warning: test not stored: {e}");
                    }
                }
                done.push((t.label.clone(), step.name.clone(), doc));
                if let Some(e) = error {
                    failure = Some(e);
                    break 'reps;
                }
            }
        }
        rep += 1;
        if rep < a.repeat {
            continue;
        }
        match conf {
            None => break,
            Some(c) => {
                if convergence_misses(&done, a.metric.name(), c).is_empty() || rep >= a.max_repeat {
                    break;
                }
            }
        }
    }
    if progress {
        eprint!("\r{}\r", " ".repeat(80));
    }
    children.kill_all();
    let status = if failure.is_some() { "partial" } else { "complete" };
    if let (Some(s), Some(run)) = (store.as_ref(), run_id) {
        if let Err(e) = s.finish_run(run, status, &crate::record::now()) {
            eprintln!("stackmeter: warning: run not marked {status}: {e}");
        }
    }
    if let Some(c) = conf {
        let misses = convergence_misses(&done, a.metric.name(), c);
        if !misses.is_empty() {
            eprintln!(
                "stackmeter: WARNING: confidence goal {}% +/-{}% NOT reached after {rep} repetitions for {} figure(s) (see the end of the output)",
                c.0 * 100.0,
                c.1 * 50.0,
                misses.len()
            );
        }
    }
    let out = render(&settings, run_id, &done, a.json);
    let code = print(&out);
    match failure {
        Some(e) => fail(e.exit_code(), e),
        None => code,
    }
}

/// On Ctrl-C (or SIGTERM): mark the run partial (every finished test is
/// already committed), stop the responders this suite started, exit 130.
fn watch_interrupt(a: &SuiteArgs, run: Option<i64>, children: &Children) {
    let db = crate::record::db_path(&a.store.db).ok();
    let children = children.clone();
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(50));
        if !stackmeter_sys::interrupt::interrupted() {
            continue;
        }
        children.kill_all();
        if let (Some(run), Some(db)) = (run, db.as_ref()) {
            match Store::open(db).and_then(|s| {
                s.finish_run(run, "partial", &crate::record::now())?;
                Ok(s.tests_of_run(run)?.len())
            }) {
                Ok(n) => eprintln!(
                    "\nstackmeter: interrupted: run {run} kept its {n} finished test(s) and is marked partial"
                ),
                Err(e) => eprintln!("\nstackmeter: interrupted: could not mark run {run} partial: {e}"),
            }
        } else {
            eprintln!("\nstackmeter: interrupted");
        }
        let _ = std::io::stderr().flush();
        std::process::exit(130);
    });
}
