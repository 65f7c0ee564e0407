//! Builds the portable C responder (`c-responder/src`, POSIX backend) with
//! the target's C compiler (the `cc` crate finds it as it does for any
//! crate with C code, cross builds included) and hands the executable to
//! this crate, which carries it inside the stackmeter binary: `suite` with
//! no targets then compares the Rust and C responders after `cargo
//! install`, `cargo clean` or a cross build too (src/lib.rs).
//!
//! The flags and the source lists come from `c-responder/flags.mk`, the
//! file the Makefile and CMakeLists.txt read, so the three builds cannot
//! drift apart. Best effort: without a C compiler the build goes on with a
//! warning and an empty payload, and `suite` says loudly that it compares
//! two Rust responders. The Makefile in `c-responder/` stays the way to
//! build every other variant.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dir = manifest.join("../../c-responder");
    // Any source, header or flag change rebuilds (a directory is scanned
    // whole).
    println!("cargo:rerun-if-changed={}", dir.join("src").display());
    println!("cargo:rerun-if-changed={}", dir.join(FLAGS).display());
    // The compiler and its flags choose the binary too (cc's own
    // rerun lines are off, as it links nothing into this crate).
    for v in ["CC", "CFLAGS", "CROSS_COMPILE", "TARGET_CC", "TARGET_CFLAGS"] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let exe = out.join("stackmeter-responder");
    let payload = out.join("c-responder.bin");
    let bytes = match build(&dir, &exe) {
        Ok(()) => std::fs::read(&exe).unwrap_or_default(),
        Err(why) => {
            println!("cargo:warning=the C responder is not built ({why}); suite will compare two Rust responders");
            Vec::new()
        }
    };
    std::fs::write(&payload, bytes).expect("OUT_DIR is writable");
}

/// The file that holds the C flags and source lists, in `c-responder/`
/// (the Makefile and CMakeLists.txt read it too).
const FLAGS: &str = "flags.mk";

/// The words of `NAME = words` in the flags file, or an error naming it.
fn words<'a>(flags: &'a str, name: &str) -> Result<Vec<&'a str>, String> {
    flags
        .lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.trim_start().strip_prefix('=')))
        .map(|v| v.split_whitespace().collect())
        .ok_or_else(|| format!("{name} missing from c-responder/{FLAGS}"))
}

fn build(dir: &Path, exe: &Path) -> Result<(), String> {
    let flags = std::fs::read_to_string(dir.join(FLAGS)).map_err(|e| format!("c-responder/{FLAGS}: {e}"))?;
    let mut files = Vec::new();
    for list in ["SMR_ENGINE_SRC", "SMR_POSIX_SRC", "SMR_MAIN_SRC"] {
        files.extend(words(&flags, list)?.into_iter().map(|f| dir.join("src").join(f)));
    }
    if !files.iter().all(|f| f.is_file()) {
        return Err("c-responder/src not found".into());
    }
    // The Makefile's default build, without -Werror: a newer compiler's
    // new warning must not cost the binary its embedded responder.
    let mut cflags = words(&flags, "SMR_WARN")?;
    cflags.retain(|f| *f != "-Werror");
    cflags.extend(words(&flags, "SMR_OPT")?);
    let tool = cc::Build::new()
        .cargo_metadata(false)
        .try_get_compiler()
        .map_err(|e| format!("no C compiler: {e}"))?;
    let mut cmd = tool.to_command();
    cmd.args(&cflags)
        .arg(format!("-DSMR_VERSION=\"{}\"", env!("CARGO_PKG_VERSION")))
        .arg("-o")
        .arg(exe)
        .args(&files);
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{} exited with {s}", tool.path().display())),
        Err(e) => Err(format!("{}: {e}", tool.path().display())),
    }
}
