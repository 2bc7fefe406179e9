//! Every node sends `packets` packets to each of its neighbours (one hop,
//! over each link direction), until all are read.

use super::{Source, TrafficPattern};
use crate::engine::{EventQueue, Tick};
use crate::machine::Machine;
use crate::packet::Net;
use crate::torus::NDIR;
use crate::workload::bounds::PathLoad;
use crate::workload::spec::{NearestNeighborSpec, WorkloadError};

pub struct NearestNeighbor {
    spec: NearestNeighborSpec,
    /// Per node: the next item (direction item % 6, round item / 6).
    next: Vec<u32>,
}

impl NearestNeighbor {
    pub fn new(spec: NearestNeighborSpec) -> Self {
        NearestNeighbor { spec, next: vec![] }
    }
}

impl TrafficPattern for NearestNeighbor {
    fn setup(&mut self, src: &mut Source, _net: &Net) -> Result<(), WorkloadError> {
        let geo = &src.geo;
        let mut total = 0u64;
        for v in 0..geo.nodes() {
            for dir in 0..NDIR {
                if geo.has_link(v, dir) && geo.neighbor(v, dir) != v {
                    total += self.spec.packets as u64;
                }
            }
        }
        if total == 0 {
            return Err(WorkloadError::Unfit { pattern: "nearest_neighbor", reason: "the partition has no links".into() });
        }
        src.progress.expected_reads = total;
        self.next = vec![0; geo.nodes() as usize];
        src.sent.load = self.spec.sizes.variable_size.then(|| PathLoad::new(geo.nodes()));
        Ok(())
    }

    fn refill(&mut self, src: &mut Source, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, _core: usize) {
        // Item i: direction i % 6, round i / 6; skip missing links.
        loop {
            let i = self.next[node as usize];
            if i >= 6 * self.spec.packets {
                return;
            }
            self.next[node as usize] += 1;
            let dir = (i % 6) as usize;
            if !src.geo.has_link(node, dir) || src.geo.neighbor(node, dir) == node {
                continue;
            }
            let dest = src.geo.neighbor(node, dir);
            let pl = src.payload(node, net, &self.spec.sizes);
            if let Some(load) = &mut src.sent.load {
                let m = &net.machine();
                load.add_line(&src.geo, m, node, dir, 1, m.packet_bytes_for_payload(pl), 1.0);
            }
            let mut p = net.packet(node, dest, pl, src.routing, now);
            // One hop on its link; round the ring when that link is dead.
            if dest != node && !net.faults().is_some_and(|f| f.link_dead(node, dir)) {
                net.set_line_route(&mut p, dir);
            }
            src.send(net, q, now, node, p);
            return;
        }
    }

    fn peak_rate(&self, src: &Source, m: &Machine) -> f64 {
        super::uniform_peak(src, m, &self.spec.sizes)
    }

    /// The busiest link: each carries `packets` packets one way and their
    /// acks the other.
    fn bound_ticks(&self, src: &Source, m: &Machine) -> f64 {
        if let Some(load) = &src.sent.load {
            return load.max() * m.tick_byte as f64;
        }
        let geo = &src.geo;
        let bytes = m.packet_bytes_for_payload(self.spec.sizes.payload(m));
        let mut load = PathLoad::new(geo.nodes());
        for v in 0..geo.nodes() {
            for d in 0..NDIR {
                if geo.has_link(v, d) && geo.neighbor(v, d) != v {
                    load.add_line(geo, m, v, d, 1, bytes, self.spec.packets as f64);
                }
            }
        }
        load.max() * m.tick_byte as f64
    }
}
