//! Which pairs of nodes are measured, and which end is the client: the
//! pair rule applied to the nodes, deterministically (the same file gives
//! the same pairs in the same order).

use crate::file::{Fleet, Node, Selection};
use serde::Serialize;
use std::collections::BTreeMap;

/// The pairs chosen, client first, and the ones the rule named but no
/// test can measure.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Chosen {
    /// (client, target), node indices.
    pub pairs: Vec<(usize, usize)>,
    /// (client, target, why not).
    pub skipped: Vec<(usize, usize, String)>,
}

/// Applies the fleet's pair rule to its nodes.
pub fn choose(f: &Fleet) -> Chosen {
    let n = f.nodes.len();
    let mut out = Chosen::default();
    match &f.pairs.selection {
        Selection::List(list) => {
            let idx = |name: &str| f.nodes.iter().position(|x| x.name == name);
            for (a, b) in list {
                // Checked when the file was read: both names exist.
                let (Some(a), Some(b)) = (idx(a), idx(b)) else { continue };
                add(f, &mut out, a, b);
                if f.pairs.both_ways {
                    add(f, &mut out, b, a);
                }
            }
        }
        sel => {
            for (a, b) in unordered(sel, &f.nodes, n) {
                orient(f, &mut out, a, b);
            }
        }
    }
    out
}

/// The unordered pairs {a, b} (a < b, first seen first) of a selection.
fn unordered(sel: &Selection, nodes: &[Node], n: usize) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = Vec::new();
    let mut push = |a: usize, b: usize| {
        let p = (a.min(b), a.max(b));
        if a != b && !v.contains(&p) {
            v.push(p);
        }
    };
    match sel {
        Selection::Mesh => {
            for a in 0..n {
                for b in a + 1..n {
                    push(a, b);
                }
            }
        }
        Selection::Ring => {
            for a in 0..n {
                push(a, (a + 1) % n);
            }
        }
        Selection::Label { by, across } => {
            // Groups in order of first appearance, members in file order.
            let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
            for (i, node) in nodes.iter().enumerate() {
                let value = node.labels.get(by).map_or("", String::as_str);
                match groups.iter_mut().find(|(g, _)| *g == value) {
                    Some((_, m)) => m.push(i),
                    None => groups.push((value, vec![i])),
                }
            }
            for (_, m) in &groups {
                for (k, &a) in m.iter().enumerate() {
                    for &b in &m[k + 1..] {
                        push(a, b);
                    }
                }
            }
            // Across groups: the k-th member of a group pairs with members
            // k, k+1, ... (mod size) of every other group, so the pairs
            // spread over the other group's members instead of all
            // landing on its first.
            for (g, (_, members)) in groups.iter().enumerate() {
                for (k, &a) in members.iter().enumerate() {
                    for (h, (_, other)) in groups.iter().enumerate() {
                        if h == g {
                            continue;
                        }
                        for j in 0..(*across).min(other.len()) {
                            push(a, other[(k + j) % other.len()]);
                        }
                    }
                }
            }
        }
        Selection::List(_) => {}
    }
    v
}

/// Both directions, or the first that can be measured.
fn orient(f: &Fleet, out: &mut Chosen, a: usize, b: usize) {
    if f.pairs.both_ways {
        add(f, out, a, b);
        add(f, out, b, a);
        return;
    }
    match (why_not(f, a, b), why_not(f, b, a)) {
        (None, _) => out.pairs.push((a, b)),
        (Some(_), None) => out.pairs.push((b, a)),
        (Some(w), Some(_)) => out.skipped.push((a, b, w)),
    }
}

fn add(f: &Fleet, out: &mut Chosen, client: usize, target: usize) {
    match why_not(f, client, target) {
        None => out.pairs.push((client, target)),
        Some(w) => out.skipped.push((client, target, w)),
    }
}

/// Why `client -> target` cannot be measured, if it cannot.
fn why_not(f: &Fleet, client: usize, target: usize) -> Option<String> {
    let (c, t) = (&f.nodes[client], &f.nodes[target]);
    if !c.client {
        return Some(format!("{} runs no client (client = false)", c.name));
    }
    if let Some((k, v)) = mismatch(&f.pairs.clients, c) {
        return Some(format!("{} is not a client of the rule ({k} = \"{v}\")", c.name));
    }
    if let Some((k, v)) = mismatch(&f.pairs.targets, t) {
        return Some(format!("{} is not a target of the rule ({k} = \"{v}\")", t.name));
    }
    None
}

/// The first label of `want` that `n` does not have with that value.
fn mismatch<'a>(want: &'a BTreeMap<String, String>, n: &Node) -> Option<(&'a str, &'a str)> {
    want.iter()
        .find(|(k, v)| n.labels.get(*k) != Some(*v))
        .map(|(k, v)| (k.as_str(), v.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fleet of `n` client nodes with `racks` racks (node i in rack i % racks).
    pub(crate) fn fleet(n: usize, pairs: &str, racks: usize) -> Fleet {
        let mut t = String::from("name = \"t\"\nplan = \"latency-grid\"\n");
        for i in 0..n {
            t += &format!(
                "[[node]]\nname = \"n{i}\"\naddress = \"10.0.0.{}\"\nlabels = {{ rack = \"r{}\" }}\n",
                i + 1,
                i % racks.max(1)
            );
        }
        t += pairs;
        Fleet::parse(&t).unwrap()
    }

    #[test]
    fn mesh_and_ring_counts_and_no_self_pairs() {
        let f = fleet(8, "", 1);
        let c = choose(&f);
        assert_eq!(c.pairs.len(), 56);
        assert!(c.pairs.iter().all(|(a, b)| a != b));
        let f = fleet(8, "[pairs]\nselect = \"ring\"\ndirections = \"one\"\n", 1);
        assert_eq!(
            choose(&f).pairs,
            vec![(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (0, 7)]
        );
        let f = fleet(2, "[pairs]\nselect = \"ring\"\n", 1);
        assert_eq!(choose(&f).pairs, vec![(0, 1), (1, 0)]);
    }

    #[test]
    fn pairs_by_label_are_a_mesh_inside_a_rack_and_a_few_across() {
        // 12 nodes in 3 racks of 4: 3 x 6 pairs inside, and across each
        // node with one node of each other rack.
        let f = fleet(
            12,
            "[pairs]\nselect = \"label\"\nby = \"rack\"\nacross = 1\ndirections = \"one\"\n",
            3,
        );
        let c = choose(&f);
        let rack = |i: usize| i % 3;
        let inside = c.pairs.iter().filter(|(a, b)| rack(*a) == rack(*b)).count();
        assert_eq!(inside, 18);
        let across = c.pairs.len() - inside;
        assert!((12..=24).contains(&across), "{across}");
        // Every node reaches every other rack.
        for a in 0..12 {
            for r in 0..3 {
                if r != rack(a) {
                    assert!(
                        c.pairs
                            .iter()
                            .any(|&(x, y)| (x == a && rack(y) == r) || (y == a && rack(x) == r)),
                        "node {a} never meets rack {r}"
                    );
                }
            }
        }
        assert!(c.pairs.len() < 12 * 11 / 2, "not a full mesh");
    }

    #[test]
    fn targets_only_nodes_are_never_clients() {
        let mut f = fleet(4, "", 1);
        f.nodes[3].client = false;
        let c = choose(&f);
        assert!(c.pairs.iter().all(|&(a, _)| a != 3));
        assert_eq!(c.pairs.iter().filter(|&&(_, b)| b == 3).count(), 3);
        assert_eq!(c.skipped.len(), 3);
        f.pairs.both_ways = false;
        let c = choose(&f);
        assert_eq!(c.pairs.len(), 6, "one way: the board is the target");
        assert!(c.skipped.is_empty());
    }

    #[test]
    fn a_list_keeps_its_order_and_client_end() {
        let f = fleet(
            3,
            "[pairs]\nselect = \"list\"\ndirections = \"one\"\nlist = [[\"n2\", \"n0\"], [\"n1\", \"n2\"]]\n",
            1,
        );
        assert_eq!(choose(&f).pairs, vec![(2, 0), (1, 2)]);
    }

    #[test]
    fn label_filters_choose_clients_and_targets() {
        let mut f = fleet(4, "", 2);
        f.pairs.clients.insert("rack".into(), "r0".into());
        let c = choose(&f);
        assert!(c.pairs.iter().all(|&(a, _)| a % 2 == 0), "{c:?}");
        assert_eq!(c.pairs.len(), 6);
    }
}
