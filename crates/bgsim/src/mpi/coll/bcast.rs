//! MPI_Bcast.

use super::{Algorithm, Need, Operation, BCAST_LONG};

pub static OP: Operation = Operation {
    name: "bcast",
    algorithms: &[
        Algorithm { name: "generic", description: "a portable MPI's choice by size: binomial, or scatter + allgather for long messages", needs: &[], hardware: false },
        Algorithm { name: "binomial", description: "binomial tree of point-to-point messages", needs: &[], hardware: false },
        Algorithm { name: "scatter_allgather", description: "binomial scatter then allgather (van de Geijn): recursive doubling on a power-of-two communicator below 512 KB, else a ring", needs: &[], hardware: false },
        Algorithm {
            name: "torus_p2p",
            description: "one colour per dimension along edge-disjoint torus lines of MPI messages, pipelined in 16 KB segments",
            needs: &[Need::OneRankPerNode],
            hardware: false,
        },
        Algorithm {
            name: "torus_deposit",
            description: "the same lines as deposit-bit line packets of the message layer, forwarded by the root's core on every node (BG/P's rectangle broadcast)",
            needs: &[Need::RankOnEveryNode, Need::HealthyTorus],
            hardware: false,
        },
        Algorithm {
            name: "torus_binomial",
            description: "binomial tree of messages that go eager at every size, every rank sending to all its children at once when its data is in (BG/P's binomial broadcast)",
            needs: &[],
            hardware: false,
        },
        Algorithm {
            name: "tree",
            description: "the collective network",
            needs: &[Need::WholePartition, Need::CollectiveNetwork],
            hardware: true,
        },
    ],
    portable: long_or_short,
    generic: Some(long_or_short),
    // BG/P's MPI (`mpido_bcast.c`) never runs MPICH's broadcast: on a
    // rectangle of whole nodes its rectangle broadcast (asynchronous up
    // to 128 B, the same lines), elsewhere its binomial one (asynchronous
    // up to 1 KB or 16 KB, then synchronous: the same tree).
    torus: Some(|nbytes| if nbytes > 0 { &["torus_deposit", "torus_binomial"] } else { &[] }),
    safe: "binomial",
};

/// MPICH's rule: the binomial tree for short messages and for fewer than
/// `BCAST_MIN_PROCS` ranks.
const BCAST_MIN_PROCS: u32 = 8;

fn long_or_short(nbytes: u64, n: u32) -> &'static str {
    if nbytes >= BCAST_LONG && n >= BCAST_MIN_PROCS {
        "scatter_allgather"
    } else {
        "binomial"
    }
}
