//! The collective algorithms as a registry: one module per operation, each
//! declaring its algorithms once - name, description, what a call needs
//! for the algorithm to apply - and the default rule. Machine validation
//! (`[collectives]`, [`check_machine`]), `--coll`, the selection of every call (with the
//! fallback it reports) and the list in docs/collectives.md all read it.
//!
//! Where an algorithm runs: every algorithm has its function in the Python
//! package (`bgsim/mpishim/coll/<op>.py`, registered under the same name; a test
//! checks both sides list the same names), which Python programs,
//! skeletons and traces all call. Those that are exchanges in steps (the
//! all-to-all algorithms, the dissemination barrier, the binomial
//! broadcast) hand the whole exchange to the core in one call
//! ([`super::agent`]), which posts its messages.
//!
//! Adding an algorithm: its [`Algorithm`] entry in the operation's module
//! (a name, one line of description, its [`Need`]s), its implementation
//! registered under that name in `python/bgsim/mpishim/coll/<op>.py`, a test in
//! `python/tests/test_collectives.py`, and its row in docs/collectives.md
//! (`python -m bgsim.mpishim.coll` prints the table).

mod allgather;
mod allreduce;
mod alltoall;
mod barrier;
mod bcast;
mod gather;
mod reduce;
mod scatter;

use crate::machine::{Machine, MachineError};
use serde::Serialize;

/// Sizes at which the portable defaults switch (bytes), as a portable MPI
/// (MPICH) does.
pub const BCAST_LONG: u64 = 12 * 1024;
pub const ALLREDUCE_LONG: u64 = 2 * 1024;
pub const ALLGATHER_LONG: u64 = 512 * 1024;
pub const ALLGATHER_SHORT: u64 = 80 * 1024;
pub const ALLTOALL_LONG: u64 = 32 * 1024;
/// Inside the long broadcast (scatter, then allgather): below this size a
/// power-of-two communicator gathers the parts by recursive doubling,
/// else by a ring (MPICH's long-message broadcast size).
pub const BCAST_RING: u64 = 512 * 1024;

/// Every switching size above by name, for the Python algorithms and the
/// phase model, which read them from here.
pub const THRESHOLDS: [(&str, u64); 6] = [
    ("bcast_long", BCAST_LONG),
    ("bcast_ring", BCAST_RING),
    ("allreduce_long", ALLREDUCE_LONG),
    ("allgather_long", ALLGATHER_LONG),
    ("allgather_short", ALLGATHER_SHORT),
    ("alltoall_long", ALLTOALL_LONG),
];

/// What a call must offer for an algorithm to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    /// The communicator holds every task slot of the partition.
    WholePartition,
    /// The machine has a collective (tree) network.
    CollectiveNetwork,
    /// The machine has a global-interrupt barrier.
    BarrierNetwork,
    /// The tree's ALU does the reduction (operation and datatype).
    Alu,
    /// One rank per node of the whole partition.
    #[serde(rename = "one_rank_per_node_of_the_partition")]
    OneRankPerNode,
    /// A power-of-two communicator size.
    PowerOfTwo,
    /// Array data (the buffer API), not Python objects.
    ArrayData,
    /// At least one element per rank.
    ElementPerRank,
    /// Exactly one rank on every node of the partition (any number of
    /// tasks per node; a quarter of a VN-mode partition under XYZT).
    #[serde(rename = "one_rank_on_every_node")]
    RankOnEveryNode,
    /// No dead links or nodes: deposit-bit line packets cannot route
    /// around them.
    #[serde(rename = "no_dead_links")]
    HealthyTorus,
}

impl Need {
    /// Why a call without it cannot run the algorithm.
    pub fn reason(self, facts: &CallFacts) -> String {
        match self {
            Need::WholePartition => "needs a communicator spanning the whole partition".into(),
            Need::CollectiveNetwork | Need::BarrierNetwork => "needs a network this machine does not have".into(),
            Need::Alu => "cannot do this operation or datatype".into(),
            Need::OneRankPerNode => "needs one rank per node of the whole partition".into(),
            Need::PowerOfTwo => "needs a power-of-two communicator size".into(),
            Need::ArrayData => "needs array data (the buffer API)".into(),
            Need::RankOnEveryNode => "needs exactly one rank on every node of the partition".into(),
            Need::HealthyTorus => "needs a torus without dead links (its line packets cannot route around them)".into(),
            Need::ElementPerRank => {
                format!("needs at least one element per rank ({} for {} ranks)", facts.elements.unwrap_or(0), facts.n)
            }
        }
    }

    fn met(self, f: &CallFacts) -> bool {
        match self {
            Need::WholePartition => f.whole_partition,
            Need::CollectiveNetwork => f.collective_network,
            Need::BarrierNetwork => f.barrier_network,
            Need::Alu => f.alu,
            Need::OneRankPerNode => f.whole_partition && f.one_task_per_node,
            Need::PowerOfTwo => f.n.is_power_of_two(),
            Need::ArrayData => f.elements.is_some(),
            Need::ElementPerRank => f.elements.is_none_or(|e| e >= f.n as u64),
            Need::RankOnEveryNode => f.every_node,
            Need::HealthyTorus => !f.faulty_torus,
        }
    }
}

/// What the selection knows of one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallFacts {
    /// Ranks in the communicator.
    pub n: u32,
    pub whole_partition: bool,
    pub one_task_per_node: bool,
    pub collective_network: bool,
    pub barrier_network: bool,
    /// The tree's ALU does this reduction (operation and datatype).
    pub alu: bool,
    /// Elements of array data (None: Python objects).
    pub elements: Option<u64>,
    /// The partition has dead links or nodes.
    pub faulty_torus: bool,
    /// The communicator has exactly one rank on every node.
    pub every_node: bool,
    /// The machine's MPI runs its torus algorithms where they apply
    /// (`collectives.torus_algorithms`, BG/P's).
    pub torus_mpi: bool,
}

/// One collective algorithm.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Algorithm {
    pub name: &'static str,
    pub description: &'static str,
    /// What a call needs for it to apply.
    pub needs: &'static [Need],
    /// Runs on dedicated hardware (the default where it applies).
    pub hardware: bool,
}

impl Algorithm {
    /// The first need a call does not meet.
    pub fn unmet(&self, f: &CallFacts) -> Option<Need> {
        self.needs.iter().copied().find(|n| !n.met(f))
    }
}

/// A collective operation: its algorithms and the portable default.
pub struct Operation {
    pub name: &'static str,
    pub algorithms: &'static [Algorithm],
    /// What a portable MPI does (by size and communicator size); never a
    /// hardware algorithm.
    pub portable: fn(nbytes: u64, n: u32) -> &'static str,
    /// The algorithm every call can run.
    pub safe: &'static str,
    /// What the algorithm named `generic` (a portable MPI's switch by size)
    /// runs, for operations that have one.
    pub generic: Option<fn(nbytes: u64, n: u32) -> &'static str>,
    /// What an MPI with torus algorithms (BG/P's) runs by size, before the
    /// portable choice (on a machine whose `collectives.torus_algorithms`
    /// is on, on communicators of 3 ranks or more): the first of these
    /// whose needs the call meets.
    pub torus: Option<fn(nbytes: u64) -> &'static [&'static str]>,
}

impl Operation {
    pub fn algorithm(&self, name: &str) -> Option<&'static Algorithm> {
        self.algorithms.iter().find(|a| a.name == name)
    }

    /// bgsim's default: the hardware algorithm where it applies, else the
    /// portable choice (else the safe one, if that cannot run this call).
    pub fn default_for(&self, f: &CallFacts, nbytes: u64) -> &'static str {
        if let Some(hw) = self.algorithms.iter().find(|a| a.hardware && a.unmet(f).is_none()) {
            return hw.name;
        }
        // (BG/P's MPI leaves communicators of fewer than 3 ranks to MPICH.)
        if let Some(rule) = self.torus.filter(|_| f.torus_mpi && f.n >= 3) {
            if let Some(&t) = rule(nbytes).iter().find(|&&t| self.algorithm(t).is_some_and(|a| a.unmet(f).is_none())) {
                return t;
            }
        }
        self.runnable((self.portable)(nbytes, f.n), f)
    }

    fn runnable(&self, name: &'static str, f: &CallFacts) -> &'static str {
        match self.algorithm(name).and_then(|a| a.unmet(f)) {
            None => name,
            Some(_) => self.safe,
        }
    }
}

/// Every operation, in the order docs and `--help` list them.
pub static OPERATIONS: [&Operation; 8] = [
    &barrier::OP,
    &bcast::OP,
    &reduce::OP,
    &allreduce::OP,
    &allgather::OP,
    &alltoall::OP,
    &gather::OP,
    &scatter::OP,
];

/// The operation of a name.
pub fn operation(name: &str) -> Option<&'static Operation> {
    OPERATIONS.iter().copied().find(|o| o.name == name)
}

/// What `generic` runs for a call of `nbytes` on `n` ranks.
pub fn generic(op: &Operation, nbytes: u64, n: u32) -> Option<&'static str> {
    op.generic.map(|g| g(nbytes, n))
}

/// The names `[collectives]` and `--coll` accept for an operation: `auto`
/// and every algorithm.
pub fn choices(op: &Operation) -> Vec<&'static str> {
    std::iter::once("auto").chain(op.algorithms.iter().map(|a| a.name)).collect()
}

/// Refuses a machine whose `[collectives]` names an algorithm the registry
/// does not have for that operation, or a hardware algorithm (`tree`, `gi`)
/// whose network the machine lacks. The machine file only holds the names;
/// which names exist is this registry's to say, so whoever loads a machine
/// to run MPI on it calls this (the Python binding does, at load).
pub fn check_machine(m: &Machine) -> Result<(), MachineError> {
    let spec = &m.spec;
    for op in OPERATIONS {
        let names = choices(op);
        let v = spec.collectives.get(op.name).unwrap_or("");
        let refuse = |allowed: String| MachineError::Invalid {
            source_name: m.source_name.clone(),
            key: format!("collectives.{}", op.name),
            value: format!("{v:?}"),
            allowed,
        };
        if !names.contains(&v) {
            return Err(refuse(format!("one of {}", names.join(", "))));
        }
        let lacks = match v {
            "tree" if spec.collective.is_none() => Some("a [collective] section (this machine has no collective network)"),
            "gi" if spec.barrier.is_none() => Some("a [barrier] section (this machine has no global-interrupt barrier)"),
            _ => None,
        };
        if let Some(section) = lacks {
            return Err(refuse(format!("an algorithm of this machine: `{v}` needs {section}")));
        }
    }
    Ok(())
}

/// The algorithm a call runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub algorithm: &'static str,
    /// When the wanted algorithm cannot run this call: why.
    pub fallback: Option<String>,
}

/// The algorithm of one call of `op`: `wanted` (a name, or `auto` for the
/// default rule) if the call meets its needs, else the portable choice,
/// with the reason.
pub fn choose(op: &Operation, wanted: &str, f: &CallFacts, nbytes: u64) -> Choice {
    if wanted == "auto" {
        return Choice { algorithm: op.default_for(f, nbytes), fallback: None };
    }
    let Some(a) = op.algorithm(wanted) else {
        return Choice { algorithm: op.default_for(f, nbytes), fallback: Some(format!("`{wanted}` is not a {} algorithm", op.name)) };
    };
    match a.unmet(f) {
        None => Choice { algorithm: a.name, fallback: None },
        Some(need) => Choice { algorithm: op.runnable((op.portable)(nbytes, f.n), f), fallback: Some(need.reason(f)) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(n: u32) -> CallFacts {
        CallFacts { n, whole_partition: true, one_task_per_node: true, collective_network: true, barrier_network: true, alu: true, elements: Some(1 << 20), faulty_torus: false, every_node: true, torus_mpi: false }
    }

    #[test]
    fn names_are_unique_and_portable_choices_are_registered_software() {
        for op in OPERATIONS {
            let names = choices(op);
            let mut sorted = names.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), names.len(), "{}: a name twice", op.name);
            assert!(op.algorithm(op.safe).is_some_and(|a| a.needs.is_empty()), "{}: safe `{}`", op.name, op.safe);
            for n in [1, 2, 3, 8, 12, 64] {
                for bytes in [0, 1 << 10, 1 << 16, 1 << 22] {
                    let p = (op.portable)(bytes, n);
                    assert!(op.algorithm(p).is_some_and(|a| !a.hardware), "{}: portable `{p}`", op.name);
                }
            }
        }
    }

    #[test]
    fn hardware_by_default_where_it_applies_and_a_reasoned_fallback_elsewhere() {
        let bcast = operation("bcast").unwrap();
        assert_eq!(choose(bcast, "auto", &world(8), 64).algorithm, "tree");
        let sub = CallFacts { whole_partition: false, ..world(8) };
        assert_eq!(choose(bcast, "auto", &sub, 64), Choice { algorithm: "binomial", fallback: None });
        let c = choose(bcast, "tree", &sub, 64 << 10);
        assert_eq!(c.algorithm, "scatter_allgather");
        assert!(c.fallback.unwrap().contains("whole partition"));
        let no_tree = CallFacts { collective_network: false, ..world(8) };
        assert_eq!(choose(bcast, "auto", &no_tree, 64).algorithm, "binomial");
        assert!(choose(bcast, "tree", &no_tree, 64).fallback.unwrap().contains("network"));
        let barrier = operation("barrier").unwrap();
        assert_eq!(choose(barrier, "auto", &world(8), 0).algorithm, "gi");
        assert_eq!(choose(barrier, "auto", &CallFacts { barrier_network: false, ..world(8) }, 0).algorithm, "dissemination");
        let allreduce = operation("allreduce").unwrap();
        let objects = CallFacts { alu: false, elements: None, ..world(8) };
        assert_eq!(choose(allreduce, "auto", &objects, 1 << 20).algorithm, "recursive_doubling");
        let c = choose(allreduce, "reduce_scatter_allgather", &objects, 1 << 20);
        assert_eq!((c.algorithm, c.fallback.as_deref()), ("recursive_doubling", Some("needs array data (the buffer API)")));
        let short = CallFacts { alu: false, elements: Some(3), ..world(8) };
        assert_eq!(choose(allreduce, "auto", &short, 1 << 20).algorithm, "recursive_doubling");
        let allgather = operation("allgather").unwrap();
        let c = choose(allgather, "recursive_doubling", &CallFacts { whole_partition: false, ..world(6) }, 8);
        assert_eq!((c.algorithm, c.fallback.is_some()), ("bruck", true));
        assert_eq!(choose(allgather, "auto", &world(8), 8).algorithm, "tree");
        assert_eq!(choose(allgather, "auto", &CallFacts { elements: None, ..world(8) }, 8).algorithm, "recursive_doubling");
        // MPICH's switch on the total gathered: recursive doubling on a
        // power of two below 512 KB, Bruck elsewhere below 80 KB, the ring.
        let p2p = |n: u32, nbytes: u64| choose(allgather, "auto", &CallFacts { whole_partition: false, ..world(n) }, nbytes).algorithm;
        assert_eq!(p2p(32768, 4), "recursive_doubling");
        assert_eq!(p2p(1024, 1024), "ring");
        assert_eq!(p2p(6, 8), "bruck");
        assert_eq!(p2p(8191, 4), "bruck");
        assert_eq!(p2p(8191, 16), "ring");
    }

    /// BG/P's MPI: a quarter of the partition (one rank on every node, not
    /// the whole partition) reduces on the torus from 128 B to 32 KB and
    /// broadcasts with deposit-bit lines; off a rectangle it broadcasts by
    /// its binomial tree; the whole partition keeps the tree network (and
    /// the barrier network), other communicators run its binomial barrier;
    /// without the machine's torus algorithms, MPICH's rule.
    #[test]
    fn the_torus_mpi_reduces_on_rectangles_of_whole_nodes() {
        let allreduce = operation("allreduce").unwrap();
        let quarter = CallFacts { whole_partition: false, torus_mpi: true, ..world(512) };
        let pick = |f: &CallFacts, nbytes: u64| choose(allreduce, "auto", f, nbytes).algorithm;
        assert_eq!(pick(&quarter, 16 << 10), "torus_rectangle");
        assert_eq!(pick(&quarter, 128), "torus_rectangle");
        assert_eq!(pick(&quarter, 64), "recursive_doubling");
        assert_eq!(pick(&quarter, 64 << 10), "reduce_scatter_allgather");
        assert_eq!(pick(&CallFacts { torus_mpi: true, ..world(512) }, 16 << 10), "tree");
        assert_eq!(pick(&CallFacts { torus_mpi: false, ..quarter }, 16 << 10), "reduce_scatter_allgather");
        assert_eq!(pick(&CallFacts { every_node: false, ..quarter }, 16 << 10), "reduce_scatter_allgather");
        assert_eq!(pick(&CallFacts { alu: false, ..quarter }, 16 << 10), "reduce_scatter_allgather");
        let bcast = operation("bcast").unwrap();
        assert_eq!(choose(bcast, "auto", &quarter, 16 << 10).algorithm, "torus_deposit");
        assert_eq!(choose(bcast, "auto", &quarter, 4).algorithm, "torus_deposit");
        assert_eq!(choose(bcast, "auto", &CallFacts { every_node: false, ..quarter }, 16 << 10).algorithm, "torus_binomial");
        assert_eq!(choose(bcast, "auto", &CallFacts { faulty_torus: true, ..quarter }, 4).algorithm, "torus_binomial");
        assert_eq!(choose(bcast, "auto", &CallFacts { torus_mpi: false, ..quarter }, 16 << 10).algorithm, "scatter_allgather");
        assert_eq!(choose(bcast, "auto", &CallFacts { n: 2, every_node: false, ..quarter }, 16 << 10).algorithm, "binomial");
        let barrier = operation("barrier").unwrap();
        assert_eq!(choose(barrier, "auto", &CallFacts { every_node: false, ..quarter }, 0).algorithm, "torus_binomial");
        assert_eq!(choose(barrier, "auto", &CallFacts { torus_mpi: true, ..world(512) }, 0).algorithm, "gi");
        assert_eq!(choose(barrier, "auto", &CallFacts { torus_mpi: false, ..quarter }, 0).algorithm, "dissemination");
        assert_eq!(choose(barrier, "auto", &CallFacts { n: 2, ..quarter }, 0).algorithm, "dissemination");
        let c = choose(allreduce, "torus_rectangle", &CallFacts { every_node: false, ..quarter }, 16 << 10);
        assert_eq!(c.fallback.as_deref(), Some("needs exactly one rank on every node of the partition"));
    }
}
