//! The BPF programs stackmeter loads into the Linux kernel, and the small
//! typed handles that load, attach and read them (with aya, a loader
//! written in Rust: no libbpf at run time):
//!
//! - [`xdp::XdpEcho`]: a responder inside the kernel's driver layer, the
//!   UDP echo of docs/protocol.md section 4 answered by an XDP program
//!   (`serve --in-kernel xdp`);
//! - [`sockmap::SockmapEcho`]: TCP data echoed inside the kernel by a
//!   sockmap's `sk_skb` verdict, the accepting application never reading
//!   a byte (`serve --in-kernel sockmap`);
//! - [`layers::Layers`]: raw tracepoints at each layer of a UDP round trip
//!   or a TCP transaction, one record per round trip to a ring buffer
//!   (`ping --layers`, `rr --layers`).
//!
//! The programs are C in `bpf/`, compiled by clang when this crate is
//! built (build.rs); a machine without clang builds stackmeter without
//! them, and asking for one is then the one-line [`Error::NotBuilt`].
//! Nothing is pinned: every program is attached through a link or to a
//! map that this process alone holds, so the kernel detaches and frees
//! all of it when the process ends, however it ends (kill -9 included).
//! Loading needs root (CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON).

pub mod layers;
mod object;
pub mod sockmap;
pub mod xdp;

pub use object::Error;

/// Which of the programs this binary lacks, and why (built without clang
/// or bpftool); none when it has them all.
pub fn not_built() -> Option<String> {
    let missing: Vec<String> = object::ALL
        .iter()
        .filter(|o| o.bytes.is_empty())
        .map(|o| format!("{}: {}", o.what, o.why_not))
        .collect();
    (!missing.is_empty()).then(|| format!("not built: {}", missing.join("; ")))
}
