//! Builds the portable C responder (`c-responder/src`, POSIX backend) with
//! the target's C compiler (the `cc` crate finds it as it does for any
//! crate with C code, cross builds included) and hands the executable to
//! the engine, which carries it inside the stackmeter binary: `suite` with
//! no targets then compares the Rust and C responders after `cargo
//! install`, `cargo clean` or a cross build too (engine/src/target.rs).
//!
//! Best effort: without a C compiler the build goes on with a warning and
//! an empty payload, and `suite` says loudly that it compares two Rust
//! responders. The Makefile in `c-responder/` stays the way to build every
//! other variant.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let src = manifest.join("../../c-responder/src");
    let files = [
        "smr.c",
        "smr_auth.c",
        "smr_posix.c",
        "smr_admit.c",
        "smr_args.c",
        "smr_knobs.c",
        "smr_log.c",
        "smr_stamps.c",
        "smr_main.c",
    ];
    // Any source or header change rebuilds (a directory is scanned whole).
    println!("cargo:rerun-if-changed={}", src.display());
    // The compiler and its flags choose the binary too (cc's own
    // rerun lines are off, as it links nothing into this crate).
    for v in ["CC", "CFLAGS", "CROSS_COMPILE", "TARGET_CC", "TARGET_CFLAGS"] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let exe = out.join("stackmeter-responder");
    let payload = out.join("c-responder.bin");
    let bytes = match build(&src, &files, &exe) {
        Ok(()) => std::fs::read(&exe).unwrap_or_default(),
        Err(why) => {
            println!("cargo:warning=the C responder is not built ({why}); suite will compare two Rust responders");
            Vec::new()
        }
    };
    std::fs::write(&payload, bytes).expect("OUT_DIR is writable");
}

fn build(src: &Path, files: &[&str], exe: &Path) -> Result<(), String> {
    if !files.iter().all(|f| src.join(f).is_file()) {
        return Err("c-responder/src not found".into());
    }
    let tool = cc::Build::new()
        .cargo_metadata(false)
        .try_get_compiler()
        .map_err(|e| format!("no C compiler: {e}"))?;
    let mut cmd = tool.to_command();
    cmd.args(["-std=c99", "-O2"])
        .arg(format!("-DSMR_VERSION=\"{}\"", env!("CARGO_PKG_VERSION")))
        .arg("-o")
        .arg(exe)
        .args(files.iter().map(|f| src.join(f)));
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{} exited with {s}", tool.path().display())),
        Err(e) => Err(format!("{}: {e}", tool.path().display())),
    }
}
