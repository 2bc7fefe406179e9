//! What the core offers to choose from, for the Python package: machines,
//! routings, traffic patterns and their options, the collective registry and
//! the choice of a call's algorithm. Read-only views of the core's tables.

use crate::errors::{self, to_py};
use bgsim::machine::{self, MachineSource};
use bgsim::mpi::coll;
use bgsim::workload::{self, Pattern};
use pyo3::prelude::*;

/// A machine from a preset name or TOML file and `--set` overrides, validated.
pub(crate) fn load_machine(machine: &str, settings: Vec<String>) -> PyResult<machine::Machine> {
    let src = MachineSource::from_arg(machine).map_err(to_py)?;
    let m = machine::load(&src, &settings).map_err(to_py)?;
    coll::check_machine(&m).map_err(to_py)?;
    Ok(m)
}

/// Validates a machine and returns it as TOML text plus derived values (JSON).
#[pyfunction]
#[pyo3(signature = (machine, settings=vec![]))]
pub(crate) fn machine_info(machine: &str, settings: Vec<String>) -> PyResult<(String, String)> {
    let m = load_machine(machine, settings)?;
    let derived = serde_json::json!({
        "name": m.name(),
        "shape": m.shape.dims,
        "torus": m.shape.torus,
        "nodes": m.shape.nodes(),
        "dead_nodes": m.faults.nodes.len(),
        "dead_links": m.faults.links.len(),
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
        "cores": m.cores(),
        "partition_shapes": m.spec.partition.shapes,
        "components": m.spec.components().iter().map(|c| c.name()).collect::<Vec<_>>(),
    });
    Ok((m.to_toml(), derived.to_string()))
}

/// Names of the built-in traffic patterns.
/// Every selectable collective algorithm: [(op, [names])] ("auto" first).
#[pyfunction]
pub(crate) fn collective_algorithms() -> Vec<(&'static str, Vec<&'static str>)> {
    coll::OPERATIONS.iter().map(|op| (op.name, coll::choices(op))).collect()
}

/// One algorithm of the registry: (name, description, [needs], hardware).
type AlgorithmRow = (&'static str, &'static str, Vec<String>, bool);

/// The collective registry: [(op, [algorithm])].
#[pyfunction]
pub(crate) fn collective_registry() -> Vec<(&'static str, Vec<AlgorithmRow>)> {
    let need = |n: &coll::Need| serde_json::to_value(n).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    coll::OPERATIONS
        .iter()
        .map(|op| (op.name, op.algorithms.iter().map(|a| (a.name, a.description, a.needs.iter().map(need).collect(), a.hardware)).collect()))
        .collect()
}

/// What the algorithm `generic` of `op` runs for `nbytes` on `n` ranks.
#[pyfunction]
pub(crate) fn collective_generic(op: &str, nbytes: u64, n: u32) -> PyResult<&'static str> {
    coll::operation(op).and_then(|o| coll::generic(o, nbytes, n)).ok_or_else(|| errors::usage(format!("`{op}` has no generic algorithm")))
}

/// The algorithm of one collective call: `wanted` ("auto" or a name) and
/// what the call offers -> (algorithm, why the wanted one cannot run, if so).
#[pyfunction]
#[pyo3(signature = (op, wanted, nbytes, n, whole_partition, one_task_per_node, collective_network, barrier_network, alu, elements=None, faulty_torus=false, every_node=false, torus_mpi=false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn collective_choose(op: &str, wanted: &str, nbytes: u64, n: u32, whole_partition: bool, one_task_per_node: bool, collective_network: bool,
                     barrier_network: bool, alu: bool, elements: Option<u64>, faulty_torus: bool, every_node: bool, torus_mpi: bool) -> PyResult<(&'static str, Option<String>)> {
    let operation = coll::operation(op).ok_or_else(|| errors::usage(format!("`{op}` is not a collective operation")))?;
    let facts = coll::CallFacts { n, whole_partition, one_task_per_node, collective_network, barrier_network, alu, elements, faulty_torus, every_node, torus_mpi };
    let c = coll::choose(operation, wanted, &facts, nbytes);
    Ok((c.algorithm, c.fallback))
}

/// The routing algorithms: [(name, description)].
#[pyfunction]
pub(crate) fn routings() -> Vec<(&'static str, &'static str)> {
    bgsim::torus::Routing::ALL.iter().map(|r| (r.name(), r.description())).collect()
}

#[pyfunction]
pub(crate) fn patterns() -> Vec<&'static str> {
    Pattern::ALL.iter().map(|p| p.name()).collect()
}

/// Every traffic pattern: [(name, description, timed, its options with
/// their defaults as JSON)], and the options every pattern has (JSON).
#[pyfunction]
pub(crate) fn pattern_options() -> (Vec<(&'static str, &'static str, bool, String)>, String) {
    let patterns = Pattern::ALL.iter().map(|p| (p.name(), p.description(), p.is_timed(), serde_json::Value::Object(p.options()).to_string())).collect();
    let common = serde_json::to_string(&workload::spec::Common::default()).expect("plain data");
    (patterns, common)
}

/// The sizes (bytes) at which the portable collective algorithms switch,
/// by name (`mpi::coll::THRESHOLDS`).
#[pyfunction]
pub(crate) fn collective_thresholds() -> std::collections::HashMap<&'static str, u64> {
    coll::THRESHOLDS.iter().copied().collect()
}
