//! Object mode's input: LIST and FETCH requests assembled from the byte
//! stream, and the [`Catalogue`] a driver implements so that the objects
//! themselves (files, buffers) stay on its side.
//!
//! A request is 4 bytes of head, then a name for FETCH. The reader asks for
//! the rest of the head, then the rest of the name, so a driver reading at
//! most that never takes bytes of the next request a client pipelined; a
//! driver that hands over more gets told how many were taken.

use super::text::Reason;
use crate::objects::{Op, Request, RequestError, MAX_NAME_LEN, REQUEST_LEN};

/// The objects a responder serves, as the machine needs them: the LIST
/// body's length and a lookup by name. The driver implements it and sends
/// the bytes ([`crate::machine::Source::List`] and
/// [`crate::machine::Source::Object`]).
pub trait Catalogue {
    /// Length of the LIST body (count and entries).
    fn list_len(&self) -> u64;

    /// Looks `name` up, byte for byte as the catalogue lists it (never
    /// turned into a path), and makes the object ready to send. For an
    /// object that is listed but cannot be served now (a file gone or
    /// shrunk), writes why into `why` and returns [`Lookup::Unreadable`].
    fn fetch(&mut self, name: &[u8], why: &mut Reason) -> Lookup;
}

/// What [`Catalogue::fetch`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The object: its catalogue index and size (the body length sent).
    Found {
        /// Catalogue index.
        index: u32,
        /// Bytes.
        size: u64,
    },
    /// No object of that name (`NotFound`; the session goes on).
    NotFound,
    /// Listed but not readable now (`Internal`; the session goes on).
    Unreadable,
}

/// A catalogue with nothing in it, for drivers without object mode.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObjects;

impl Catalogue for NoObjects {
    fn list_len(&self) -> u64 {
        4
    }

    fn fetch(&mut self, _: &[u8], _: &mut Reason) -> Lookup {
        Lookup::NotFound
    }
}

/// A complete request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Asked {
    /// LIST.
    List,
    /// FETCH of the name in [`RequestReader::name`].
    Fetch,
    /// Not a valid request: answer `BadRequest` and close.
    Bad(RequestError),
}

/// The request being assembled.
#[derive(Clone)]
pub struct RequestReader {
    head: [u8; REQUEST_LEN],
    got: u8,
    /// The parsed head, while its name is read.
    request: Option<Request>,
    name: [u8; MAX_NAME_LEN],
    name_got: u16,
    /// The last request is complete (its name stays readable until the
    /// next byte comes).
    done: bool,
}

impl RequestReader {
    pub const fn new() -> RequestReader {
        RequestReader {
            head: [0; REQUEST_LEN],
            got: 0,
            request: None,
            name: [0; MAX_NAME_LEN],
            name_got: 0,
            done: false,
        }
    }

    /// Bytes read of the request so far (0 between requests).
    pub fn got(&self) -> usize {
        if self.done {
            0
        } else {
            self.got as usize + self.name_got as usize
        }
    }

    /// Bytes to read next: what is missing of the head, or of the name.
    pub fn want(&self) -> usize {
        match self.request {
            _ if self.done => REQUEST_LEN,
            Some(r) => (r.name_len - self.name_got) as usize,
            None => REQUEST_LEN - self.got as usize,
        }
    }

    /// The name of the FETCH just completed.
    pub fn name(&self) -> &[u8] {
        &self.name[..self.name_got as usize]
    }

    /// Takes bytes up to the end of the first request in `data`; returns
    /// how many it took and the request when complete.
    pub fn input(&mut self, data: &[u8]) -> (usize, Option<Asked>) {
        if self.done {
            self.got = 0;
            self.name_got = 0;
            self.done = false;
        }
        let mut at = 0;
        if self.request.is_none() {
            let got = self.got as usize;
            at = data.len().min(REQUEST_LEN - got);
            self.head[got..got + at].copy_from_slice(&data[..at]);
            self.got += at as u8;
            if (self.got as usize) < REQUEST_LEN {
                return (at, None);
            }
            match Request::parse(&self.head) {
                Err(e) => return (at, Some(Asked::Bad(e))),
                Ok(r) if r.op == Op::List => {
                    self.done = true;
                    return (at, Some(Asked::List));
                }
                Ok(r) => self.request = Some(r),
            }
        }
        let Some(r) = self.request else {
            return (at, None);
        };
        let got = self.name_got as usize;
        let n = (data.len() - at).min(r.name_len as usize - got);
        self.name[got..got + n].copy_from_slice(&data[at..at + n]);
        self.name_got += n as u16;
        at += n;
        if self.name_got < r.name_len {
            return (at, None);
        }
        self.request = None;
        self.done = true;
        (at, Some(Asked::Fetch))
    }
}
