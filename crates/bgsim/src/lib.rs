//! bgsim: a packet-level simulator of Blue Gene/L- and Blue Gene/P-class
//! massively parallel torus machines and the message passing that runs on them.
//!
//! The modules are the layers of the simulated machine, each depending only
//! on those above it in this list: `engine` (time, events, random streams,
//! partitions), `machine` (the validated machine description), `torus` (the
//! network hardware), `node` (cores as resources), `packet` (the packet layer
//! and the core loop), `msglayer` (the active-message layer and its
//! protocols), `mpi` (MPI point-to-point over it, ranks driven from outside),
//! `workload` (what drives a run), `report` (results).

pub mod collective;
pub mod engine;
pub mod machine;
pub mod mpi;
pub mod msglayer;
pub mod node;
pub mod packet;
pub mod report;
pub mod torus;
pub mod workload;

/// Errors of a run (machine description or workload).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Machine(#[from] machine::MachineError),
    #[error("{0}")]
    Workload(String),
}
