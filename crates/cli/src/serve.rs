//! `stackmeter serve`: the responder the engine starts from the flags
//! (`crate::flags::serve`), kept alive until the process is
//! killed.

use crate::flags::serve::{start, ServeArgs};
use stackmeter_proto::auth::Key;

pub fn run(a: ServeArgs, secret: Option<Key>) -> i32 {
    match start(a, secret) {
        Ok(_responder) => loop {
            std::thread::park();
        },
        Err(e) => crate::out::error(e),
    }
}
