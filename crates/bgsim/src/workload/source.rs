//! What every traffic pattern's sources share: the geometry, the routing,
//! one random stream per node, the generation rate of timed patterns,
//! packet sizes, and where the run stands ([`Progress`]).

use super::bounds::PathLoad;
use super::spec::Sizes;
use crate::engine::{Draws, EventQueue, Rng, Tick};
use crate::packet::{Net, Routing};
use crate::torus::Geometry;

/// Where a run stands, as the patterns report it.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Progress {
    /// Packets the pattern must read in total (finite patterns).
    pub expected_reads: u64,
    pub reads: u64,
    /// Time the last expected packet was read.
    pub finished_at: Option<Tick>,
    /// One-way latencies measured by ping-pong, ticks.
    pub oneway: Vec<Tick>,
    /// Packets sources did not create because their software backlog was full.
    pub throttled: u64,
    /// Packets created by the pattern's software (sources, and forwarding nodes of the fills).
    pub created: u64,
    /// Time the last packet was read.
    pub last_read: Option<Tick>,
}

impl Progress {
    /// Adds another partition's progress of the same windowed run.
    pub fn merge(&mut self, o: &Progress) {
        self.reads += o.reads;
        self.throttled += o.throttled;
        self.created += o.created;
        self.oneway.extend_from_slice(&o.oneway);
        self.last_read = self.last_read.max(o.last_read);
        if self.expected_reads > 0 && self.reads == self.expected_reads {
            self.finished_at = self.last_read;
        }
    }
}

/// What the sources sent, where a pattern's bound counts it (sizes drawn
/// at random).
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Sent {
    /// Wire bytes of the packets sent.
    pub wire_bytes: f64,
    /// The links' loads of the packets sent.
    pub load: Option<PathLoad>,
}

impl Sent {
    /// Adds another partition's (windowed runs; whole byte counts, so the
    /// sums are exact in any order).
    pub fn merge(&mut self, o: &Sent) {
        self.wire_bytes += o.wire_bytes;
        if let (Some(a), Some(b)) = (&mut self.load, &o.load) {
            for (x, y) in a.fwd.iter_mut().zip(&b.fwd).chain(a.ack.iter_mut().zip(&b.ack)) {
                *x += y;
            }
        }
    }
}

/// The first random stream of the sources (one per node from here).
pub const RNG_STREAM_BASE: u64 = 1 << 40;

/// What every pattern's sources share.
pub struct Source {
    pub geo: Geometry,
    pub routing: Routing,
    pub progress: Progress,
    /// One random stream per node.
    pub rngs: Vec<Rng>,
    /// Mean interarrival, ticks (timed patterns).
    pub interarrival: f64,
    /// Stop generating at this time (timed patterns).
    pub gen_until: Tick,
    pub sent: Sent,
}

impl Source {
    /// The payload of a node's next packet: drawn when sizes vary.
    pub fn payload(&mut self, node: u32, net: &Net, sizes: &Sizes) -> u32 {
        if sizes.variable_size {
            let m = &net.machine();
            let chunks = 1 + self.rngs[node as usize].below(m.torus().max_packet_chunks);
            (chunks * m.torus().chunk_bytes).saturating_sub(m.torus().hw_header_bytes + m.torus().sw_header_bytes)
        } else {
            sizes.payload(net.machine())
        }
    }

    /// A uniformly random destination other than `node`.
    pub fn uniform_dest(&mut self, node: u32) -> u32 {
        let d = self.rngs[node as usize].below(self.geo.nodes() - 1);
        if d >= node {
            d + 1
        } else {
            d
        }
    }

    /// Queues a packet the pattern created on `node` (counted as created).
    pub fn send(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, p: crate::torus::Packet) {
        self.progress.created += 1;
        net.send(q, now, node, p, None);
    }

    /// A packet was read.
    pub fn count_read(&mut self, now: Tick) {
        self.progress.reads += 1;
        self.progress.last_read = Some(now);
        if self.progress.expected_reads > 0 && self.progress.reads == self.progress.expected_reads {
            self.progress.finished_at = Some(now);
        }
    }

    /// Wakes every node's communication cores (and DMA engine) once:
    /// sources that inject as fast as they can then pull their work in
    /// `refill`.
    pub fn wake_all(&self, net: &mut Net, q: &mut EventQueue) {
        for v in 0..self.geo.nodes() {
            net.wake_agents(q, 0, v);
        }
    }
}
