//! Turns a TARGET argument into a socket address.
//!
//! Accepted forms: `host`, `host:port`, `1.2.3.4`, `1.2.3.4:port`, `::1`,
//! `[::1]`, `[::1]:port`. A missing port means the protocol's default.

use crate::error::ClientError;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// Resolves `target`, using `default_port` when it names none. The first
/// address the resolver returns is used.
pub fn resolve(target: &str, default_port: u16) -> Result<SocketAddr, ClientError> {
    let err = |reason: String| ClientError::Resolve {
        target: target.to_string(),
        reason,
    };
    if target.is_empty() {
        return Err(err("empty target".into()));
    }
    if let Ok(sa) = target.parse::<SocketAddr>() {
        return Ok(sa);
    }
    if let Ok(ip) = target.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, default_port));
    }
    if let Some(inner) = target.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        let ip: IpAddr = inner
            .parse()
            .map_err(|_| err(format!("'{inner}' is not an IPv6 address")))?;
        return Ok(SocketAddr::new(ip, default_port));
    }
    let with_port = match target.rsplit_once(':') {
        Some((host, port)) => {
            let p: u16 = port
                .parse()
                .map_err(|_| err(format!("'{port}' is not a port number")))?;
            (host.to_string(), p)
        }
        None => (target.to_string(), default_port),
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| err(e.to_string()))?
        .next()
        .ok_or_else(|| err("no address".into()))
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn forms() {
        assert_eq!(resolve("127.0.0.1", 9).unwrap().to_string(), "127.0.0.1:9");
        assert_eq!(resolve("127.0.0.1:80", 9).unwrap().to_string(), "127.0.0.1:80");
        assert_eq!(resolve("::1", 9).unwrap().to_string(), "[::1]:9");
        assert_eq!(resolve("[::1]", 9).unwrap().to_string(), "[::1]:9");
        assert_eq!(resolve("[::1]:7", 9).unwrap().to_string(), "[::1]:7");
        assert_eq!(resolve("localhost:7", 9).unwrap().port(), 7);
    }

    #[test]
    fn bad_forms_name_the_problem() {
        let e = resolve("localhost:http", 9).unwrap_err().to_string();
        assert!(e.contains("'http' is not a port number"), "{e}");
        assert!(resolve("", 9).is_err());
        assert!(resolve("no.such.host.invalid", 9).is_err());
    }
}
