//! An object session's answers: a listing, an object, or an error response.

use super::state::{Phase, Session};
use crate::machine::objects::{Asked, Catalogue, Lookup};
use crate::machine::registry::Registry;
use crate::machine::step::{Outgoing, Source};
use crate::machine::text::Reason;
use crate::objects::{self as obj, Response};
use core::fmt::Write;
use core::ops::Deref;

impl<R: Deref<Target = Registry>> Session<R> {
    /// Answers a complete object request.
    pub(super) fn answer<C: Catalogue + ?Sized>(&mut self, asked: Asked, objects: &mut C) {
        let Phase::Objects(req, body) = &mut self.phase else {
            return;
        };
        let e = match asked {
            Asked::Bad(e) => e,
            Asked::List => {
                self.requests += 1;
                let len = objects.list_len();
                self.out.set(&Response { code: 0, len }.emit());
                *body = (len > 0).then_some(Outgoing {
                    source: Source::List,
                    offset: 0,
                    len,
                });
                return;
            }
            Asked::Fetch => {
                self.requests += 1;
                let mut why = Reason::new();
                let (code, text) = match objects.fetch(req.name(), &mut why) {
                    Lookup::Found { index, size } => {
                        self.out.set(&Response { code: 0, len: size }.emit());
                        *body = (size > 0).then_some(Outgoing {
                            source: Source::Object(index),
                            offset: 0,
                            len: size,
                        });
                        return;
                    }
                    Lookup::NotFound => {
                        let mut r = Reason::of(format_args!("no object named '"));
                        r.push_lossy(req.name());
                        let _ = r.write_str("'");
                        (obj::CODE_NOT_FOUND, r)
                    }
                    Lookup::Unreadable => (
                        obj::CODE_INTERNAL,
                        Reason::of(format_args!("cannot read the object: {why}")),
                    ),
                };
                self.error_response(code, &text);
                return;
            }
        };
        // The framing is lost: answer, then close.
        let text = Reason::of(format_args!("{e}"));
        self.abort(format_args!("bad request: {e}"));
        self.error_response(obj::CODE_BAD_REQUEST, &text);
    }

    pub(super) fn error_response(&mut self, code: u8, text: &Reason) {
        let t = text.as_str().as_bytes();
        self.out.set(
            &Response {
                code,
                len: t.len() as u64,
            }
            .emit(),
        );
        self.out.push(t);
    }
}
