//! What Kubernetes accepts as a name, a label, a taint toleration or a
//! resource quantity, checked before anything is rendered: a manifest
//! that the API server would refuse is reported here as one line naming
//! the flag or the fleet file's node, not discovered at `kubectl apply`.
//!
//! The rules are the API server's (apimachinery's validation): a DNS-1123
//! label (namespaces), a DNS-1123 subdomain (node, Secret and most object
//! names), a qualified name (label and taint keys, with an optional
//! DNS-subdomain prefix), a label value, a ConfigMap or Secret key, and a
//! quantity (`100m`, `1.5`, `256Mi`).

use std::collections::BTreeMap;

/// A rejected option or fleet file entry: one line, naming the flag or
/// the fleet file's entry that was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct K8sError {
    /// What was wrong, starting with the flag (or the file's node).
    pub message: String,
    /// About the fleet file, not a flag (the caller names the file).
    pub in_file: bool,
}

impl K8sError {
    /// About a flag.
    pub fn flag(message: impl Into<String>) -> K8sError {
        K8sError {
            message: message.into(),
            in_file: false,
        }
    }

    /// About the fleet file.
    pub fn file(message: impl Into<String>) -> K8sError {
        K8sError {
            message: message.into(),
            in_file: true,
        }
    }
}

impl std::fmt::Display for K8sError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for K8sError {}

fn alnum_lower(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// A DNS-1123 label: 1 to 63 lowercase letters, digits and `-`, starting
/// and ending with a letter or digit (namespaces, port names' shape).
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars().all(|c| alnum_lower(c) || c == '-')
        && s.starts_with(alnum_lower)
        && s.ends_with(alnum_lower)
}

/// A DNS-1123 subdomain: at most 253 characters, dot-separated DNS-1123
/// labels (node names, Secret names).
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// The part of a label key after the prefix, or a label value (which may
/// also be empty): at most 63 letters, digits, `-`, `_` and `.`, starting
/// and ending with a letter or digit.
fn is_label_name(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    !s.is_empty()
        && s.len() <= 63
        && s.chars().all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
        && s.starts_with(alnum)
        && s.ends_with(alnum)
}

/// A label value: empty, or as a label key's name part.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_label_name(s)
}

/// A qualified name (label keys, taint keys, node selector keys):
/// `[PREFIX/]NAME`, the prefix a DNS subdomain.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_label_name(name),
        None => is_label_name(s),
    }
}

/// A key of a ConfigMap's or a Secret's data: letters, digits, `-`, `_`
/// and `.`, at most 253, not `.` or `..`.
pub fn is_data_key(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Why `s` is not a DNS-1123 subdomain, for error lines.
pub const SUBDOMAIN_RULE: &str =
    "lowercase letters, digits, '-' and '.', each dot-separated part starting and ending with a letter or digit, at most 253 in all";

/// Why `s` is not a DNS-1123 label.
pub const LABEL_RULE: &str = "1 to 63 lowercase letters, digits and '-', starting and ending with a letter or digit";

/// `KEY=VALUE` of `--label` and `--node-selector`, checked.
pub fn key_value(flag: &str, s: &str) -> Result<(String, String), K8sError> {
    let Some((k, v)) = s.split_once('=') else {
        return Err(K8sError::flag(format!("{flag} '{s}': expected KEY=VALUE")));
    };
    if !is_qualified_name(k) {
        return Err(K8sError::flag(format!(
            "{flag} '{s}': '{k}' is not a label key ([PREFIX/]NAME: NAME 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit; PREFIX a DNS subdomain)"
        )));
    }
    if !is_label_value(v) {
        return Err(K8sError::flag(format!(
            "{flag} '{s}': '{v}' is not a label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"
        )));
    }
    Ok((k.to_string(), v.to_string()))
}

/// Every `KEY=VALUE` of a repeated flag, a key given twice refused.
pub fn key_values(flag: &str, all: &[String]) -> Result<BTreeMap<String, String>, K8sError> {
    let mut out = BTreeMap::new();
    for s in all {
        let (k, v) = key_value(flag, s)?;
        if out.insert(k.clone(), v).is_some() {
            return Err(K8sError::flag(format!("{flag} '{s}': key '{k}' is given twice")));
        }
    }
    Ok(out)
}

/// One taint a pod tolerates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toleration {
    /// The taint's key.
    pub key: String,
    /// Its value; `None` tolerates any value (operator Exists).
    pub value: Option<String>,
    /// NoSchedule, PreferNoSchedule or NoExecute; `None`: every effect.
    pub effect: Option<String>,
}

/// The taint effects Kubernetes has.
pub const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

impl Toleration {
    /// `KEY=VALUE:EFFECT`, `KEY=VALUE` (every effect), `KEY:EFFECT` or
    /// `KEY` (any value), as `--toleration` takes it.
    pub fn parse(s: &str) -> Result<Toleration, K8sError> {
        let bad = |why: String| K8sError::flag(format!("--toleration '{s}': {why}"));
        let (kv, effect) = match s.rsplit_once(':') {
            Some((kv, e)) => {
                if !EFFECTS.contains(&e) {
                    return Err(bad(format!("'{e}' is not a taint effect ({})", EFFECTS.join(", "))));
                }
                (kv, Some(e.to_string()))
            }
            None => (s, None),
        };
        let (key, value) = match kv.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (kv, None),
        };
        if !is_qualified_name(key) {
            return Err(bad(format!(
                "'{key}' is not a taint key (expected KEY=VALUE:EFFECT, KEY is [PREFIX/]NAME)"
            )));
        }
        if let Some(v) = &value {
            if !is_label_value(v) {
                return Err(bad(format!(
                    "'{v}' is not a taint value (at most 63 letters, digits, '-', '_' or '.')"
                )));
            }
        }
        Ok(Toleration {
            key: key.to_string(),
            value,
            effect,
        })
    }
}

/// A resource quantity's value in base units (cores or bytes), or `None`
/// when `s` is not one: a plain decimal number with an optional suffix,
/// binary (`Ki` .. `Ei`) or decimal (`m`, `k`, `M` .. `E`), as Kubernetes
/// writes them (the exponent forms such as `1e3` are left out).
pub fn quantity(s: &str) -> Option<f64> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let digits_ok = !num.is_empty()
        && num.chars().filter(|&c| c == '.').count() <= 1
        && num.chars().any(|c| c.is_ascii_digit())
        && !num.ends_with('.');
    if !digits_ok {
        return None;
    }
    let scale = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0_f64.powi(3),
        "Ti" => 1024.0_f64.powi(4),
        "Pi" => 1024.0_f64.powi(5),
        "Ei" => 1024.0_f64.powi(6),
        _ => return None,
    };
    let v: f64 = num.parse().ok()?;
    Some(v * scale)
}

/// A short, stable hexadecimal digest of `s` (FNV-1a 64, its first
/// `digits` hexadecimal digits): the run's mark in Job names, and what
/// keeps a shortened node name unique.
pub fn digest(s: &str, digits: usize) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")[..digits.min(16)].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        for ok in ["a", "pc-a1", "0", "a-b-c", &"x".repeat(63)] {
            assert!(is_dns_label(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", &"x".repeat(64)] {
            assert!(!is_dns_label(bad), "{bad}");
        }
        for ok in ["node-1", "ip-10-0-1-2.eu-west-1.compute.internal", "a.b"] {
            assert!(is_dns_subdomain(ok), "{ok}");
        }
        for bad in [
            "",
            "a..b",
            ".a",
            "a.",
            "PC-1",
            "pc_1",
            "a.-b",
            &format!("{}.a", "x".repeat(63).repeat(4)),
        ] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
    }

    #[test]
    fn labels_and_keys() {
        for ok in ["app", "app.kubernetes.io/name", "Rack_1", "a-b.c"] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        for bad in ["", "/a", "a/", "Big.io/x", "a/b/c", "-a", "a b"] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
        assert!(is_label_value(""));
        assert!(is_label_value("On"));
        assert!(!is_label_value("a b"));
        assert!(!is_label_value("a-"));
        assert_eq!(
            key_value("--label", "team=net").unwrap(),
            ("team".to_string(), "net".to_string())
        );
        let e = key_value("--label", "team").unwrap_err();
        assert_eq!(e.message, "--label 'team': expected KEY=VALUE");
        let e = key_values("--node-selector", &["a=1".into(), "a=2".into()]).unwrap_err();
        assert_eq!(e.message, "--node-selector 'a=2': key 'a' is given twice");
        assert!(key_value("--label", "x=a b")
            .unwrap_err()
            .message
            .contains("not a label value"));
        assert!(is_data_key("dsn") && is_data_key("fleet.toml") && !is_data_key("..") && !is_data_key("a/b"));
    }

    #[test]
    fn tolerations() {
        let t = Toleration::parse("dedicated=net:NoSchedule").unwrap();
        assert_eq!(t.key, "dedicated");
        assert_eq!(t.value.as_deref(), Some("net"));
        assert_eq!(t.effect.as_deref(), Some("NoSchedule"));
        let t = Toleration::parse("node-role.kubernetes.io/control-plane:NoSchedule").unwrap();
        assert_eq!(t.value, None);
        let t = Toleration::parse("gpu=yes").unwrap();
        assert_eq!(t.effect, None);
        let e = Toleration::parse("a=b:NoPlace").unwrap_err();
        assert!(
            e.message
                .starts_with("--toleration 'a=b:NoPlace': 'NoPlace' is not a taint effect"),
            "{e}"
        );
        assert!(Toleration::parse("=b:NoSchedule").is_err());
        assert!(Toleration::parse("a=b c").is_err());
    }

    #[test]
    fn quantities() {
        assert_eq!(quantity("100m"), Some(0.1));
        assert_eq!(quantity("2"), Some(2.0));
        assert_eq!(quantity("1.5"), Some(1.5));
        assert_eq!(quantity("256Mi"), Some(256.0 * 1024.0 * 1024.0));
        assert_eq!(quantity("1G"), Some(1e9));
        for bad in ["", "m", "1.", ".", "1..2", "1x", "1mi", "-1", "1 Gi", "1e3"] {
            assert_eq!(quantity(bad), None, "{bad}");
        }
    }

    #[test]
    fn digests_are_stable() {
        assert_eq!(digest("", 16), "cbf29ce484222325");
        assert_eq!(digest("lab-run", 8).len(), 8);
        assert_ne!(digest("a", 8), digest("b", 8));
    }
}
