//! Plain targets: servers that are not stackmeter responders (an RFC 862
//! echo server, an RFC 863 discard server, a server with its own reply
//! rule, an iperf 2 server such as lwIP's lwiperf). What kind of target a
//! document measured (told by the test's parameters, which record the
//! flags), and which figures such a target cannot give.
//!
//! Such a target runs none of the responder's side of the protocol: no
//! session header, no status record, no counters, no timestamps. So every
//! figure that comes from the responder is missing, and the document says
//! which ([`crate::TestBody::not_measured`]), in every format.

use serde::{Deserialize, Serialize};

/// What kind of server a document measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// A stackmeter responder (`serve`, the C responder, the embedded one).
    #[default]
    Stackmeter,
    /// An echo server (RFC 862, UDP or TCP): the reply is the request.
    Echo,
    /// A TCP server with its own reply rule: REQ bytes in, RESP bytes out.
    Raw,
    /// A TCP discard server (RFC 863): it reads and answers nothing.
    Discard,
    /// An iperf 2 server (`iperf -s`, lwIP's lwiperf, Zephyr's zperf).
    Iperf2,
}

impl TargetKind {
    /// The JSON value (`"echo"`).
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Stackmeter => "stackmeter",
            TargetKind::Echo => "echo",
            TargetKind::Raw => "raw",
            TargetKind::Discard => "discard",
            TargetKind::Iperf2 => "iperf2",
        }
    }

    /// True for every kind but a stackmeter responder.
    pub fn is_plain(self) -> bool {
        self != TargetKind::Stackmeter
    }

    /// The target as a reader names it ("plain echo server").
    pub fn describe(self) -> &'static str {
        match self {
            TargetKind::Stackmeter => "stackmeter responder",
            TargetKind::Echo => "plain echo server",
            TargetKind::Raw => "plain server with its own reply rule",
            TargetKind::Discard => "plain discard server",
            TargetKind::Iperf2 => "iperf 2 server",
        }
    }
}

/// A figure a plain target cannot give, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NotMeasured {
    /// The JSON key that would hold it (`server_us`, `cpu.responder`).
    pub figure: String,
    /// What it is and why it is missing.
    pub why: String,
}

/// The kind of target of an rr or crr test's `--echo` and `--raw`.
pub(crate) fn kind_of_rr(echo: bool, raw: bool) -> TargetKind {
    match (echo, raw) {
        (true, _) => TargetKind::Echo,
        (_, true) => TargetKind::Raw,
        _ => TargetKind::Stackmeter,
    }
}

/// One "not measured" entry.
pub(crate) fn not_measured(figure: &str, why: &str) -> NotMeasured {
    NotMeasured {
        figure: figure.into(),
        why: why.into(),
    }
}

/// What an rr or crr test cannot measure of a plain target `kind`.
pub(crate) fn no_status(kind: TargetKind) -> Vec<NotMeasured> {
    match kind {
        TargetKind::Echo | TargetKind::Raw => vec![not_measured(
            "status",
            "the responder's acceptance of the sizes, its status record; a plain server cannot refuse a size, so a wrong one shows as a timeout",
        )],
        _ => Vec::new(),
    }
}

/// The bytes of a `--request-prefix`: hex digits, two per byte, an
/// optional `0x` in front, spaces and colons ignored ("01", "0x01ff",
/// "de:ad").
pub fn prefix_bytes(hex: &str) -> Result<Vec<u8>, String> {
    let digits: String = hex
        .trim()
        .trim_start_matches("0x")
        .chars()
        .filter(|c| *c != ' ' && *c != ':')
        .collect();
    if digits.is_empty() || !digits.len().is_multiple_of(2) {
        return Err(format!("'{hex}': expected hex bytes, two digits each (01, 0x01ff)"));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16)
                .map_err(|_| format!("'{hex}': '{}' is not a hex byte", &digits[i..i + 2]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_parse_as_hex_bytes() {
        assert_eq!(prefix_bytes("01").unwrap(), vec![1]);
        assert_eq!(prefix_bytes("0x01FF").unwrap(), vec![1, 255]);
        assert_eq!(prefix_bytes("de:ad be").unwrap(), vec![0xde, 0xad, 0xbe]);
        assert_eq!(
            prefix_bytes("012").unwrap_err(),
            "'012': expected hex bytes, two digits each (01, 0x01ff)"
        );
        assert!(prefix_bytes("zz").unwrap_err().contains("'zz' is not a hex byte"));
        assert!(prefix_bytes("").is_err());
    }

    #[test]
    fn kinds_serialize_lowercase_and_default_to_stackmeter() {
        assert_eq!(serde_json::to_string(&TargetKind::Iperf2).unwrap(), "\"iperf2\"");
        #[derive(Deserialize)]
        struct T {
            #[serde(default)]
            kind: TargetKind,
        }
        let t: T = serde_json::from_str("{}").unwrap();
        assert_eq!(t.kind, TargetKind::Stackmeter);
    }
}
