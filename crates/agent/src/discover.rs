//! Where the peer list comes from, and keeping it current: the peers file
//! (read at the start, then again whenever its text changes, looked at
//! every second) or every address one DNS name resolves to (`--peers-dns`,
//! such as a Kubernetes headless Service; resolved again every 30 s).
//! Each new list goes through `peers::without_self` and into the mesh.
//!
//! At the start a peers file that cannot be read or has a bad line stops
//! the agent (its one line names the file and the line). Later, the same
//! faults are one warning line and the agent keeps the list it had: a
//! half-written file never empties the mesh. A name that does not resolve
//! is one warning line, at the start too: a headless Service has no
//! address until its pods are ready, this agent's own among them, so the
//! agent serves its responder and tries again.

use crate::ctx::Ctx;
use crate::error::PeersFile;
use crate::mesh::lock;
use crate::peers::PeerSource;
use crate::peers::{self, Peer};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How often the peers file is looked at.
pub const FILE_EVERY: Duration = Duration::from_secs(1);

/// How often a `--peers-dns` name is resolved again.
pub const DNS_EVERY: Duration = Duration::from_secs(30);

/// Whether `ip` is an address of this host: a socket can be bound to it.
pub fn is_local(ip: IpAddr) -> bool {
    UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// Reads and parses the peers file (the start-up read).
pub fn read_file(path: &Path) -> Result<(String, Vec<Peer>), PeersFile> {
    let text = std::fs::read_to_string(path).map_err(|err| PeersFile::Read { path: path.into(), err })?;
    let peers = peers::parse(&text).map_err(|err| PeersFile::Line { path: path.into(), err })?;
    Ok((text, peers))
}

/// Makes `found` the mesh's pairs (less this agent itself), with a line
/// for what changed.
pub(crate) fn apply(ctx: &Ctx, found: Vec<Peer>, from: &str) {
    let (keep, left) = peers::without_self(found, ctx.listen, is_local);
    {
        let mut last = lock(&ctx.left_out);
        if *last != left {
            for (p, why) in &left {
                crate::log::info(&format!("peer {} from {from}: {}", p.addr, why.describe()));
            }
            *last = left;
        }
    }
    let (added, removed) = ctx.mesh.set(&keep, &ctx.plan, &ctx.metrics);
    if added.is_empty() && removed.is_empty() {
        return;
    }
    let mut line = format!("peers: {} from {from}", keep.len());
    if !added.is_empty() {
        line.push_str(&format!("; added {}", added.join(", ")));
    }
    if !removed.is_empty() {
        line.push_str(&format!("; removed {}", removed.join(", ")));
    }
    crate::log::info(&line);
}

/// Runs until the stop, keeping the mesh's list current. `text` is the
/// peers file as read at the start.
pub(crate) fn run(ctx: Arc<Ctx>, source: PeerSource, text: String) {
    match source {
        PeerSource::File(path) => file(&ctx, &path, text),
        PeerSource::Dns { name, port } => dns(&ctx, &name, port),
    }
}

fn file(ctx: &Ctx, path: &Path, mut last: String) {
    let from = path.display().to_string();
    let mut complained: Option<String> = None;
    while !ctx.stop.sleep(FILE_EVERY) {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                let msg = format!("cannot read: {e}");
                if complained.as_ref() != Some(&msg) {
                    crate::log::warn(&format!(
                        "--peers {from}: {msg}; keeping the {} peers read before",
                        ctx.mesh.pairs().len()
                    ));
                    complained = Some(msg);
                }
                continue;
            }
        };
        if text == last {
            continue;
        }
        last = text;
        match peers::parse(&last) {
            Ok(found) => {
                complained = None;
                apply(ctx, found, &from);
            }
            Err(e) => {
                crate::log::warn(&format!(
                    "--peers {from}: {e}; keeping the {} peers read before",
                    ctx.mesh.pairs().len()
                ));
                complained = Some(e.to_string());
            }
        }
    }
}

fn dns(ctx: &Ctx, name: &str, port: u16) {
    let from = format!("{name}:{port}");
    let mut complained: Option<String> = None;
    loop {
        match (name, port).to_socket_addrs() {
            Ok(addrs) => {
                let mut found: Vec<SocketAddr> = addrs.collect();
                found.sort();
                found.dedup();
                if complained.take().is_some() {
                    crate::log::info(&format!("--peers-dns {from}: resolves again"));
                }
                let found = found.into_iter().map(|addr| Peer { name: None, addr }).collect();
                apply(ctx, found, &from);
            }
            Err(e) => {
                let msg = e.to_string();
                if complained.as_ref() != Some(&msg) {
                    crate::log::warn(&format!(
                        "--peers-dns {from}: the name does not resolve ({msg}); keeping the {} peers known, trying again every {} s",
                        ctx.mesh.pairs().len(),
                        DNS_EVERY.as_secs()
                    ));
                    complained = Some(msg);
                }
            }
        }
        if ctx.stop.sleep(DNS_EVERY) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_local_and_a_documentation_address_is_not() {
        assert!(is_local("127.0.0.1".parse().unwrap()));
        assert!(!is_local("192.0.2.1".parse().unwrap()));
    }
}
