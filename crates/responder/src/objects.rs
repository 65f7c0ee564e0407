//! Object mode (session mode 16): the responder's catalogue, and the
//! [`Catalogue`] side of an object session (lookups and body bytes) for the
//! session machine, which parses the requests and answers them.
//!
//! The catalogue is built once at start: synthetic objects (the object
//! pattern, materialised once and shared read-only by every session) or the
//! regular files directly inside one directory. A FETCH names an object;
//! the name is only ever looked up in the catalogue, never turned into a
//! path, so no request can reach a file the catalogue did not list. Files
//! are opened with `O_NOFOLLOW | O_NONBLOCK` under the directory's canonical
//! path and must still be regular files of at least their listed size.

use crate::log::Log;
use stackmeter_proto::machine::{Catalogue, Lookup, Outgoing, Reason, Source};
use stackmeter_proto::objects::{self as obj, Entry};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read};
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

/// The default synthetic catalogue: the proxy-load write-up's file server
/// held 10 files from 4 KB to 8.8 MB; these four span the same range.
pub const DEFAULT_SIZES: [u64; 4] = [4 << 10, 64 << 10, 1 << 20, 8800 << 10];

/// Most bytes of synthetic objects a responder materialises.
pub use stackmeter_proto::limits::MAX_SYNTHETIC_BYTES;

enum Content {
    Pattern(stackmeter_sys::AlignedBuf),
    File(PathBuf),
}

struct Object {
    size: u64,
    content: Content,
}

/// The catalogue every object session serves from.
pub struct Objects {
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

impl Objects {
    /// Builds the catalogue, or `None` for [`ObjectSource::Off`]. Errors name
    /// the directory or the size that failed.
    pub fn build(src: &ObjectSource, log: Log) -> io::Result<Option<Objects>> {
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
        Ok(Some(Objects {
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

/// Bytes read from a file object per read call.
const FILE_CHUNK: usize = 256 << 10;

/// One session's view of the catalogue: lookups for the machine, and the
/// bytes of the body it is sending (a file is opened at its FETCH and read
/// piece by piece into a buffer of the session's own).
pub struct Files<'a> {
    store: Option<&'a Objects>,
    /// The file object being sent, with its path for messages.
    file: Option<(File, &'a Path)>,
    buf: Option<stackmeter_sys::AlignedBuf>,
    /// Object offset of `buf[0]`, and bytes of `buf` read from the file.
    at: u64,
    filled: usize,
}

impl<'a> Files<'a> {
    pub fn new(store: Option<&'a Objects>) -> Files<'a> {
        Files {
            store,
            file: None,
            buf: None,
            at: 0,
            filled: 0,
        }
    }

    /// The next bytes of body `b` (any prefix of what it names): a slice of
    /// the LIST body or a pattern object, or a piece of the file read now.
    /// An error is a file that became unreadable or shorter mid-way.
    pub fn bytes(&mut self, b: Outgoing) -> Result<&[u8], BodyError> {
        let Some(store) = self.store else {
            return Err(BodyError::NoCatalogue);
        };
        let want = b.len.min(usize::MAX as u64) as usize;
        let content = match b.source {
            Source::List => return Ok(piece(&store.list_body, b.offset, want)),
            Source::Object(i) => &store.objects[i as usize].content,
            Source::Payload => return Err(BodyError::NotAnObject),
        };
        match content {
            Content::Pattern(buf) => Ok(piece(buf.bytes(), b.offset, want)),
            Content::File(_) => self.file_piece(b.offset, want),
        }
    }

    /// Serves `offset` from the piece read last, or reads the next piece.
    fn file_piece(&mut self, offset: u64, want: usize) -> Result<&[u8], BodyError> {
        let Some((f, path)) = self.file.as_mut() else {
            return Err(BodyError::NoFile);
        };
        let buf = self
            .buf
            .get_or_insert_with(|| stackmeter_sys::AlignedBuf::new(FILE_CHUNK))
            .bytes_mut();
        let end = self.at + self.filled as u64;
        if offset < self.at || offset >= end {
            let n = want.min(buf.len());
            self.at = offset;
            self.filled = loop {
                match f.read(&mut buf[..n]) {
                    Ok(0) => {
                        return Err(BodyError::Shorter {
                            path: path.to_path_buf(),
                            want,
                        })
                    }
                    Ok(k) => break k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(BodyError::Read {
                            path: path.to_path_buf(),
                            err: e,
                        })
                    }
                }
            };
        }
        Ok(&buf[(offset - self.at) as usize..self.filled])
    }
}

/// Why a response body's bytes cannot be given; the session is aborted
/// with this line.
#[derive(Debug)]
pub enum BodyError {
    /// Object mode asked for with no catalogue (a driver's mistake).
    NoCatalogue,
    /// The payload asked for as an object (a driver's mistake).
    NotAnObject,
    /// A file object's bytes asked for with no file open.
    NoFile,
    /// The file ended before its listed size (it shrank since listing).
    Shorter {
        /// The file.
        path: PathBuf,
        /// Bytes still wanted.
        want: usize,
    },
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        err: io::Error,
    },
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::NoCatalogue => f.write_str("no catalogue"),
            BodyError::NotAnObject => f.write_str("payload is not an object"),
            BodyError::NoFile => f.write_str("no file open"),
            BodyError::Shorter { path, want } => {
                write!(f, "{} ended {want} bytes before its listed size", path.display())
            }
            BodyError::Read { path, err } => write!(f, "reading {}: {err}", path.display()),
        }
    }
}

/// At most `want` bytes of `all` from `offset`.
fn piece(all: &[u8], offset: u64, want: usize) -> &[u8] {
    let rest = &all[(offset as usize).min(all.len())..];
    &rest[..want.min(rest.len())]
}

impl Catalogue for Files<'_> {
    fn list_len(&self) -> u64 {
        self.store.map_or(0, |s| s.list_body.len() as u64)
    }

    fn fetch(&mut self, name: &[u8], why: &mut Reason) -> Lookup {
        let Some(store) = self.store else {
            return Lookup::NotFound;
        };
        let Some(&i) = store.by_name.get(name) else {
            return Lookup::NotFound;
        };
        let o = &store.objects[i];
        if let Content::File(path) = &o.content {
            match open_listed(path, o.size) {
                Ok(f) => {
                    self.file = Some((f, path));
                    self.filled = 0;
                }
                Err(e) => {
                    let _ = write!(why, "{e}");
                    return Lookup::Unreadable;
                }
            }
        }
        Lookup::Found {
            index: i as u32,
            size: o.size,
        }
    }
}

/// Opens a listed file for a FETCH: still a regular file (no link, no
/// FIFO swapped in) of at least its listed size.
fn open_listed(path: &Path, size: u64) -> io::Result<File> {
    let f = open_object(path)?;
    let len = f.metadata()?.len();
    if len < size {
        return Err(io::Error::other(format!("now {len} bytes, listed as {size}")));
    }
    Ok(f)
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
        let s = Objects::build(&ObjectSource::Synthetic(vec![64, 64, 4096]), Log::Quiet)
            .unwrap()
            .unwrap();
        assert_eq!(s.len(), 3);
        assert!(s.by_name.contains_key(&b"64-2"[..]));
        let c = obj::Catalogue::parse(&s.list_body).unwrap();
        let e = c.entries().nth(2).unwrap();
        assert_eq!((e.name, e.size, e.is_pattern()), (&b"4K"[..], 4096, true));
        assert!(Objects::build(&ObjectSource::Synthetic(vec![2 << 30]), Log::Quiet).is_err());
        assert!(Objects::build(&ObjectSource::Off, Log::Quiet).unwrap().is_none());
    }

    #[test]
    fn object_mode_without_a_catalogue_is_an_unknown_mode() {
        use std::io::{Read, Write};
        let cfg = crate::Config {
            log: Log::Quiet,
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
