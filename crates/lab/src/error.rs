//! What can go wrong in the lab, as one enum: every function of the crate
//! returns it, `up` and `down` hand it to the binary (exit 1, one line),
//! and `up` turns the failure of one optional stack into its note
//! (`LABEL: not started: WHY`) while the rest come up.

use std::io;
use std::path::PathBuf;

/// Why the lab, or one stack of it, could not be brought up or down.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// Not root: TAP devices, veth pairs and AF_XDP need it.
    #[error("stackmeter lab needs root (it creates TAP devices); run it with sudo")]
    NotRoot,
    /// A lab is up already (its state folder holds a state file).
    #[error("a lab is already up ({}); run `stackmeter lab down` first", .0.display())]
    AlreadyUp(PathBuf),
    /// A word of `lab up` that names no board (clap checks the words
    /// first; the library checks again).
    #[error("lab up: no board or group '{0}' (stackmeter lab boards lists them)")]
    NoSuchBoard(String),
    /// `--secret-file` with a set that has no firmware to provision.
    #[error("lab up: a secret is provisioned into a firmware only (lab up mcu|mcu-smoltcp --secret-file FILE)")]
    SecretWithoutFirmware,
    /// A program or firmware of the lab is not built.
    #[error("{} not found; build it with `{make}` (or set STACKMETER_RESPONDER_DIR)", path.display())]
    NotBuilt {
        /// Where it was looked for.
        path: PathBuf,
        /// The command that builds it.
        make: &'static str,
    },
    /// lwip-xdp is not built (it needs two libraries the rest do not).
    #[error("{} not built (make -C c-responder xdp; it needs libxdp-dev and libbpf-dev)", .0.display())]
    XdpNotBuilt(PathBuf),
    /// QEMU is not installed.
    #[error("{0} not found; install it (Debian: apt-get install qemu-system-arm)")]
    NoQemu(&'static str),
    /// A command the lab runs (`ip`, `kill`) failed, with its own words.
    #[error("{command} failed: {why}")]
    Command {
        /// The command line.
        command: String,
        /// Its stderr, or why it could not run.
        why: String,
    },
    /// A responder or QEMU could not be started.
    #[error("cannot start {program}: {err}")]
    Spawn {
        /// Its name.
        program: String,
        /// Why.
        err: io::Error,
    },
    /// A file of the lab's state folder (or /dev/urandom) could not be
    /// read or written.
    #[error("{}: {err}", path.display())]
    File {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        err: io::Error,
    },
    /// A firmware's subnet is already on a device of this machine.
    #[error("{net} is already in use on {dev}")]
    SubnetInUse {
        /// The /24.
        net: String,
        /// The device holding it.
        dev: String,
    },
    /// A stack did not answer; `why` is the probe's last error, with the
    /// responder's own last error line where it logged one.
    #[error("no answer at {addr}: {why}")]
    NoAnswer {
        /// Where it was asked.
        addr: String,
        /// Why not.
        why: String,
    },
    /// A firmware did not boot: QEMU exited, the firmware stopped, or no
    /// Welcome came in time (the console's or QEMU's words).
    #[error("{0}")]
    Boot(String),
    /// Ctrl-C while it waited.
    #[error("interrupted")]
    Interrupted,
    /// `up` failed: what it made was removed.
    #[error("lab up: {0} (everything made so far was removed)")]
    Up(Box<LabError>),
    /// Not one stack came up; each one's note.
    #[error("no stack came up ({})", .0.join("; "))]
    NothingUp(Vec<String>),
}

impl LabError {
    /// A failed write or read of `path`.
    pub(crate) fn file(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> LabError {
        let path = path.into();
        move |err| LabError::File { path, err }
    }
}
