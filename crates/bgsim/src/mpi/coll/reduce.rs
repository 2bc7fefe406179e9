//! MPI_Reduce.

use super::{Algorithm, Need, Operation};

pub static OP: Operation = Operation {
    name: "reduce",
    algorithms: &[
        Algorithm { name: "binomial", description: "binomial tree in rank order (right for non-commutative operations)", needs: &[], hardware: false },
        Algorithm {
            name: "tree",
            description: "the collective network's ALU (integers directly, floating-point sums in two passes)",
            needs: &[Need::WholePartition, Need::CollectiveNetwork, Need::Alu],
            hardware: true,
        },
    ],
    portable: |_, _| "binomial",
    generic: None,
    torus: None,
    safe: "binomial",
};
