//! What every program of this crate shares: its object as the build left
//! it (or why not), the error of every step, and reading a per-CPU
//! counter. The objects themselves are build.rs's list, written out.

/// Why a BPF program could not be had.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// This binary was built without the program (no clang or bpftool).
    #[error("{what} is not in this stackmeter: its BPF program was not built ({why}); install clang, libbpf-dev and bpftool (Debian) and build again")]
    NotBuilt {
        /// The feature ("the XDP responder").
        what: &'static str,
        /// Why the build left it out.
        why: &'static str,
    },
    /// Loading BPF programs needs privileges this process lacks.
    #[error("{0} needs root (or CAP_BPF with CAP_NET_ADMIN and CAP_PERFMON)")]
    Permission(&'static str),
    /// The kernel refused a step: what, and its words.
    #[error("{what}: {why}")]
    Kernel {
        /// The step ("loading the XDP program").
        what: String,
        /// The kernel's or aya's message.
        why: String,
    },
}

impl Error {
    /// A program or map missing from an object (a build gone wrong).
    pub(crate) fn kernel_missing(name: &str) -> Error {
        Error::Kernel {
            what: format!("loading {name}"),
            why: "not in the object".into(),
        }
    }

    /// A failed step, with aya's error (and its cause) as the reason.
    pub(crate) fn kernel(what: impl Into<String>, e: impl std::error::Error) -> Error {
        let mut why = e.to_string();
        let mut src = e.source();
        while let Some(s) = src {
            why = format!("{why}: {s}");
            src = s.source();
        }
        Error::Kernel { what: what.into(), why }
    }
}

/// One program's object as built, or why it was not.
pub(crate) struct Object {
    /// The ELF object clang made (empty when not built).
    pub bytes: &'static [u8],
    /// Why it was not built (empty when it was).
    pub why_not: &'static str,
    /// What it is, for messages.
    pub what: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/objects.rs"));

impl Object {
    /// The object's bytes, after checking that it was built and that this
    /// process may load it.
    pub(crate) fn bytes(&self) -> Result<&'static [u8], Error> {
        if self.bytes.is_empty() {
            return Err(Error::NotBuilt {
                what: self.what,
                why: self.why_not,
            });
        }
        if stackmeter_sys::uid() != 0 {
            return Err(Error::Permission(self.what));
        }
        Ok(self.bytes)
    }
}

/// Program `name` of `ebpf` as its kind `P` (Xdp, SkSkb, TracePoint...),
/// not yet loaded; a missing or mistyped program is the object's fault.
pub(crate) fn program<'a, P>(ebpf: &'a mut aya::Ebpf, name: &str) -> Result<&'a mut P, Error>
where
    &'a mut P: TryFrom<&'a mut aya::programs::Program, Error = aya::programs::ProgramError>,
{
    ebpf.program_mut(name)
        .ok_or_else(|| Error::kernel_missing(name))?
        .try_into()
        .map_err(|e| Error::kernel(format!("loading {name}"), e))
}

/// The sum over CPUs of slot `i` of per-CPU array `name` of `ebpf`.
pub(crate) fn per_cpu_sum(ebpf: &aya::Ebpf, name: &str, i: u32) -> Result<u64, Error> {
    let map = ebpf.map(name).ok_or_else(|| Error::Kernel {
        what: format!("reading map {name}"),
        why: "not in the program".into(),
    })?;
    let array: aya::maps::PerCpuArray<_, u64> =
        aya::maps::PerCpuArray::try_from(map).map_err(|e| Error::kernel(format!("reading map {name}"), e))?;
    let values = array
        .get(&i, 0)
        .map_err(|e| Error::kernel(format!("reading map {name}"), e))?;
    Ok(values.iter().sum())
}
