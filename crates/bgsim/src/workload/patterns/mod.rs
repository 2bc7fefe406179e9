//! The built-in traffic patterns, one file each, each implementing
//! [`TrafficPattern`]: its destinations and injection, the peak rate or
//! lower bound behind its "% of peak", and its own parameters (a variant of
//! [`PatternSpec`]).
//!
//! Adding a pattern: a variant of `Pattern` and `PatternSpec` in `spec.rs`
//! with its parameter struct (its fields are its options; an option it does
//! not declare is refused), a file here implementing the trait, its line in
//! [`make`], a golden configuration in `python/tests/test_golden.py`, and
//! its entry in the README's pattern list. The CLI's `--pattern` choices
//! and the "applies to" of each option come from the core.

mod alltoall;
mod fill;
mod hot_spot;
mod nearest_neighbor;
mod pingpong;
mod random;

pub use fill::PLANE_COLOURS;
pub use pingpong::node_at_hops;

use super::source::Source;
use super::spec::{PatternSpec, WorkloadError};
use crate::engine::{EventQueue, Tick};
use crate::machine::Machine;
use crate::packet::Net;
use crate::torus::Packet;

/// A traffic pattern: software on every node's cores, over the packet layer.
pub trait TrafficPattern: Send {
    /// Checks that the pattern fits the partition and prepares its state
    /// (and, for a finite pattern, `src.progress.expected_reads`).
    fn setup(&mut self, src: &mut Source, net: &Net) -> Result<(), WorkloadError>;
    /// Whether the nodes' software shares no state, so that a run may cut
    /// the machine into partitions (see `crate::engine::parallel`): what a
    /// node's software keeps is per node, or a count summed at the end.
    fn partitionable(&self) -> bool {
        true
    }
    /// Time 0: by default every communication core wakes once and pulls
    /// work in `refill`.
    fn start(&mut self, src: &mut Source, net: &mut Net, q: &mut EventQueue) {
        src.wake_all(net, q);
    }
    /// A timer set by the pattern fired.
    fn on_timer(&mut self, _src: &mut Source, _net: &mut Net, _q: &mut EventQueue, _now: Tick, _node: u32, _core: usize, _tag: u32) {}
    /// A core has nothing queued: the pattern may queue more.
    fn refill(&mut self, _src: &mut Source, _net: &mut Net, _q: &mut EventQueue, _now: Tick, _node: u32, _core: usize) {}
    /// A core read a packet.
    fn on_packet(&mut self, src: &mut Source, _net: &mut Net, _q: &mut EventQueue, now: Tick, _node: u32, _core: usize, _pkt: &Packet) {
        src.count_read(now);
    }
    /// The peak packet rate per node, per tick, that the busiest link (or
    /// the links into a region) allows: the bound of timed patterns. Others
    /// report uniform traffic's, of their packet sizes (full packets unless
    /// they say otherwise).
    fn peak_rate(&self, src: &Source, m: &Machine) -> f64 {
        uniform_peak(src, m, &super::spec::Sizes::default())
    }
    /// Timed patterns: the rate the sources generate at, given the peak.
    fn offered_rate(&self, _peak: f64) -> f64 {
        0.0
    }
    /// Finite patterns: the lower bound on the completion time, ticks.
    fn bound_ticks(&self, _src: &Source, _m: &Machine) -> f64 {
        0.0
    }
}

/// The pattern a spec asks for.
pub fn make(spec: &PatternSpec) -> Box<dyn TrafficPattern> {
    match spec {
        PatternSpec::Pingpong(s) => Box::new(pingpong::Pingpong::new(s.clone())),
        PatternSpec::Uniform(s) => Box::new(random::Random::uniform(s.clone())),
        PatternSpec::HotRegion(s) => Box::new(random::Random::hot_region(s.clone())),
        PatternSpec::HotSpot(s) => Box::new(hot_spot::HotSpot::new(s.clone())),
        PatternSpec::Alltoall(s) => Box::new(alltoall::Alltoall::finite(s.clone())),
        PatternSpec::AlltoallStream(s) => Box::new(alltoall::Alltoall::stream(s.clone())),
        PatternSpec::LineFill(s) => Box::new(fill::Fill::line(s.clone())),
        PatternSpec::PlaneFill(s) => Box::new(fill::Fill::plane(s.clone())),
        PatternSpec::NearestNeighbor(s) => Box::new(nearest_neighbor::NearestNeighbor::new(s.clone())),
    }
}

/// The peak packet rate per node of uniformly random traffic of packets
/// of `sizes` (their mean size when they vary).
pub(crate) fn uniform_peak(src: &Source, m: &Machine, sizes: &super::spec::Sizes) -> f64 {
    super::bounds::uniform_peak_rate(&src.geo, m, packet_bytes(m, sizes))
}

/// Bytes of the packets of `sizes` (their mean when they vary).
pub(crate) fn packet_bytes(m: &Machine, sizes: &super::spec::Sizes) -> u32 {
    if sizes.variable_size {
        // Mean of 1..=max chunks.
        (m.torus().max_packet_chunks + 1) * m.torus().chunk_bytes / 2
    } else {
        m.packet_bytes_for_payload(sizes.payload(m))
    }
}

/// The nodes of a box region, in x, y, z order, and a membership mask; the
/// region must fit the partition.
pub(crate) fn region_nodes(src: &Source, r: &super::spec::Region) -> Result<(Vec<u32>, Vec<bool>), WorkloadError> {
    let g = &src.geo;
    let (lo, size) = (r.region_lo, r.region_size);
    for k in 0..3 {
        if size[k] == 0 || size[k] > g.dims[k] || lo[k] >= g.dims[k] {
            return Err(WorkloadError::Region { size, lo, dims: g.dims });
        }
    }
    let mut hot = Vec::new();
    let mut in_hot = vec![false; g.nodes() as usize];
    for z in 0..size[2] {
        for y in 0..size[1] {
            for x in 0..size[0] {
                let n = g.index([(lo[0] + x) % g.dims[0], (lo[1] + y) % g.dims[1], (lo[2] + z) % g.dims[2]]);
                hot.push(n);
                in_hot[n as usize] = true;
            }
        }
    }
    Ok((hot, in_hot))
}
