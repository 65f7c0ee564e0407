//! The fleet file, read and checked: nodes, the pair rule, the tests, the
//! repetitions and the exclusive class. Every error says where it is
//! ([`crate::FileError`]).

use crate::{path, FileError, Key};
use serde::{Deserialize, Serialize};
use stackmeter_results::TestKind;
use std::collections::BTreeMap;

/// The responders' port when the file gives none (stackmeter's default).
pub const DEFAULT_PORT: u16 = 24680;

/// A checked fleet file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fleet {
    /// The fleet's name: runs and locks are keyed by it.
    pub name: String,
    /// What the file says it is for.
    pub description: String,
    /// Every test of every pair runs this many times.
    pub repeat: usize,
    /// The nodes, in file order.
    pub nodes: Vec<Node>,
    /// How pairs are chosen.
    pub pairs: PairRule,
    /// The tests: a built-in plan or the file's own steps.
    pub steps: StepSource,
    /// Tests that never share a node with another test: by default the
    /// throughput tests.
    pub exclusive: Vec<TestKind>,
    /// How repetitions are ordered (`fleet run --order`).
    pub order: Order,
}

/// How a fleet run orders its repetitions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Each repetition is a round that visits every pair once, its pairs
    /// in a random order of its own, and every client waits for the
    /// round's tests before the next (`fleet compare` then takes each
    /// round as a block): a spell of load lands on a round, not on one
    /// pair's repetitions.
    #[default]
    Rounds,
    /// Pairs in file order every repetition, and no waiting between them:
    /// how runs were made before rounds (to compare with them).
    Fixed,
}

/// One node: a host or a board with a responder on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Node {
    /// Unique within the fleet (letters, digits, `.`, `_`, `-`).
    pub name: String,
    /// Its responder's host: an IP address or a DNS name.
    pub address: String,
    /// Its responder's port.
    pub port: u16,
    /// Free labels (`rack = "r1"`), used to choose pairs.
    pub labels: BTreeMap<String, String>,
    /// Whether it can run the client side of a test (a board usually
    /// cannot: it is a target only).
    pub client: bool,
}

impl Node {
    /// `address:port`, with brackets around an IPv6 address.
    pub fn target(&self) -> String {
        match self.address.contains(':') {
            true => format!("[{}]:{}", self.address, self.port),
            false => format!("{}:{}", self.address, self.port),
        }
    }
}

/// How pairs are chosen, and which way they are measured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PairRule {
    /// Which pairs.
    pub selection: Selection,
    /// Both directions of each pair (each end the client once), or one.
    pub both_ways: bool,
    /// Only clients with these labels.
    pub clients: BTreeMap<String, String>,
    /// Only targets with these labels.
    pub targets: BTreeMap<String, String>,
}

/// Which pairs of nodes are measured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Selection {
    /// Every pair.
    Mesh,
    /// Each node with the next in file order, the last with the first.
    Ring,
    /// These pairs, client first.
    List(Vec<(String, String)>),
    /// Every pair inside a group of nodes with the same value of label
    /// `by` (a rack); across groups, each node with `across` nodes of
    /// every other group (Pingmesh's choice: not a full mesh at scale).
    Label {
        /// The label.
        by: String,
        /// Nodes of each other group each node is paired with.
        across: usize,
    },
}

/// Where the tests come from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum StepSource {
    /// A built-in plan, by name.
    Plan(String),
    /// The file's `[[step]]` tables, with the keys of a plan's steps.
    Steps(Vec<toml::Table>),
}

/// The file's keys, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    port: Option<u16>,
    #[serde(default)]
    repeat: Option<usize>,
    #[serde(default)]
    plan: Option<String>,
    #[serde(default)]
    step: Vec<toml::Table>,
    #[serde(default)]
    node: Vec<RawNode>,
    #[serde(default)]
    pairs: Option<RawPairs>,
    #[serde(default)]
    exclusive: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    name: String,
    address: String,
    #[serde(default)]
    port: Option<u16>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    client: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawPairs {
    #[serde(default)]
    select: Option<String>,
    #[serde(default)]
    directions: Option<String>,
    #[serde(default)]
    list: Option<Vec<Vec<String>>>,
    #[serde(default)]
    by: Option<String>,
    #[serde(default)]
    across: Option<usize>,
    #[serde(default)]
    clients: BTreeMap<String, String>,
    #[serde(default)]
    targets: BTreeMap<String, String>,
}

/// Most repetitions a fleet file may ask for.
pub const MAX_REPEAT: usize = 1000;

/// The throughput tests, in the order of the list of tests.
pub fn throughput() -> Vec<TestKind> {
    TestKind::ALL.iter().copied().filter(|k| k.loads_the_link()).collect()
}

impl Fleet {
    /// Reads and checks a fleet file's text.
    pub fn parse(text: &str) -> Result<Fleet, FileError> {
        let raw: Raw = toml::from_str(text).map_err(|e| FileError {
            at: e.span().map_or(crate::At::File, crate::At::Span),
            message: e.message().replace('`', "'"),
        })?;
        check_name(&raw.name, &path!["name"], "the fleet's name")?;
        let port = raw.port.unwrap_or(DEFAULT_PORT);
        if port == 0 {
            return Err(FileError::at(&path!["port"], "0: give the responders' port (1-65535)"));
        }
        let repeat = raw.repeat.unwrap_or(1);
        if repeat == 0 || repeat > MAX_REPEAT {
            return Err(FileError::at(
                &path!["repeat"],
                format!("{repeat}: expected 1 to {MAX_REPEAT} repetitions"),
            ));
        }
        let nodes = nodes(raw.node, port)?;
        let pairs = pair_rule(raw.pairs.unwrap_or_default(), &nodes)?;
        let steps = match (raw.plan, raw.step.is_empty()) {
            (Some(_), false) => {
                return Err(FileError::at(
                    &path!["plan"],
                    "give a built-in plan or [[step]] tables, not both",
                ))
            }
            (Some(p), true) => StepSource::Plan(p),
            (None, false) => StepSource::Steps(raw.step),
            (None, true) => {
                return Err(FileError {
                    at: crate::At::File,
                    message: "no tests: give plan = \"NAME\" (a built-in plan) or [[step]] tables".into(),
                })
            }
        };
        let exclusive = match raw.exclusive {
            None => throughput(),
            Some(names) => {
                let mut kinds = Vec::new();
                for (i, n) in names.iter().enumerate() {
                    let k = TestKind::from_name(n).ok_or_else(|| {
                        FileError::at(
                            &path!["exclusive", i],
                            format!("unknown test '{n}' ({})", TestKind::names()),
                        )
                    })?;
                    if !kinds.contains(&k) {
                        kinds.push(k);
                    }
                }
                kinds
            }
        };
        Ok(Fleet {
            name: raw.name,
            description: raw.description,
            repeat,
            nodes,
            pairs,
            steps,
            exclusive,
            order: Order::default(),
        })
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }
}

/// A name that can be a label, a lock key and part of "a->b": letters,
/// digits, `.`, `_` and `-`, starting with a letter or digit, at most 63.
fn check_name(name: &str, at: &[Key], what: &str) -> Result<(), FileError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric());
    match ok {
        true => Ok(()),
        false => Err(FileError::at(
            at,
            format!("'{name}': {what} is 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit"),
        )),
    }
}

fn nodes(raw: Vec<RawNode>, port: u16) -> Result<Vec<Node>, FileError> {
    if raw.len() < 2 {
        return Err(FileError {
            at: crate::At::File,
            message: format!(
                "{} [[node]] table(s): a fleet has two or more nodes, each with a name and an address",
                raw.len()
            ),
        });
    }
    let mut out: Vec<Node> = Vec::new();
    for (i, n) in raw.into_iter().enumerate() {
        check_name(&n.name, &path!["node", i, "name"], "a node's name")?;
        if let Some(j) = out.iter().position(|o| o.name == n.name) {
            return Err(FileError::at(
                &path!["node", i, "name"],
                format!("'{}': node {} has this name too", n.name, j + 1),
            ));
        }
        let address = n.address.trim().to_string();
        if address.is_empty() || address.contains(char::is_whitespace) || address.starts_with('[') {
            return Err(FileError::at(
                &path!["node", i, "address"],
                format!(
                    "'{}': give an IP address or a host name (the port goes in 'port')",
                    n.address
                ),
            ));
        }
        let port = n.port.unwrap_or(port);
        if port == 0 {
            return Err(FileError::at(&path!["node", i, "port"], "0: expected 1-65535"));
        }
        out.push(Node {
            name: n.name,
            address,
            port,
            labels: n.labels,
            client: n.client.unwrap_or(true),
        });
    }
    if !out.iter().any(|n| n.client) {
        return Err(FileError {
            at: crate::At::File,
            message: "no node can run a client (every [[node]] has client = false)".into(),
        });
    }
    Ok(out)
}

fn pair_rule(raw: RawPairs, nodes: &[Node]) -> Result<PairRule, FileError> {
    let select = raw.select.as_deref().unwrap_or("mesh");
    if select != "list" && raw.list.is_some() {
        return Err(FileError::at(
            &path!["pairs", "list"],
            "a list applies with select = \"list\" only",
        ));
    }
    let selection = match select {
        "mesh" => Selection::Mesh,
        "ring" => Selection::Ring,
        "list" => {
            let Some(list) = raw.list else {
                return Err(FileError::at(
                    &path!["pairs", "select"],
                    "select = \"list\" needs list = [[\"CLIENT\", \"TARGET\"], ...]",
                ));
            };
            let mut out = Vec::new();
            for (i, p) in list.into_iter().enumerate() {
                let at = path!["pairs", "list", i];
                let [a, b] = <[String; 2]>::try_from(p)
                    .map_err(|p| FileError::at(&at, format!("{p:?}: a pair is two node names, client first")))?;
                for n in [&a, &b] {
                    if !nodes.iter().any(|x| &x.name == n) {
                        return Err(FileError::at(&at, format!("'{n}': no [[node]] has this name")));
                    }
                }
                if a == b {
                    return Err(FileError::at(&at, format!("'{a}' with itself: a pair is two nodes")));
                }
                if out.contains(&(a.clone(), b.clone())) {
                    return Err(FileError::at(&at, format!("{a} -> {b} is in the list twice")));
                }
                out.push((a, b));
            }
            if out.is_empty() {
                return Err(FileError::at(&path!["pairs", "list"], "an empty list chooses no pair"));
            }
            Selection::List(out)
        }
        "label" => {
            let Some(by) = raw.by else {
                return Err(FileError::at(
                    &path!["pairs", "select"],
                    "select = \"label\" needs by = \"LABEL\" (for example by = \"rack\")",
                ));
            };
            if let Some((i, n)) = nodes.iter().enumerate().find(|(_, n)| !n.labels.contains_key(&by)) {
                return Err(FileError::at(
                    &path!["node", i, "name"],
                    format!("'{}' has no label '{by}', which pairs are chosen by", n.name),
                ));
            }
            Selection::Label {
                by,
                across: raw.across.unwrap_or(1),
            }
        }
        other => {
            return Err(FileError::at(
                &path!["pairs", "select"],
                format!("'{other}': expected mesh, ring, list or label"),
            ))
        }
    };
    let both_ways = match raw.directions.as_deref() {
        None | Some("both") => true,
        Some("one") => false,
        Some(other) => {
            return Err(FileError::at(
                &path!["pairs", "directions"],
                format!("'{other}': expected both (each end the client once) or one"),
            ))
        }
    };
    Ok(PairRule {
        selection,
        both_ways,
        clients: raw.clients,
        targets: raw.targets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::At;

    const TWO: &str = r#"
name = "lab"
plan = "latency-grid"
[[node]]
name = "a"
address = "192.0.2.1"
[[node]]
name = "b"
address = "2001:db8::2"
port = 5000
labels = { rack = "r2" }
client = false
"#;

    #[test]
    fn a_small_file_reads_with_its_defaults() {
        let f = Fleet::parse(TWO).unwrap();
        assert_eq!(f.name, "lab");
        assert_eq!(f.repeat, 1);
        assert_eq!(f.nodes[0].target(), "192.0.2.1:24680");
        assert_eq!(f.nodes[1].target(), "[2001:db8::2]:5000");
        assert!(f.nodes[0].client && !f.nodes[1].client);
        assert_eq!(f.pairs.selection, Selection::Mesh);
        assert!(f.pairs.both_ways);
        assert_eq!(f.steps, StepSource::Plan("latency-grid".into()));
        assert_eq!(f.exclusive, throughput());
    }

    fn err(text: &str) -> FileError {
        Fleet::parse(text).unwrap_err()
    }

    #[test]
    fn errors_say_where() {
        // A syntax error: the parser's span.
        let e = err("name = \"x\"\n[[node]\n");
        assert!(matches!(e.at, At::Span(_)), "{e:?}");
        // An unknown key: the parser's span too.
        let e = err(&format!("{TWO}\nspeed = 3\n"));
        assert!(matches!(e.at, At::Span(_)) && e.message.contains("speed"), "{e:?}");
        let e = err(&TWO.replace("name = \"b\"", "name = \"a\""));
        assert_eq!(e.at, At::Path(path!["node", 1, "name"].to_vec()));
        assert_eq!(e.message, "'a': node 1 has this name too");
        let e = err(&TWO.replace("name = \"b\"", "name = \"b c\""));
        assert_eq!(e.at, At::Path(path!["node", 1, "name"].to_vec()));
        let e = err(&format!("{TWO}\n[pairs]\nselect = \"list\"\nlist = [[\"a\", \"a\"]]\n"));
        assert_eq!(e.at, At::Path(path!["pairs", "list", 0].to_vec()));
        assert_eq!(e.message, "'a' with itself: a pair is two nodes");
        let e = err(&format!("{TWO}\n[pairs]\nselect = \"list\"\nlist = [[\"a\", \"z\"]]\n"));
        assert_eq!(e.message, "'z': no [[node]] has this name");
        let e = err(&format!("{TWO}\n[pairs]\nselect = \"label\"\nby = \"rack\"\n"));
        assert_eq!(e.at, At::Path(path!["node", 0, "name"].to_vec()));
        let e = err(&format!("{TWO}\n[pairs]\nselect = \"star\"\n"));
        assert_eq!(e.at, At::Path(path!["pairs", "select"].to_vec()));
        let e = err(&TWO.replace("plan = ", "exclusive = [\"stream\", \"storm\"]\nplan = "));
        assert_eq!(e.at, At::Path(path!["exclusive", 1].to_vec()));
        let e = err(&TWO.replace("plan = \"latency-grid\"", ""));
        assert!(e.message.starts_with("no tests"), "{e:?}");
        let e = err(&format!("{TWO}\n[[step]]\ntest = \"rr\"\n"));
        assert_eq!(e.at, At::Path(path!["plan"].to_vec()));
        let e = err(&TWO.replace("name = \"lab\"", "name = \"lab\"\nrepeat = 0"));
        assert_eq!(e.at, At::Path(path!["repeat"].to_vec()));
        let e = err("name = \"lab\"\nplan = \"x\"\n[[node]]\nname = \"a\"\naddress = \"h\"\n");
        assert!(e.message.contains("two or more nodes"), "{e:?}");
    }
}
