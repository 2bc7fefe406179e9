//! Python binding of bgsim: conversions, GIL release and error mapping only.
//! No model logic lives here.

use bgsim::machine::{self, MachineSource};
use bgsim::workload::{self, Pattern, TrafficSpec};
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;

create_exception!(_core, BgsimError, pyo3::exceptions::PyException, "Base class of bgsim errors.");
create_exception!(_core, MachineError, PyValueError, "The machine description is invalid.");
create_exception!(_core, WorkloadError, PyValueError, "The workload description is invalid.");

fn load_machine(machine: &str, settings: Vec<String>) -> PyResult<machine::Machine> {
    let src = MachineSource::from_arg(machine).map_err(|e| MachineError::new_err(e.to_string()))?;
    machine::load(&src, &settings).map_err(|e| MachineError::new_err(e.to_string()))
}

/// Validates a machine and returns it as TOML text plus derived values (JSON).
#[pyfunction]
#[pyo3(signature = (machine, settings=vec![]))]
fn machine_info(machine: &str, settings: Vec<String>) -> PyResult<(String, String)> {
    let m = load_machine(machine, settings)?;
    let derived = serde_json::json!({
        "name": m.name(),
        "shape": m.shape.dims,
        "torus": m.shape.torus,
        "nodes": m.shape.nodes(),
        "mode": m.mode.name(),
        "tasks_per_node": m.tasks_per_node(),
        "ticks_per_cpu_cycle": m.tick_cycle,
        "ticks_per_link_byte": m.tick_byte,
        "hop_latency_ticks": m.hop_latency,
        "vcs_per_receiver": m.vcs,
        "max_packet_bytes": m.max_packet_bytes(),
        "max_payload_bytes": m.max_payload_bytes(),
        "link_MBps": m.link_bytes_per_s() / 1e6,
        "cpu_mhz": m.spec.clock.cpu_mhz,
    });
    Ok((m.to_toml(), derived.to_string()))
}

/// Names of the built-in traffic patterns.
#[pyfunction]
fn patterns() -> Vec<&'static str> {
    Pattern::ALL.iter().map(|p| p.name()).collect()
}

/// Runs a traffic pattern. `spec_json` is a TrafficSpec as JSON; returns the
/// result as JSON. `progress(fraction)` is called now and then with the GIL
/// held; Ctrl-C stops the run.
#[pyfunction]
#[pyo3(signature = (machine, settings, spec_json, progress=None))]
fn run_traffic(py: Python<'_>, machine: &str, settings: Vec<String>, spec_json: &str, progress: Option<PyObject>) -> PyResult<String> {
    let m = load_machine(machine, settings)?;
    let de = &mut serde_json::Deserializer::from_str(spec_json);
    let spec: TrafficSpec = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.into_inner().to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).replace("expected u32", "expected a non-negative integer");
        if path.is_empty() || path == "." {
            WorkloadError::new_err(format!("traffic spec: {msg}"))
        } else {
            WorkloadError::new_err(format!("traffic `{path}`: {msg}"))
        }
    })?;
    let mut interrupted = false;
    let mut callback_error: Option<PyErr> = None;
    let result = py.allow_threads(|| {
        workload::run(&m, &spec, &mut |f| {
            Python::with_gil(|py| {
                if let Err(e) = py.check_signals() {
                    interrupted = true;
                    callback_error = Some(e);
                    return false;
                }
                if let Some(cb) = &progress {
                    if let Err(e) = cb.call1(py, (f,)) {
                        callback_error = Some(e);
                        return false;
                    }
                }
                true
            })
        })
    });
    if let Some(e) = callback_error {
        return Err(if interrupted { PyKeyboardInterrupt::new_err("bgsim run interrupted") } else { e });
    }
    let r = result.map_err(WorkloadError::new_err)?;
    serde_json::to_string(&r).map_err(|e| BgsimError::new_err(e.to_string()))
}


#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("BgsimError", m.py().get_type_bound::<BgsimError>())?;
    m.add("MachineError", m.py().get_type_bound::<MachineError>())?;
    m.add("WorkloadError", m.py().get_type_bound::<WorkloadError>())?;
    m.add_function(wrap_pyfunction!(machine_info, m)?)?;
    m.add_function(wrap_pyfunction!(patterns, m)?)?;
    m.add_function(wrap_pyfunction!(run_traffic, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
