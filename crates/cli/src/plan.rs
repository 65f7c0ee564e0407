//! Suite plans: the built-in ones named after the seed scenarios, and TOML
//! plan files (format in docs/suite.md). A plan is a list of steps, each
//! one test with its parameters; `--quick` scales counts down.

use serde::Deserialize;
use stackmeter_results::{
    CrrParams, Direction, LoadParams, PingParams, RrParams, SizePair, StreamParams, UdpMaxParams,
};

/// One test of a plan, with its parameters.
#[derive(Clone, Debug)]
pub enum Spec {
    Rr(RrParams),
    Crr(CrrParams),
    Ping(PingParams),
    Stream(StreamParams),
    UdpMax(UdpMaxParams),
    Load(LoadParams),
}

/// A named step.
#[derive(Clone, Debug)]
pub struct Step {
    pub name: String,
    pub spec: Spec,
}

/// A plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Built-in name or file path.
    pub name: String,
    pub steps: Vec<Step>,
}

/// Built-in plan names, for help and errors.
pub const BUILTIN: &[&str] = &["latency-grid", "bps", "link", "udp-echo", "proxy"];

const SEED_000_SIZES: &str = "1:1K,1:10K,1:100K,1:1M,1K:1,10K:1,100K:1,1M:1";

fn rr(sizes: &str, iterations: u64, warmup: u64) -> Spec {
    Spec::Rr(RrParams {
        // Cannot fail: the constants are valid size lists.
        sizes: crate::sizes::pairs(sizes).expect("built-in sizes parse").0,
        iterations,
        warmup,
        nodelay: true,
        timeout_ms: 5000,
        open_loop: None,
    })
}

fn ping(size: usize, count: u64) -> Spec {
    Spec::Ping(PingParams {
        size,
        count,
        warmup: 10,
        interval_us: 0,
        slow_us: 1000,
        timeout_ms: 1000,
    })
}

fn crr(iterations: u64) -> Spec {
    Spec::Crr(CrrParams {
        iterations,
        warmup: 10,
        req_bytes: 1,
        resp_bytes: 1,
        timeout_ms: 5000,
    })
}

fn stream(direction: Direction, length: u32, time_s: f64) -> Spec {
    Spec::Stream(StreamParams {
        direction,
        parallel: 1,
        length,
        time_s,
        interval_s: if time_s >= 5.0 { 1.0 } else { 0.5 },
        omit_s: 0.0,
        udp: false,
        rate: None,
        rate_pps: None,
        zerocopy: false,
        // As `stream --nodelay auto`.
        nodelay: length >= 16 << 10,
        timeout_ms: 5000,
    })
}

fn udp_max(quick: bool) -> Spec {
    Spec::UdpMax(UdpMaxParams {
        length: 1472,
        loss_goal: 0.0,
        trial_s: if quick { 0.2 } else { 1.0 },
        duration_sum_s: if quick { 0.4 } else { 3.0 },
        exceed_ratio: 0.5,
        width: if quick { 0.1 } else { 0.01 },
        max_pps: None,
        drain_ms: 100,
        timeout_ms: 5000,
    })
}

fn load_spec(clients: u32, fetch_each: u32) -> Spec {
    Spec::Load(LoadParams {
        clients,
        fetch_each,
        // One run per repetition, so repetitions of A and B interleave.
        repeat: 1,
        timeout_ms: 10_000,
        objects: Vec::new(),
    })
}

fn step(name: &str, spec: Spec) -> Step {
    Step {
        name: name.into(),
        spec,
    }
}

/// A built-in plan; `quick` scales it for demos and CI.
pub fn builtin(name: &str, quick: bool) -> Option<Plan> {
    let q = |full: u64, fast: u64| if quick { fast } else { full };
    let steps = match name {
        // Seed 000: both rr tables, 100 transactions per size.
        "latency-grid" => vec![step("latency-grid", rr(SEED_000_SIZES, q(100, 20), q(10, 3)))],
        // Seed 004: UDP echo of small datagrams.
        "udp-echo" => vec![step("udp-echo", ping(64, q(1000, 100)))],
        // Seed 001: bidirectional stream of 64-byte messages, 30 s.
        "bps" => {
            let t = if quick { 1.0 } else { 30.0 };
            vec![step("bps", stream(Direction::Bidir, 64, t))]
        }
        // Seed 002: connection setup, small request/response, TCP up, down
        // and both ways, the UDP rate without loss, UDP echo.
        "link" => {
            let t = if quick { 1.0 } else { 10.0 };
            vec![
                step("crr", crr(q(1000, 50))),
                step("rr-small", rr("1:1,64:64", q(1000, 100), q(10, 3))),
                step("stream-up", stream(Direction::Up, 128 << 10, t)),
                step("stream-down", stream(Direction::Down, 128 << 10, t)),
                step("stream-bidir", stream(Direction::Bidir, 128 << 10, t)),
                step("udp-max", udp_max(quick)),
                step("ping", ping(64, q(1000, 100))),
            ]
        }
        // Seed 003: 50 clients each list the target's objects and fetch
        // every one twice, through each proxy given as a target (docs/tests.md,
        // "Proxies").
        "proxy" => vec![step("load", load_spec(q(50, 10) as u32, q(2, 1) as u32))],
        _ => return None,
    };
    Some(Plan {
        name: name.into(),
        steps,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    #[serde(default)]
    description: Option<String>,
    step: Vec<RawStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    name: Option<String>,
    test: String,
    sizes: Option<String>,
    size: Option<toml::Value>,
    iterations: Option<u64>,
    count: Option<u64>,
    warmup: Option<u64>,
    interval_us: Option<u64>,
    slow_us: Option<u64>,
    timeout_ms: Option<u64>,
    // stream, udp-max, load
    direction: Option<String>,
    length: Option<toml::Value>,
    time_s: Option<f64>,
    interval_s: Option<f64>,
    omit_s: Option<f64>,
    parallel: Option<u32>,
    udp: Option<bool>,
    rate: Option<String>,
    loss: Option<f64>,
    trial_s: Option<f64>,
    duration_sum_s: Option<f64>,
    width: Option<f64>,
    max_rate: Option<String>,
    clients: Option<u32>,
    fetch_each: Option<u32>,
}

impl RawStep {
    /// The keys given in this step, by name.
    fn present(&self) -> Vec<&'static str> {
        let keys = [
            ("sizes", self.sizes.is_some()),
            ("size", self.size.is_some()),
            ("iterations", self.iterations.is_some()),
            ("count", self.count.is_some()),
            ("warmup", self.warmup.is_some()),
            ("interval_us", self.interval_us.is_some()),
            ("slow_us", self.slow_us.is_some()),
            ("timeout_ms", self.timeout_ms.is_some()),
            ("direction", self.direction.is_some()),
            ("length", self.length.is_some()),
            ("time_s", self.time_s.is_some()),
            ("interval_s", self.interval_s.is_some()),
            ("omit_s", self.omit_s.is_some()),
            ("parallel", self.parallel.is_some()),
            ("udp", self.udp.is_some()),
            ("rate", self.rate.is_some()),
            ("loss", self.loss.is_some()),
            ("trial_s", self.trial_s.is_some()),
            ("duration_sum_s", self.duration_sum_s.is_some()),
            ("width", self.width.is_some()),
            ("max_rate", self.max_rate.is_some()),
            ("clients", self.clients.is_some()),
            ("fetch_each", self.fetch_each.is_some()),
        ];
        keys.iter().filter(|k| k.1).map(|k| k.0).collect()
    }
}

/// The keys each test takes (besides `name` and `test`).
fn keys_of(test: &str) -> &'static [&'static str] {
    match test {
        "rr" => &["sizes", "iterations", "warmup", "timeout_ms"],
        "crr" => &["size", "iterations", "warmup", "timeout_ms"],
        "ping" => &["size", "count", "warmup", "interval_us", "slow_us", "timeout_ms"],
        "stream" => &[
            "direction",
            "length",
            "time_s",
            "interval_s",
            "omit_s",
            "parallel",
            "udp",
            "rate",
            "timeout_ms",
        ],
        "udp-max" => &[
            "length",
            "loss",
            "trial_s",
            "duration_sum_s",
            "width",
            "max_rate",
            "timeout_ms",
        ],
        "load" => &["clients", "fetch_each", "timeout_ms"],
        _ => &[],
    }
}

/// A `length` key: a number of bytes or a size string ("64K").
fn length_of(v: &Option<toml::Value>, default: u32) -> Result<u32, String> {
    match v {
        None => Ok(default),
        Some(toml::Value::Integer(n)) if *n >= 1 && *n <= u32::MAX as i64 => Ok(*n as u32),
        Some(toml::Value::String(t)) => crate::sizes::size(t),
        Some(_) => Err("'length' must be a size such as 64 or \"128K\"".into()),
    }
}

/// A seconds key: finite, above 0 (or 0 when `zero_ok`), at most a day.
fn secs(key: &str, v: Option<f64>, default: f64, zero_ok: bool) -> Result<f64, String> {
    let x = v.unwrap_or(default);
    if !x.is_finite() || x < 0.0 || (x == 0.0 && !zero_ok) || x > 86_400.0 {
        return Err(format!("'{key}' must be seconds above 0 and at most 86400"));
    }
    Ok(x)
}

/// Parses a TOML plan. `quick` divides iterations and counts by 10 (at
/// least 10 remain). Errors name the step and the key.
pub fn parse(name: &str, text: &str, quick: bool) -> Result<Plan, String> {
    let raw: RawPlan = toml::from_str(text).map_err(|e| format!("plan {name}: {}", e.message()))?;
    let _ = raw.description;
    if raw.step.is_empty() {
        return Err(format!("plan {name}: no [[step]]"));
    }
    let scale = |n: u64| if quick { (n / 10).max(10).min(n) } else { n };
    let mut steps = Vec::new();
    for (i, s) in raw.step.into_iter().enumerate() {
        let at = format!("plan {name}, step {} ({})", i + 1, s.test);
        let bad = |what: &str| format!("{at}: {what}");
        if keys_of(&s.test).is_empty() {
            return Err(format!(
                "{at}: unknown test '{}' (rr, crr, ping, stream, udp-max, load)",
                s.test
            ));
        }
        if let Some(k) = s.present().into_iter().find(|k| !keys_of(&s.test).contains(k)) {
            return Err(bad(&format!("'{k}' does not apply to {}", s.test)));
        }
        let positive = |key: &str, v: Option<u64>, default: u64| -> Result<u64, String> {
            match v {
                Some(0) => Err(bad(&format!("'{key}' must be at least 1"))),
                Some(n) => Ok(scale(n)),
                None => Ok(scale(default)),
            }
        };
        let spec = match s.test.as_str() {
            "rr" => {
                let sizes = crate::sizes::pairs(s.sizes.as_deref().unwrap_or(SEED_000_SIZES))
                    .map_err(|e| bad(&format!("sizes: {e}")))?;
                Spec::Rr(RrParams {
                    sizes: sizes.0,
                    iterations: positive("iterations", s.iterations, 100)?,
                    warmup: s.warmup.unwrap_or(10),
                    nodelay: true,
                    timeout_ms: s.timeout_ms.unwrap_or(5000),
                    open_loop: None,
                })
            }
            "crr" => {
                let pair = match &s.size {
                    None => SizePair { req: 1, resp: 1 },
                    Some(toml::Value::String(p)) => crate::sizes::pair(p).map_err(|e| bad(&format!("size: {e}")))?,
                    Some(_) => return Err(bad("'size' must be a string \"REQ:RESP\"")),
                };
                Spec::Crr(CrrParams {
                    iterations: positive("iterations", s.iterations, 1000)?,
                    warmup: s.warmup.unwrap_or(10),
                    req_bytes: pair.req,
                    resp_bytes: pair.resp,
                    timeout_ms: s.timeout_ms.unwrap_or(5000),
                })
            }
            "ping" => {
                let size = match &s.size {
                    None => 64,
                    Some(toml::Value::Integer(n)) if (40..=65507).contains(n) => *n as usize,
                    Some(_) => return Err(bad("'size' must be a datagram size from 40 to 65507")),
                };
                Spec::Ping(PingParams {
                    size,
                    count: positive("count", s.count, 1000)?,
                    warmup: s.warmup.unwrap_or(10),
                    interval_us: s.interval_us.unwrap_or(0),
                    slow_us: s.slow_us.unwrap_or(1000),
                    timeout_ms: s.timeout_ms.unwrap_or(1000),
                })
            }
            "stream" => {
                let udp = s.udp.unwrap_or(false);
                let direction = match s.direction.as_deref().unwrap_or("up") {
                    "up" => Direction::Up,
                    "down" if !udp => Direction::Down,
                    "bidir" if !udp => Direction::Bidir,
                    "down" | "bidir" => return Err(bad("UDP streams go client to target only (direction \"up\")")),
                    d => return Err(bad(&format!("direction '{d}': up, down or bidir"))),
                };
                let length = length_of(&s.length, if udp { 1472 } else { 128 << 10 }).map_err(|e| bad(&e))?;
                if udp && !(40..=65507).contains(&length) {
                    return Err(bad("a UDP 'length' is 40 to 65507 bytes"));
                }
                if s.rate.is_some() && !udp {
                    return Err(bad("'rate' applies to UDP streams (udp = true)"));
                }
                let rate = s.rate.clone().unwrap_or_else(|| "10M".into());
                let rate_pps = if udp {
                    Some(
                        crate::rate::rate(&rate)
                            .map_err(|e| bad(&format!("rate {e}")))?
                            .pps(length),
                    )
                } else {
                    None
                };
                let time_s = secs("time_s", s.time_s, 10.0, false).map_err(|e| bad(&e))?;
                let parallel = s.parallel.unwrap_or(1);
                if !(1..=256).contains(&parallel) {
                    return Err(bad("'parallel' is 1 to 256"));
                }
                Spec::Stream(StreamParams {
                    direction,
                    parallel,
                    length,
                    time_s: if quick {
                        (time_s / 10.0).max(0.5).min(time_s)
                    } else {
                        time_s
                    },
                    interval_s: secs("interval_s", s.interval_s, 1.0, false).map_err(|e| bad(&e))?,
                    omit_s: secs("omit_s", s.omit_s, 0.0, true).map_err(|e| bad(&e))?,
                    udp,
                    rate: udp.then_some(rate),
                    rate_pps,
                    zerocopy: false,
                    nodelay: !udp && length >= 16 << 10,
                    timeout_ms: s.timeout_ms.unwrap_or(5000),
                })
            }
            "udp-max" => {
                let length = length_of(&s.length, 1472).map_err(|e| bad(&e))?;
                if !(40..=65507).contains(&length) {
                    return Err(bad("'length' is 40 to 65507 bytes"));
                }
                let loss = s.loss.unwrap_or(0.0);
                if !(0.0..1.0).contains(&loss) {
                    return Err(bad("'loss' is a ratio from 0 up to (not including) 1"));
                }
                let width = s.width.unwrap_or(0.01);
                if !(width > 0.0 && width < 1.0) {
                    return Err(bad("'width' is a ratio between 0 and 1"));
                }
                let trial_s = secs("trial_s", s.trial_s, 1.0, false).map_err(|e| bad(&e))?;
                let duration_sum_s = secs("duration_sum_s", s.duration_sum_s, 3.0, false).map_err(|e| bad(&e))?;
                if duration_sum_s < trial_s {
                    return Err(bad("'duration_sum_s' is shorter than one trial"));
                }
                let max_pps = match &s.max_rate {
                    Some(r) => Some(
                        crate::rate::rate(r)
                            .map_err(|e| bad(&format!("max_rate {e}")))?
                            .pps(length),
                    ),
                    None => None,
                };
                Spec::UdpMax(UdpMaxParams {
                    length,
                    loss_goal: loss,
                    trial_s: if quick { (trial_s / 5.0).max(0.2) } else { trial_s },
                    duration_sum_s: if quick {
                        (duration_sum_s / 5.0).max(0.2)
                    } else {
                        duration_sum_s
                    },
                    exceed_ratio: 0.5,
                    width: if quick { width.max(0.1) } else { width },
                    max_pps,
                    drain_ms: 100,
                    timeout_ms: s.timeout_ms.unwrap_or(5000),
                })
            }
            "load" => {
                let clients = s.clients.unwrap_or(50);
                let fetch_each = s.fetch_each.unwrap_or(2);
                if !(1..=1000).contains(&clients) || fetch_each == 0 {
                    return Err(bad("'clients' is 1 to 1000 and 'fetch_each' at least 1"));
                }
                Spec::Load(LoadParams {
                    clients: if quick { clients.min(10) } else { clients },
                    fetch_each,
                    // One run per repetition, so repetitions interleave.
                    repeat: 1,
                    timeout_ms: s.timeout_ms.unwrap_or(10_000),
                    objects: Vec::new(),
                })
            }
            other => return Err(format!("{at}: unknown test '{other}'")),
        };
        let name = s.name.unwrap_or_else(|| s.test.clone());
        if steps.iter().any(|x: &Step| x.name == name) {
            return Err(bad(&format!("two steps named '{name}': give each a distinct name")));
        }
        steps.push(Step { name, spec });
    }
    Ok(Plan {
        name: name.into(),
        steps,
    })
}

/// A built-in name or a TOML file.
pub fn load(name: &str, quick: bool) -> Result<Plan, String> {
    if let Some(p) = builtin(name, quick) {
        return Ok(p);
    }
    let path = std::path::Path::new(name);
    if !path.exists() {
        return Err(format!(
            "'{name}' is neither a built-in plan ({}) nor a plan file",
            BUILTIN.join(", ")
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read plan {name}: {e}"))?;
    parse(name, &text, quick)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_exist() {
        for n in BUILTIN {
            assert!(builtin(n, true).is_some());
        }
        assert!(builtin("nope", false).is_none());
    }

    #[test]
    fn a_plan_file_parses() {
        let p = parse(
            "t.toml",
            r#"
description = "mine"
[[step]]
test = "rr"
sizes = "1:1K,1K:1"
iterations = 200
[[step]]
name = "echo"
test = "ping"
size = 128
count = 500
[[step]]
test = "crr"
size = "1:64"
"#,
            true,
        )
        .unwrap();
        assert_eq!(p.steps.len(), 3);
        match &p.steps[0].spec {
            Spec::Rr(r) => assert_eq!((r.sizes.len(), r.iterations), (2, 20)),
            _ => panic!(),
        }
        match &p.steps[1].spec {
            Spec::Ping(r) => assert_eq!((r.size, r.count, p.steps[1].name.as_str()), (128, 50, "echo")),
            _ => panic!(),
        }
        match &p.steps[2].spec {
            Spec::Crr(r) => assert_eq!((r.resp_bytes, r.iterations), (64, 100)),
            _ => panic!(),
        }
    }

    #[test]
    fn throughput_and_load_steps_parse() {
        let p = parse(
            "t.toml",
            r#"
[[step]]
name = "bps"
test = "stream"
direction = "bidir"
length = 64
time_s = 30
[[step]]
name = "udp"
test = "stream"
udp = true
rate = "50kpps"
length = "1K"
[[step]]
test = "udp-max"
loss = 0.001
[[step]]
test = "load"
clients = 50
fetch_each = 2
"#,
            false,
        )
        .unwrap();
        match &p.steps[0].spec {
            Spec::Stream(s) => {
                assert_eq!(
                    (s.direction, s.length, s.time_s, s.nodelay),
                    (Direction::Bidir, 64, 30.0, false)
                )
            }
            _ => panic!(),
        }
        match &p.steps[1].spec {
            Spec::Stream(s) => assert_eq!((s.udp, s.length, s.rate_pps), (true, 1024, Some(50_000.0))),
            _ => panic!(),
        }
        match &p.steps[2].spec {
            Spec::UdpMax(u) => assert_eq!((u.loss_goal, u.length), (0.001, 1472)),
            _ => panic!(),
        }
        match &p.steps[3].spec {
            Spec::Load(l) => assert_eq!((l.clients, l.fetch_each, l.repeat), (50, 2, 1)),
            _ => panic!(),
        }
    }

    #[test]
    fn plan_errors_name_the_step_and_key() {
        let e = parse("t.toml", "[[step]]\ntest = \"rr\"\ncount = 5\n", false).unwrap_err();
        assert!(e.contains("step 1 (rr)") && e.contains("'count'"), "{e}");
        let e = parse("t.toml", "[[step]]\ntest = \"iperf\"\n", false).unwrap_err();
        assert!(e.contains("unknown test 'iperf'"), "{e}");
        let e = parse("t.toml", "[[step]]\ntest = \"stream\"\nrate = \"10M\"\n", false).unwrap_err();
        assert!(e.contains("'rate' applies to UDP"), "{e}");
        let e = parse("t.toml", "[[step]]\ntest = \"load\"\nlength = 64\n", false).unwrap_err();
        assert!(e.contains("'length' does not apply to load"), "{e}");
        let e = parse("t.toml", "[[step]]\ntest = \"udp-max\"\nloss = 2.0\n", false).unwrap_err();
        assert!(e.contains("'loss'"), "{e}");
        let e = parse("t.toml", "[[step]]\ntest = \"rr\"\nbogus = 1\n", false).unwrap_err();
        assert!(e.contains("bogus"), "{e}");
        let e = parse("t.toml", "[[step]]\ntest = \"ping\"\nsize = 10\n", false).unwrap_err();
        assert!(e.contains("40 to 65507"), "{e}");
    }
}
