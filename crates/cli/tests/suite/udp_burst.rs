//! `udp-burst` (bursts of back-to-back UDP datagrams): every datagram of
//! a responder's bursts answered and counted, silence and bad input named,
//! and two runs compared by figure like any other test. A board that
//! loses part of a burst is in lab.rs (the smoltcp firmware, whose UDP
//! socket holds 4 datagrams).

use super::{json_of, run, stderr, Server};

#[test]
fn udp_burst_counts_every_datagram_of_each_burst() {
    let srv = Server::start(&[]);
    let out = run(&[
        "udp-burst",
        &srv.target(),
        "--bursts",
        "1,4,16",
        "--rounds",
        "5",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["test"], "udp-burst");
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for (row, burst) in rows.iter().zip([1u64, 4, 16]) {
        assert_eq!(row["burst"], burst);
        assert_eq!(row["rounds"], 5);
        assert_eq!(row["sent"].as_u64(), Some(5 * burst), "{row}");
        // A responder on loopback with a 4 MiB receive buffer answers all.
        assert_eq!(row["received"], row["sent"], "{row}");
        assert_eq!((row["lost"].as_u64(), row["mismatched"].as_u64()), (Some(0), Some(0)));
        assert_eq!(row["whole_rounds"], 5);
        assert_eq!(row["client_drops"], 0);
        assert_eq!(row["drain_us"]["count"], 5);
    }
    let text = run(&["udp-burst", &srv.target(), "--bursts", "2,8", "-n", "3", "--no-store"]);
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("largest burst answered whole in every round (and every smaller one): 8 datagram(s) of 64 bytes"),
        "{text}"
    );
}

#[test]
fn udp_burst_names_silence_and_bad_settings() {
    // A bound socket that never answers: every datagram lost, exit 5.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let target = silent.local_addr().unwrap().to_string();
    let out = run(&[
        "udp-burst",
        &target,
        "--bursts",
        "1,2",
        "-n",
        "2",
        "--warmup",
        "0",
        "--timeout-ms",
        "50",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no reply to any of 6 datagrams within 50 ms"),
        "{}",
        stderr(&out)
    );
    let doc = json_of(&out);
    assert_eq!(doc["complete"], false);
    assert_eq!(doc["results"][1]["lost"], 4);
    for (args, named) in [
        (
            &["--bursts", "0"][..],
            "--bursts 0: '0' is not a burst of 1 to 1024 datagrams",
        ),
        (&["--bursts", "4,x"][..], "--bursts 4,x: 'x' is not a burst"),
        (&["--size", "20"][..], "--size 20: must be 40 to 65507"),
        (&["--rounds", "0"][..], "--rounds 0"),
    ] {
        let mut a = vec!["udp-burst", &target];
        a.extend_from_slice(args);
        let out = run(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(named), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
    }
}

#[test]
fn udp_burst_runs_compare_by_their_figures() {
    let srv = Server::start(&[]);
    let db = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("udp-burst-compare.db");
    let _ = std::fs::remove_file(&db);
    for label in ["a", "b"] {
        let out = super::stackmeter()
            .args([
                "udp-burst",
                &srv.target(),
                "--bursts",
                "1,4",
                "-n",
                "5",
                "--label",
                label,
            ])
            .env("STACKMETER_DB", &db)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = super::stackmeter()
        .args(["compare", "a", "b", "--format", "json"])
        .env("STACKMETER_DB", &db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("burst 4") && text.contains("delivered"), "{text}");
}

#[test]
fn udp_burst_seals_every_datagram_for_a_responder_with_a_secret() {
    let secret = super::auth::secret_file("udp-burst", "burst-s3cret\n", 0o600);
    let wrong = super::auth::secret_file("udp-burst-wrong", "not-it\n", 0o600);
    let srv = Server::start(&["--secret-file", &secret]);
    let out = run(&[
        "udp-burst",
        &srv.target(),
        "--bursts",
        "1,8",
        "-n",
        "4",
        "--secret-file",
        &secret,
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for row in json_of(&out)["results"].as_array().unwrap() {
        // Sealed, in order and fresh: the replay window takes every one.
        assert_eq!(row["received"], row["sent"], "{row}");
        assert_eq!(row["whole_rounds"], 4, "{row}");
    }
    // Another secret: the responder drops them all, unanswered.
    let out = run(&[
        "udp-burst",
        &srv.target(),
        "--bursts",
        "2",
        "-n",
        "2",
        "--warmup",
        "0",
        "--timeout-ms",
        "50",
        "--secret-file",
        &wrong,
    ]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
}
