//! `stackmeter serve`: the responder its flags ask for, started by the
//! engine (`stackmeter_engine::serve`): the responder itself, kept alive
//! until the process is killed; with `--in-kernel xdp` an XDP program
//! beside it answers the UDP echo in the kernel, with `--in-kernel
//! sockmap` (or `--plain-echo`, its application twin) a plain TCP echo
//! replaces it. The in-kernel responders print their counters when SIGINT
//! or SIGTERM ends them; the kernel detaches their programs however the
//! process ends.

use crate::flags::serve::{spec, ServeArgs};
use crate::out::error;
use stackmeter_proto::auth::Key;

pub fn run(a: ServeArgs, secret: Option<Key>) -> i32 {
    let listen = a.listen.clone();
    let serving = match spec(a).and_then(|s| Ok(stackmeter_engine::serve::start(s, secret)?)) {
        Ok(s) => s,
        Err(e) => return error(e),
    };
    if let Some(line) = serving.started(&listen) {
        eprintln!("stackmeter serve: {line}");
    }
    match serving.wait() {
        Ok(counters) => {
            eprintln!("stackmeter serve: {counters}");
            0
        }
        Err(e) => error(e),
    }
}
