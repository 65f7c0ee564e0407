//! Suite plans: TOML files of steps, each one test with its keys (the test's
//! flags in snake case, docs/suite.md). The built-in plans, named after the
//! user scenarios (docs/scenarios.md) and rrul, are TOML files too
//! (`crates/spec/plans/`), parsed by the same code. `--quick` applies a
//! step's `quick` table, or else scales its counts and durations down.

use crate::located::{At, Key};
use crate::{from_table, KeyError, Spec};
use stackmeter_results::KnobRequest;
use stackmeter_results::TestKind;

/// A named step.
#[derive(Clone, Debug)]
pub struct Step {
    /// Unique within the plan; the test's name unless given.
    pub name: String,
    /// The test.
    pub spec: Spec,
}

/// A configuration of the client: the same target measured with other
/// real-time knobs, compared like another target.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// Unique within the plan; labels the variant's results.
    pub name: String,
    /// The knobs applied to the measuring thread for its tests.
    pub knobs: KnobRequest,
}

/// A plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Built-in name or file path.
    pub name: String,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Client configurations, baseline first; empty: one, as started.
    pub variants: Vec<Variant>,
}

/// A `[[variant]]` table's keys.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct VariantKeys {
    name: String,
    priority: Option<String>,
    #[serde(default)]
    mlock: bool,
    busy_poll: Option<u32>,
}

/// What is wrong with a variant (a plan's `[[variant]]`, a `--variant`),
/// or with the variants together.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VariantError {
    /// A key missing, unknown or of the wrong type (TOML's words).
    #[error("{0}")]
    Keys(String),
    /// A name that cannot be a label.
    #[error("name '{0}': give a short label without '=', ',' or spaces")]
    Name(String),
    /// A priority that does not parse.
    #[error("priority {0}")]
    Priority(String),
    /// A busy-poll time that is not a number.
    #[error("busy_poll={0} is not a number of microseconds")]
    BusyPoll(String),
    /// One variant alone.
    #[error("one variant compares nothing: give two or more, or none")]
    Alone,
    /// Two of one name.
    #[error("two variants named '{0}'")]
    Twice(String),
}

/// One variant from its keys; the error names the bad key.
fn variant(t: toml::Table) -> Result<Variant, VariantError> {
    let k: VariantKeys = toml::Value::Table(t)
        .try_into()
        .map_err(|e: toml::de::Error| VariantError::Keys(e.message().to_string()))?;
    if k.name.is_empty() || k.name.contains(['=', ',', ' ']) {
        return Err(VariantError::Name(k.name));
    }
    if let Some(p) = &k.priority {
        stackmeter_sys::knobs::Priority::parse(p).map_err(VariantError::Priority)?;
    }
    Ok(Variant {
        name: k.name,
        knobs: KnobRequest {
            priority: k.priority,
            mlock: k.mlock,
            busy_poll_us: k.busy_poll.filter(|&us| us > 0),
        },
    })
}

/// Variants compare with each other: none, or two or more with distinct
/// names.
pub fn check_variants(v: &[Variant]) -> Result<(), VariantError> {
    if v.len() == 1 {
        return Err(VariantError::Alone);
    }
    for (i, x) in v.iter().enumerate() {
        if v[..i].iter().any(|w| w.name == x.name) {
            return Err(VariantError::Twice(x.name.clone()));
        }
    }
    Ok(())
}

/// `--variant NAME[,priority=P][,mlock][,busy_poll=US]`: the keys of a
/// plan's `[[variant]]` on one line.
pub fn variant_flag(s: &str) -> Result<Variant, VariantFlagError> {
    let failed = |why| VariantFlagError { flag: s.into(), why };
    let mut parts = s.split(',');
    let mut t = toml::Table::new();
    t.insert(
        "name".into(),
        toml::Value::String(parts.next().unwrap_or("").trim().into()),
    );
    for p in parts {
        let (k, v) = match p.split_once('=') {
            Some((k, v)) => (k.trim().replace('-', "_"), v.trim()),
            None => (p.trim().replace('-', "_"), "true"),
        };
        let value = match k.as_str() {
            "mlock" => toml::Value::Boolean(v == "true"),
            "busy_poll" => toml::Value::Integer(v.parse().map_err(|_| failed(VariantError::BusyPoll(v.into())))?),
            _ => toml::Value::String(v.into()),
        };
        t.insert(k, value);
    }
    variant(t).map_err(failed)
}

/// A `--variant` that does not parse: the flag's text, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariantFlagError {
    /// The flag's value.
    pub flag: String,
    /// What is wrong.
    pub why: VariantError,
}

impl std::fmt::Display for VariantFlagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (flag, why) = (&self.flag, &self.why);
        match why {
            VariantError::BusyPoll(_) => write!(f, "--variant '{flag}': {why}"),
            _ => write!(
                f,
                "--variant '{flag}': {why} (expected NAME[,priority=rr:99][,mlock][,busy_poll=50])"
            ),
        }
    }
}

impl std::error::Error for VariantFlagError {}

/// The built-in plans: name and TOML text.
pub const BUILTIN: [(&str, &str); 13] = [
    ("latency-grid", include_str!("../plans/latency-grid.toml")),
    ("bps", include_str!("../plans/bps.toml")),
    ("link", include_str!("../plans/link.toml")),
    ("udp-echo", include_str!("../plans/udp-echo.toml")),
    ("udp-echo-rt", include_str!("../plans/udp-echo-rt.toml")),
    ("proxy", include_str!("../plans/proxy.toml")),
    ("rrul", include_str!("../plans/rrul.toml")),
    ("mcu", include_str!("../plans/mcu.toml")),
    ("lab", include_str!("../plans/lab.toml")),
    ("embox-linux", include_str!("../plans/embox-linux.toml")),
    ("nuttx-linux", include_str!("../plans/nuttx-linux.toml")),
    ("in-kernel-xdp", include_str!("../plans/in-kernel-xdp.toml")),
    ("in-kernel-sockmap", include_str!("../plans/in-kernel-sockmap.toml")),
];

/// A built-in plan; `quick` scales it for demos and CI.
pub fn builtin(name: &str, quick: bool) -> Option<Plan> {
    let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
    // Cannot fail: the built-in plans are tested below.
    let mut plan = parse(text, quick).expect("built-in plans parse");
    plan.name = name.into();
    Some(plan)
}

/// What is wrong with a plan (or the steps of a fleet file), and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError {
    /// Where in the file.
    pub at: At,
    /// The step or variant it is about ("step 2 (rr)"), if any.
    pub context: String,
    /// What is wrong.
    pub message: String,
}

impl PlanError {
    fn new(at: At, context: impl Into<String>, message: impl Into<String>) -> PlanError {
        PlanError {
            at,
            context: context.into(),
            message: message.into(),
        }
    }

    /// The error shown at its place in `text`, the text of file `name`
    /// (see [`crate::located::show`]).
    pub fn show(&self, name: &str, text: &str) -> String {
        crate::located::show(name, text, &self.at, &self.to_string())
    }
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.context.is_empty() {
            true => f.write_str(&self.message),
            false => write!(f, "{}: {}", self.context, self.message),
        }
    }
}

fn name(k: &str) -> Key {
    Key::Name(k.to_string())
}

/// Parses a TOML plan. Errors say where they are ([`PlanError`]).
pub fn parse(text: &str, quick: bool) -> Result<Plan, PlanError> {
    let mut top: toml::Table = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(At::File, At::Span);
        PlanError::new(at, "", e.message().replace('`', "'"))
    })?;
    if !matches!(top.remove("description"), None | Some(toml::Value::String(_))) {
        return Err(PlanError::new(
            At::Path(vec![name("description")]),
            "",
            "'description' must be a string",
        ));
    }
    if let Some(k) = top.keys().find(|k| *k != "step" && *k != "variant") {
        return Err(PlanError::new(
            At::Path(vec![name(k)]),
            "",
            format!("unknown key '{k}' (a plan has description, [[step]] and [[variant]])"),
        ));
    }
    let mut variants: Vec<Variant> = Vec::new();
    match top.remove("variant") {
        None => {}
        Some(toml::Value::Array(raw)) => {
            for (i, v) in raw.into_iter().enumerate() {
                let at = At::Path(vec![name("variant"), Key::Index(i)]);
                let context = format!("variant {}", i + 1);
                let toml::Value::Table(t) = v else {
                    return Err(PlanError::new(at, context, "not a table"));
                };
                variants.push(variant(t).map_err(|e| PlanError::new(at, context, e.to_string()))?);
            }
            check_variants(&variants)
                .map_err(|e| PlanError::new(At::Path(vec![name("variant")]), "", e.to_string()))?;
        }
        Some(_) => {
            return Err(PlanError::new(
                At::Path(vec![name("variant")]),
                "",
                "'variant' must be [[variant]] tables",
            ))
        }
    }
    let raw = match top.remove("step") {
        Some(toml::Value::Array(raw)) if !raw.is_empty() => raw,
        _ => return Err(PlanError::new(At::File, "", "no [[step]]")),
    };
    let steps = steps(raw, quick)?;
    Ok(Plan {
        name: String::new(),
        steps,
        variants,
    })
}

/// The `[[step]]` tables of a plan or a fleet file as steps; errors point
/// at `step`, its index and the key.
pub fn steps(raw: Vec<toml::Value>, quick: bool) -> Result<Vec<Step>, PlanError> {
    let mut steps: Vec<Step> = Vec::new();
    for (i, v) in raw.into_iter().enumerate() {
        let here = |k: Option<&str>| {
            let mut p = vec![name("step"), Key::Index(i)];
            p.extend(k.map(name));
            At::Path(p)
        };
        let toml::Value::Table(mut t) = v else {
            return Err(PlanError::new(here(None), format!("step {}", i + 1), "not a table"));
        };
        let kind = match t.remove("test") {
            Some(toml::Value::String(s)) => TestKind::from_name(&s).ok_or_else(|| {
                PlanError::new(
                    here(Some("test")),
                    format!("step {}", i + 1),
                    format!("unknown test '{s}' ({})", TestKind::names()),
                )
            })?,
            _ => {
                return Err(PlanError::new(
                    here(None),
                    format!("step {}", i + 1),
                    format!("no test = \"...\" ({})", TestKind::names()),
                ))
            }
        };
        let test = kind.name();
        let context = format!("step {} ({test})", i + 1);
        let step_name = match t.remove("name") {
            None => test.to_string(),
            Some(toml::Value::String(s)) => s,
            Some(_) => return Err(PlanError::new(here(Some("name")), context, "'name' must be a string")),
        };
        let spec = step_spec(kind, t, quick).map_err(|(in_quick, e)| {
            let mut p = vec![name("step"), Key::Index(i)];
            if in_quick {
                p.push(name("quick"));
            }
            p.extend(e.key.as_deref().map(name));
            let message = match in_quick {
                true => format!("in its quick table: {}", e.message),
                false => e.message,
            };
            PlanError::new(At::Path(p), context.clone(), message)
        })?;
        if steps.iter().any(|x| x.name == step_name) {
            return Err(PlanError::new(
                here(Some("name")),
                context,
                format!("two steps named '{step_name}': give each a distinct name"),
            ));
        }
        steps.push(Step { name: step_name, spec });
    }
    Ok(steps)
}

/// One step's keys as a specification. With `quick`, its `quick` table
/// replaces keys; without one the test's own scaling applies. The step and
/// its `quick` table are checked either way, so whether a plan is valid
/// does not depend on `--quick`. The error says whether it is in the
/// `quick` table.
fn step_spec(kind: TestKind, mut t: toml::Table, quick: bool) -> Result<Spec, (bool, KeyError)> {
    let overrides = match t.remove("quick") {
        None => None,
        Some(toml::Value::Table(q)) => Some(q),
        Some(_) => {
            return Err((
                false,
                KeyError {
                    key: Some("quick".into()),
                    message: "'quick' must be a table of keys, e.g. quick = { iterations = 20 }".into(),
                },
            ))
        }
    };
    if kind == TestKind::Load {
        let in_quick = overrides.as_ref().is_some_and(|q| q.contains_key("repeat"));
        if t.contains_key("repeat") || in_quick {
            return Err((
                in_quick && !t.contains_key("repeat"),
                KeyError {
                    key: Some("repeat".into()),
                    message:
                        "'repeat' does not apply in a plan: each suite repetition is one load run (suite --repeat)"
                            .into(),
                },
            ));
        }
    }
    let full = from_table(kind, t.clone(), false).map_err(|e| (false, e))?;
    let quicker = match overrides {
        Some(q) => {
            let mut merged = t.clone();
            merged.extend(q);
            Some(from_table(kind, merged, false).map_err(|e| (true, e))?)
        }
        None => None,
    };
    let mut spec = match (quick, quicker) {
        (false, _) => full,
        (true, Some(q)) => q,
        (true, None) => from_table(kind, t, true).map_err(|e| (false, e))?,
    };
    if let Spec::Load(l) = &mut spec {
        // One run per repetition, so repetitions of A and B interleave.
        l.repeat = 1;
    }
    Ok(spec)
}

/// A plan that cannot be had: not a built-in and no such file, a file
/// that cannot be read, or one that does not parse (with where).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Neither a built-in plan nor a file.
    #[error("'{name}' is neither a built-in plan ({builtins}) nor a plan file")]
    Unknown {
        /// The name as given.
        name: String,
        /// The built-in plans, comma-separated.
        builtins: String,
    },
    /// The file could not be read.
    #[error("cannot read plan {name}: {err}")]
    Unreadable {
        /// The file.
        name: String,
        /// Why.
        err: std::io::Error,
    },
    /// The file is not a valid plan: the error shown at its place.
    #[error("{0}")]
    Invalid(String),
}

/// A built-in name or a TOML file.
pub fn load(name: &str, quick: bool) -> Result<Plan, LoadError> {
    if let Some(p) = builtin(name, quick) {
        return Ok(p);
    }
    let path = std::path::Path::new(name);
    if !path.exists() {
        let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
        return Err(LoadError::Unknown {
            name: name.into(),
            builtins: names.join(", "),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|err| LoadError::Unreadable { name: name.into(), err })?;
    let mut plan = parse(&text, quick).map_err(|e| LoadError::Invalid(e.show(&format!("plan {name}"), &text)))?;
    plan.name = name.into();
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackmeter_results::Flow;

    #[test]
    fn builtins_parse_full_and_quick() {
        for (n, _) in BUILTIN {
            let full = builtin(n, false).unwrap();
            let quick = builtin(n, true).unwrap();
            assert_eq!(full.steps.len(), quick.steps.len(), "{n}");
        }
        assert!(builtin("nope", false).is_none());
        match &builtin("latency-grid", true).unwrap().steps[0].spec {
            Spec::Rr(r) => assert_eq!((r.sizes.len(), r.iterations, r.warmup), (8, 20, 3)),
            _ => panic!(),
        }
        match &builtin("bps", false).unwrap().steps[0].spec {
            Spec::Stream(s) => assert_eq!((s.length, s.time_s, s.nodelay), (64, 30.0, false)),
            _ => panic!(),
        }
        match &builtin("proxy", true).unwrap().steps[0].spec {
            Spec::Load(l) => assert_eq!((l.clients, l.fetch_each, l.repeat), (10, 1, 1)),
            _ => panic!(),
        }
    }

    #[test]
    fn a_plan_file_parses() {
        let p = parse(
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
                    (Flow::Bidir, 64, 30.0, false)
                );
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
        let e = parse("[[step]]\ntest = \"rr\"\ncount = 5\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("step 1 (rr)") && e.contains("'count'"), "{e}");
        let e = parse("[[step]]\ntest = \"iperf\"\n", false).unwrap_err().to_string();
        assert!(e.contains("unknown test 'iperf'"), "{e}");
        let e = parse("[[step]]\ntest = \"stream\"\nrate = \"10M\"\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'rate' applies to UDP"), "{e}");
        let e = parse("[[step]]\ntest = \"load\"\nlength = 64\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'length' does not apply to load"), "{e}");
        let e = parse("[[step]]\ntest = \"udp-max\"\nloss = 2.0\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'loss'"), "{e}");
        let e = parse("[[step]]\ntest = \"rr\"\nbogus = 1\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus"), "{e}");
        let e = parse("[[step]]\ntest = \"ping\"\nsize = 10\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("40 to 65507"), "{e}");
        let e = parse("[[step]]\ntest = \"stream\"\nudp = true\nparallel = 64\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'parallel' 64"), "{e}");
        let e = parse("[[step]]\ntest = \"load\"\nrepeat = 3\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'repeat' does not apply in a plan"), "{e}");
        assert!(parse("step = []\n", false)
            .unwrap_err()
            .to_string()
            .contains("no [[step]]"));
        // Validity does not depend on --quick: a bad value fails both ways,
        // and a typo in a quick table fails in a full run too.
        for quick in [false, true] {
            let e = parse("[[step]]\ntest = \"udp-max\"\nwidth = 0.0\n", quick)
                .unwrap_err()
                .to_string();
            assert!(e.contains("'width'"), "{e}");
            let e = parse("[[step]]\ntest = \"rr\"\nquick = { iteration = 5 }\n", quick)
                .unwrap_err()
                .to_string();
            assert!(e.contains("quick table") && e.contains("'iteration'"), "{e}");
        }
    }

    /// Every error points at its line: a syntax error where the parser
    /// stopped, a bad value at the value, a key a test does not take at
    /// the key's step, a key in a quick table inside it.
    #[test]
    fn plan_errors_show_their_line_and_column() {
        let show = |text: &str| parse(text, false).unwrap_err().show("plan bad.toml", text);
        let s = show("description = \"x\"\n[[step]\ntest = \"rr\"\n");
        assert!(s.starts_with("plan bad.toml:2:"), "{s}");
        assert!(s.contains("\n 2 | [[step]\n"), "{s}");
        let s = show("[[step]]\ntest = \"rr\"\n\n[[step]]\ntest = \"udp-max\"\nloss = 2.0\n");
        assert!(s.starts_with("plan bad.toml:6:8: step 2 (udp-max): 'loss' 2"), "{s}");
        assert!(s.ends_with(" 6 | loss = 2.0\n   |        ^^^"), "{s}");
        let s = show("[[step]]\ntest = \"rr\"\ncount = 5\n");
        assert!(
            s.starts_with("plan bad.toml:3:9: step 1 (rr): 'count' does not apply to rr"),
            "{s}"
        );
        let s = show("[[step]]\ntest = \"rr\"\nquick = { iterations = 0 }\n");
        assert!(
            s.starts_with("plan bad.toml:3:24: step 1 (rr): in its quick table: 'iterations' 0"),
            "{s}"
        );
        let s = show("[[step]]\ntest = \"iperf\"\n");
        assert!(s.starts_with("plan bad.toml:2:8: step 1: unknown test 'iperf'"), "{s}");
    }

    #[test]
    fn variants_parse_from_tables_and_flags() {
        let p = builtin("udp-echo-rt", false).unwrap();
        let names: Vec<&str> = p.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["default", "nice-20", "rt"]);
        assert_eq!(p.variants[2].knobs.priority.as_deref(), Some("rr:99"));
        assert!(p.variants[2].knobs.mlock);
        let v = variant_flag("fast,priority=fifo:5,mlock,busy-poll=30").unwrap();
        assert_eq!(v.name, "fast");
        assert_eq!(
            v.knobs,
            KnobRequest {
                priority: Some("fifo:5".into()),
                mlock: true,
                busy_poll_us: Some(30)
            }
        );
        let e = parse(
            "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\npriority = \"rt\"\n[[step]]\ntest = \"ping\"\n",
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("variant 2: priority 'rt': expected"), "{e}");
        let e = parse("[[variant]]\nname = \"a\"\n[[step]]\ntest = \"ping\"\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("one variant compares nothing"), "{e}");
        assert_eq!(
            variant_flag("a,busy_poll=soon").unwrap_err().to_string(),
            "--variant 'a,busy_poll=soon': busy_poll=soon is not a number of microseconds"
        );
        assert_eq!(
            variant_flag("a b").unwrap_err().to_string(),
            "--variant 'a b': name 'a b': give a short label without '=', ',' or spaces \
             (expected NAME[,priority=rr:99][,mlock][,busy_poll=50])"
        );
    }
}
