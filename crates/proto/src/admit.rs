//! Who may use a responder, and how much: the operator's limits
//! (docs/protocol.md 5.1) as pure values and rules. The drivers keep the
//! per-address tables and read the clock; the rules here get times and
//! counts as numbers.
//!
//! - [`Cidr`]: a client network (`--allow 10.0.0.0/8`); a connection or
//!   datagram from outside every allowed network is closed or dropped
//!   without a reply;
//! - [`Bucket`]: new connections per second per address (a token bucket
//!   holding one second's worth);
//! - [`Advertised`]: the limits a control session's Welcome carries, so a
//!   client can fit its test to them and say so.

use core::net::IpAddr;

/// A client network: an address and a prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    bits: u8,
}

/// Why text is not a network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CidrError {
    /// Not an IPv4 or IPv6 address before the `/`.
    Address,
    /// The prefix length is not a number up to 32 (IPv4) or 128 (IPv6).
    Prefix,
}

impl core::fmt::Display for CidrError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CidrError::Address => write!(f, "not an IP address (like 10.0.0.0/8 or fd00::/8)"),
            CidrError::Prefix => write!(f, "the prefix length must be 0..32 for IPv4, 0..128 for IPv6"),
        }
    }
}

impl Cidr {
    /// Parses `a.b.c.d/n`, `x::y/n`, or a bare address (one host).
    pub fn parse(s: &str) -> Result<Cidr, CidrError> {
        let (a, n) = match s.split_once('/') {
            Some((a, n)) => (a, Some(n)),
            None => (s, None),
        };
        let addr: IpAddr = a.parse().map_err(|_| CidrError::Address)?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits = match n {
            None => max,
            Some(n) => n.parse::<u8>().map_err(|_| CidrError::Prefix)?,
        };
        if bits > max {
            return Err(CidrError::Prefix);
        }
        Ok(Cidr { addr, bits })
    }

    /// Whether `ip` is inside this network. An IPv4 address mapped into
    /// IPv6 (`::ffff:a.b.c.d`, a dual-stack socket's view) counts as IPv4.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => prefix_eq(u32::from(n) as u128, u32::from(a) as u128, self.bits, 32),
            (IpAddr::V6(n), IpAddr::V6(a)) => prefix_eq(u128::from(n), u128::from(a), self.bits, 128),
            _ => false,
        }
    }
}

fn prefix_eq(n: u128, a: u128, bits: u8, width: u32) -> bool {
    if bits == 0 {
        return true;
    }
    let shift = width - bits as u32;
    (n >> shift) == (a >> shift)
}

impl core::fmt::Display for Cidr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

/// Whether `ip` may connect: no list means everyone.
pub fn allowed(list: &[Cidr], ip: IpAddr) -> bool {
    list.is_empty() || list.iter().any(|c| c.contains(ip))
}

/// New connections per second from one address: a token bucket of `rate`
/// tokens that refills at `rate` per second (so a burst of `rate` at once,
/// then `rate` per second).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// Tokens, in millionths.
    micro: u64,
    last_ns: u64,
}

impl Bucket {
    /// A full bucket at `now_ns`.
    pub fn new(rate: u32, now_ns: u64) -> Bucket {
        Bucket {
            micro: rate as u64 * 1_000_000,
            last_ns: now_ns,
        }
    }

    /// Takes one token at `now_ns`; false when there is none (refuse).
    pub fn take(&mut self, rate: u32, now_ns: u64) -> bool {
        let cap = rate as u64 * 1_000_000;
        let dt = now_ns.saturating_sub(self.last_ns);
        // rate tokens per 1e9 ns, in millionths: rate * dt / 1000.
        let add = (rate as u128 * dt as u128 / 1000).min(cap as u128) as u64;
        self.micro = (self.micro + add).min(cap);
        self.last_ns = now_ns.max(self.last_ns);
        if self.micro >= 1_000_000 {
            self.micro -= 1_000_000;
            true
        } else {
            false
        }
    }

    /// Whether the bucket is full again at `now_ns` (the driver may forget it).
    pub fn full(&self, rate: u32, now_ns: u64) -> bool {
        let dt = now_ns.saturating_sub(self.last_ns);
        self.micro + (rate as u128 * dt as u128 / 1000).min(u64::MAX as u128) as u64 >= rate as u64 * 1_000_000
    }
}

/// The limits of a test that a responder advertises in the Welcome of a
/// control session (docs/protocol.md 8.1), 0 meaning none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Advertised {
    /// Longest test, seconds: the responder ends its sources then and
    /// aborts every session of the test a little later.
    pub max_test_s: u32,
    /// Tests (any session that is not a data session of a test) one client
    /// address may run at once.
    pub max_tests_per_client: u32,
    /// Highest rate of a test, bits per second, in either direction: the
    /// responder paces its sources to it, the client its own sending.
    pub max_rate_bps: u64,
}

impl Advertised {
    /// Whether any limit is set (the Welcome then carries them).
    pub fn any(&self) -> bool {
        *self != Advertised::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn networks() {
        let n = Cidr::parse("10.1.0.0/16").unwrap();
        assert!(n.contains(ip("10.1.200.3")));
        assert!(!n.contains(ip("10.2.0.1")));
        assert!(n.contains(ip("::ffff:10.1.0.9")));
        assert!(!n.contains(ip("fd00::1")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("192.0.2.1")));
        assert!(Cidr::parse("127.0.0.1").unwrap().contains(ip("127.0.0.1")));
        assert!(!Cidr::parse("127.0.0.1").unwrap().contains(ip("127.0.0.2")));
        assert!(Cidr::parse("fd00::/8").unwrap().contains(ip("fd12::1")));
        assert_eq!(Cidr::parse("10.0.0.0/33"), Err(CidrError::Prefix));
        assert_eq!(Cidr::parse("ten/8"), Err(CidrError::Address));
        assert!(allowed(&[], ip("1.2.3.4")));
        assert!(!allowed(&[n], ip("1.2.3.4")));
    }

    #[test]
    fn bucket_allows_a_burst_then_the_rate() {
        let mut b = Bucket::new(3, 0);
        assert!(b.take(3, 0) && b.take(3, 0) && b.take(3, 0));
        assert!(!b.take(3, 0));
        assert!(!b.take(3, 100_000_000), "a third of a token after 100 ms");
        assert!(b.take(3, 400_000_000));
        assert!(b.full(3, 10_000_000_000));
    }
}
