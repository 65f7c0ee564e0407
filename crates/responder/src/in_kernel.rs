//! The responders inside the Linux stack, as this crate offers them
//! beside its own: an XDP program that answers stackmeter's UDP echo at
//! the driver (next to a responder that serves the rest), and a sockmap
//! whose verdict program echoes TCP data without waking the application
//! (the kernel's twin of [`crate::plain_echo`]). The programs and their
//! handles are the `stackmeter-bpf` crate's; whoever starts responders
//! (the engine) starts these through here, so nothing above needs that
//! crate. Dropping a handle detaches its program, and the kernel frees
//! all of it when the process ends, however it ends.

pub use stackmeter_bpf::sockmap::{Counters as SockmapCounters, SockmapEcho};
pub use stackmeter_bpf::xdp::{Counters as XdpCounters, Mode as XdpMode, XdpEcho};
pub use stackmeter_bpf::{not_built, Error};
