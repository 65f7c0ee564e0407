//! The `stackmeter` command: parse flags, run one command through the
//! engine, render its result, map the outcome to an exit code. Everything
//! else lives in the library crates (ARCHITECTURE.md).
//!
//! Exit codes (README.md, docs/tests.md): 0 success; 1 local error (a
//! result not stored or lost among them); 2 bad command line; 3 target
//! unreachable; 4 session refused by the responder; 5 test broken off
//! mid-way (responder gone, stalled, or no reply); 6 a `--fail-on` gate
//! failed (B worse than A now: compare, suite); 7 nothing to compare; 8 a
//! plain server measured as a responder; 9 `history --fail-on-regression`
//! found a regression in the window (a change over the runs); 130
//! interrupted (Ctrl-C).

mod agent;
mod error;
mod flags;
mod fleet;
mod history;
mod lab;
mod measure;
mod out;
mod progress;
mod serve;
mod signal;
mod store;
mod suite;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Measure and compare network stacks: request/response latency, connect
/// time, UDP echo, throughput and many-client loads, against a stackmeter
/// responder (or, with no TARGET, one started in this process).
#[derive(Parser, Debug)]
#[command(name = "stackmeter", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Shared secret (docs/protocol.md 10): a file only its owner may read.
    /// serve: clients must prove it; measuring commands: prove it to the
    /// responder, and MAC every UDP datagram. Else $STACKMETER_SECRET_FILE,
    /// else the text of $STACKMETER_SECRET.
    #[arg(long, global = true, value_name = "FILE")]
    secret_file: Option<std::path::PathBuf>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a responder (TCP and UDP on each address) until killed.
    Serve(crate::flags::serve::ServeArgs),
    /// Run a responder that also probes its peers (ping, rr) and serves each pair's latency and loss on /metrics for Prometheus.
    Agent(stackmeter_agent::AgentArgs),
    #[command(flatten)]
    Measure(crate::flags::measuring::TestCommand),
    /// Run a plan of tests against two or more labelled targets, interleaved,
    /// and print the comparison. No --target: compares responders it starts itself.
    Suite(crate::flags::suite::SuiteArgs),
    /// Compare stored results: A is the baseline, B the candidate (labels or run ids).
    Compare(crate::flags::store::CompareArgs),
    /// List the stored runs.
    Runs(crate::flags::store::RunsArgs),
    /// Print a stored run again, as its command printed it.
    Show(crate::flags::store::ShowArgs),
    /// Write stored results as CSV or JSON.
    Export(crate::flags::store::ExportArgs),
    /// Look after the results store: `store check` (integrity), `store copy SRC DST`
    /// (SQLite and PostgreSQL, either way), `store flush` (send what was spooled).
    Store(crate::flags::store::StoreArgs),
    /// Write one self-contained report (HTML with charts by default) of stored results.
    Report(crate::flags::store::ReportArgs),
    /// Every stored run of a target as a series per figure, with its change
    /// points: when a figure moved, by how much, and with which attributes
    /// (docs/history.md). Exit 9 with --fail-on-regression and a
    /// regression in the window.
    History(crate::flags::history::HistoryArgs),
    /// Many machines: a fleet file's plan of pairs (docs/fleet.md).
    Fleet(crate::flags::fleet::FleetArgs),
    /// Local lab: lwIP (raw and sockets API) and smoltcp on TAP devices, lwIP on AF_XDP, the C responder on the kernel stack, or its microcontroller firmware in QEMU (root).
    Lab(stackmeter_lab::LabArgs),
    /// Print a shell completion script: stackmeter completions bash > /etc/bash_completion.d/stackmeter
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the JSON Schema of an output; none: list them.
    Schema {
        /// Which output.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(stackmeter_results::schema::NAMES))]
        name: Option<String>,
    },
    /// Print the manual page (roff): stackmeter man | man -l -  (or of one command: stackmeter man rr)
    Man {
        /// A command's own page instead of the main one.
        command: Option<String>,
    },
}

/// The command line as clap sees it, with what only the libraries know
/// filled in: the built-in plans' names come from the plan list.
fn cli_command() -> clap::Command {
    Cli::command().mut_subcommand("suite", |s| {
        s.mut_arg("plan", |a| a.help(crate::flags::suite::plan_help()))
    })
}

fn main() {
    std::process::exit(run());
}

fn run() -> i32 {
    let cli = match cli_command().try_get_matches().and_then(|m| Cli::from_arg_matches(&m)) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    // Only the commands that talk to a responder, or are one, read it.
    let talks = matches!(
        cli.command,
        Command::Serve(_)
            | Command::Agent(_)
            | Command::Measure(_)
            | Command::Suite(_)
            | Command::Lab(_)
            | Command::Fleet(_)
    );
    let secret = match talks {
        true => match stackmeter_engine::secret::load(cli.secret_file.as_deref()) {
            Ok(key) => key,
            Err(e) => return out::fail(2, e),
        },
        false => None,
    };
    match cli.command {
        Command::Serve(a) => serve::run(a, secret),
        Command::Agent(a) => agent::run(a, secret),
        Command::Measure(t) => measure::run(t, secret),
        Command::Suite(a) => suite::run(a, secret),
        Command::Compare(a) => store::compare(a),
        Command::Runs(a) => store::runs(a),
        Command::Show(a) => store::show(a),
        Command::Export(a) => store::export(a),
        Command::Report(a) => store::report(a),
        Command::Store(a) => store::store(a),
        Command::History(a) => history::run(a),
        Command::Lab(a) => lab::run(a),
        Command::Fleet(a) => fleet::run(a, secret),
        Command::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cli_command(), "stackmeter", &mut out);
            out::finish(&String::from_utf8_lossy(&out))
        }
        Command::Man { command } => man(command.as_deref()),
        Command::Schema { name } => schema(name.as_deref()),
    }
}

/// `stackmeter schema [NAME]`: one output's JSON Schema, or the names of
/// them all, one per line (clap has checked the name).
fn schema(name: Option<&str>) -> i32 {
    let names = stackmeter_results::schema::NAMES;
    match name {
        None => out::finish(&(names.join("\n") + "\n")),
        Some(n) => match stackmeter_results::schema::schemas().iter().find(|(k, _)| *k == n) {
            Some((_, s)) => out::finish(&stackmeter_render::json::pretty(s)),
            None => out::fail(2, format!("no schema '{n}' ({})", names.join(", "))),
        },
    }
}

/// The main manual page, or one command's.
fn man(command: Option<&str>) -> i32 {
    let mut cmd = cli_command();
    cmd.build();
    let page = match command {
        None => cmd,
        Some(name) => match cmd.find_subcommand(name) {
            Some(sub) => sub.clone().name(format!("stackmeter-{name}")),
            None => return out::fail(2, format!("no command '{name}' (see stackmeter --help)")),
        },
    };
    let mut roff = Vec::new();
    match clap_mangen::Man::new(page).render(&mut roff) {
        Ok(()) => out::finish(&String::from_utf8_lossy(&roff)),
        Err(e) => out::fail(1, format!("cannot write the manual page: {e}")),
    }
}
