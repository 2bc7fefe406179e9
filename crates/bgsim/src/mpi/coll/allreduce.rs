//! MPI_Allreduce.

use super::{Algorithm, Need, Operation, ALLREDUCE_LONG};

pub static OP: Operation = Operation {
    name: "allreduce",
    algorithms: &[
        Algorithm {
            name: "recursive_doubling",
            description: "recursive doubling, non-power-of-two sizes folded in (MPICH)",
            needs: &[],
            hardware: false,
        },
        Algorithm {
            name: "reduce_scatter_allgather",
            description: "reduce-scatter by recursive halving, then allgather by recursive doubling (Rabenseifner)",
            needs: &[Need::ArrayData, Need::ElementPerRank],
            hardware: false,
        },
        Algorithm {
            name: "torus_rectangle",
            description: "message-layer line reduction on the torus: per packet colour, partial sums combined on every node's core along lines to the root, spread back with deposit-bit packets (BG/P's rectangle allreduce)",
            needs: &[Need::RankOnEveryNode, Need::ArrayData, Need::Alu, Need::HealthyTorus],
            hardware: false,
        },
        Algorithm {
            name: "tree",
            description: "the collective network's ALU (integers directly, floating-point sums in two passes)",
            needs: &[Need::WholePartition, Need::CollectiveNetwork, Need::Alu],
            hardware: true,
        },
    ],
    portable: |nbytes, n| if nbytes >= ALLREDUCE_LONG && n.is_power_of_two() { "reduce_scatter_allgather" } else { "recursive_doubling" },
    generic: None,
    // BG/P's MPI on a rectangle of whole nodes (`mpido_allreduce.c`):
    // the torus allreduce from 128 B to 32 KB (the binomial below and
    // the rectangle's ring above are not modelled; MPICH's rule runs).
    torus: Some(|nbytes| if (128..=32 * 1024).contains(&nbytes) { &["torus_rectangle"] } else { &[] }),
    safe: "recursive_doubling",
};
