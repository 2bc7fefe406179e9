//! MPI_Barrier.

use super::{Algorithm, Need, Operation};

pub static OP: Operation = Operation {
    name: "barrier",
    algorithms: &[
        Algorithm { name: "dissemination", description: "dissemination barrier over point-to-point messages (log2 n rounds)", needs: &[], hardware: false },
        Algorithm {
            name: "torus_binomial",
            description: "dissemination rounds among the largest power-of-two set of ranks, each rank beyond it signalling a partner in the set before the rounds and hearing from it after (BG/P's binomial barrier)",
            needs: &[],
            hardware: false,
        },
        Algorithm {
            name: "gi",
            description: "the global-interrupt barrier network",
            needs: &[Need::WholePartition, Need::BarrierNetwork],
            hardware: true,
        },
    ],
    portable: |_, _| "dissemination",
    generic: None,
    torus: Some(|_| &["torus_binomial"]),
    safe: "dissemination",
};
