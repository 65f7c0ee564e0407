//! Flags the measuring and store commands share: where to measure, how to
//! place threads, how to print, where to store. They describe how a test
//! runs, not what it measures (that is `spec`).

use clap::Args;
use stackmeter_render::units::Units;
use stackmeter_render::{Format, Style};
use std::path::PathBuf;

/// Output formats on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatArg {
    /// Aligned text tables.
    Text,
    /// Markdown (pipe tables).
    Md,
    /// JSON (schema stackmeter/1, docs/json.md).
    Json,
    /// One self-contained HTML page with charts.
    Html,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Text => Format::Text,
            FormatArg::Md => Format::Md,
            FormatArg::Json => Format::Json,
            FormatArg::Html => Format::Html,
        }
    }
}

/// The output format of a command that prints one value.
#[derive(Args, Debug, Clone, Default)]
pub struct FormatFlags {
    /// Print JSON (schema stackmeter/1, docs/json.md); short for --format json.
    #[arg(long)]
    pub json: bool,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<FormatArg>,
    /// Bit rates in text, Markdown and HTML: a = scaled to each value
    /// (default), k m g = kbit/s Mbit/s Gbit/s, K M G = KiB/s MiB/s GiB/s
    /// (as iperf3's -f). JSON always carries Mbit/s.
    #[arg(long, value_name = "UNIT", value_parser = units)]
    pub units: Option<Units>,
}

fn units(s: &str) -> Result<Units, String> {
    Units::parse(s).ok_or_else(|| format!("'{s}': one of a, k, m, g, K, M, G"))
}

impl FormatFlags {
    /// How figures are written.
    pub fn style(&self) -> Style {
        Style {
            units: self.units.unwrap_or_default(),
        }
    }

    /// The format asked for (text by default); an error names the flags
    /// that clash.
    pub fn format(&self) -> Result<Format, crate::error::Error> {
        match (self.json, self.format) {
            (true, Some(f)) if f != FormatArg::Json => {
                Err(crate::error::Error::conflict("--json and --format exclude each other"))
            }
            (true, _) => Ok(Format::Json),
            (false, f) => Ok(f.map(Format::from).unwrap_or(Format::Text)),
        }
    }
}

/// How a measuring command prints.
#[derive(Args, Debug, Clone, Default)]
pub struct OutputFlags {
    #[command(flatten)]
    pub format: FormatFlags,
    /// JSON lines: each row that finishes during the test (stream
    /// intervals, udp-max trials) as one JSON object on its own line, then
    /// the document on one line.
    #[arg(long)]
    pub json_lines: bool,
}

impl OutputFlags {
    /// The format asked for (`--json-lines` alone means JSON); an error
    /// names the flags that clash.
    pub fn format(&self) -> Result<Format, crate::error::Error> {
        let f = self.format.format()?;
        match (self.json_lines, f, self.format.format) {
            (true, _, Some(other)) if other != FormatArg::Json => Err(crate::error::Error::conflict(
                "--json-lines prints JSON: it excludes --format text, md or html",
            )),
            (true, _, _) => Ok(Format::Json),
            (false, f, _) => Ok(f),
        }
    }
}

/// Where results are stored (every command that reads or writes them).
#[derive(Args, Debug, Clone, Default)]
pub struct DbFlags {
    /// Results store: an SQLite file, or a PostgreSQL database
    /// (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE). Default:
    /// $STACKMETER_DB, else $XDG_DATA_HOME/stackmeter/results.db, else
    /// ~/.local/share/stackmeter/results.db.
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
}

/// Storing flags of the measuring commands.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreFlags {
    #[command(flatten)]
    pub db: DbFlags,
    /// Name these results (for `compare`, `report`); default: the target as given, or "embedded".
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Do not store the results.
    #[arg(long)]
    pub no_store: bool,
    #[command(flatten)]
    pub attr: AttrFlags,
}

/// `--attr`, declared once for every command that stores a run (the
/// measuring commands, `suite`, `fleet run`); read once, by
/// `record::open_for_measuring`.
#[derive(Args, Debug, Clone, Default)]
pub struct AttrFlags {
    /// What this run measured, stored with it: KEY=VALUE (repeatable), e.g.
    /// commit=3f2a1c, firmware=1.4.2, nic=x710; `history --by KEY` orders
    /// runs by one.
    #[arg(long = "attr", value_name = "KEY=VALUE")]
    pub attrs: Vec<String>,
}

impl StoreFlags {
    /// Where and how the engine stores the result.
    pub fn storing(&self) -> stackmeter_engine::record::Storing {
        stackmeter_engine::record::Storing {
            db: self.db.db.clone(),
            label: self.label.clone(),
            no_store: self.no_store,
            attrs: self.attr.attrs.clone(),
        }
    }
}

/// Flags every measuring command takes.
#[derive(Args, Debug, Clone, Default)]
pub struct RunFlags {
    /// Responder to measure: HOST, HOST:PORT, [IPV6]:PORT. Default port 24680.
    /// Omitted: a responder started in this process on 127.0.0.1.
    pub target: Option<String>,
    #[command(flatten)]
    pub output: OutputFlags,
    /// Pin the measuring thread to this CPU.
    #[arg(long, value_name = "CPU")]
    pub affinity: Option<usize>,
    /// Pin the embedded responder's threads to this CPU (no TARGET only).
    #[arg(long, value_name = "CPU")]
    pub responder_affinity: Option<usize>,
    #[command(flatten)]
    pub knobs: KnobFlags,
    #[command(flatten)]
    pub store: StoreFlags,
}

impl RunFlags {
    /// How the engine runs a single measuring command.
    pub fn setup(&self) -> stackmeter_engine::single::Setup {
        stackmeter_engine::single::Setup {
            target: self.target.clone(),
            affinity: self.affinity,
            responder_affinity: self.responder_affinity,
            knobs: self.knobs.request(),
            storing: self.store.storing(),
        }
    }
}

/// Real-time knobs of the measuring thread (docs/tests.md, "Knobs"), read
/// back from the kernel into every result.
#[derive(Args, Debug, Clone, Default)]
pub struct KnobFlags {
    /// Scheduling of the measuring thread: fifo:N or rr:N (real time, N 1..99, as chrt), or nice:N (N -20..19, as nice).
    #[arg(long, value_name = "POLICY:N")]
    pub priority: Option<String>,
    /// Lock the client's memory (mlockall), so no page fault lands inside a timed exchange.
    #[arg(long)]
    pub mlock: bool,
    /// Busy-poll this many microseconds in each blocking receive on the measuring sockets (SO_BUSY_POLL).
    #[arg(long, value_name = "US")]
    pub busy_poll: Option<u32>,
}

impl KnobFlags {
    /// The knobs as the document records them.
    pub fn request(&self) -> stackmeter_results::KnobRequest {
        stackmeter_results::KnobRequest {
            priority: self.priority.clone(),
            mlock: self.mlock,
            busy_poll_us: self.busy_poll.filter(|&us| us > 0),
        }
    }
}

/// The embedded responder's catalogue (load with no TARGET).
#[derive(Args, Debug, Clone, Default)]
pub struct ObjectFlags {
    /// Objects of the embedded responder (no TARGET): comma-separated sizes, K = 1024
    /// (default: as `serve`).
    #[arg(long, value_name = "SIZES")]
    pub objects: Option<stackmeter_spec::sizes::ObjectSizes>,
    /// The embedded responder serves the regular files inside DIR instead.
    #[arg(long, value_name = "DIR")]
    pub objects_dir: Option<PathBuf>,
}

/// Latency figure compared per repetition.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MetricArg {
    /// The row's mean (the usual "average over N iterations").
    #[default]
    Mean,
    /// The row's median.
    P50,
    /// The row's 99th percentile.
    P99,
}

impl MetricArg {
    /// The statistic's name in figures ("mean", "p50", "p99").
    pub fn name(self) -> &'static str {
        match self {
            MetricArg::Mean => "mean",
            MetricArg::P50 => "p50",
            MetricArg::P99 => "p99",
        }
    }
}

/// What makes `compare` or `suite` fail (exit code 6): a regression gate
/// for CI pipelines.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOn {
    /// A row where B is significantly slower (or has a lower rate) than A.
    Slower,
    /// A row where B differs significantly from A, either way.
    Change,
}

/// The regression gate's flags.
#[derive(Args, Debug, Clone, Default)]
pub struct GateFlags {
    /// Exit with code 6 when a row's verdict says B is slower than A (or,
    /// with `change`, differs either way) by more than --tolerance.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub fail_on: Option<FailOn>,
    /// Percent a difference must exceed: for --fail-on (default 0), and the
    /// band a run until decided calls equivalent within (default 2; 5 with --quick).
    #[arg(long, value_name = "PERCENT")]
    pub tolerance: Option<f64>,
}

impl GateFlags {
    /// Checks the tolerance, and that it has a use: the gate's, unless
    /// `decided` (a run until decided uses it as its band).
    pub fn check(&self, decided: bool) -> Result<(), crate::error::Error> {
        if let Some(t) = self.tolerance {
            if !(t.is_finite() && t >= 0.0) {
                return Err(crate::error::Error::flag(format!(
                    "--tolerance {t}: a percentage, 0 or more"
                )));
            }
            if self.fail_on.is_none() && !decided {
                return Err(crate::error::Error::conflict(
                    "--tolerance needs --fail-on here (or --until decided, where it is the band)",
                ));
            }
        }
        Ok(())
    }

    /// The rows of `comparisons` that fail the gate (none without `--fail-on`).
    pub fn failures(&self, comparisons: &[stackmeter_results::Comparison]) -> Vec<String> {
        let Some(what) = self.fail_on else { return Vec::new() };
        comparisons
            .iter()
            .flat_map(|c| c.regressions(self.tolerance.unwrap_or(0.0), what == FailOn::Change))
            .collect()
    }

    /// The rows of a suite's outcome that fail the gate: of its decision,
    /// or of its comparisons.
    pub fn suite_failures(&self, o: &stackmeter_results::SuiteOutcome) -> Vec<String> {
        match &o.decision {
            Some(d) => self.decided_failures(d),
            None => self.failures(&o.comparisons),
        }
    }

    /// The rows of a decided comparison that fail the gate: decided
    /// slower (or, with `change`, faster too); the band is the tolerance.
    pub fn decided_failures(&self, d: &stackmeter_results::Decision) -> Vec<String> {
        use stackmeter_results::Decided;
        let Some(what) = self.fail_on else { return Vec::new() };
        d.rows
            .iter()
            .filter(|r| r.verdict == Decided::Slower || (what == FailOn::Change && r.verdict == Decided::Faster))
            .map(|r| {
                let how = if r.verdict == Decided::Slower {
                    "slower"
                } else {
                    "faster"
                };
                format!(
                    "{} {} {} {}: B/A {:.3}, {how} beyond +/-{:.1}%",
                    r.step,
                    r.label,
                    r.series,
                    r.stat,
                    r.ratio,
                    d.settings.tolerance * 100.0
                )
            })
            .collect()
    }
}
