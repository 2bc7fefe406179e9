//! The software of a traffic run on the simulated cores: the [`Driver`]
//! hands the packet layer's calls to the pattern ([`TrafficPattern`]), with
//! the state every pattern shares ([`Source`]).

use super::patterns::{self, TrafficPattern};
use super::source::{Progress, Source, RNG_STREAM_BASE};
use super::spec::{TrafficSpec, WorkloadError};
use crate::engine::{EventQueue, Rng, Tick};
use crate::machine::Machine;
use crate::packet::{Net, Software};
use crate::torus::{Geometry, Packet};

/// The software of a traffic run: the shared source state and the pattern.
pub struct Driver {
    pub spec: TrafficSpec,
    pub src: Source,
    pattern: Box<dyn TrafficPattern>,
}

impl Driver {
    pub fn new(spec: &TrafficSpec, net: &Net) -> Result<Self, WorkloadError> {
        let geo = net.geometry().clone();
        let n = geo.nodes();
        let mut src = Source {
            rngs: (0..n).map(|i| Rng::new(spec.common.seed, RNG_STREAM_BASE + i as u64)).collect(),
            routing: spec.common.routing,
            progress: Progress::default(),
            interarrival: f64::INFINITY,
            gen_until: Tick::MAX,
            sent: Default::default(),
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

    /// Whether the pattern of `spec` can run cut into partitions: its
    /// nodes' software shares no state (ping-pong's two nodes share the
    /// exchange's).
    pub fn partitionable_spec(spec: &TrafficSpec) -> bool {
        patterns::make(&spec.pattern).partitionable()
    }

    /// What [`Self::absorb`] reads, to send to the process that merges a
    /// distributed run.
    pub fn export_part(&self) -> (Progress, super::source::Sent) {
        (self.src.progress.clone(), self.src.sent.clone())
    }
    /// Makes this (fresh) driver's counts those of `st`.
    pub fn import_part(&mut self, st: (Progress, super::source::Sent)) {
        (self.src.progress, self.src.sent) = st;
    }

    /// Takes in what another partition's software of the same windowed run
    /// counted.
    pub fn absorb(&mut self, o: &Driver) {
        self.src.progress.merge(&o.src.progress);
        self.src.sent.merge(&o.src.sent);
    }

    /// Restarts the packets created and throttled with the machine's
    /// counters (after a warm-up), so that all count the same span.
    pub fn restart_counts(&mut self) {
        self.src.progress.created = 0;
        self.src.progress.throttled = 0;
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
