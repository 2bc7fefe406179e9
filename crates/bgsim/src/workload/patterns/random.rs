//! Timed random sources: `uniform` (uniformly random destinations) and
//! `hot_region` (a share of the packets to a box region, the rest uniform),
//! at an offered load: each node creates packets at exponential
//! interarrival times, holding at most `backlog_packets` queued in software.

use super::{region_nodes, uniform_peak, Source, TrafficPattern};
use crate::engine::{Draws, EventQueue, Tick};
use crate::machine::Machine;
use crate::packet::Net;
use crate::workload::bounds;
use crate::workload::spec::{HotRegionSpec, Sizes, UniformSpec, WorkloadError};

pub struct Random {
    load: f64,
    backlog: u32,
    sizes: Sizes,
    /// hot_region: the region, its spec and its nodes.
    hot: Option<(HotRegionSpec, Vec<u32>)>,
}

impl Random {
    pub fn uniform(s: UniformSpec) -> Self {
        Random { load: s.load, backlog: s.backlog_packets, sizes: s.sizes, hot: None }
    }

    pub fn hot_region(s: HotRegionSpec) -> Self {
        Random { load: s.load, backlog: s.backlog_packets, sizes: s.sizes.clone(), hot: Some((s, vec![])) }
    }

    fn dest(&self, src: &mut Source, node: u32) -> u32 {
        if let Some((spec, hot)) = &self.hot {
            let rng = &mut src.rngs[node as usize];
            if rng.chance(spec.hot_fraction) {
                loop {
                    let d = hot[rng.below(hot.len() as u32) as usize];
                    if d != node {
                        return d;
                    }
                    if hot.len() == 1 {
                        // The region is this node alone: a uniform destination instead.
                        break;
                    }
                }
            }
        }
        src.uniform_dest(node)
    }
}

impl TrafficPattern for Random {
    fn setup(&mut self, src: &mut Source, net: &Net) -> Result<(), WorkloadError> {
        if src.geo.nodes() < 2 {
            let pattern = if self.hot.is_some() { "hot_region" } else { "uniform" };
            return Err(WorkloadError::Unfit { pattern, reason: format!("needs at least 2 nodes (shape {})", net.machine().shape) });
        }
        if let Some((spec, hot)) = &mut self.hot {
            *hot = region_nodes(src, &spec.region)?.0;
        }
        Ok(())
    }

    fn start(&mut self, src: &mut Source, net: &mut Net, q: &mut EventQueue) {
        for v in 0..src.geo.nodes() {
            let t = src.rngs[v as usize].exp(src.interarrival);
            if t.is_finite() && (t as Tick) < src.gen_until {
                net.timer(q, t as Tick, v, 0, 0);
            }
        }
    }

    /// Creates one packet (unless the node's backlog is full) and schedules
    /// the next.
    fn on_timer(&mut self, src: &mut Source, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, _core: usize, _tag: u32) {
        let pending = net.pending_on_node(node);
        if pending < self.backlog {
            let dest = self.dest(src, node);
            let pl = src.payload(node, net, &self.sizes);
            let p = net.packet(node, dest, pl, src.routing, now);
            src.send(net, q, now, node, p);
        } else {
            src.progress.throttled += 1;
        }
        let dt = src.rngs[node as usize].exp(src.interarrival).max(1.0);
        let t = now + dt as Tick;
        if t < src.gen_until {
            net.timer(q, t, node, 0, 0);
        }
    }

    /// Uniform traffic's busiest link; for a hot region, also the links
    /// into the region, which carry every packet that enters it.
    fn peak_rate(&self, src: &Source, m: &Machine) -> f64 {
        let uni = uniform_peak(src, m, &self.sizes);
        let Some((spec, hot)) = &self.hot else { return uni };
        let geo = &src.geo;
        let n = geo.nodes() as f64;
        let h = hot.len() as f64;
        let links = bounds::links_into_region(geo, spec.region.region_lo, spec.region.region_size) as f64;
        // Packets entering the region per packet injected per node (sources outside).
        let inflow = (n - h) * (spec.hot_fraction + (1.0 - spec.hot_fraction) * h / (n - 1.0));
        let bytes = super::packet_bytes(m, &self.sizes);
        let cut = if inflow > 0.0 && links > 0.0 {
            links / (inflow * m.wire_bytes(bytes) as f64 * m.tick_byte as f64)
        } else {
            f64::INFINITY
        };
        uni.min(cut)
    }

    fn offered_rate(&self, peak: f64) -> f64 {
        peak * self.load
    }
}
