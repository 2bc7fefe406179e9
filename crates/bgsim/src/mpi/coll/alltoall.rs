//! MPI_Alltoall.

use super::{Algorithm, Operation, ALLTOALL_LONG};

pub static OP: Operation = Operation {
    name: "alltoall",
    algorithms: &[
        Algorithm { name: "generic", description: "a portable MPI's choice: MPI_Alltoall post-all up to 32 KB per pair, else pairwise; MPI_Alltoallv/w post-all of the nonzero counts", needs: &[], hardware: false },
        Algorithm { name: "postall", description: "post every send and receive, then wait for all (Alltoallv/w: no message for a zero count)", needs: &[], hardware: false },
        Algorithm { name: "pairwise", description: "pairwise exchange, one partner per step", needs: &[], hardware: false },
        Algorithm {
            name: "torus_spread",
            description: "post-all with every rank visiting its destinations in its own random order",
            needs: &[],
            hardware: false,
        },
        Algorithm {
            name: "msglayer",
            description: "packets injected directly by the message layer (dynamic routing, no per-message protocol work)",
            needs: &[],
            hardware: false,
        },
    ],
    portable: |_, _| "generic",
    safe: "generic",
    // Per pair: the largest part.
    generic: Some(|nbytes, _| if nbytes > ALLTOALL_LONG { "pairwise" } else { "postall" }),
    torus: None,
};
