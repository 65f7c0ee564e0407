//! Builds the portable C responder (`c-responder/src`, POSIX backend) next to
//! this crate's outputs, so `stackmeter suite` with no targets can compare
//! the Rust and C responders on a fresh machine after one `cargo run`.
//!
//! Best effort: without a C compiler the build goes on, with a warning, and
//! the suite compares two Rust responders instead (it says so when it runs).
//! The Makefile in `c-responder/` stays the way to build every other variant.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let src = manifest.join("../../c-responder/src");
    let files = ["smr.c", "smr_posix.c"];
    for f in files.iter().chain(["smr.h"].iter()) {
        println!("cargo:rerun-if-changed={}", src.join(f).display());
    }
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("stackmeter-responder");
    if !files.iter().all(|f| src.join(f).is_file()) {
        println!("cargo:warning=c-responder/src not found: the C responder is not built");
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c99", "-O2"])
        .arg(format!("-DSMR_VERSION=\"{}\"", env!("CARGO_PKG_VERSION")))
        .arg("-o")
        .arg(&out)
        .args(files.iter().map(|f| src.join(f)))
        .status();
    match status {
        Ok(s) if s.success() => println!("cargo:rustc-env=STACKMETER_C_RESPONDER_BUILT={}", out.display()),
        Ok(s) => println!("cargo:warning=the C responder did not build ({cc} exited with {s}); suite will compare two Rust responders"),
        Err(e) => println!("cargo:warning=no C compiler ({cc}: {e}); suite will compare two Rust responders"),
    }
}
