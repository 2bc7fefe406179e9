//! MPI_Gather.

use super::{Algorithm, Operation};

pub static OP: Operation = Operation {
    name: "gather",
    algorithms: &[Algorithm { name: "binomial", description: "binomial tree toward the root", needs: &[], hardware: false }],
    portable: |_, _| "binomial",
    generic: None,
    torus: None,
    safe: "binomial",
};
