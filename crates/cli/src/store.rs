//! The commands that read the results store: `compare`, `runs`, `show`,
//! `export`, `report`, and `store check`, `store copy`, `store flush`. The
//! query and store crates do the work; this chooses the format and where
//! the output goes.

use crate::flags::store::{
    CompareArgs, ExportArgs, ExportFormat, ReportArgs, RunsArgs, ShowArgs, StoreArgs, StoreCommand,
};
use crate::flags::DbFlags;
use crate::out::{fail, finish};
use stackmeter_query::stored::{self, Export};
use stackmeter_render::{render, Format, Style};
use stackmeter_store::Store;

/// Runs `f` on the store `db` names; an error is reported with its code.
fn with_store(db: &DbFlags, f: impl FnOnce(&Store) -> Result<i32, crate::error::Error>) -> i32 {
    let run = || f(&stackmeter_engine::record::open(db.db.as_deref())?);
    run().unwrap_or_else(crate::out::error)
}

pub fn compare(a: CompareArgs) -> i32 {
    if let Err(e) = a.gate.check(false) {
        return fail(2, e);
    }
    with_store(&a.db, |s| {
        let (side_a, side_b) = (stored::resolve(s, &a.a)?, stored::resolve(s, &a.b)?);
        let (text, failures) = match stored::compared(s, &side_a, &side_b, a.metric.map(crate::flags::MetricArg::name))?
        {
            stored::Compared::Fresh(c) => (
                render(&*c, a.format.into(), &Style::default()),
                a.gate.failures(std::slice::from_ref(&*c)),
            ),
            stored::Compared::Decided(d) => (
                render(&*d, a.format.into(), &Style::default()),
                a.gate.decided_failures(&d),
            ),
        };
        match finish(&text) {
            0 => Ok(crate::out::gate(&failures)),
            code => Ok(code),
        }
    })
}

pub fn runs(a: RunsArgs) -> i32 {
    let format = if a.json { Format::Json } else { Format::Text };
    with_store(&a.db, |s| {
        Ok(finish(&render(&stored::runs(s)?, format, &Style::default())))
    })
}

pub fn show(a: ShowArgs) -> i32 {
    let format = crate::out::usage_or!(a.output.format());
    with_store(&a.db, |s| {
        let style = a.output.style();
        Ok(finish(&match a.percentiles {
            true => render(&stored::spectrum(s, a.run)?, format, &style),
            false => shown(&stored::show(s, a.run)?, a.run, format, &style),
        }))
    })
}

/// A stored run as its command printed it; the user's attributes head
/// text and Markdown (JSON carries them in `export`).
fn shown(s: &stored::Shown, id: i64, format: Format, style: &Style) -> String {
    let head = match format {
        Format::Text | Format::Md if !s.attrs.is_empty() => {
            let list: Vec<String> = s.attrs.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("run {id}: {}\n\n", list.join(" "))
        }
        _ => String::new(),
    };
    let body = match &s.what {
        stored::ShownRun::Suite(o) => render(&**o, format, style),
        stored::ShownRun::Tests(docs) => docs.iter().map(|d| render(d, format, style)).collect(),
    };
    head + &body
}

pub fn export(a: ExportArgs) -> i32 {
    let format = match a.format {
        ExportFormat::Csv => Export::Csv,
        ExportFormat::Json => Export::Json,
    };
    with_store(&a.db, |s| {
        let out = stored::export(s, &a.runs, a.label.as_deref(), format)?;
        Ok(match &a.output {
            Some(path) => write(path, &out),
            None => finish(&out),
        })
    })
}

pub fn report(a: ReportArgs) -> i32 {
    with_store(&a.db, |s| {
        let r = stackmeter_query::report::build(s, &a.sources, a.metric.map(crate::flags::MetricArg::name))?;
        let Some(file) = &a.output else {
            let format = a.format.unwrap_or(crate::flags::FormatArg::Text);
            return Ok(crate::out::finish(&render(&r, format.into(), &Style::default())));
        };
        let format = a.format.unwrap_or(crate::flags::FormatArg::Html);
        let code = write(file, &render(&r, format.into(), &Style::default()));
        if code == 0 {
            eprintln!("stackmeter: wrote {}", file.display());
        }
        Ok(code)
    })
}

pub fn store(a: StoreArgs) -> i32 {
    match a.command {
        StoreCommand::Check { db } => check(&db),
        StoreCommand::Copy { src, dst } => copy(&src, &dst),
        StoreCommand::Flush { db } => flush(&db),
    }
}

fn check(db: &DbFlags) -> i32 {
    // Opening creates a missing file (or the tables): a check of nothing must not.
    let at = match stackmeter_engine::record::location(db.db.as_deref()) {
        Ok(at) => at,
        Err(e) => return crate::out::error(e),
    };
    match Store::exists(&at) {
        Ok(false) => return fail(1, format!("no results store at {at}")),
        Err(e) => return crate::out::error(e),
        Ok(true) => {}
    }
    with_store(db, |s| {
        let c = s.check()?;
        if c.problems.is_empty() {
            return Ok(finish(&format!("ok: {} runs, {} tests\n", c.runs, c.tests)));
        }
        for p in &c.problems {
            println!("{p}");
        }
        Ok(fail(
            1,
            format!("the results store has {} problem(s)", c.problems.len()),
        ))
    })
}

fn copy(src: &std::path::Path, dst: &std::path::Path) -> i32 {
    let parse = |p: &std::path::Path| stackmeter_engine::record::location(Some(p));
    let run = || -> Result<i32, crate::error::Error> {
        let (from, to) = (parse(src)?, parse(dst)?);
        if from == to {
            return Err(crate::error::Error::conflict(format!(
                "store copy: SRC and DST are the same store ({from})"
            )));
        }
        if !Store::exists(&from)? {
            return Err(crate::error::Error::local(format!("no results store at {from}")));
        }
        let source = Store::open(&from)?;
        let mut dest = Store::open(&to)?;
        let c = stackmeter_store::copy(&source, &mut dest)?;
        Ok(finish(&format!(
            "copied {} run(s) with {} test(s) from {from} to {to}; {} run(s) were there already\n",
            c.runs, c.tests, c.already
        )))
    };
    run().unwrap_or_else(crate::out::error)
}

fn flush(db: &DbFlags) -> i32 {
    let run = || -> Result<i32, crate::error::Error> {
        let to = stackmeter_engine::record::location(db.db.as_deref())?;
        let spool = stackmeter_engine::record::spool()
            .ok_or_else(|| crate::error::Error::local("no spool folder: set HOME or XDG_DATA_HOME"))?;
        if spool.is_empty()? {
            return Ok(finish(&format!("nothing spooled in {}\n", spool.dir().display())));
        }
        let mut store = Store::open(&to)?;
        let sent = stackmeter_store::flush(&spool, &mut store)?;
        for s in &sent.skipped {
            eprintln!("stackmeter: left in the spool: {s}");
        }
        Ok(finish(&format!(
            "sent {} run(s) and {} test(s) from {} to {to}; {} run(s) were there already\n",
            sent.runs,
            sent.tests,
            spool.dir().display(),
            sent.already
        )))
    };
    run().unwrap_or_else(crate::out::error)
}

fn write(path: &std::path::Path, text: &str) -> i32 {
    match std::fs::write(path, text) {
        Ok(()) => 0,
        Err(e) => fail(1, format!("cannot write {}: {e}", path.display())),
    }
}
