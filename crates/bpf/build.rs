//! Compiles the BPF programs in `bpf/` with clang (`-target bpf`) into
//! objects this crate carries inside the stackmeter binary, loaded at run
//! time with aya (src/lib.rs). The per-layer tracer also needs the
//! running kernel's types (`vmlinux.h`, dumped from its BTF by bpftool).
//!
//! Best effort, as the C responder's build: `cargo build` must work on a
//! machine without clang or bpftool (a developer's laptop, a cross build),
//! so a program that cannot be built is an empty object and the reason,
//! which the command that needs it prints in one line. `CLANG`, `BPFTOOL`
//! and `LLVM_STRIP` name other tools.
//!
//! [`PROGRAMS`] is the one list of the programs: the build writes it out
//! as `objects.rs` (one `Object` constant per program, and `ALL`), which
//! src/object.rs includes, so the crate names no program a second time.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The programs: source (in `bpf/`; the object and the constant are
/// named after it), whether it needs `vmlinux.h`, and what it is, for
/// messages.
const PROGRAMS: [(&str, bool, &str); 3] = [
    ("xdp_echo.bpf.c", false, "the XDP responder"),
    ("sockmap_echo.bpf.c", false, "the sockmap responder"),
    ("layers.bpf.c", true, "the per-layer tracer"),
];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let src = manifest.join("bpf");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed={}", src.display());
    for v in ["CLANG", "BPFTOOL", "LLVM_STRIP"] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let vmlinux = vmlinux(&out);
    let mut objects = String::from("// Written by build.rs from its PROGRAMS: one constant per program.\n");
    let mut all = Vec::new();
    for (source, needs_vmlinux, what) in PROGRAMS {
        let stem = source.trim_end_matches(".bpf.c");
        let obj = out.join(format!("{stem}.o"));
        let built = match (&vmlinux, needs_vmlinux) {
            (Err(why), true) => Err(why.clone()),
            _ => compile(&src.join(source), &obj, &out, &arch),
        };
        let why = match built {
            Ok(()) => String::new(),
            Err(why) => {
                println!("cargo:warning=BPF program {source} not built ({why})");
                let _ = std::fs::write(&obj, b"");
                why
            }
        };
        let name = stem.to_uppercase();
        objects.push_str(&format!(
            "/// {what}.\npub(crate) const {name}: Object = Object {{\n    \
             bytes: aya::include_bytes_aligned!(concat!(env!(\"OUT_DIR\"), \"/{stem}.o\")),\n    \
             why_not: {why:?},\n    what: {what:?},\n}};\n"
        ));
        all.push(format!("&{name}"));
    }
    objects.push_str(&format!(
        "/// Every program.\npub(crate) const ALL: [&Object; {}] = [{}];\n",
        all.len(),
        all.join(", ")
    ));
    std::fs::write(out.join("objects.rs"), objects).expect("OUT_DIR is writable");
}

/// `vmlinux.h` of the running kernel in `out`, from its BTF.
fn vmlinux(out: &Path) -> Result<(), String> {
    let btf = Path::new("/sys/kernel/btf/vmlinux");
    if !btf.exists() {
        return Err("this kernel has no BTF (/sys/kernel/btf/vmlinux)".into());
    }
    let bpftool = std::env::var("BPFTOOL").unwrap_or_else(|_| "bpftool".into());
    let dumped = Command::new(&bpftool)
        .args(["btf", "dump", "file"])
        .arg(btf)
        .args(["format", "c"])
        .output()
        .map_err(|e| format!("{bpftool}: {e} (Debian package bpftool)"))?;
    if !dumped.status.success() {
        return Err(format!(
            "{bpftool} btf dump failed: {}",
            String::from_utf8_lossy(&dumped.stderr).trim()
        ));
    }
    std::fs::write(out.join("vmlinux.h"), dumped.stdout).map_err(|e| format!("vmlinux.h: {e}"))
}

/// Compiles one program; `arch` is the target's (for the kernel's
/// register layout and the UAPI headers' folder).
fn compile(source: &Path, object: &Path, out: &Path, arch: &str) -> Result<(), String> {
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let (define, triple) = match arch {
        "x86_64" => ("x86", "x86_64-linux-gnu"),
        "aarch64" => ("arm64", "aarch64-linux-gnu"),
        other => return Err(format!("no BPF build for the {other} architecture")),
    };
    let status = Command::new(&clang)
        .args(["-O2", "-g", "-target", "bpf", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-D__TARGET_ARCH_{define}"))
        .arg("-I")
        .arg(source.parent().expect("bpf/ holds the sources"))
        .arg("-I")
        .arg(out)
        .arg("-idirafter")
        .arg(format!("/usr/include/{triple}"))
        .arg("-c")
        .arg(source)
        .arg("-o")
        .arg(object)
        .status()
        .map_err(|e| format!("{clang}: {e} (Debian packages clang and libbpf-dev)"))?;
    if !status.success() {
        return Err(format!("{clang} exited with {status}"));
    }
    // The debugging sections are most of an object; the BTF the loader
    // needs stays (llvm-strip -g keeps .BTF and .BTF.ext). Optional.
    let strip = std::env::var("LLVM_STRIP").unwrap_or_else(|_| "llvm-strip".into());
    let _ = Command::new(strip).arg("-g").arg(object).status();
    Ok(())
}
