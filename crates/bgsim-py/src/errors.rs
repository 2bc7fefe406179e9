//! The one place where the core's errors become Python exceptions. The
//! classes live in `bgsim.errors` (each derives from `bgsim.BgsimError` and
//! from the standard class a user expects); they are imported on first use.

use bgsim::Error;
use pyo3::prelude::*;

pyo3::import_exception!(bgsim.errors, MachineError);
pyo3::import_exception!(bgsim.errors, WorkloadError);
pyo3::import_exception!(bgsim.errors, MappingError);
pyo3::import_exception!(bgsim.errors, UsageError);
pyo3::import_exception!(bgsim.errors, ModelError);
pyo3::import_exception!(bgsim.errors, DeadlockError);

/// The Python exception for a core error.
pub fn to_py(e: impl Into<Error>) -> PyErr {
    let e = e.into();
    let msg = e.to_string();
    match e {
        Error::Machine(_) | Error::Shape(_) => MachineError::new_err(msg),
        Error::Mapping(_) | Error::Mpi(bgsim::mpi::MpiError::Mapping(_) | bgsim::mpi::MpiError::NoRoute(_)) => MappingError::new_err(msg),
        Error::Mpi(bgsim::mpi::MpiError::Blocked(b)) => {
            let list: Vec<(u32, Vec<String>)> = b.into_iter().map(|r| (r.rank, r.waiting_for)).collect();
            DeadlockError::new_err((msg, list))
        }
        Error::Mpi(_) | Error::Name(_) => UsageError::new_err(msg),
        Error::Workload(_) => WorkloadError::new_err(msg),
        Error::Torus(_) => ModelError::new_err(msg),
    }
}

/// A bad argument the binding itself finds (outside the core's types).
pub fn usage(msg: impl Into<String>) -> PyErr {
    UsageError::new_err(msg.into())
}

/// Refuses `threads` below 1, or fewer partitions (`parts`) than threads.
pub fn check_cut(threads: usize, parts: usize) -> pyo3::PyResult<()> {
    if threads == 0 || parts < threads {
        return Err(usage(format!("threads {threads}, partitions {parts}: at least 1 thread and as many partitions as threads")));
    }
    Ok(())
}

/// The refusal of a cut (more than one thread or partition) in a process
/// an MPI launcher started: there each process runs one partition.
pub fn cut_under_launcher(threads: usize, parts: usize) -> PyErr {
    usage(format!("threads {threads}, partitions {parts}: under an MPI launcher each process runs one partition on one thread; leave both at 1"))
}
