//! MPI_Barrier.

use super::{Algorithm, Need, Operation};

pub static OP: Operation = Operation {
    name: "barrier",
    algorithms: &[
        Algorithm { name: "dissemination", description: "dissemination barrier over point-to-point messages (log2 n rounds)", needs: &[], hardware: false },
        Algorithm {
            name: "gi",
            description: "the global-interrupt barrier network",
            needs: &[Need::WholePartition, Need::BarrierNetwork],
            hardware: true,
        },
    ],
    portable: |_, _| "dissemination",
    generic: None,
    torus: None,
    safe: "dissemination",
};
