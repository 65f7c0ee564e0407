//! The measuring commands: flags to a planned test, the engine runs and
//! stores it, the result is printed in the format asked for. Rows that
//! finish during the test (stream intervals, udp-max trials) are printed
//! as they come: as table rows in text, as JSON lines with --json-lines.

use crate::flags::measuring::TestCommand;
use crate::out::{fail, print};
use stackmeter_engine::execute::Event;
use stackmeter_proto::auth::Key;
use stackmeter_render::view::{Block, Table};
use stackmeter_render::{json, text};
use stackmeter_render::{render, Format, Render, Style};
use stackmeter_results::Document;

pub fn run(cmd: TestCommand, secret: Option<Key>) -> i32 {
    let planned = match cmd.plan() {
        Ok(p) => p,
        Err(e) => return crate::out::error(e),
    };
    let output = &cmd.run_flags().output;
    let format = crate::out::usage_or!(output.format());
    if let Err(e) = crate::signal::catch() {
        return fail(1, e);
    }
    let what = format!(
        "{} {}",
        planned.spec.name(),
        planned.setup.target.as_deref().unwrap_or("(embedded responder)")
    );
    let mut live = LivePrinter {
        format,
        style: output.format.style(),
        json_lines: output.json_lines,
        head: None,
        table: None,
        progress: crate::progress::Progress::test(format != Format::Json, what, planned.spec.planned_seconds()),
    };
    let single = stackmeter_engine::single::single(&planned, secret, &mut |ev| live.event(ev));
    live.progress.finish();
    let single = match single {
        Ok(s) => s,
        Err(e) => return crate::out::error(e),
    };
    let m = single.measured;
    // Nothing measured: the error line alone says why (and, in text, the
    // document would only say it again).
    let nothing = m.doc.body.is_empty() && m.error.is_some();
    if !(nothing && format == Format::Text) {
        if let Err(code) = print(&live.end(&m.doc)) {
            return code;
        }
    }
    // Spooled: kept on this host, not lost; the line says how to send it.
    if let Some(note) = &single.spooled {
        eprintln!("stackmeter: {note}");
    }
    // Not stored: printed above, but lost to `show` and `compare`, so the
    // command fails (exit 1) unless the test itself failed.
    // The line is printed even when the test failed too (its own code wins).
    let stored = single
        .not_stored
        .map(|e| fail(1, format!("the result was printed but not stored: {e}")));
    match (m.error, single.run) {
        // Kept as a failed run (`runs` lists it, `show` says why): said.
        (Some(e), Some(id)) if nothing => {
            let e = crate::error::Error::from(e);
            fail(
                e.exit_code(),
                format!("{e}; nothing measured (kept as failed run {id})"),
            )
        }
        (Some(e), _) => crate::out::error(e),
        (None, _) => stored.unwrap_or(0),
    }
}

/// Printing while a test runs.
struct LivePrinter {
    format: Format,
    style: Style,
    json_lines: bool,
    /// The head of the live table, printed with its first row (text): a
    /// test that fails before its first row prints no empty table.
    head: Option<(String, Table)>,
    /// The live table whose head was printed (text).
    table: Option<Table>,
    /// On a terminal: elapsed time, and a bar when the length is known.
    progress: crate::progress::Progress,
}

impl LivePrinter {
    fn event(&mut self, ev: Event) {
        // Write errors are left to the final print, which reports them.
        match ev {
            Event::Started(doc) if self.format == Format::Text => {
                let v = doc.view(&self.style);
                let head = text::live_head(&v);
                if let (false, Some(Block::Table(t))) = (head.is_empty(), v.live_split().map(|i| &v.blocks[i])) {
                    self.head = Some((head, t.clone()));
                }
            }
            Event::Started(_) => {}
            Event::Row(row) => {
                if let Some((head, t)) = self.head.take() {
                    self.progress.print(&head);
                    self.table = Some(t);
                }
                self.row(row);
            }
        }
    }

    fn row(&mut self, row: stackmeter_results::Live<'_>) {
        match (&self.table, self.json_lines) {
            (Some(t), _) => self
                .progress
                .print(&text::live_row(t, &stackmeter_render::live_cells(&row, &self.style))),
            (None, true) => {
                let _ = print(&json::line(&row));
            }
            (None, false) => {}
        }
    }

    /// The rest of the output once the test has ended.
    fn end(&self, doc: &Document) -> String {
        match (self.format, &self.table) {
            (Format::Text, Some(_)) => text::live_tail(&doc.view(&self.style)),
            (Format::Json, _) if self.json_lines => json::line(doc),
            (f, _) => render(doc, f, &self.style),
        }
    }
}
