//! `stackmeter lab up embox linux-a9` end to end (root only; a visible
//! skip otherwise, a failure when CI is set): the UDP echo write-up's two
//! systems on one emulated Cortex-A9, Embox with the C responder as a
//! command and Linux with it as a static program (twice: linux-a9 and,
//! under SCHED_FIFO, linux-a9-rt). Both built from source by `make -C
//! c-responder embox linux-a9` (Embox's source from STACKMETER_EMBOX_SRC,
//! which scripts/test reports when it is not set), booted together, then
//! against each: ping with its payload check, rr at 1:1K and 64:64, crr,
//! udp-burst, bulk TCP in (rr 64K:64K with no segment retransmitted: the
//! guests' receive windows fit the emulated NIC's receive FIFO), the
//! protocol's byte fixtures over the wire, and the hostile clients (which
//! crashed Embox da1cd94f until our build's fix of its LAN9118 driver,
//! c-responder/a9/embox/patches); Embox's driver stamps split a ping's
//! round trip; the consoles show one boot and no panic; `lab down` leaves
//! no QEMU, TAP device or state behind.

use super::lab::{alive, hostile, wire_vectors, Exposed};
use super::{is_root, json_of, run, stderr};
use std::path::PathBuf;
use std::process::Command;

/// Embox's TAP: the C engine built for a board (16 sessions and 4 spare
/// slots for Busy refusals, 8 sessions from one address at most:
/// c-responder/a9/embox/smr_embox.h).
const EMBOX: Exposed = Exposed {
    tap: "smlab7",
    host: "198.18.18.1",
    second: "198.18.18.3",
    slots: 20,
    most_held: 8,
};

/// The Linux guest's TAP: the POSIX build with `--max-sessions 16` (as
/// Embox's), its default 8 spare slots, 8 from one address at most.
const LINUX_A9: Exposed = Exposed {
    tap: "smlab8",
    host: "198.18.19.1",
    second: "198.18.19.3",
    slots: 24,
    most_held: 8,
};

const EMBOX_ADDR: &str = "198.18.18.2:24680";
const LINUX_ADDR: &str = "198.18.19.2:24680";
const LINUX_RT_ADDR: &str = "198.18.19.2:24681";

/// Against one system: ping (payload checked), rr, crr, udp-burst.
fn measure(label: &str, addr: &str) {
    let ping = run(&["ping", addr, "-c", "200", "--json"]);
    assert!(ping.status.success(), "{label} ping: {}", stderr(&ping));
    let r = &json_of(&ping)["results"][0];
    assert_eq!(
        (r["received"].as_u64(), r["mismatched"].as_u64()),
        (Some(200), Some(0)),
        "{r}"
    );
    let rr = run(&["rr", addr, "--sizes", "1:1K,64:64", "-n", "50", "--json"]);
    assert!(rr.status.success(), "{label} rr: {}", stderr(&rr));
    assert_eq!(json_of(&rr)["results"].as_array().map(Vec::len), Some(2));
    let crr = run(&["crr", addr, "-n", "30", "--json"]);
    assert!(crr.status.success(), "{label} crr: {}", stderr(&crr));
    let burst = run(&["udp-burst", addr, "--bursts", "1,16", "-n", "5", "--json"]);
    assert!(burst.status.success(), "{label} udp-burst: {}", stderr(&burst));
    let one = &json_of(&burst)["results"][0];
    assert_eq!(one["whole_rounds"], 5, "{label}: {one}");
}

/// Bulk TCP into a guest: 64 KiB requests, each answered, and not one
/// segment retransmitted (a frame the emulated LAN9118 dropped would cost
/// a retransmission and a timeout of 200 ms to seconds).
fn bulk_in(label: &str, addr: &str) {
    let rr = run(&["rr", addr, "--sizes", "64K:64K", "-n", "40", "--json"]);
    assert!(rr.status.success(), "{label} rr 64K:64K: {}", stderr(&rr));
    let row = &json_of(&rr)["results"][0];
    assert_eq!(row["samples"], 40, "{label}: {row}");
    assert_eq!(row["retransmits"], 0, "{label}: the client's TCP retransmitted: {row}");
}

/// Embox's driver stamps: a ping asking for the stamp block gets the
/// board's stack in and stack out for every exchange (the receive stamp
/// of each request, the send stamp of all but the last reply), and the
/// parts still add up to each round trip.
fn embox_split(addr: &str) {
    let out = run(&["ping", addr, "-c", "200", "--size", "128", "--timestamps", "--json"]);
    assert!(out.status.success(), "ping --timestamps: {}", stderr(&out));
    let doc = json_of(&out);
    let t = &doc["results"][0]["split_us"];
    assert_eq!(
        (t["samples"].as_u64(), t["unbalanced"].as_u64()),
        (Some(200), Some(0)),
        "{t}"
    );
    assert_eq!(t["responder_stack_in"]["count"], 200, "{t}");
    assert_eq!(t["responder_stack_out"]["count"], 199, "{t}");
    let (stack_in, app) = (
        t["responder_stack_in"]["p50"].as_f64().unwrap(),
        t["responder_app"]["p50"].as_f64().unwrap(),
    );
    assert!(stack_in > 0.0 && app > 0.0, "{t}");
}

/// Embox and Linux on one emulated Cortex-A9: see the file's doc.
#[test]
fn lab_a9_embox_and_linux_boot_measure_down() {
    let name = "lab_a9_embox_and_linux_boot_measure_down";
    if std::env::var_os("STACKMETER_EMBOX_SRC").is_none() {
        return crate::missing(
            name,
            "Embox's source is not given (STACKMETER_EMBOX_SRC; docs/lab.md, \"Embox and Linux on one Cortex-A9\")",
        );
    }
    if let Ok(why) = std::env::var("STACKMETER_MISSING_A9") {
        return crate::missing(name, &why);
    }
    if !is_root() || !std::path::Path::new("/dev/net/tun").exists() {
        return crate::missing(name, "needs root and /dev/net/tun");
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../c-responder");
    let built = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(&dir)
        .args(["embox", "linux-a9"])
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "make embox linux-a9: {}{}",
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
    let state = std::env::temp_dir().join(format!("stackmeter-lab-a9-test-{}", std::process::id()));
    let lab = |args: &[&str]| {
        super::stackmeter()
            .arg("lab")
            .args(args)
            .env("STACKMETER_LAB_DIR", &state)
            .env("STACKMETER_RESPONDER_DIR", &dir)
            .output()
            .unwrap()
    };
    let up = lab(&["up", "embox", "linux-a9"]);
    let recorded = std::fs::read_to_string(state.join("state")).unwrap_or_default();
    let pids: Vec<String> = recorded
        .lines()
        .filter_map(|l| l.strip_prefix("pid ").and_then(|p| p.split(' ').next()))
        .map(str::to_string)
        .collect();
    let console = |label: &str| std::fs::read_to_string(state.join(format!("{label}.console"))).unwrap_or_default();
    let result = std::panic::catch_unwind(|| {
        assert!(
            up.status.success(),
            "lab up embox linux-a9: {}\nembox:\n{}\nlinux-a9:\n{}",
            stderr(&up),
            console("embox"),
            console("linux-a9")
        );
        let out = String::from_utf8(up.stdout.clone()).unwrap();
        let want = format!("embox={EMBOX_ADDR}\nlinux-a9={LINUX_ADDR}\nlinux-a9-rt={LINUX_RT_ADDR}");
        assert_eq!(out.trim(), want);
        assert_eq!(stderr(&up).matches("first Welcome").count(), 2, "{}", stderr(&up));
        for (label, addr) in [
            ("embox", EMBOX_ADDR),
            ("linux-a9", LINUX_ADDR),
            ("linux-a9-rt", LINUX_RT_ADDR),
        ] {
            measure(label, addr);
        }
        embox_split(EMBOX_ADDR);
        wire_vectors("embox", EMBOX_ADDR);
        wire_vectors("linux-a9", LINUX_ADDR);
        let st = String::from_utf8(lab(&["status"]).stdout).unwrap();
        assert_eq!(st.matches(" answers").count(), 3, "{st}");
        for (label, addr) in [("embox", EMBOX_ADDR), ("linux-a9", LINUX_ADDR)] {
            bulk_in(label, addr);
        }
        hostile(EMBOX_ADDR, &EMBOX);
        hostile(LINUX_ADDR, &LINUX_A9);
        // Read after all of it: one boot each, no panic, the limits asked for.
        let (e, l) = (console("embox"), console("linux-a9"));
        assert_eq!(e.matches("info: listening on udp").count(), 1, "embox console:\n{e}");
        assert!(
            e.contains("limits: 16 sessions, 8 from one address"),
            "embox console:\n{e}"
        );
        assert_eq!(l.matches("linux-a9: eth0").count(), 1, "linux-a9 console:\n{l}");
        assert!(
            !l.contains("panic") && !e.contains("panic"),
            "embox:\n{e}\nlinux-a9:\n{l}"
        );
    });
    let down = lab(&["down"]);
    assert!(down.status.success(), "lab down: {}", stderr(&down));
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    for tap in [EMBOX.tap, LINUX_A9.tap] {
        let show = Command::new("ip").args(["link", "show", tap]).output().unwrap();
        assert!(!show.status.success(), "{tap} still exists");
    }
    assert_eq!(pids.len(), 2, "two QEMUs recorded: {recorded}");
    for pid in &pids {
        assert!(!alive(pid), "QEMU {pid} still runs");
    }
    assert!(!state.exists(), "state left in {}", state.display());
}
