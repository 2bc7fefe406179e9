//! Traffic runs (`bgsim traffic`, `bgsim.run_traffic`): the spec in as JSON,
//! the result out as JSON, the GIL released while the core runs.

use crate::errors::{self, to_py};
use crate::registry::load_machine;
use bgsim::workload::{self, TrafficSpec};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

/// Runs a traffic pattern. `spec_json` is a TrafficSpec as JSON; returns the
/// result as JSON. `progress(fraction, ncycles, events)` is called now and then with the GIL
/// held; Ctrl-C stops the run.
#[pyfunction]
#[pyo3(signature = (machine, settings, spec_json, progress=None, threads=1, partitions=1))]
pub(crate) fn run_traffic(py: Python<'_>, machine: &str, settings: Vec<String>, spec_json: &str, progress: Option<PyObject>, threads: usize, partitions: usize) -> PyResult<String> {
    let m = load_machine(machine, settings)?;
    let spec = TrafficSpec::from_json(spec_json).map_err(to_py)?;
    errors::check_cut(threads, partitions)?;
    let opts = workload::RunOptions { threads, partitions };
    let distributed = bgsim::engine::parallel::launched_by_mpi();
    if distributed && partitions > 1 {
        return Err(errors::cut_under_launcher(threads, partitions));
    }
    #[cfg(not(feature = "mpi"))]
    if distributed {
        return Err(errors::usage("this process was started by an MPI launcher, and this bgsim was built without MPI: build it with `make build`"));
    }
    let mut interrupted = false;
    let mut callback_error: Option<PyErr> = None;
    let result = py.allow_threads(|| {
        let mut report = |f: workload::RunProgress| {
            Python::with_gil(|py| {
                if let Err(e) = py.check_signals() {
                    interrupted = true;
                    callback_error = Some(e);
                    return false;
                }
                if let Some(cb) = &progress {
                    if let Err(e) = cb.call1(py, (f.fraction, f.ncycles, f.events)) {
                        callback_error = Some(e);
                        return false;
                    }
                }
                true
            })
        };
        #[cfg(feature = "mpi")]
        if distributed {
            use bgsim::engine::mpi;
            mpi::init();
            // Process 0 merges the partitions; every process gets the result.
            return workload::run_distributed(&m, &spec, Box::new(mpi::Mpi::world()), &mut report).map(|r| {
                let json = r.map(|r| serde_json::to_string(&r).expect("a traffic result is plain data")).unwrap_or_default();
                String::from_utf8(mpi::Mpi::world().broadcast(json.into_bytes())).expect("JSON from process 0")
            });
        }
        workload::run_with(&m, &spec, opts, &mut report).map(|r| serde_json::to_string(&r).expect("a traffic result is plain data"))
    });
    if let Some(e) = callback_error {
        return Err(if interrupted { PyKeyboardInterrupt::new_err("bgsim run interrupted") } else { e });
    }
    result.map_err(to_py)
}
