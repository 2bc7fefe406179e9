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
            name: "tree",
            description: "the collective network's ALU (integers directly, floating-point sums in two passes)",
            needs: &[Need::WholePartition, Need::CollectiveNetwork, Need::Alu],
            hardware: true,
        },
    ],
    portable: |nbytes, n| if nbytes >= ALLREDUCE_LONG && n.is_power_of_two() { "reduce_scatter_allgather" } else { "recursive_doubling" },
    generic: None,
    safe: "recursive_doubling",
};
