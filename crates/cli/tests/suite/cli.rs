//! The command line as a whole: exit codes (3 unreachable, 5 broken off, 2
//! bad command lines, one line naming the item), JSON documents that read
//! back into the typed value, completions and man pages made from the
//! flags.

use super::{closed_port, json_of, run, stackmeter, stderr, Server};
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;

#[test]
fn responder_gone_mid_test_is_exit_5_with_partial_rows() {
    let mut srv = Server::start(&[]);
    let target = srv.target();
    let client = stackmeter()
        .args([
            "rr", &target, "--sizes", "1:1,1:1M", "-n", "1000000", "--warmup", "0", "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let the client connect and get going (it runs for a minute or more).
    std::thread::sleep(Duration::from_millis(1500));
    srv.child.kill().unwrap();
    let out = client.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&target), "{err}");
    let doc = json_of(&out);
    assert_eq!(doc["complete"], false);
    assert!(doc["error"].as_str().unwrap().contains(&target));
}

#[test]
fn closed_port_is_exit_3_naming_the_target() {
    let port = closed_port();
    let target = format!("127.0.0.1:{port}");
    for test in ["rr", "crr", "ping"] {
        let out = run(&[test, &target, "--timeout-ms", "2000"]);
        assert_eq!(out.status.code(), Some(3), "{test}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{test}: {err}");
        assert!(
            err.starts_with("stackmeter: error:") && err.contains(&target),
            "{test}: {err}"
        );
        assert!(err.contains("refused") || err.contains("unreachable"), "{test}: {err}");
    }
    // Nothing measured: the error once, on stderr (with the failed run it
    // was kept as), nothing on stdout, for a test that prints its table as
    // it goes too.
    for args in [vec!["rr", &target], vec!["stream", &target, "--time", "1"]] {
        let test = args[0];
        let out = run(&args);
        let (text, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(text.is_empty(), "{test}: {text}");
        assert_eq!(err.lines().count(), 1, "{test}: {err}");
        assert!(err.starts_with("stackmeter: error: cannot reach"), "{test}: {err}");
        assert!(err.contains("nothing measured (kept as failed run "), "{test}: {err}");
    }
}

#[test]
fn bad_command_lines_are_exit_2_naming_the_item() {
    let out = run(&["rr", "--sizes", "1:1K,1:1Q"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("'1:1Q'"), "{}", stderr(&out));
    let out = run(&["ping", "--size", "20"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["rr", "no.such.host.invalid"]);
    assert_eq!(out.status.code(), Some(3));
    // A port that is not one is a typo on the command line, not a target
    // that cannot be reached.
    for bad in ["127.0.0.1:99999", "[::1]:0", "localhost:http"] {
        let out = run(&["rr", bad, "--no-store"]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert!(stderr(&out).contains("is not a port"), "{}", stderr(&out));
    }
    assert!(stderr(&out).contains("no.such.host.invalid"));
    let out = run(&["rr", "--affinity", "4000", "--sizes", "1:1", "-n", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("CPU 4000"), "{}", stderr(&out));
}

#[test]
fn json_documents_read_back_into_the_typed_value() {
    for args in [
        &["rr", "--sizes", "1:1", "-n", "5", "--json"][..],
        &["crr", "-n", "5", "--json"],
        &["ping", "-c", "5", "--json"],
    ] {
        let out = run(args);
        assert!(out.status.success());
        let doc: stackmeter_results::Document = serde_json::from_slice(&out.stdout).expect("round trip");
        assert_eq!(doc.body.test_name(), args[0]);
        // Rendering the value read back gives the same JSON again.
        let again: Value = serde_json::from_str(&stackmeter_render::json::pretty(&doc)).unwrap();
        assert_eq!(again, json_of(&out));
    }
}

#[test]
fn completions_and_man_pages_come_from_the_flags() {
    let out = run(&["completions", "bash"]);
    assert!(out.status.success());
    let bash = String::from_utf8_lossy(&out.stdout);
    assert!(
        bash.contains("udp-max") && bash.contains("--fail-on"),
        "every command and flag"
    );
    assert!(run(&["completions", "zsh"]).status.success());
    let man = String::from_utf8_lossy(&run(&["man"]).stdout).into_owned();
    assert!(
        man.contains(".TH stackmeter 1") && man.contains("udp\\-max"),
        "{}",
        &man[..man.len().min(400)]
    );
    let rr = String::from_utf8_lossy(&run(&["man", "rr"]).stdout).into_owned();
    assert!(
        rr.contains("stackmeter\\-rr") && rr.contains("\\-\\-sizes"),
        "{}",
        &rr[..rr.len().min(400)]
    );
    let out = run(&["man", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no command 'nope'"));
}

/// `schema --help` names every schema there is, and `schema` lists the
/// same names; an unknown one is exit 2 naming the choices.
#[test]
fn schema_help_names_every_schema() {
    let help = String::from_utf8_lossy(&run(&["schema", "--help"]).stdout).into_owned();
    let listed = String::from_utf8_lossy(&run(&["schema"]).stdout).into_owned();
    for (name, _) in stackmeter_results::schema::schemas() {
        assert!(help.contains(name), "{name} not in:\n{help}");
        assert!(listed.lines().any(|l| l == name), "{name} not in:\n{listed}");
    }
    let out = run(&["schema", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("decision"), "{}", stderr(&out));
}
