//! The MPI job that started this process, if any (`mpirun -n P bgsim ...`):
//! its size, this process's index, finalize and abort.

use pyo3::prelude::*;

/// This process's index in the MPI job that started it (0 outside one).
#[pyfunction]
pub(crate) fn mpi_rank() -> usize {
    if !bgsim::engine::parallel::launched_by_mpi() {
        return 0;
    }
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"].iter().find_map(|k| std::env::var(k).ok()?.parse().ok()).unwrap_or(0)
}

/// How many processes the MPI job that started this one has (1 outside one).
#[pyfunction]
pub(crate) fn mpi_size() -> usize {
    bgsim::engine::parallel::launched_processes()
}

/// Whether an MPI launcher started this process as one of several.
#[pyfunction]
pub(crate) fn mpi_launched() -> bool {
    bgsim::engine::parallel::launched_by_mpi()
}

/// Ends MPI in this process if a distributed run started it (at exit).
#[pyfunction]
pub(crate) fn mpi_finalize() {
    #[cfg(feature = "mpi")]
    bgsim::engine::mpi::finalize();
}

/// Ends every process of the MPI job that started this one with `code`
/// (MPI_Abort), after a failure here that would leave the others waiting.
/// Does nothing outside one.
#[pyfunction]
pub(crate) fn mpi_abort(code: i32) {
    #[cfg(feature = "mpi")]
    if bgsim::engine::parallel::launched_by_mpi() {
        bgsim::engine::mpi::abort(code);
    }
    let _ = code;
}
