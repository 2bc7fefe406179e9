//! What a traffic run is asked to do: the pattern and its parameters. The
//! same names work from the CLI, from Python and in experiment definitions.

use crate::machine::Machine;
use crate::torus::Routing;
use thiserror::Error;

/// A traffic run that cannot be run as asked.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum WorkloadError {
    /// A spec value out of its range.
    #[error("traffic `{key}` = {value}: {allowed}")]
    Invalid { key: &'static str, value: String, allowed: String },
    /// The pattern cannot run on this partition.
    #[error("{pattern}: {reason}")]
    Unfit { pattern: &'static str, reason: String },
    /// The box region does not fit the partition.
    #[error("traffic region: size {size:?} at {lo:?} does not fit the partition {}x{}x{} (every size at least 1)", dims[0], dims[1], dims[2])]
    Region { size: [u32; 3], lo: [u32; 3], dims: [u32; 3] },
    /// The caller's progress callback asked the run to stop.
    #[error("interrupted")]
    Interrupted,
}
use serde::{Deserialize, Serialize};

/// Built-in traffic patterns of the packet layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Packet-layer ping-pong between node 0 and a node `hops` away.
    Pingpong,
    /// Uniformly random destinations at an offered load.
    Uniform,
    /// A share of packets to a hot box region, the rest uniform, at an offered load.
    HotRegion,
    /// Every node outside a box region sends `packets` packets to every node in it.
    HotSpot,
    /// Every node sends `message_bytes` to every other node.
    Alltoall,
    /// Continuous all-to-all: each node cycles through every destination, from its own offset.
    AlltoallStream,
    /// Deposit-bit broadcast along one X line, colours sent both ways.
    LineFill,
    /// Broadcast over an XY plane: deposit-bit lines in 4 colours, corner turns in software.
    PlaneFill,
    /// Every node sends `packets` packets to each of its neighbours.
    NearestNeighbor,
}

impl Pattern {
    pub const ALL: [Pattern; 9] = [
        Pattern::Pingpong,
        Pattern::Uniform,
        Pattern::HotRegion,
        Pattern::HotSpot,
        Pattern::Alltoall,
        Pattern::AlltoallStream,
        Pattern::LineFill,
        Pattern::PlaneFill,
        Pattern::NearestNeighbor,
    ];
    pub fn name(&self) -> &'static str {
        match self {
            Pattern::Pingpong => "pingpong",
            Pattern::Uniform => "uniform",
            Pattern::HotRegion => "hot_region",
            Pattern::HotSpot => "hot_spot",
            Pattern::Alltoall => "alltoall",
            Pattern::AlltoallStream => "alltoall_stream",
            Pattern::LineFill => "line_fill",
            Pattern::PlaneFill => "plane_fill",
            Pattern::NearestNeighbor => "nearest_neighbor",
        }
    }
    /// Patterns that run at an offered load for a fixed time (the others run to completion).
    pub fn is_timed(&self) -> bool {
        matches!(self, Pattern::Uniform | Pattern::HotRegion | Pattern::AlltoallStream)
    }
}

fn d_seed() -> u64 {
    1
}
fn d_routing() -> Routing {
    Routing::Dynamic
}
fn d_load() -> f64 {
    0.5
}
fn d_packets() -> u32 {
    16
}
fn d_hops() -> u32 {
    1
}
fn d_iters() -> u32 {
    4
}
fn d_message() -> u32 {
    240
}
fn d_hot_fraction() -> f64 {
    0.25
}
fn d_warmup() -> u64 {
    5_000
}
fn d_measure() -> u64 {
    20_000
}
fn d_window() -> u64 {
    10_000
}
fn d_max() -> u64 {
    50_000_000
}
fn d_deadlock() -> u64 {
    50_000
}
fn d_backlog() -> u32 {
    32
}

/// A traffic run. Units are in the names; times are network cycles.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficSpec {
    pub pattern: Pattern,
    #[serde(default = "d_seed")]
    pub seed: u64,
    #[serde(default = "d_routing")]
    pub routing: Routing,
    /// Payload bytes per packet (the packet also carries the hardware and
    /// software headers); `None`: the machine's largest, full packets.
    #[serde(default)]
    pub payload_bytes: Option<u32>,
    /// Draw each packet's size uniformly from 1..=max chunks instead.
    #[serde(default)]
    pub variable_size: bool,
    /// Offered load as a fraction of the pattern's peak (timed patterns).
    #[serde(default = "d_load")]
    pub load: f64,
    /// Packets per source and destination (hot_spot, nearest_neighbor).
    #[serde(default = "d_packets")]
    pub packets: u32,
    /// Message bytes (pingpong, alltoall per pair, line_fill / plane_fill total).
    #[serde(default = "d_message")]
    pub message_bytes: u32,
    /// Hops between the ping-pong partners.
    #[serde(default = "d_hops")]
    pub hops: u32,
    /// Ping-pong round trips.
    #[serde(default = "d_iters")]
    pub iters: u32,
    /// Hot region (hot_region / hot_spot): low corner and size of the box.
    #[serde(default)]
    pub region_lo: [u32; 3],
    #[serde(default)]
    pub region_size: [u32; 3],
    /// Share of packets sent to the hot region (hot_region).
    #[serde(default = "d_hot_fraction")]
    pub hot_fraction: f64,
    /// Timed patterns: warm-up before measuring, and the measured span.
    #[serde(default = "d_warmup")]
    pub warmup_ncycles: u64,
    #[serde(default = "d_measure")]
    pub measure_ncycles: u64,
    /// Throughput window.
    #[serde(default = "d_window")]
    pub window_ncycles: u64,
    /// Give up after this much simulated time.
    #[serde(default = "d_max")]
    pub max_ncycles: u64,
    /// Declare a deadlock when packets sit in the network and none moves for this long.
    #[serde(default = "d_deadlock")]
    pub deadlock_ncycles: u64,
    /// Packets a source may hold queued in software before it stops generating.
    #[serde(default = "d_backlog")]
    pub backlog_packets: u32,
    /// All-to-all patterns: start each node's walk over the destinations at a
    /// random node instead of right after itself.
    #[serde(default)]
    pub random_start: bool,
    /// Timed patterns: after generation stops, run on until the network is
    /// empty (or stops moving: a deadlock).
    #[serde(default)]
    pub drain: bool,
    /// Keep per-link and per-node counters in the result (heat maps, CSV).
    #[serde(default)]
    pub per_link: bool,
}

impl TrafficSpec {
    pub fn new(pattern: Pattern) -> Self {
        let mut s: TrafficSpec = serde_json::from_str(&format!("{{\"pattern\":\"{}\"}}", pattern.name())).unwrap();
        if pattern == Pattern::HotRegion || pattern == Pattern::HotSpot {
            s.region_size = [1, 1, 1];
        }
        s
    }

    /// Checks values that do not depend on the machine.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |key: &'static str, value: String, allowed: &str| Err(WorkloadError::Invalid { key, value, allowed: allowed.to_string() });
        if !(self.load > 0.0 && self.load <= 4.0) {
            return bad("load", self.load.to_string(), "a fraction of peak in (0, 4]");
        }
        if !(0.0..=1.0).contains(&self.hot_fraction) {
            return bad("hot_fraction", self.hot_fraction.to_string(), "a fraction from 0 to 1");
        }
        if self.packets == 0 {
            return bad("packets", "0".into(), "at least 1");
        }
        if self.iters == 0 {
            return bad("iters", "0".into(), "at least 1");
        }
        if self.message_bytes == 0 {
            return bad("message_bytes", "0".into(), "at least 1");
        }
        if self.measure_ncycles == 0 || self.window_ncycles == 0 {
            return bad("measure_ncycles/window_ncycles", "0".into(), "at least 1");
        }
        if self.backlog_packets == 0 {
            return bad("backlog_packets", "0".into(), "at least 1");
        }
        if let (true, Some(p)) = (self.variable_size, self.payload_bytes) {
            return bad("payload_bytes", p.to_string(), "not with variable_size, which draws every packet's size");
        }
        Ok(())
    }

    /// Checks the values that depend on the machine.
    pub fn validate_for(&self, m: &Machine) -> Result<(), WorkloadError> {
        let max = m.max_payload_bytes();
        match self.payload_bytes {
            Some(p) if p == 0 || p > max => Err(WorkloadError::Invalid {
                key: "payload_bytes",
                value: p.to_string(),
                allowed: format!(
                    "1 to {max} on this machine (torus.max_packet_chunks = {} chunks of {} bytes, less {} header bytes)",
                    m.torus().max_packet_chunks,
                    m.torus().chunk_bytes,
                    m.max_packet_bytes() - max
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Payload bytes of each fixed-size packet on machine `m`.
    pub fn packet_payload(&self, m: &Machine) -> u32 {
        self.payload_bytes.unwrap_or_else(|| m.max_payload_bytes())
    }
}
