//! Plain targets in the specifications: the checks that `--echo`, `--raw`
//! and `--request-prefix` (rr, crr) share, and each kind's default port.
//! The flags themselves live on each test's options struct, so they are
//! plan keys too (`echo = true`).

use super::common::SpecError;
use stackmeter_results::{SizePair, TargetKind};

/// rr and crr against an echo server when `--sizes` is left alone: equal
/// request and response, from one byte to 1 MiB.
pub const ECHO_SIZES: &str = "1:1,64:64,1K:1K,64K:64K,1M:1M";

/// The port a TARGET without one gets: the protocol's for a responder,
/// the well-known one for echo (7), discard (9) and iperf 2 (5001); `None`
/// for `--raw`, which has no such port (TARGET must name one).
pub fn default_port(kind: TargetKind) -> Option<u16> {
    match kind {
        TargetKind::Stackmeter => Some(stackmeter_proto::DEFAULT_PORT),
        TargetKind::Echo => Some(7),
        TargetKind::Discard => Some(9),
        TargetKind::Iperf2 => Some(5001),
        TargetKind::Raw => None,
    }
}

/// The flag that chose `kind`, for messages.
pub fn flag(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::Stackmeter => "",
        TargetKind::Echo => "--echo",
        TargetKind::Raw => "--raw",
        TargetKind::Discard => "--discard",
        TargetKind::Iperf2 => "--iperf2",
    }
}

/// rr's and crr's plain settings, checked: whether the target echoes, the
/// size pairs (from `--raw` when given, else from the test's own size
/// flag), and the request
/// prefix normalised to lowercase hex.
#[derive(Debug)]
pub(crate) struct PlainPairs {
    pub echo: bool,
    pub raw: bool,
    pub sizes: Vec<SizePair>,
    pub prefix: Option<String>,
}

/// Checks `--echo`, `--raw` and `--request-prefix` against the test's
/// size flag `size_key` (given as `sizes`, `default` when left alone, in
/// which case an echo server gets `echo_default`).
pub(crate) fn pairs(
    size_key: &'static str,
    sizes: &str,
    (default, echo_default): (&str, &str),
    echo: bool,
    raw: Option<&str>,
    prefix: Option<&str>,
) -> Result<PlainPairs, SpecError> {
    let parse = |key: &'static str, s: &str| crate::sizes::pairs(s).map_err(|e| SpecError::new(key, e.to_string()));
    let pairs = match (echo, raw) {
        (true, Some(_)) => {
            return Err(SpecError::new(
                "echo",
                "and --raw exclude each other (an echo server's reply rule is the request itself)",
            ))
        }
        (false, Some(r)) => {
            if sizes != default {
                return Err(SpecError::new(
                    size_key,
                    format!("{sizes}: with --raw the sizes are its REQ:RESP pairs; leave --{size_key} out"),
                ));
            }
            parse("raw", r)?
        }
        (true, None) => {
            let given = if sizes == default { echo_default } else { sizes };
            let pairs = parse(size_key, given)?;
            if let Some(p) = pairs.iter().find(|p| p.req != p.resp) {
                return Err(SpecError::new(
                    size_key,
                    format!(
                        "{}:{}: an echo server answers as many bytes as it got; give equal sizes (64:64)",
                        p.req, p.resp
                    ),
                ));
            }
            pairs
        }
        (false, None) => parse(size_key, sizes)?,
    };
    let plain = echo || raw.is_some();
    let prefix = match prefix {
        None => None,
        Some(_) if !plain => {
            return Err(SpecError::new(
                "request_prefix",
                "applies to plain targets only (--echo or --raw)",
            ))
        }
        Some(h) => {
            let bytes = stackmeter_results::plain::prefix_bytes(h).map_err(|e| SpecError::new("request_prefix", e))?;
            let least = pairs.iter().map(|p| p.req).min().unwrap_or(0);
            if bytes.len() as u64 > least as u64 {
                return Err(SpecError::new(
                    "request_prefix",
                    format!(
                        "{h}: {} bytes, longer than the smallest request ({least} bytes)",
                        bytes.len()
                    ),
                ));
            }
            Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
        }
    };
    Ok(PlainPairs {
        echo,
        raw: raw.is_some(),
        sizes: pairs,
        prefix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: (&str, &str) = ("1:1K", ECHO_SIZES);

    #[test]
    fn echo_takes_equal_sizes_and_defaults_to_its_own_grid() {
        let e = pairs("sizes", "1:1K", DEFAULT, true, None, None).unwrap();
        assert_eq!(e.sizes.len(), 5);
        assert!(e.sizes.iter().all(|p| p.req == p.resp));
        let err = pairs("sizes", "64:64,1:2", DEFAULT, true, None, None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--sizes 1:2: an echo server answers as many bytes as it got; give equal sizes (64:64)"
        );
    }

    #[test]
    fn raw_takes_its_own_pairs_and_a_prefix_that_fits() {
        let r = pairs("sizes", DEFAULT.0, DEFAULT, false, Some("1:1K,2:10K"), Some("0x01")).unwrap();
        assert!(r.raw && !r.echo);
        assert_eq!(r.sizes[1], SizePair { req: 2, resp: 10240 });
        assert_eq!(r.prefix.as_deref(), Some("01"));
        let e = pairs("sizes", "1:1", DEFAULT, false, Some("1:1"), None).unwrap_err();
        assert!(e.to_string().starts_with("--sizes 1:1: with --raw"), "{e}");
        let e = pairs("sizes", DEFAULT.0, DEFAULT, false, Some("1:1"), Some("0102")).unwrap_err();
        assert!(
            e.to_string().contains("longer than the smallest request (1 bytes)"),
            "{e}"
        );
        let e = pairs("sizes", DEFAULT.0, DEFAULT, true, Some("1:1"), None).unwrap_err();
        assert!(e.to_string().starts_with("--echo and --raw exclude each other"), "{e}");
        let e = pairs("sizes", DEFAULT.0, DEFAULT, false, None, Some("01")).unwrap_err();
        assert!(
            e.as_key().starts_with("'request_prefix' applies to plain targets only"),
            "{e}"
        );
    }
}
