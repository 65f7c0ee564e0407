//! The agent's log: one line per event on standard error, never one per
//! probe: "stackmeter agent: TIME LEVEL: text", TIME in UTC with
//! milliseconds, as the responder's own lines ("stackmeter serve: ...")
//! beside them. A peer that stops answering is one line when it stops and
//! one when it answers again (`mesh.rs`), however long it stays down.

use std::io::Write;

/// An event.
pub fn info(text: &str) {
    line("info", text);
}

/// Something the operator should look at; the agent goes on.
pub fn warn(text: &str) {
    line("warn", text);
}

fn line(level: &str, text: &str) {
    let time = stackmeter_sys::utc_rfc3339_ms(stackmeter_sys::unix_now_ms());
    // A closed stderr must not stop the agent.
    let _ = writeln!(std::io::stderr().lock(), "stackmeter agent: {time} {level}: {text}");
}
