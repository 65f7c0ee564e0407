//! `stackmeter suite`: flags to a suite configuration, local responders
//! when no target is given (started and pinned by the engine), a progress
//! bar on a terminal, Ctrl-C that keeps what finished, and the outcome
//! rendered at the end.

use crate::flags::suite::{checks, config, SuiteArgs};
use crate::out::{fail, finish};
use stackmeter_engine::suite::{SuiteConfig, SuiteEvent};
use stackmeter_engine::target::LocalResponders;
use stackmeter_proto::auth::Key;
use stackmeter_render::{render, Format};

pub fn run(a: SuiteArgs, secret: Option<Key>) -> i32 {
    let format = crate::out::usage_or!(a.output.format());
    if a.store.label.is_some() {
        return fail(2, "--label does not apply to suite: label each --target as LABEL=ADDR");
    }
    // Whether --tolerance is a band or the gate's is known once the
    // members are (the engine says); here only that it is a number.
    if let Err(e) = a.gate.check(true) {
        return fail(2, e);
    }
    // The flags and the plan first, then the store (a bad --db costs no
    // measurement), then the targets.
    let checked = checks(&a);
    let store = match checked.and_then(|c| Ok((c, stackmeter_engine::record::open_for_measuring(&a.store.storing())?)))
    {
        Ok(s) => s,
        Err(e) => return crate::out::error(e),
    };
    // The Ctrl-C watcher and the progress bar's thread start before
    // `config` pins this thread, so neither shares the client's CPU.
    if let Err(e) = crate::signal::catch() {
        return fail(1, e);
    }
    let progress = crate::progress::Progress::suite(format == Format::Text, 0);
    let ((plan, budget), store) = store;
    match config(&a, plan, budget, secret) {
        Ok((cfg, responders)) => execute(&a, format, store, cfg, responders, progress),
        Err(e) => {
            progress.finish();
            crate::out::error(e)
        }
    }
}

/// A run until decided's first line: the plan, its two members, and how
/// it stops.
fn start_line(cfg: &SuiteConfig) -> String {
    let members: Vec<String> = cfg
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| match i {
            0 => format!("{} (A, the baseline)", t.info.label),
            _ => format!("{} (B)", t.info.label),
        })
        .collect();
    let how = match &cfg.decide {
        Some(d) => format!(
            "in pairs of blocks, each pair a block of A and one of B in random order, until every row is decided (faster, slower or equivalent within +/-{}%), at most {}",
            stackmeter_render::view::percent(d.tolerance),
            d.budget
        ),
        None => String::new(),
    };
    format!(
        "stackmeter suite {}: measuring {} {how}",
        cfg.plan.name,
        members.join(" and ")
    )
}

fn execute(
    a: &SuiteArgs,
    format: Format,
    mut store: Option<stackmeter_engine::record::Recording>,
    cfg: SuiteConfig,
    responders: LocalResponders,
    progress: crate::progress::Progress,
) -> i32 {
    if let Some(n) = &cfg.note {
        progress.print_err(&format!("stackmeter: warning: {n}"));
    }
    let env = stackmeter_engine::execute::env(stackmeter_sys::unix_now_ms());
    let run = match store
        .as_mut()
        .map(|s| stackmeter_engine::suite::begin_run(s, &cfg, &env))
    {
        Some(Ok(key)) => Some(key),
        Some(Err(e)) => {
            progress.finish();
            return crate::out::error(e);
        }
        None => None,
    };
    let run_id = run.and_then(|k| k.id);
    let decided = cfg.decide.is_some();
    // A run until decided says what it does and for how long at most,
    // before the first block; then its progress: the bar on a terminal,
    // else a plain line when nothing was said for a while. (The fixed
    // design's bar shows its tests on a terminal, as ever.)
    if decided {
        progress.print_err(&start_line(&cfg));
    }
    let heartbeat = crate::progress::Heartbeat::new(progress.shown() || !decided);
    let writer = store.as_mut().map(|r| &mut r.writer);
    let done = stackmeter_engine::suite::run(&cfg, writer.zip(run), &mut |ev| match ev {
        SuiteEvent::Test {
            done,
            total,
            step,
            label,
            repetition,
        } => match decided {
            true => progress.message(format!("pair {repetition}: {step} on {label}")),
            false => progress.set(done, total, format!("{step} on {label}, repetition {}", repetition + 1)),
        },
        SuiteEvent::Warning(w) => heartbeat.print(&progress, &format!("stackmeter: warning: {w}")),
        SuiteEvent::Decided(line) => heartbeat.print(&progress, &format!("stackmeter: decided: {line}")),
        SuiteEvent::Pair {
            pair,
            open,
            rows,
            elapsed,
        } => {
            let what = format!(
                "pair {pair}: {} of {rows} row(s) decided, {:.0} s of at most {}",
                rows - open,
                elapsed.as_secs_f64(),
                cfg.decide.as_ref().map_or_else(String::new, |d| d.budget.to_string())
            );
            heartbeat.say(&format!("stackmeter: {what}"));
            progress.message(what);
        }
    });
    progress.finish();
    responders.kill_all();
    let o = &done.outcome;
    if let Some(d) = &o.decision {
        eprintln!("stackmeter: stopped: {} after {} pair(s)", d.stop, d.pairs);
    }
    let code = finish(&render(o, format, &a.output.style()));
    // Spooled: kept on this host, not lost; the line says how to send it.
    if let Some(note) = store.as_ref().and_then(|r| r.writer.note()) {
        eprintln!("stackmeter: {note}");
    }
    // Results not stored or lost: said whatever else happened, never exit 0.
    let stored = done.store_failure().map(|m| fail(1, m));
    match done.failure {
        Some(_) if done.interrupted() => {
            let kept = match run_id {
                Some(id) => format!("; run {id} kept its {} finished test(s) and is marked partial", o.tests),
                None => String::new(),
            };
            fail(130, format!("interrupted{kept}"))
        }
        Some(e) => crate::out::error(e),
        None if code != 0 => code,
        None => stored.unwrap_or_else(|| crate::out::gate(&a.gate.suite_failures(o))),
    }
}
