//! An RTOS against Linux on one emulated board, end to end (root only; a
//! visible skip otherwise, a failure when CI is set), for both of the
//! lab's pairs: `stackmeter lab up embox linux-a9` (the UDP echo
//! write-up's two systems on a Cortex-A9, QEMU vexpress-a9 with a
//! LAN9118) and `lab up nuttx linux-virt` (Apache NuttX and Linux on a
//! Cortex-A7, QEMU virt with virtio-net). Each RTOS runs the C responder
//! built for it (an Embox command, a NuttX application), Linux runs it as
//! a static program (twice: at the default priority, and under
//! SCHED_FIFO on the next port). All four built from source by `make -C
//! c-responder` (Embox's and NuttX's sources from STACKMETER_EMBOX_SRC
//! and STACKMETER_NUTTX_SRC, which scripts/test reports when they are not
//! set), each pair booted together, then against each system: ping with
//! its payload check, rr at 1:1K and 64:64, crr, udp-burst, bulk TCP in
//! (rr 64K:64K with no segment retransmitted: on the Cortex-A9 the
//! guests' receive windows fit the LAN9118's receive FIFO), the protocol's
//! byte fixtures over the wire, and the hostile clients (which crashed
//! Embox da1cd94f until our build's fix of its LAN9118 driver, and hung
//! NuttX until our configuration let its network callbacks grow); the
//! RTOS's driver stamps split a ping's round trip; the consoles show one
//! boot and no panic; `lab down` leaves no QEMU, TAP device or state.

use super::lab::{alive, hostile, wire_vectors, Exposed};
use super::{is_root, json_of, run, stderr};
use std::path::PathBuf;
use std::process::Command;

/// One system of a pair: its label, address, TAP as the hostile clients
/// see it, and the words its console prints once when it is ready.
struct System {
    label: &'static str,
    addr: &'static str,
    exposed: Exposed,
    ready: &'static str,
}

/// An RTOS and Linux on one board, as `lab up` starts them.
struct Pair {
    /// The test's name (for a skip).
    test: &'static str,
    /// The RTOS's source, and where docs/lab.md says how to get it.
    source: (&'static str, &'static str),
    /// What scripts/test exports when it could not build the images.
    missing: &'static str,
    /// `make -C c-responder` targets, which are also `lab up`'s words.
    words: [&'static str; 2],
    rtos: System,
    /// What the RTOS's console says of its limits.
    limits: &'static str,
    linux: System,
    /// The Linux guest's real-time responder.
    linux_rt: (&'static str, &'static str),
}

/// Embox and Linux on QEMU's vexpress-a9. Embox: the C engine built for a
/// board (16 sessions and 4 spare slots for Busy refusals, 8 from one
/// address at most: c-responder/a9/embox/smr_embox.h); Linux: the POSIX
/// build with `--max-sessions 16`, its default 8 spare slots.
const A9: Pair = Pair {
    test: "lab_a9_embox_and_linux_boot_measure_down",
    source: ("STACKMETER_EMBOX_SRC", "Embox and Linux on one Cortex-A9"),
    missing: "STACKMETER_MISSING_A9",
    words: ["embox", "linux-a9"],
    rtos: System {
        label: "embox",
        addr: "198.18.18.2:24680",
        exposed: Exposed {
            tap: "smlab7",
            host: "198.18.18.1",
            second: "198.18.18.3",
            slots: 20,
            most_held: 8,
        },
        ready: "info: listening on udp",
    },
    limits: "limits: 16 sessions, 8 from one address",
    linux: System {
        label: "linux-a9",
        addr: "198.18.19.2:24680",
        exposed: Exposed {
            tap: "smlab8",
            host: "198.18.19.1",
            second: "198.18.19.3",
            slots: 24,
            most_held: 8,
        },
        ready: "linux-a9: eth0",
    },
    linux_rt: ("linux-a9-rt", "198.18.19.2:24681"),
};

/// NuttX and Linux on QEMU's virt. NuttX: the C engine with 16 sessions
/// and 4 spare slots, 8 from one address at most
/// (c-responder/virt/nuttx/app/smr_nuttx.h); Linux as on the Cortex-A9.
const VIRT: Pair = Pair {
    test: "lab_virt_nuttx_and_linux_boot_measure_down",
    source: ("STACKMETER_NUTTX_SRC", "NuttX and Linux on QEMU's virt board"),
    missing: "STACKMETER_MISSING_VIRT",
    words: ["nuttx", "linux-virt"],
    rtos: System {
        label: "nuttx",
        addr: "198.18.20.2:24680",
        exposed: Exposed {
            tap: "smlab9",
            host: "198.18.20.1",
            second: "198.18.20.3",
            slots: 20,
            most_held: 8,
        },
        ready: "nuttx: eth0",
    },
    limits: "16 sessions",
    linux: System {
        label: "linux-virt",
        addr: "198.18.21.2:24680",
        exposed: Exposed {
            tap: "smlab10",
            host: "198.18.21.1",
            second: "198.18.21.3",
            slots: 24,
            most_held: 8,
        },
        ready: "linux-virt: eth0",
    },
    linux_rt: ("linux-virt-rt", "198.18.21.2:24681"),
};

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

/// Bulk TCP into a guest: 64 KiB requests, each answered, and fewer
/// segments retransmitted than one in ten transactions: the emulated
/// LAN9118 dropping what its receive FIFO cannot hold cost many a
/// transaction (599 segments over 110 transactions into Embox, 4,585 into
/// Linux), where a guest that loses nothing still sees a tail-loss probe
/// now and then (Linux sends one when an ACK is late).
fn bulk_in(label: &str, addr: &str) {
    let rr = run(&["rr", addr, "--sizes", "64K:64K", "-n", "40", "--json"]);
    assert!(rr.status.success(), "{label} rr 64K:64K: {}", stderr(&rr));
    let row = &json_of(&rr)["results"][0];
    assert_eq!(row["samples"], 40, "{label}: {row}");
    let transactions = row["samples"].as_u64().unwrap() + row["warmup"].as_u64().unwrap();
    let retransmits = row["retransmits"].as_u64().expect("TCP_INFO read");
    assert!(
        retransmits * 10 < transactions,
        "{label}: the client's TCP retransmitted {retransmits} segments over {transactions} transactions: {row}"
    );
}

/// The RTOS's driver stamps: a ping asking for the stamp block gets the
/// board's stack in and stack out for every exchange (the receive stamp
/// of each request, the send stamp of all but the last reply), and the
/// parts still add up to each round trip.
fn driver_split(addr: &str) {
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
    boot_measure_down(&A9);
}

/// NuttX and Linux on QEMU's virt: see the file's doc.
#[test]
fn lab_virt_nuttx_and_linux_boot_measure_down() {
    boot_measure_down(&VIRT);
}

/// The pair built, booted together, measured, and taken down.
fn boot_measure_down(p: &Pair) {
    let (var, section) = p.source;
    if std::env::var_os(var).is_none() {
        return crate::missing(
            p.test,
            &format!("the RTOS's source is not given ({var}; docs/lab.md, \"{section}\")"),
        );
    }
    if let Ok(why) = std::env::var(p.missing) {
        return crate::missing(p.test, &why);
    }
    if !is_root() || !std::path::Path::new("/dev/net/tun").exists() {
        return crate::missing(p.test, "needs root and /dev/net/tun");
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../c-responder");
    let built = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(&dir)
        .args(p.words)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "make {}: {}{}",
        p.words.join(" "),
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
    let state = std::env::temp_dir().join(format!("stackmeter-lab-{}-test-{}", p.words[0], std::process::id()));
    let lab = |args: &[&str]| super::lab::lab_run(&state, &dir, args);
    let up = lab(&["up", p.words[0], p.words[1]]);
    let pids = super::lab::recorded_pids(&state);
    let console = |label: &str| std::fs::read_to_string(state.join(format!("{label}.console"))).unwrap_or_default();
    let (rtos, linux) = (&p.rtos, &p.linux);
    let result = std::panic::catch_unwind(|| {
        assert!(
            up.status.success(),
            "lab up {} {}: {}\n{}:\n{}\n{}:\n{}",
            p.words[0],
            p.words[1],
            stderr(&up),
            rtos.label,
            console(rtos.label),
            linux.label,
            console(linux.label)
        );
        let out = String::from_utf8(up.stdout.clone()).unwrap();
        let want = format!(
            "{}={}\n{}={}\n{}={}",
            rtos.label, rtos.addr, linux.label, linux.addr, p.linux_rt.0, p.linux_rt.1
        );
        assert_eq!(out.trim(), want);
        assert_eq!(stderr(&up).matches("first Welcome").count(), 2, "{}", stderr(&up));
        for (label, addr) in [(rtos.label, rtos.addr), (linux.label, linux.addr), p.linux_rt] {
            measure(label, addr);
        }
        driver_split(rtos.addr);
        wire_vectors(rtos.label, rtos.addr);
        wire_vectors(linux.label, linux.addr);
        let st = String::from_utf8(lab(&["status"]).stdout).unwrap();
        assert_eq!(st.matches(" answers").count(), 3, "{st}");
        for s in [rtos, linux] {
            bulk_in(s.label, s.addr);
            hostile(s.addr, &s.exposed);
        }
        // Read after all of it: one boot each, no panic, the limits asked for.
        let (r, l) = (console(rtos.label), console(linux.label));
        assert_eq!(r.matches(rtos.ready).count(), 1, "{} console:\n{r}", rtos.label);
        assert!(r.contains(p.limits), "{} console:\n{r}", rtos.label);
        assert_eq!(l.matches(linux.ready).count(), 1, "{} console:\n{l}", linux.label);
        assert!(
            !l.contains("panic") && !r.contains("panic"),
            "{}:\n{r}\n{}:\n{l}",
            rtos.label,
            linux.label
        );
    });
    let down = lab(&["down"]);
    assert!(down.status.success(), "lab down: {}", stderr(&down));
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    for tap in [rtos.exposed.tap, linux.exposed.tap] {
        let show = Command::new("ip").args(["link", "show", tap]).output().unwrap();
        assert!(!show.status.success(), "{tap} still exists");
    }
    assert_eq!(pids.len(), 2, "two QEMUs recorded: {pids:?}");
    for pid in &pids {
        assert!(!alive(pid), "QEMU {pid} still runs");
    }
    assert!(!state.exists(), "state left in {}", state.display());
}
