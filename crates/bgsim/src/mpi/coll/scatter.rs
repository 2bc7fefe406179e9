//! MPI_Scatter.

use super::{Algorithm, Operation};

pub static OP: Operation = Operation {
    name: "scatter",
    algorithms: &[Algorithm { name: "binomial", description: "binomial tree from the root", needs: &[], hardware: false }],
    portable: |_, _| "binomial",
    generic: None,
    torus: None,
    safe: "binomial",
};
