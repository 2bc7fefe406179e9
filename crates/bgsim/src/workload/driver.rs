//! The software the traffic patterns run on the simulated cores: the state
//! every pattern shares ([`Source`]: random streams, progress, generation
//! rate, packet sizes) and the [`Driver`] that hands the packet layer's
//! calls to the pattern ([`TrafficPattern`]).

use super::patterns::{self, TrafficPattern};
use super::spec::{Sizes, TrafficSpec, WorkloadError};
use crate::engine::{Draws, EventQueue, Rng, Tick};
use crate::machine::Machine;
use crate::packet::{Net, Routing, Software};
use crate::torus::{Geometry, Packet};

/// Where a run stands, as the patterns report it.
#[derive(Clone, Debug, Default)]
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
    /// Packets created by sources.
    pub created: u64,
}

const RNG_STREAM_BASE: u64 = 1 << 40;

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
}

impl Source {
    /// The payload of a node's next packet: drawn when sizes vary.
    pub fn payload(&mut self, node: u32, net: &Net, sizes: &Sizes) -> u32 {
        if sizes.variable_size {
            let m = &net.machine;
            let chunks = 1 + self.rngs[node as usize].below(m.torus().max_packet_chunks);
            (chunks * m.torus().chunk_bytes).saturating_sub(m.torus().hw_header_bytes + m.torus().sw_header_bytes)
        } else {
            sizes.payload(&net.machine)
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

    /// A packet was read.
    pub fn count_read(&mut self, now: Tick) {
        self.progress.reads += 1;
        if self.progress.expected_reads > 0 && self.progress.reads == self.progress.expected_reads {
            self.progress.finished_at = Some(now);
        }
    }

    /// Wakes every communication core once: sources that inject as fast as
    /// they can then pull their work in `refill`.
    pub fn wake_all(&self, net: &mut Net, q: &mut EventQueue) {
        for v in 0..self.geo.nodes() {
            for c in 0..net.cores.comm {
                net.compute(q, 0, v, c, 0);
            }
        }
    }
}

/// The software of a traffic run: the shared source state and the pattern.
pub struct Driver {
    pub spec: TrafficSpec,
    pub src: Source,
    pattern: Box<dyn TrafficPattern>,
}

impl Driver {
    pub fn new(spec: &TrafficSpec, net: &Net) -> Result<Self, WorkloadError> {
        let geo = net.torus.geo.clone();
        let n = geo.nodes();
        let mut src = Source {
            rngs: (0..n).map(|i| Rng::new(spec.common.seed, RNG_STREAM_BASE + i as u64)).collect(),
            routing: spec.common.routing,
            progress: Progress::default(),
            interarrival: f64::INFINITY,
            gen_until: Tick::MAX,
            geo,
        };
        let mut pattern = patterns::make(&spec.pattern);
        pattern.setup(&mut src, net)?;
        Ok(Driver { spec: spec.clone(), src, pattern })
    }

    pub fn geo(&self) -> &Geometry {
        &self.src.geo
    }

    pub fn progress(&self) -> &Progress {
        &self.src.progress
    }

    /// Sets the generation rate of timed patterns: `rate` packets per tick per node.
    pub fn set_rate(&mut self, rate: f64, until: Tick) {
        self.src.interarrival = if rate > 0.0 { 1.0 / rate } else { f64::INFINITY };
        self.src.gen_until = until;
    }

    /// The pattern's peak packet rate per node (timed patterns), per tick.
    pub fn peak_rate(&self, m: &Machine) -> f64 {
        self.pattern.peak_rate(&self.src, m)
    }

    /// The rate the sources generate at, given the peak (timed patterns).
    pub fn offered_rate(&self, peak: f64) -> f64 {
        self.pattern.offered_rate(peak)
    }

    /// The lower bound on the completion time of a finite pattern, ticks.
    pub fn bound_ticks(&self, m: &Machine) -> f64 {
        self.pattern.bound_ticks(&self.src, m)
    }
}

impl Software for Driver {
    fn start(&mut self, net: &mut Net, q: &mut EventQueue) {
        self.pattern.start(&mut self.src, net, q);
    }
    fn on_timer(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize, tag: u32) {
        self.pattern.on_timer(&mut self.src, net, q, now, node, core, tag);
    }
    fn refill(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize) {
        self.pattern.refill(&mut self.src, net, q, now, node, core);
    }
    fn on_packet(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize, pkt: &Packet) {
        self.pattern.on_packet(&mut self.src, net, q, now, node, core, pkt);
    }
}
