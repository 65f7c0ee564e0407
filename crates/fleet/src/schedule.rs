//! What runs where and in which order: the fleet plan.
//!
//! For each repetition, for each test step, the chosen pairs are cut into
//! waves. In [`Order::Rounds`] (the default) each repetition takes the
//! pairs in an order of its own, drawn from the fleet's name and the
//! repetition (so every client plans the same), and the repetitions are
//! rounds that follow each other (the clients wait: `fleet-node`). A step of the exclusive class is cut into rounds in which no
//! node appears twice (a greedy matching, in pair order); any other step
//! is one wave of every pair. Each client runs its own items in wave
//! order, one at a time, and takes its item's locks first
//! ([`crate::LockMode`]): the waves are the order that keeps lock waits
//! short, the locks are what keeps the exclusive class exclusive when
//! clients on many hosts run at their own pace. Deterministic: the same
//! file and steps give the same plan.

use crate::file::{Fleet, Node, Order};
use crate::locks::LockMode;
use crate::pairs::choose;
use serde::Serialize;
use stackmeter_results::TestKind;

/// One step of the tests as the plan needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepInfo {
    /// The step's name.
    pub name: String,
    /// Its test.
    pub test: TestKind,
}

/// One test of one pair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Item {
    /// The node that runs the client.
    pub client: String,
    /// The node whose responder it measures.
    pub target: String,
    /// The step's name.
    pub step: String,
    /// Its test.
    pub test: TestKind,
    /// Repetition, from 0.
    pub repetition: usize,
    /// How it holds its two nodes' lock keys.
    pub lock: LockMode,
}

/// Items that may run at the same time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Wave {
    /// Repetition, from 0.
    pub repetition: usize,
    /// The step's name.
    pub step: String,
    /// The step's test.
    pub test: TestKind,
    /// Round within the step (0 unless the step is exclusive).
    pub round: usize,
    /// Whether the step's test is in the exclusive class.
    pub exclusive: bool,
    /// The items, in pair order.
    pub items: Vec<Item>,
}

/// A pair the rule named that no test measures, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// Client end.
    pub client: String,
    /// Target end.
    pub target: String,
    /// Why.
    pub why: String,
}

/// The whole plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FleetPlan {
    /// The fleet's name.
    pub fleet: String,
    /// The nodes.
    pub nodes: Vec<Node>,
    /// The steps.
    pub steps: Vec<StepInfo>,
    /// Repetitions.
    pub repeat: usize,
    /// How the repetitions are ordered.
    pub order: Order,
    /// The pairs measured, (client, target).
    pub pairs: Vec<(String, String)>,
    /// Pairs named by the rule that cannot be measured.
    pub skipped: Vec<Skipped>,
    /// Every item, in order.
    pub waves: Vec<Wave>,
}

impl Fleet {
    /// The plan of this fleet for `steps` (the file's own steps, or the
    /// built-in plan's, as the engine resolved them).
    pub fn plan(&self, steps: &[StepInfo]) -> FleetPlan {
        let chosen = choose(self);
        let name = |i: usize| self.nodes[i].name.clone();
        let mut waves = Vec::new();
        for repetition in 0..self.repeat {
            let pairs = match self.order {
                Order::Fixed => chosen.pairs.clone(),
                Order::Rounds => shuffled(&chosen.pairs, seed(&self.name, repetition)),
            };
            for s in steps {
                let exclusive = self.exclusive.contains(&s.test);
                let item = |&(c, t): &(usize, usize)| Item {
                    client: name(c),
                    target: name(t),
                    step: s.name.clone(),
                    test: s.test,
                    repetition,
                    lock: if exclusive {
                        LockMode::Exclusive
                    } else {
                        LockMode::Shared
                    },
                };
                let rounds = match exclusive {
                    true => matchings(&pairs, self.nodes.len()),
                    false => vec![pairs.clone()],
                };
                for (round, pairs) in rounds.into_iter().enumerate() {
                    waves.push(Wave {
                        repetition,
                        step: s.name.clone(),
                        test: s.test,
                        round,
                        exclusive,
                        items: pairs.iter().map(item).collect(),
                    });
                }
            }
        }
        FleetPlan {
            fleet: self.name.clone(),
            nodes: self.nodes.clone(),
            steps: steps.to_vec(),
            repeat: self.repeat,
            order: self.order,
            pairs: chosen.pairs.iter().map(|&(c, t)| (name(c), name(t))).collect(),
            skipped: chosen
                .skipped
                .iter()
                .map(|(c, t, why)| Skipped {
                    client: name(*c),
                    target: name(*t),
                    why: why.clone(),
                })
                .collect(),
            waves,
        }
    }
}

/// The seed of repetition `repetition`'s order in fleet `name` (FNV-1a of
/// the name, then the repetition): the same on every client.
fn seed(name: &str, repetition: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes().chain((repetition as u64).to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// `pairs` in a random order drawn from `seed` (Fisher-Yates).
fn shuffled(pairs: &[(usize, usize)], seed: u64) -> Vec<(usize, usize)> {
    let mut rng = stackmeter_statistics::rng::Rng::new(seed);
    let mut out = pairs.to_vec();
    for i in (1..out.len()).rev() {
        out.swap(i, rng.index(i + 1));
    }
    out
}

/// Cuts `pairs` into rounds in which no node appears twice: each round
/// takes, in order, every remaining pair whose two nodes are free in it.
fn matchings(pairs: &[(usize, usize)], nodes: usize) -> Vec<Vec<(usize, usize)>> {
    let mut left: Vec<(usize, usize)> = pairs.to_vec();
    let mut rounds = Vec::new();
    while !left.is_empty() {
        let mut busy = vec![false; nodes];
        let mut round = Vec::new();
        left.retain(|&(a, b)| {
            if busy[a] || busy[b] {
                return true;
            }
            busy[a] = true;
            busy[b] = true;
            round.push((a, b));
            false
        });
        rounds.push(round);
    }
    rounds
}

impl FleetPlan {
    /// The items node `name` runs as the client, in order.
    pub fn for_client<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Item> + 'a {
        self.waves
            .iter()
            .flat_map(|w| w.items.iter())
            .filter(move |i| i.client == name)
    }

    /// Every item, in order.
    pub fn items(&self) -> impl Iterator<Item = &Item> {
        self.waves.iter().flat_map(|w| w.items.iter())
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn steps() -> Vec<StepInfo> {
        vec![
            StepInfo {
                name: "latency".into(),
                test: TestKind::Rr,
            },
            StepInfo {
                name: "bulk".into(),
                test: TestKind::Stream,
            },
        ]
    }

    fn fleet(n: usize, repeat: usize) -> Fleet {
        let mut t = format!("name = \"t\"\nplan = \"x\"\nrepeat = {repeat}\n");
        for i in 0..n {
            t += &format!("[[node]]\nname = \"n{i}\"\naddress = \"10.0.0.{}\"\n", i + 1);
        }
        Fleet::parse(&t).unwrap()
    }

    #[test]
    fn every_chosen_pair_is_covered_once_per_step_and_repetition() {
        let f = fleet(7, 2);
        let p = f.plan(&steps());
        assert_eq!(p.pairs.len(), 42);
        let mut seen: HashMap<(String, String, String, usize), usize> = HashMap::new();
        for it in p.items() {
            assert_ne!(it.client, it.target, "no self pair");
            *seen
                .entry((it.client.clone(), it.target.clone(), it.step.clone(), it.repetition))
                .or_default() += 1;
        }
        assert_eq!(seen.len(), 42 * 2 * 2);
        assert!(seen.values().all(|&n| n == 1));
    }

    #[test]
    fn exclusive_waves_never_put_a_node_in_two_tests() {
        for n in [2, 3, 8, 13] {
            let p = fleet(n, 2).plan(&steps());
            for w in p.waves.iter().filter(|w| w.exclusive) {
                let mut nodes: Vec<&str> = w
                    .items
                    .iter()
                    .flat_map(|i| [i.client.as_str(), i.target.as_str()])
                    .collect();
                let all = nodes.len();
                nodes.sort_unstable();
                nodes.dedup();
                assert_eq!(nodes.len(), all, "wave {w:?}");
                assert!(w.items.iter().all(|i| i.lock == LockMode::Exclusive));
            }
            // The latency step is one shared wave per repetition.
            let shared: Vec<&Wave> = p.waves.iter().filter(|w| !w.exclusive).collect();
            assert_eq!(shared.len(), 2);
            assert!(shared
                .iter()
                .all(|w| w.items.iter().all(|i| i.lock == LockMode::Shared)));
        }
    }

    #[test]
    fn the_same_file_gives_the_same_plan() {
        let text = "name = \"t\"\nplan = \"x\"\n[pairs]\nselect = \"label\"\nby = \"rack\"\nacross = 2\n";
        let mut t = text.to_string();
        for i in 0..20 {
            t += &format!(
                "[[node]]\nname = \"n{i}\"\naddress = \"10.0.0.{}\"\nlabels = {{ rack = \"r{}\" }}\n",
                i + 1,
                i % 4
            );
        }
        let a = serde_json::to_string(&Fleet::parse(&t).unwrap().plan(&steps())).unwrap();
        let b = serde_json::to_string(&Fleet::parse(&t).unwrap().plan(&steps())).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn a_client_runs_its_items_in_wave_order() {
        let p = fleet(4, 2).plan(&steps());
        let mine: Vec<&Item> = p.for_client("n0").collect();
        assert_eq!(mine.len(), 3 * 2 * 2);
        let order: Vec<(usize, &str)> = mine.iter().map(|i| (i.repetition, i.step.as_str())).collect();
        let mut sorted = order.clone();
        sorted.sort_by_key(|&(r, s)| (r, s != "latency"));
        assert_eq!(order, sorted, "repetition by repetition, steps in order");
    }

    #[test]
    fn a_full_mesh_of_32_needs_few_exclusive_rounds() {
        let p = fleet(32, 1).plan(&steps()[1..]);
        // 992 directed pairs, at most 16 at once: a perfect schedule has 62
        // rounds; the greedy one stays near it.
        assert_eq!(p.items().count(), 992);
        assert!(p.waves.len() >= 62 && p.waves.len() <= 80, "{}", p.waves.len());
    }
}
