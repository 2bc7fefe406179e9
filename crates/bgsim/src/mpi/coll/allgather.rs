//! MPI_Allgather.

use super::{Algorithm, Need, Operation, ALLGATHER_LONG, ALLGATHER_SHORT};

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
            name: "bruck",
            description: "Bruck: ceil(log2 n) steps for any n, doubling the blocks sent to the rank 2^k below",
            needs: &[],
            hardware: false,
        },
        Algorithm {
            name: "tree",
            description: "the collective network: every rank's block at its place, zeros elsewhere, OR-ed by the ALU (an allreduce of all the blocks, as BG/P's MPI on whole-partition communicators)",
            needs: &[Need::WholePartition, Need::CollectiveNetwork, Need::ArrayData],
            hardware: true,
        },
    ],
    portable,
    generic: None,
    torus: None,
    safe: "ring",
};

/// MPICH's rule on the total gathered: recursive doubling for a power of
/// two below `ALLGATHER_LONG`, Bruck for other sizes below
/// `ALLGATHER_SHORT`, the ring otherwise.
fn portable(nbytes: u64, n: u32) -> &'static str {
    let total = nbytes * (n as u64);
    if n.is_power_of_two() && total < ALLGATHER_LONG {
        "recursive_doubling"
    } else if !n.is_power_of_two() && total < ALLGATHER_SHORT {
        "bruck"
    } else {
        "ring"
    }
}
