//! The `stackmeter` command: parse flags, run one command, map the outcome
//! to an exit code. Everything else lives in the library crates.
//!
//! Exit codes (README.md): 0 success; 1 local error; 2 bad command line;
//! 3 target unreachable; 4 session refused by the responder; 5 test broken
//! off mid-way (responder gone, stalled, or no reply).

mod args;
mod compare_cmd;
mod comparison;
mod lab;
mod load;
mod measure;
mod plan;
mod rate;
mod record;
mod report_cmd;
mod serve;
mod sizes;
mod store_cmd;
mod suite;
mod svg;
mod throughput;

use args::{Cli, Command};
use clap::Parser;

fn main() {
    std::process::exit(run());
}

fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match cli.command {
        Command::Serve(a) => serve::run(a),
        Command::Rr(a) => measure::rr(a),
        Command::Crr(a) => measure::crr(a),
        Command::Ping(a) => measure::ping(a),
        Command::Load(a) => load::run(a),
        Command::Suite(a) => suite::run(a),
        Command::Compare(a) => compare_cmd::run(a),
        Command::Runs(a) => store_cmd::runs(a),
        Command::Show(a) => store_cmd::show(a),
        Command::Export(a) => store_cmd::export(a),
        Command::Report(a) => report_cmd::run(a),
        Command::Stream(a) => throughput::stream(a),
        Command::UdpMax(a) => throughput::udp_max(a),
        Command::Lab(a) => lab::run(a),
    }
}

/// Prints the one-line error every failure ends with, and returns `code`.
pub(crate) fn fail(code: i32, msg: impl std::fmt::Display) -> i32 {
    eprintln!("stackmeter: error: {msg}");
    code
}
