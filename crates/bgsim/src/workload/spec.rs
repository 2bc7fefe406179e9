//! What a traffic run is asked to do: the pattern with its own parameters
//! ([`PatternSpec`], tagged by `pattern`) and the options every run has
//! ([`Common`]). The same names work from the CLI, from Python and in
//! experiment definitions; an option the chosen pattern does not read is
//! refused here, in the core, naming the patterns that read it.

use crate::machine::Machine;
use crate::torus::Routing;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

/// A traffic run that cannot be run as asked.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum WorkloadError {
    /// A spec value out of its range.
    #[error("traffic `{key}` = {value}: {allowed}")]
    Invalid { key: &'static str, value: String, allowed: String },
    /// A spec that cannot be read: unknown pattern or option, wrong type.
    #[error("traffic {0}")]
    Spec(String),
    /// An option the pattern does not read.
    #[error("traffic `{key}` does not apply to pattern {pattern} (it applies to: {users})")]
    NotForPattern { key: String, pattern: &'static str, users: String },
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

/// The built-in traffic patterns (the kinds of [`PatternSpec`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    Pingpong,
    Uniform,
    HotRegion,
    HotSpot,
    Alltoall,
    AlltoallStream,
    LineFill,
    PlaneFill,
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

    /// The stable name.
    pub fn name(self) -> &'static str {
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

    /// One line for `--help` and the docs.
    pub fn description(self) -> &'static str {
        match self {
            Pattern::Pingpong => "packet-layer ping-pong between node 0 and a node `hops` away",
            Pattern::Uniform => "uniformly random destinations at an offered load",
            Pattern::HotRegion => "a share of packets to a hot box region, the rest uniform, at an offered load",
            Pattern::HotSpot => "every node outside a box region sends `packets` packets to every node in it",
            Pattern::Alltoall => "every node sends `message_bytes` to every other node",
            Pattern::AlltoallStream => "continuous all-to-all: each node cycles through every destination from its own offset",
            Pattern::LineFill => "deposit-bit broadcast along one X line, colours sent both ways",
            Pattern::PlaneFill => "broadcast over an XY plane: deposit-bit lines in 4 colours, corner turns in software",
            Pattern::NearestNeighbor => "every node sends `packets` packets to each of its neighbours",
        }
    }

    /// Patterns that run at an offered load for a fixed time (the others run to completion).
    pub fn is_timed(self) -> bool {
        matches!(self, Pattern::Uniform | Pattern::HotRegion | Pattern::AlltoallStream)
    }

    /// The pattern with every parameter at its default.
    pub fn default_spec(self) -> PatternSpec {
        match self {
            Pattern::Pingpong => PatternSpec::Pingpong(Default::default()),
            Pattern::Uniform => PatternSpec::Uniform(Default::default()),
            Pattern::HotRegion => PatternSpec::HotRegion(Default::default()),
            Pattern::HotSpot => PatternSpec::HotSpot(Default::default()),
            Pattern::Alltoall => PatternSpec::Alltoall(Default::default()),
            Pattern::AlltoallStream => PatternSpec::AlltoallStream(Default::default()),
            Pattern::LineFill => PatternSpec::LineFill(Default::default()),
            Pattern::PlaneFill => PatternSpec::PlaneFill(Default::default()),
            Pattern::NearestNeighbor => PatternSpec::NearestNeighbor(Default::default()),
        }
    }

    /// The options this pattern reads (besides [`Common`]'s), with their
    /// defaults, as the names and values TOML, the CLI and Python use.
    pub fn options(self) -> Map<String, Value> {
        let mut m = match serde_json::to_value(self.default_spec()) {
            Ok(Value::Object(m)) => m,
            _ => unreachable!("a pattern spec serializes to an object"),
        };
        m.remove("pattern");
        m
    }

    pub fn from_name(name: &str) -> Option<Pattern> {
        Pattern::ALL.iter().copied().find(|p| p.name() == name)
    }
}

/// Timed patterns: a warm-up, then the measured span, in network cycles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Timed {
    pub warmup_ncycles: u64,
    pub measure_ncycles: u64,
    /// After generation stops, run on until the network is empty (or stops
    /// moving: a deadlock).
    pub drain: bool,
}

impl Default for Timed {
    fn default() -> Self {
        Timed { warmup_ncycles: 5_000, measure_ncycles: 20_000, drain: false }
    }
}

/// Packet sizes of patterns that send single packets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sizes {
    /// Payload bytes per packet (the packet also carries the hardware and
    /// software headers); `None`: the machine's largest, full packets.
    pub payload_bytes: Option<u32>,
    /// Draw each packet's size uniformly from 1..=max chunks instead.
    pub variable_size: bool,
}

impl Sizes {
    /// Payload bytes of each fixed-size packet on machine `m`.
    pub fn payload(&self, m: &Machine) -> u32 {
        self.payload_bytes.unwrap_or_else(|| m.max_payload_bytes())
    }
}

/// A box region of nodes: low corner and size (wrapping around the torus).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Region {
    pub region_lo: [u32; 3],
    pub region_size: [u32; 3],
}

impl Default for Region {
    fn default() -> Self {
        Region { region_lo: [0; 3], region_size: [1; 3] }
    }
}

/// Offered load, a fraction of the pattern's peak rate.
fn d_load() -> f64 {
    0.5
}
/// Packets a source may hold queued in software before it stops generating.
fn d_backlog() -> u32 {
    32
}
fn d_message() -> u32 {
    240
}
fn d_packets() -> u32 {
    16
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PingpongSpec {
    pub message_bytes: u32,
    /// Hops between the partners (node 0 and a node this far away).
    pub hops: u32,
    /// Round trips.
    pub iters: u32,
}
impl Default for PingpongSpec {
    fn default() -> Self {
        PingpongSpec { message_bytes: d_message(), hops: 1, iters: 4 }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UniformSpec {
    pub load: f64,
    pub backlog_packets: u32,
    #[serde(flatten)]
    pub timed: Timed,
    #[serde(flatten)]
    pub sizes: Sizes,
}
impl Default for UniformSpec {
    fn default() -> Self {
        UniformSpec { load: d_load(), backlog_packets: d_backlog(), timed: Timed::default(), sizes: Sizes::default() }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HotRegionSpec {
    pub load: f64,
    /// Share of packets sent to the region.
    pub hot_fraction: f64,
    pub backlog_packets: u32,
    #[serde(flatten)]
    pub region: Region,
    #[serde(flatten)]
    pub timed: Timed,
    #[serde(flatten)]
    pub sizes: Sizes,
}
impl Default for HotRegionSpec {
    fn default() -> Self {
        HotRegionSpec {
            load: d_load(),
            hot_fraction: 0.25,
            backlog_packets: d_backlog(),
            region: Region::default(),
            timed: Timed::default(),
            sizes: Sizes::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HotSpotSpec {
    /// Packets from every source to every node of the region.
    pub packets: u32,
    #[serde(flatten)]
    pub region: Region,
    #[serde(flatten)]
    pub sizes: Sizes,
}
impl Default for HotSpotSpec {
    fn default() -> Self {
        HotSpotSpec { packets: d_packets(), region: Region::default(), sizes: Sizes::default() }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AlltoallSpec {
    /// Bytes per pair.
    pub message_bytes: u32,
    /// Start each node's walk over the destinations at a random node
    /// instead of right after itself.
    pub random_start: bool,
}
impl Default for AlltoallSpec {
    fn default() -> Self {
        AlltoallSpec { message_bytes: d_message(), random_start: false }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AlltoallStreamSpec {
    pub random_start: bool,
    #[serde(flatten)]
    pub timed: Timed,
    #[serde(flatten)]
    pub sizes: Sizes,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FillSpec {
    /// Bytes broadcast from the root.
    pub message_bytes: u32,
}
impl Default for FillSpec {
    fn default() -> Self {
        FillSpec { message_bytes: d_message() }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NearestNeighborSpec {
    /// Packets to each neighbour.
    pub packets: u32,
    #[serde(flatten)]
    pub sizes: Sizes,
}
impl Default for NearestNeighborSpec {
    fn default() -> Self {
        NearestNeighborSpec { packets: d_packets(), sizes: Sizes::default() }
    }
}

/// A pattern with its own parameters, tagged by its name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "pattern", rename_all = "snake_case")]
pub enum PatternSpec {
    Pingpong(PingpongSpec),
    Uniform(UniformSpec),
    HotRegion(HotRegionSpec),
    HotSpot(HotSpotSpec),
    Alltoall(AlltoallSpec),
    AlltoallStream(AlltoallStreamSpec),
    LineFill(FillSpec),
    PlaneFill(FillSpec),
    NearestNeighbor(NearestNeighborSpec),
}

impl PatternSpec {
    pub fn kind(&self) -> Pattern {
        match self {
            PatternSpec::Pingpong(_) => Pattern::Pingpong,
            PatternSpec::Uniform(_) => Pattern::Uniform,
            PatternSpec::HotRegion(_) => Pattern::HotRegion,
            PatternSpec::HotSpot(_) => Pattern::HotSpot,
            PatternSpec::Alltoall(_) => Pattern::Alltoall,
            PatternSpec::AlltoallStream(_) => Pattern::AlltoallStream,
            PatternSpec::LineFill(_) => Pattern::LineFill,
            PatternSpec::PlaneFill(_) => Pattern::PlaneFill,
            PatternSpec::NearestNeighbor(_) => Pattern::NearestNeighbor,
        }
    }

    /// The timing of a timed pattern.
    pub fn timed(&self) -> Option<&Timed> {
        match self {
            PatternSpec::Uniform(s) => Some(&s.timed),
            PatternSpec::HotRegion(s) => Some(&s.timed),
            PatternSpec::AlltoallStream(s) => Some(&s.timed),
            _ => None,
        }
    }

    /// The packet sizes of a pattern that sends single packets.
    pub fn sizes(&self) -> Option<&Sizes> {
        match self {
            PatternSpec::Uniform(s) => Some(&s.sizes),
            PatternSpec::HotRegion(s) => Some(&s.sizes),
            PatternSpec::HotSpot(s) => Some(&s.sizes),
            PatternSpec::AlltoallStream(s) => Some(&s.sizes),
            PatternSpec::NearestNeighbor(s) => Some(&s.sizes),
            _ => None,
        }
    }

    fn sizes_mut(&mut self) -> Option<&mut Sizes> {
        match self {
            PatternSpec::Uniform(s) => Some(&mut s.sizes),
            PatternSpec::HotRegion(s) => Some(&mut s.sizes),
            PatternSpec::HotSpot(s) => Some(&mut s.sizes),
            PatternSpec::AlltoallStream(s) => Some(&mut s.sizes),
            PatternSpec::NearestNeighbor(s) => Some(&mut s.sizes),
            _ => None,
        }
    }
}

/// Options of every traffic run. Times are network cycles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Common {
    pub seed: u64,
    pub routing: Routing,
    /// Throughput window.
    pub window_ncycles: u64,
    /// Stop after this much simulated time (None: no limit; a run that
    /// stops here says so: `stopped_at_max_ncycles`).
    pub max_ncycles: Option<u64>,
    /// Declare a deadlock when packets sit in the network and none moves for this long.
    pub deadlock_ncycles: u64,
    /// Keep per-link and per-node counters in the result (heat maps, CSV).
    pub per_link: bool,
}

impl Default for Common {
    fn default() -> Self {
        Common {
            seed: 1,
            routing: Routing::Dynamic,
            window_ncycles: 10_000,
            max_ncycles: None,
            deadlock_ncycles: 50_000,
            per_link: false,
        }
    }
}

/// A traffic run: `{"pattern": NAME, <the pattern's options>, <common options>}`.
#[derive(Clone, Debug, PartialEq)]
pub struct TrafficSpec {
    pub pattern: PatternSpec,
    pub common: Common,
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("a spec serializes to an object"),
    }
}

impl TrafficSpec {
    /// The pattern with every option at its default.
    pub fn new(pattern: Pattern) -> Self {
        TrafficSpec { pattern: pattern.default_spec(), common: Common::default() }
    }

    pub fn kind(&self) -> Pattern {
        self.pattern.kind()
    }

    /// Reads a spec from JSON, refusing an unknown pattern, an unknown
    /// option or one the pattern does not read.
    pub fn from_json(text: &str) -> Result<Self, WorkloadError> {
        let v: Value = serde_json::from_str(text).map_err(|e| WorkloadError::Spec(format!("spec: {}", clean(&e.to_string()))))?;
        match v {
            Value::Object(m) => Self::from_map(m),
            _ => Err(WorkloadError::Spec("spec: expected an object {\"pattern\": NAME, ...}".into())),
        }
    }

    /// Reads a spec from its fields (see [`TrafficSpec::from_json`]).
    pub fn from_map(mut m: Map<String, Value>) -> Result<Self, WorkloadError> {
        let name = match m.get("pattern") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => return Err(WorkloadError::Spec(format!("`pattern` = {other}: a pattern name ({})", names()))),
            None => return Err(WorkloadError::Spec(format!("spec: missing `pattern` ({})", names()))),
        };
        let kind = Pattern::from_name(&name).ok_or_else(|| WorkloadError::Spec(format!("`pattern` = {name:?}: one of {}", names())))?;
        let own = kind.options();
        let common_keys = object(serde_json::to_value(Common::default()).expect("plain data"));
        let mut common = Map::new();
        for k in m.keys().cloned().collect::<Vec<_>>() {
            if k == "pattern" || own.contains_key(&k) {
                continue;
            }
            if common_keys.contains_key(&k) {
                common.insert(k.clone(), m.remove(&k).expect("present"));
                continue;
            }
            let users: Vec<&str> = Pattern::ALL.iter().filter(|p| p.options().contains_key(&k)).map(|p| p.name()).collect();
            if users.is_empty() {
                let mut allowed: Vec<String> = own.keys().chain(common_keys.keys()).cloned().collect();
                allowed.sort();
                return Err(WorkloadError::Spec(format!("`{k}`: unknown option (pattern {name} reads: {})", allowed.join(", "))));
            }
            return Err(WorkloadError::NotForPattern { key: k, pattern: kind.name(), users: users.join(", ") });
        }
        let pattern: PatternSpec = field_errors(Value::Object(m.clone())).map_err(|e| {
            // The tagged and flattened parts of a spec lose serde's path of
            // a type error: the first option that fails alone is the one.
            m.iter()
                .filter(|(k, _)| *k != "pattern")
                .find_map(|(k, v)| {
                    let one = Map::from_iter([("pattern".to_string(), Value::String(name.clone())), (k.clone(), v.clone())]);
                    field_errors::<PatternSpec>(Value::Object(one)).err().map(|e| match e {
                        WorkloadError::Spec(msg) => WorkloadError::Spec(msg.replacen("spec:", &format!("`{k}`:"), 1)),
                        other => other,
                    })
                })
                .unwrap_or(e)
        })?;
        let common: Common = field_errors(Value::Object(common))?;
        Ok(TrafficSpec { pattern, common })
    }

    /// Sets one option by its name (as in JSON), with the same checks.
    pub fn set(&mut self, key: &str, value: impl Serialize) -> Result<(), WorkloadError> {
        let mut m = self.to_map();
        m.insert(key.to_string(), serde_json::to_value(value).map_err(|e| WorkloadError::Spec(e.to_string()))?);
        *self = Self::from_map(m)?;
        Ok(())
    }

    /// The spec as its JSON fields.
    pub fn to_map(&self) -> Map<String, Value> {
        let mut m = object(serde_json::to_value(&self.pattern).expect("plain data"));
        m.extend(object(serde_json::to_value(&self.common).expect("plain data")));
        m
    }

    /// The spec as run on machine `m`: a fixed packet size resolved to its
    /// payload (so that the echo runs again as it is).
    pub fn resolved(&self, m: &Machine) -> TrafficSpec {
        let mut s = self.clone();
        if let Some(sz) = s.pattern.sizes_mut() {
            if !sz.variable_size {
                sz.payload_bytes = Some(sz.payload(m));
            }
        }
        s
    }

    /// Checks values that do not depend on the machine.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |key: &'static str, value: String, allowed: &str| Err(WorkloadError::Invalid { key, value, allowed: allowed.to_string() });
        let load = |l: f64| if l > 0.0 && l <= 4.0 { Ok(()) } else { bad("load", l.to_string(), "a fraction of peak in (0, 4]") };
        let at_least_1 = |key: &'static str, v: u64| if v >= 1 { Ok(()) } else { bad(key, "0".into(), "at least 1") };
        match &self.pattern {
            PatternSpec::Pingpong(s) => {
                at_least_1("message_bytes", s.message_bytes as u64)?;
                at_least_1("iters", s.iters as u64)?;
            }
            PatternSpec::Uniform(s) => {
                load(s.load)?;
                at_least_1("backlog_packets", s.backlog_packets as u64)?;
            }
            PatternSpec::HotRegion(s) => {
                load(s.load)?;
                at_least_1("backlog_packets", s.backlog_packets as u64)?;
                if !(0.0..=1.0).contains(&s.hot_fraction) {
                    return bad("hot_fraction", s.hot_fraction.to_string(), "a fraction from 0 to 1");
                }
            }
            PatternSpec::HotSpot(s) => at_least_1("packets", s.packets as u64)?,
            PatternSpec::Alltoall(s) => at_least_1("message_bytes", s.message_bytes as u64)?,
            PatternSpec::AlltoallStream(_) => {}
            PatternSpec::LineFill(s) | PatternSpec::PlaneFill(s) => at_least_1("message_bytes", s.message_bytes as u64)?,
            PatternSpec::NearestNeighbor(s) => at_least_1("packets", s.packets as u64)?,
        }
        if let Some(t) = self.pattern.timed() {
            at_least_1("measure_ncycles", t.measure_ncycles)?;
        }
        at_least_1("window_ncycles", self.common.window_ncycles)?;
        at_least_1("deadlock_ncycles", self.common.deadlock_ncycles)?;
        if let Some(m) = self.common.max_ncycles {
            at_least_1("max_ncycles", m)?;
        }
        if let Some(Sizes { payload_bytes: Some(p), variable_size: true }) = self.pattern.sizes() {
            return bad("payload_bytes", p.to_string(), "not with variable_size, which draws every packet's size");
        }
        Ok(())
    }

    /// Checks the values that depend on the machine.
    pub fn validate_for(&self, m: &Machine) -> Result<(), WorkloadError> {
        // Every span must fit the simulator's clock (ticks in 64 bits, with
        // room to step past its end).
        let limit = (u64::MAX / 4) / m.tick_byte;
        let c = &self.common;
        let spans: [(&'static str, u64); 4] = [
            ("window_ncycles", c.window_ncycles),
            ("deadlock_ncycles", c.deadlock_ncycles),
            ("max_ncycles", c.max_ncycles.unwrap_or(0)),
            ("measure_ncycles", self.pattern.timed().map_or(0, |t| t.warmup_ncycles.saturating_add(t.measure_ncycles))),
        ];
        for (key, v) in spans {
            if v > limit {
                return Err(WorkloadError::Invalid {
                    key,
                    value: v.to_string(),
                    allowed: format!("at most {limit} network cycles (with warmup_ncycles, for measure_ncycles) on this machine"),
                });
            }
        }
        if let (Some(t), Some(max)) = (self.pattern.timed(), c.max_ncycles) {
            let need = t.warmup_ncycles + t.measure_ncycles;
            if max < need {
                return Err(WorkloadError::Invalid {
                    key: "max_ncycles",
                    value: max.to_string(),
                    allowed: format!("at least warmup_ncycles + measure_ncycles = {need} for a timed pattern"),
                });
            }
        }
        let max = m.max_payload_bytes();
        match self.pattern.sizes().and_then(|s| s.payload_bytes) {
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
}

fn names() -> String {
    Pattern::ALL.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
}

/// serde's message without the position of a JSON text (a spec is one line).
fn clean(msg: &str) -> String {
    let msg = msg.split(" at line ").next().unwrap_or(msg);
    msg.replace("expected u32", "expected a non-negative integer of at most 4294967295")
        .replace("expected u64", "expected a non-negative integer of at most 18446744073709551615")
        .replace("expected u16", "expected a non-negative integer of at most 65535")
        .replace("expected u8", "expected a non-negative integer of at most 255")
}

/// Deserializes `v`, naming the option a type error is in.
fn field_errors<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, WorkloadError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let msg = clean(&e.into_inner().to_string());
        if path.is_empty() || path == "." {
            WorkloadError::Spec(format!("spec: {msg}"))
        } else {
            WorkloadError::Spec(format!("`{path}`: {msg}"))
        }
    })
}

impl Serialize for TrafficSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_map().serialize(s)
    }
}

impl<'de> Deserialize<'de> for TrafficSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = Map::deserialize(d)?;
        TrafficSpec::from_map(m).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_of_another_pattern_is_refused_naming_its_patterns() {
        let e = TrafficSpec::from_json(r#"{"pattern": "uniform", "hops": 3}"#).unwrap_err();
        assert_eq!(e, WorkloadError::NotForPattern { key: "hops".into(), pattern: "uniform", users: "pingpong".into() });
        let e = TrafficSpec::from_json(r#"{"pattern": "pingpong", "load": 0.5}"#).unwrap_err().to_string();
        assert!(e.contains("uniform, hot_region"), "{e}");
        let e = TrafficSpec::from_json(r#"{"pattern": "uniform", "lod": 0.5}"#).unwrap_err().to_string();
        assert!(e.contains("`lod`") && e.contains("load"), "{e}");
        let e = TrafficSpec::from_json(r#"{"pattern": "uniform", "load": "x"}"#).unwrap_err().to_string();
        assert!(e.contains("`load`"), "{e}");
        assert!(TrafficSpec::from_json(r#"{"pattern": "diagonal"}"#).unwrap_err().to_string().contains("uniform"));
    }

    #[test]
    fn every_pattern_round_trips_through_json_and_keeps_its_options() {
        for p in Pattern::ALL {
            let mut s = TrafficSpec::new(p);
            s.common.seed = 9;
            let text = serde_json::to_string(&s).unwrap();
            let back = TrafficSpec::from_json(&text).unwrap();
            assert_eq!(back, s, "{text}");
            for k in p.options().keys() {
                assert!(text.contains(&format!("\"{k}\"")), "{p:?}: {k} not echoed");
            }
            assert_eq!(p.is_timed(), s.pattern.timed().is_some());
        }
        let mut s = TrafficSpec::new(Pattern::HotRegion);
        s.set("load", 0.9).unwrap();
        s.set("region_size", [2, 2, 2]).unwrap();
        assert!(matches!(&s.pattern, PatternSpec::HotRegion(h) if h.load == 0.9 && h.region.region_size == [2, 2, 2]));
        assert!(s.set("message_bytes", 5).is_err());
    }
}
