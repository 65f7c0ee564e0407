//! The proxy write-up's race on this host: a file server holding its ten
//! files (4 KiB to 8.6 MiB, 42.2 MiB a pass: the write-up's 60,300 KB/s
//! over 74 s for 50 clients fetching each twice) and each TCP proxy in
//! front of it on a port of its own, all on loopback and pinned to the
//! lab's CPU. The file server is this binary's `serve --objects-dir`
//! (object mode, every byte checked by `load`); the proxies are the
//! programs `make -C proxies` builds, each started with its own command
//! line ([`crate::boards::Proxy::args`]) and ready once an rr transaction
//! goes through it to the file server.

use crate::boards::{Board, Proxy, Runs};
use crate::error::LabError;
use crate::probe::wait_answers;
use crate::shell::{sh, spawn_pinned};
use crate::state::{record, state_dir};
use std::fs;
use std::path::Path;

/// The write-up's files: ten, 4 KiB to 8,800 KiB (44,244,992 bytes).
const FILES: [(&str, u64); 10] = [
    ("obj01-4K", 4 << 10),
    ("obj02-100K", 100 << 10),
    ("obj03-1M", 1 << 20),
    ("obj04-2560K", 2560 << 10),
    ("obj05-4M", 4 << 20),
    ("obj06-5M", 5 << 20),
    ("obj07-6M", 6 << 20),
    ("obj08-7M", 7 << 20),
    ("obj09-8M", 8 << 20),
    ("obj10-8800K", 8800 << 10),
];

/// Starts the file server (`files`, which every proxy needs and so comes
/// first) and the proxies of `boards`, each pinned to `cpu`; returns the
/// targets and, for each proxy that could not come up and was not
/// required (`all` of them, not one named by its own word), a line saying
/// why (the rest come up). The file server failing, a required proxy
/// failing, or Ctrl-C fails them all.
pub(crate) fn start(cpu: usize, boards: &[(&'static Board, bool)]) -> Result<(Vec<String>, Vec<String>), LabError> {
    let (mut lines, mut notes) = (Vec::new(), Vec::new());
    let Some((files, _)) = boards.iter().find(|(b, _)| b.runs == Runs::Files) else {
        return Ok((lines, notes));
    };
    let cpu_s = cpu.to_string();
    // Every connection costs a proxy two descriptors, and two of the
    // proxies stop accepting for good when they run out (proxies/README.md):
    // they inherit this process's limit, raised to the hard one.
    let _ = stackmeter_sys::raise_nofile();
    lines.push(file_server(files, &cpu_s)?);
    for &(b, required) in boards {
        let Runs::Proxy(p) = b.runs else { continue };
        match proxy(b, p, files, &cpu_s) {
            Ok(line) => lines.push(line),
            Err(why) if required || matches!(why, LabError::Interrupted) => return Err(why),
            Err(why) => notes.push(format!("{}: not started: {why}", b.label)),
        }
    }
    Ok((lines, notes))
}

/// The file server with the write-up's files, in the state folder.
fn file_server(b: &'static Board, cpu: &str) -> Result<String, LabError> {
    let dir = state_dir().join("files");
    write_files(&dir)?;
    let me = std::env::current_exe().map_err(|err| LabError::Spawn {
        program: "stackmeter serve".into(),
        err,
    })?;
    let addr = b.addr();
    let args = [
        "serve",
        "--listen",
        &addr.to_string(),
        "--objects-dir",
        &dir.display().to_string(),
        "--quiet",
    ];
    let pid = spawn_pinned(&me, "stackmeter", b.label, cpu, &args)?;
    if let Err(e) = wait_answers(addr) {
        let _ = sh("kill", &["-KILL", &pid]);
        return Err(e);
    }
    let line = format!("{}={addr}", b.targets[0].0);
    record(&format!("target {line}"))?;
    Ok(line)
}

/// One proxy in front of the file server `files`.
fn proxy(b: &'static Board, p: Proxy, files: &Board, cpu: &str) -> Result<String, LabError> {
    let Some(bin) = b.path(Path::new("")).filter(|p| p.is_file()) else {
        return Err(LabError::NotBuilt {
            path: crate::boards::proxies_dir().join(b.image),
            make: b.make,
        });
    };
    let addr = b.addr();
    let args = p.args(addr, files.addr());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let pid = spawn_pinned(&bin, b.image, b.label, cpu, &args)?;
    if let Err(e) = wait_answers(addr) {
        let _ = sh("kill", &["-KILL", &pid]);
        return Err(e);
    }
    let line = format!("{}={addr}", b.label);
    record(&format!("target {line}"))?;
    Ok(line)
}

/// The write-up's files in `dir`: bytes of a fixed sequence (their
/// content matters to nobody; `load` checks each by the CRC-32 the
/// server's catalogue gives).
fn write_files(dir: &Path) -> Result<(), LabError> {
    fs::create_dir_all(dir).map_err(LabError::file(dir))?;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for (name, size) in FILES {
        let mut bytes = Vec::with_capacity(size as usize);
        while (bytes.len() as u64) < size {
            // xorshift64: fast, and no two files alike.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        bytes.truncate(size as usize);
        let path = dir.join(name);
        fs::write(&path, &bytes).map_err(LabError::file(&path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files are the write-up's: ten, 4 KiB to 8,800 KiB, about 42 MiB
    /// a pass.
    #[test]
    fn the_write_ups_files() {
        let total: u64 = FILES.iter().map(|f| f.1).sum();
        assert_eq!(total, 44_244_992);
        assert_eq!((FILES[0].1, FILES[9].1), (4096, 8800 * 1024));
    }
}
