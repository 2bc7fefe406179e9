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

pub mod barrier;
pub mod collective;
pub mod dma;
pub mod engine;
pub mod machine;
pub mod mpi;
pub mod msglayer;
pub mod node;
pub mod packet;
pub mod report;
pub mod torus;
pub mod workload;

/// Every error bgsim's core returns, one variant per layer; the Python
/// binding maps this type to Python exceptions in one place.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The machine description (preset, TOML, settings).
    #[error(transparent)]
    Machine(#[from] machine::MachineError),
    /// A partition shape or mesh.
    #[error(transparent)]
    Shape(#[from] machine::ShapeError),
    /// A name that is not one of an algorithm's stable names.
    #[error(transparent)]
    Name(#[from] machine::UnknownName),
    /// The rank mapping (order name or mapfile).
    #[error(transparent)]
    Mapping(#[from] machine::MappingError),
    /// A broken torus invariant.
    #[error(transparent)]
    Torus(#[from] torus::TorusError),
    /// An MPI program's run (ranks, collectives, deadlock).
    #[error(transparent)]
    Mpi(#[from] mpi::MpiError),
    /// A traffic run's spec or its fit to the machine.
    #[error(transparent)]
    Workload(#[from] workload::WorkloadError),
}
