//! Who the agent probes, pure: the peers file's grammar, the label each
//! peer gets in metrics and stored results, and the rule that keeps the
//! agent from probing itself. Text and addresses in, peers out; the
//! reading, watching and resolving are `discover.rs`.
//!
//! The file has one peer a line: `ADDR:PORT` or `NAME ADDR:PORT`, with
//! `#` starting a comment and blank lines ignored. ADDR is an IP address
//! (`[v6]:PORT` for IPv6), never a host name: the file is what is probed,
//! with no resolver in between (`--peers-dns` is the way to follow names).
//! NAME is a label (letters, digits, `.`, `_`, `-`, so never the `->`
//! that stored labels put between source and target; not an IP address), the
//! peer's `target` in every series; a peer without one is labelled with
//! its IP, or with its IP and port when another peer shares the IP.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

/// Where the peers come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerSource {
    /// A peers file, read again when it changes.
    File(PathBuf),
    /// Every address `name` resolves to, on `port`, resolved again every 30 s.
    Dns {
        /// The name (a headless Service, for example).
        name: String,
        /// The agents' port.
        port: u16,
    },
}

/// Longest NAME accepted (a Kubernetes node name is at most 63 per label).
pub const MAX_NAME: usize = 253;

/// One peer to probe.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Peer {
    /// NAME from the file, if it had one.
    pub name: Option<String>,
    /// Where its responder listens (TCP and UDP).
    pub addr: SocketAddr,
}

/// A line of the peers file that is not a peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    /// The line as written (comment removed, trimmed).
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: '{}': {}", self.line, self.text, self.why)
    }
}

/// Parses a peers file. The first bad line is the error: a file is taken
/// whole or not at all, so a half-edited file never drops good peers.
pub fn parse(text: &str) -> Result<Vec<Peer>, LineError> {
    let mut peers: Vec<Peer> = Vec::new();
    let mut lines_of_addr: HashMap<SocketAddr, usize> = HashMap::new();
    let mut lines_of_name: HashMap<String, usize> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let bad = |why: String| LineError {
            line,
            text: body.to_string(),
            why,
        };
        let words: Vec<&str> = body.split_whitespace().collect();
        let (name, addr) = match words.as_slice() {
            [a] => (None, *a),
            [n, a] => (Some(*n), *a),
            _ => return Err(bad("expected ADDR:PORT or NAME ADDR:PORT".into())),
        };
        if let Some(n) = name {
            check_name(n).map_err(bad)?;
        }
        let addr = address(addr).map_err(bad)?;
        if let Some(first) = lines_of_addr.insert(addr, line) {
            return Err(bad(format!("{addr} is already on line {first}")));
        }
        if let Some(n) = name {
            if let Some(first) = lines_of_name.insert(n.to_string(), line) {
                return Err(bad(format!("the name {n} is already on line {first}")));
            }
        }
        peers.push(Peer {
            name: name.map(str::to_string),
            addr,
        });
    }
    Ok(peers)
}

/// An `IP:PORT` (or `[IPv6]:PORT`) with a port other than 0.
pub fn address(s: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = s.parse().map_err(|_| match s.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() && h.parse::<std::net::Ipv6Addr>().is_ok() => {
            format!("{s}: an IPv6 address goes in brackets: [{h}]:{p}")
        }
        Some((h, p)) if !h.is_empty() && p.parse::<u16>().is_ok() && h.parse::<IpAddr>().is_err() => {
            format!("{s} is not an IP address and port (a name goes before the address: NAME ADDR:PORT)")
        }
        _ => format!("{s} is not ADDR:PORT (an IP address and a port, [..] around IPv6)"),
    })?;
    if addr.port() == 0 {
        return Err(format!("{s}: port 0"));
    }
    Ok(addr)
}

fn check_name(n: &str) -> Result<(), String> {
    if n.len() > MAX_NAME {
        return Err(format!("the name is longer than {MAX_NAME} characters"));
    }
    if n.parse::<IpAddr>().is_ok() || n.parse::<SocketAddr>().is_ok() {
        return Err(format!("the name {n} is an address: write NAME ADDR:PORT or ADDR:PORT"));
    }
    if let Some(c) = n
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "the name {n} has '{c}' (letters, digits, '.', '_' and '-' only)"
        ));
    }
    Ok(())
}

/// The `target` label of each peer of `peers`, in order: its NAME, else
/// its IP, else (another peer has the same IP) its IP and port.
pub fn labels(peers: &[Peer]) -> Vec<String> {
    let mut per_ip: HashMap<IpAddr, usize> = HashMap::new();
    for p in peers.iter().filter(|p| p.name.is_none()) {
        *per_ip.entry(p.addr.ip()).or_default() += 1;
    }
    let named_ips: Vec<IpAddr> = peers.iter().filter(|p| p.name.is_some()).map(|p| p.addr.ip()).collect();
    peers
        .iter()
        .map(|p| match &p.name {
            Some(n) => n.clone(),
            None if per_ip[&p.addr.ip()] > 1 || named_ips.contains(&p.addr.ip()) => p.addr.to_string(),
            None => p.addr.ip().to_string(),
        })
        .collect()
}

/// Why a peer is left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Left {
    /// It is this agent's own listen address.
    Listen,
    /// The agent listens on the unspecified address and this is one of
    /// its own interfaces' addresses, on its port.
    OwnInterface,
    /// The other address family than the agent listens on.
    Family,
}

impl Left {
    /// For a log line.
    pub fn describe(self) -> &'static str {
        match self {
            Left::Listen => "its own listen address: not probed",
            Left::OwnInterface => "an address of its own interfaces on its port: not probed",
            Left::Family => "another address family than --listen: not probed",
        }
    }
}

/// Splits `peers` into those to probe and those left out, with why. An
/// agent listening on `listen` never probes itself: not its listen
/// address, and, when it listens on 0.0.0.0 or [::], no address for which
/// `is_local` is true on its port. It probes one address family, the one
/// it listens on (its probes leave from that family's socket).
pub fn without_self(
    peers: Vec<Peer>,
    listen: SocketAddr,
    is_local: impl Fn(IpAddr) -> bool,
) -> (Vec<Peer>, Vec<(Peer, Left)>) {
    let mut keep = Vec::new();
    let mut left = Vec::new();
    for p in peers {
        let why = if p.addr == listen {
            Some(Left::Listen)
        } else if p.addr.is_ipv4() != listen.is_ipv4() {
            Some(Left::Family)
        } else if listen.ip().is_unspecified() && p.addr.port() == listen.port() && is_local(p.addr.ip()) {
            Some(Left::OwnInterface)
        } else {
            None
        };
        match why {
            Some(w) => left.push((p, w)),
            None => keep.push(p),
        }
    }
    (keep, left)
}

/// `NAME:PORT` of `--peers-dns`: the name and the port, checked.
pub fn dns_target(s: &str) -> Result<(String, u16), String> {
    let (name, port) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("--peers-dns {s}: expected NAME:PORT"))?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("--peers-dns {s}: '{port}' is not a port (1-65535)"))?;
    if name.is_empty() {
        return Err(format!("--peers-dns {s}: no name before the port"));
    }
    Ok((name.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn file_with_names_comments_and_blank_lines() {
        let text = "# lab rack 1\n\n10.0.0.2:24680\nboard-7 10.0.0.7:24680   # the slow one\n  [fd00::3]:9000\n";
        let peers = parse(text).unwrap();
        assert_eq!(
            peers,
            vec![
                Peer {
                    name: None,
                    addr: a("10.0.0.2:24680")
                },
                Peer {
                    name: Some("board-7".into()),
                    addr: a("10.0.0.7:24680")
                },
                Peer {
                    name: None,
                    addr: a("[fd00::3]:9000")
                },
            ]
        );
        assert_eq!(parse("").unwrap(), vec![]);
        assert_eq!(parse("# nothing\n   \n").unwrap(), vec![]);
    }

    #[test]
    fn bad_lines_name_their_number_and_what_is_wrong() {
        let e = parse("10.0.0.1:1\n\nboard1:24680\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.why.contains("not an IP address and port"), "{e}");
        assert_eq!(
            e.to_string(),
            "line 3: 'board1:24680': board1:24680 is not an IP address and port (a name goes before the address: NAME ADDR:PORT)"
        );
        let cases = [
            ("10.0.0.1", "not ADDR:PORT"),
            ("10.0.0.1:0", "port 0"),
            ("10.0.0.1:99999", "not ADDR:PORT"),
            ("a b c", "expected ADDR:PORT or NAME ADDR:PORT"),
            ("10.0.0.9 10.0.0.1:5", "is an address"),
            ("x/y 10.0.0.1:5", "has '/'"),
            ("a->b 10.0.0.1:5", "has '>'"),
            ("fe80::1:5", "in brackets: [fe80::1]:5"),
        ];
        for (line, want) in cases {
            let e = parse(&format!("# header\n{line}\n")).unwrap_err();
            assert_eq!(e.line, 2, "{line}");
            assert!(e.why.contains(want), "{line}: {e}");
        }
        let e = parse("x 10.0.0.1:5\n10.0.0.2:5\n10.0.0.1:5\n").unwrap_err();
        assert_eq!((e.line, e.why.as_str()), (3, "10.0.0.1:5 is already on line 1"));
        let e = parse("x 10.0.0.1:5\nx 10.0.0.2:5\n").unwrap_err();
        assert_eq!((e.line, e.why.as_str()), (2, "the name x is already on line 1"));
    }

    #[test]
    fn labels_are_names_else_ips_else_ip_and_port() {
        let peers = parse("b 127.0.0.1:7001\n10.0.0.5:24680\n10.0.0.6:1\n10.0.0.6:2\n127.0.0.1:7002\n").unwrap();
        assert_eq!(
            labels(&peers),
            vec!["b", "10.0.0.5", "10.0.0.6:1", "10.0.0.6:2", "127.0.0.1:7002"]
        );
    }

    #[test]
    fn never_itself_and_one_family() {
        let peers =
            parse("127.0.0.1:7000\n127.0.0.1:7001\n10.1.1.1:7000\n10.1.1.2:7000\n10.1.1.1:7009\n[::1]:7000\n").unwrap();
        // Listening on one address: only that exact address is itself.
        let (keep, left) = without_self(peers.clone(), a("127.0.0.1:7000"), |_| true);
        let kept: Vec<String> = keep.iter().map(|p| p.addr.to_string()).collect();
        assert_eq!(
            kept,
            ["127.0.0.1:7001", "10.1.1.1:7000", "10.1.1.2:7000", "10.1.1.1:7009"]
        );
        assert_eq!(left[0], (peers[0].clone(), Left::Listen));
        assert_eq!(left[1], (peers[5].clone(), Left::Family));
        // On 0.0.0.0: its own interfaces on its port too, not other ports.
        let mine = |ip: IpAddr| ip == "10.1.1.1".parse::<IpAddr>().unwrap() || ip.is_loopback();
        let (keep, left) = without_self(peers, a("0.0.0.0:7000"), mine);
        let kept: Vec<String> = keep.iter().map(|p| p.addr.to_string()).collect();
        assert_eq!(kept, ["127.0.0.1:7001", "10.1.1.2:7000", "10.1.1.1:7009"]);
        let why: Vec<Left> = left.iter().map(|l| l.1).collect();
        assert_eq!(why, [Left::OwnInterface, Left::OwnInterface, Left::Family]);
    }

    #[test]
    fn dns_targets_need_a_name_and_a_port() {
        assert_eq!(
            dns_target("stackmeter.mesh.svc.cluster.local:24680"),
            Ok(("stackmeter.mesh.svc.cluster.local".into(), 24680))
        );
        assert!(dns_target("mesh").unwrap_err().contains("expected NAME:PORT"));
        assert!(dns_target("mesh:0").unwrap_err().contains("not a port"));
        assert!(dns_target(":80").unwrap_err().contains("no name"));
    }
}
