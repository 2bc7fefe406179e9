//! MPI_Allgather.

use super::{Algorithm, Need, Operation, ALLGATHER_LONG};

pub static OP: Operation = Operation {
    name: "allgather",
    algorithms: &[
        Algorithm { name: "ring", description: "ring: n - 1 steps, each passing one block on", needs: &[], hardware: false },
        Algorithm {
            name: "recursive_doubling",
            description: "recursive doubling: log2 n steps of doubling blocks",
            needs: &[Need::PowerOfTwo],
            hardware: false,
        },
        Algorithm {
            name: "tree",
            description: "the collective network: every rank's block at its place, zeros elsewhere, OR-ed by the ALU (an allreduce of all the blocks, as BG/P's MPI on whole-partition communicators)",
            needs: &[Need::WholePartition, Need::CollectiveNetwork, Need::ArrayData],
            hardware: true,
        },
    ],
    portable: |nbytes, n| if n.is_power_of_two() && nbytes * (n as u64) < ALLGATHER_LONG { "recursive_doubling" } else { "ring" },
    generic: None,
    safe: "ring",
};
