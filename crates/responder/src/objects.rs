//! Object mode (session mode 16): the responder's catalogue and the
//! LIST/FETCH session, for many-client fetch tests through proxies (seed 003).
//!
//! The catalogue is built once at start: synthetic objects (the object
//! pattern, materialised once and shared read-only by every session) or the
//! regular files directly inside one directory. A FETCH names an object;
//! the name is only ever looked up in the catalogue, never turned into a
//! path, so no request can reach a file the catalogue did not list. Files
//! are opened with `O_NOFOLLOW | O_NONBLOCK` under the directory's canonical
//! path and must still be regular files of at least their listed size.

use crate::Shared;
use stackmeter_proto::objects::{self as obj, Entry, Op, Request, Response};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where the objects come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ObjectSource {
    /// No object mode: mode 16 sessions are refused as an unknown mode.
    #[default]
    Off,
    /// Synthetic objects of these sizes, content the object pattern.
    Synthetic(Vec<u64>),
    /// The regular files directly inside this directory, read-only.
    Dir(PathBuf),
}

/// The default synthetic catalogue: seed 003 served 10 files from 4 KB to
/// 8.8 MB; these four span the same range.
pub const DEFAULT_SIZES: [u64; 4] = [4 << 10, 64 << 10, 1 << 20, 8800 << 10];

/// Most bytes of synthetic objects a responder materialises.
pub const MAX_SYNTHETIC_BYTES: u64 = 1 << 30;

enum Content {
    Pattern(stackmeter_sys::AlignedBuf),
    File(PathBuf),
}

struct Object {
    size: u64,
    content: Content,
}

/// The catalogue every object session serves from.
pub(crate) struct Store {
    list_body: Vec<u8>,
    objects: Vec<Object>,
    by_name: HashMap<Vec<u8>, usize>,
}

/// A synthetic object's name: its size as the user writes it ("4K",
/// "8800K", "1M", "100"), with "-2", "-3" for repeated sizes.
fn size_name(size: u64) -> String {
    const K: u64 = 1024;
    if size >= K * K && size.is_multiple_of(K * K) {
        format!("{}M", size / (K * K))
    } else if size >= K && size.is_multiple_of(K) {
        format!("{}K", size / K)
    } else {
        size.to_string()
    }
}

impl Store {
    /// Builds the catalogue, or `None` for [`ObjectSource::Off`]. Errors name
    /// the directory or the size that failed.
    pub(crate) fn build(src: &ObjectSource, log: crate::Log) -> io::Result<Option<Store>> {
        let mut entries: Vec<(Vec<u8>, u64, u32, Content)> = Vec::new();
        match src {
            ObjectSource::Off => return Ok(None),
            ObjectSource::Synthetic(sizes) => {
                if sizes.is_empty() || sizes.len() > obj::MAX_OBJECTS {
                    return Err(invalid(format!(
                        "1 to {} object sizes, not {}",
                        obj::MAX_OBJECTS,
                        sizes.len()
                    )));
                }
                let total: u64 = sizes.iter().sum();
                if total > MAX_SYNTHETIC_BYTES {
                    return Err(invalid(format!(
                        "synthetic objects total {total} bytes, more than the {MAX_SYNTHETIC_BYTES} a responder holds"
                    )));
                }
                let mut seen: HashMap<String, usize> = HashMap::new();
                for (k, &size) in sizes.iter().enumerate() {
                    if size == 0 {
                        return Err(invalid("object size 0".into()));
                    }
                    let base = size_name(size);
                    let n = seen.entry(base.clone()).or_insert(0);
                    *n += 1;
                    let name = if *n == 1 { base } else { format!("{base}-{n}") };
                    let mut buf = stackmeter_sys::AlignedBuf::new(size as usize);
                    obj::fill(k as u64, 0, buf.bytes_mut());
                    entries.push((name.into_bytes(), size, 0, Content::Pattern(buf)));
                }
            }
            ObjectSource::Dir(dir) => {
                let dir = dir
                    .canonicalize()
                    .map_err(|e| io::Error::new(e.kind(), format!("objects directory {}: {e}", dir.display())))?;
                let mut names = Vec::new();
                let rd = std::fs::read_dir(&dir)
                    .map_err(|e| io::Error::new(e.kind(), format!("objects directory {}: {e}", dir.display())))?;
                for ent in rd {
                    let ent = ent?;
                    // symlink_metadata: a link is a link, never its target.
                    let md = ent.path().symlink_metadata()?;
                    if md.file_type().is_file() {
                        names.push(ent.file_name());
                    }
                }
                names.sort();
                if names.len() > obj::MAX_OBJECTS {
                    log.line(format_args!(
                        "objects: {} has {} files; serving the first {} by name",
                        dir.display(),
                        names.len(),
                        obj::MAX_OBJECTS
                    ));
                    names.truncate(obj::MAX_OBJECTS);
                }
                for name in names {
                    let path = dir.join(&name);
                    let mut f = open_object(&path)?;
                    let (size, crc) =
                        crc_of(&mut f).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
                    entries.push((name.as_bytes().to_vec(), size, crc, Content::File(path)));
                }
            }
        }
        let mut list_body = (entries.len() as u32).to_be_bytes().to_vec();
        let mut objects = Vec::with_capacity(entries.len());
        let mut by_name = HashMap::new();
        for (i, (name, size, crc32, content)) in entries.into_iter().enumerate() {
            let e = Entry {
                size,
                crc32,
                flags: if matches!(content, Content::Pattern(_)) {
                    obj::FLAG_PATTERN
                } else {
                    0
                },
                name: &name,
            };
            let at = list_body.len();
            list_body.resize(at + e.encoded_len(), 0);
            // Names come from the file system (at most 255 bytes on Linux)
            // or from size_name; an empty one cannot occur.
            if e.emit(&mut list_body[at..]).is_none() {
                return Err(invalid(format!("object name of {} bytes", name.len())));
            }
            by_name.insert(name, i);
            objects.push(Object { size, content });
        }
        Ok(Some(Store {
            list_body,
            objects,
            by_name,
        }))
    }

    /// Number of objects.
    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Opens a catalogue file: never through a symbolic link, never blocking on
/// a FIFO swapped in after the scan, and only if it is still a regular file.
fn open_object(path: &Path) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.file_type().is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(f)
}

fn crc_of(f: &mut File) -> io::Result<(u64, u32)> {
    let mut buf = vec![0u8; 256 << 10];
    let mut c = obj::crc32_init();
    let mut size = 0u64;
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Ok((size, obj::crc32_finish(c))),
            Ok(n) => {
                c = obj::crc32_update(c, &buf[..n]);
                size += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Runs an object session whose header has been checked: refuses it when
/// this responder has no catalogue, otherwise serves until the client closes.
pub(crate) fn run(mut stream: TcpStream, peer: SocketAddr, shared: &Shared) {
    let Some(store) = &shared.store else {
        let why = "object mode is not enabled on this responder (serve --objects or --objects-dir)";
        return crate::tcp::refuse(
            stream,
            peer,
            stackmeter_proto::status::Refusal::UnknownMode,
            why,
            shared,
        );
    };
    Shared::bump(&shared.counters.sessions);
    let idle = shared.cfg.idle_timeout;
    if stream
        .set_read_timeout(Some(idle))
        .and_then(|_| stream.set_write_timeout(Some(idle)))
        .is_err()
    {
        return;
    }
    if let Err(what) = session(&mut stream, store, shared) {
        Shared::bump(&shared.counters.aborted);
        shared
            .cfg
            .log
            .line(format_args!("{peer}: object session ended: {what}"));
    }
}

/// What one session did: its own counters, added to the totals at its end.
#[derive(Default)]
struct Tally {
    requests: u64,
    bytes: u64,
}

/// The data phase of an object session (the header has been checked).
fn session(stream: &mut TcpStream, store: &Store, shared: &Shared) -> Result<(), String> {
    let mut acc = [0u8; stackmeter_proto::status::STATUS_PREFIX_LEN];
    stackmeter_proto::status::emit_accepted(&mut acc);
    stream.write_all(&acc).map_err(|e| format!("cannot send status: {e}"))?;
    let mut tally = Tally::default();
    let mut file_buf: Option<stackmeter_sys::AlignedBuf> = None;
    let r = serve_requests(stream, store, &mut tally, &mut file_buf);
    let c = &shared.counters;
    c.object_requests
        .fetch_add(tally.requests, std::sync::atomic::Ordering::Relaxed);
    c.object_bytes
        .fetch_add(tally.bytes, std::sync::atomic::Ordering::Relaxed);
    r.map_err(|e| {
        format!(
            "{e} (after {} requests, {} object bytes sent)",
            tally.requests, tally.bytes
        )
    })
}

fn serve_requests(
    stream: &mut TcpStream,
    store: &Store,
    tally: &mut Tally,
    file_buf: &mut Option<stackmeter_sys::AlignedBuf>,
) -> Result<(), String> {
    loop {
        let mut head = [0u8; obj::REQUEST_LEN];
        match read_full(stream, &mut head) {
            Ok(0) => return Ok(()),
            Ok(n) if n < head.len() => return Err(format!("client vanished mid-request ({n} of 4 bytes)")),
            Ok(_) => {}
            Err(e) => return Err(format!("waiting for a request: {e}")),
        }
        let req = match Request::parse(&head) {
            Ok(r) => r,
            Err(e) => {
                // Framing is lost: answer, then end the session.
                let _ = send_error(stream, obj::CODE_BAD_REQUEST, &e.to_string());
                return Err(format!("bad request: {e}"));
            }
        };
        let mut name = [0u8; obj::MAX_NAME_LEN];
        let name = &mut name[..req.name_len as usize];
        match read_full(stream, name) {
            Ok(n) if n == name.len() => {}
            Ok(n) => return Err(format!("client vanished mid-name ({n} of {} bytes)", name.len())),
            Err(e) => return Err(format!("reading a name: {e}")),
        }
        tally.requests += 1;
        match req.op {
            Op::List => send_body(stream, &store.list_body)?,
            Op::Fetch => {
                let Some(&i) = store.by_name.get(&name[..]) else {
                    let shown = String::from_utf8_lossy(name);
                    send_error(stream, obj::CODE_NOT_FOUND, &format!("no object named '{shown}'"))?;
                    continue;
                };
                let o = &store.objects[i];
                match &o.content {
                    Content::Pattern(b) => send_body(stream, b.bytes())?,
                    Content::File(path) => {
                        let buf = file_buf.get_or_insert_with(|| stackmeter_sys::AlignedBuf::new(256 << 10));
                        send_file(stream, path, o.size, buf.bytes_mut())?
                    }
                }
                tally.bytes += o.size;
            }
        }
    }
}

/// Reads until `buf` is full or the peer closes; returns the bytes read.
fn read_full(stream: &mut TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match stream.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn send_error(stream: &mut TcpStream, code: u8, reason: &str) -> Result<(), String> {
    let mut n = reason.len().min(obj::MAX_REASON_LEN);
    while !reason.is_char_boundary(n) {
        n -= 1;
    }
    let head = Response { code, len: n as u64 }.emit();
    write_all2(stream, &head, &reason.as_bytes()[..n])
}

fn send_body(stream: &mut TcpStream, body: &[u8]) -> Result<(), String> {
    let head = Response {
        code: 0,
        len: body.len() as u64,
    }
    .emit();
    write_all2(stream, &head, body)
}

/// Sends a file object: its listed size, read in pieces. A file that has
/// become unreadable or shorter before the first byte is an error response
/// (the session goes on); one that shrinks mid-way ends the session (the
/// length was promised).
fn send_file(stream: &mut TcpStream, path: &Path, size: u64, buf: &mut [u8]) -> Result<(), String> {
    let f = open_object(path).and_then(|f| {
        let len = f.metadata()?.len();
        if len < size {
            Err(io::Error::other(format!("now {len} bytes, listed as {size}")))
        } else {
            Ok(f)
        }
    });
    let mut f = match f {
        Ok(f) => f,
        Err(e) => return send_error(stream, obj::CODE_INTERNAL, &format!("cannot read the object: {e}")),
    };
    let head = Response { code: 0, len: size }.emit();
    let mut pre: &[u8] = &head;
    let mut left = size;
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        let n = match f.read(&mut buf[..want]) {
            Ok(0) => return Err(format!("{} ended {left} bytes before its listed size", path.display())),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("reading {}: {e}", path.display())),
        };
        write_all2(stream, pre, &buf[..n])?;
        pre = &[];
        left -= n as u64;
    }
    Ok(())
}

/// Writes `a` then `b`, gathering both into each call (one `writev` for a
/// response head and the start of its body).
fn write_all2(stream: &mut TcpStream, mut a: &[u8], mut b: &[u8]) -> Result<(), String> {
    let total = (a.len() + b.len()) as u64;
    let mut sent = 0u64;
    while !a.is_empty() || !b.is_empty() {
        let r = if a.is_empty() {
            stream.write(b)
        } else {
            stream.write_vectored(&[IoSlice::new(a), IoSlice::new(b)])
        };
        match r {
            Ok(0) => return Err("client stopped taking data".into()),
            Ok(mut n) => {
                sent += n as u64;
                let p = n.min(a.len());
                a = &a[p..];
                n -= p;
                b = &b[n..];
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("sending a response ({sent} of {total} bytes): {e}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_names_and_limits() {
        assert_eq!(size_name(4096), "4K");
        assert_eq!(size_name(8800 << 10), "8800K");
        assert_eq!(size_name(1 << 20), "1M");
        assert_eq!(size_name(100), "100");
        let s = Store::build(&ObjectSource::Synthetic(vec![64, 64, 4096]), crate::Log::Quiet)
            .unwrap()
            .unwrap();
        assert_eq!(s.len(), 3);
        assert!(s.by_name.contains_key(&b"64-2"[..]));
        let c = obj::Catalogue::parse(&s.list_body).unwrap();
        let e = c.entries().nth(2).unwrap();
        assert_eq!((e.name, e.size, e.is_pattern()), (&b"4K"[..], 4096, true));
        assert!(Store::build(&ObjectSource::Synthetic(vec![2 << 30]), crate::Log::Quiet).is_err());
        assert!(Store::build(&ObjectSource::Off, crate::Log::Quiet).unwrap().is_none());
    }

    #[test]
    fn object_mode_without_a_catalogue_is_an_unknown_mode() {
        use std::io::{Read, Write};
        let cfg = crate::Config {
            log: crate::Log::Quiet,
            ..Default::default()
        };
        let r = crate::start(cfg).unwrap();
        let mut s = std::net::TcpStream::connect(r.local[0]).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        s.write_all(&obj::emit_header()).unwrap();
        let mut rec = Vec::new();
        s.read_to_end(&mut rec).unwrap();
        assert_eq!(rec[5], stackmeter_proto::status::Refusal::UnknownMode as u8);
        assert!(String::from_utf8_lossy(&rec[8..]).contains("object mode is not enabled"));
    }
}
