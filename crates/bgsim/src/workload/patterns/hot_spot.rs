//! Every node outside a box region sends `packets` packets to every node in
//! it, walking the region from its own offset; runs until all are read.

use super::{region_nodes, Source, TrafficPattern};
use crate::engine::{EventQueue, Tick};
use crate::machine::Machine;
use crate::packet::Net;
use crate::workload::bounds;
use crate::workload::spec::{HotSpotSpec, WorkloadError};

pub struct HotSpot {
    spec: HotSpotSpec,
    hot: Vec<u32>,
    in_hot: Vec<bool>,
    /// Per node: the next packet's index.
    next: Vec<u32>,
}

impl HotSpot {
    pub fn new(spec: HotSpotSpec) -> Self {
        HotSpot { spec, hot: vec![], in_hot: vec![], next: vec![] }
    }
}

impl TrafficPattern for HotSpot {
    fn setup(&mut self, src: &mut Source, _net: &Net) -> Result<(), WorkloadError> {
        (self.hot, self.in_hot) = region_nodes(src, &self.spec.region)?;
        let n = src.geo.nodes();
        self.next = vec![0; n as usize];
        let outside = n as u64 - self.hot.len() as u64;
        src.progress.expected_reads = outside * self.hot.len() as u64 * self.spec.packets as u64;
        if src.progress.expected_reads == 0 {
            return Err(WorkloadError::Unfit { pattern: "hot_spot", reason: "the region covers the whole partition".into() });
        }
        Ok(())
    }

    fn refill(&mut self, src: &mut Source, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, _core: usize) {
        if self.in_hot[node as usize] {
            return;
        }
        let total = self.hot.len() as u32 * self.spec.packets;
        let i = self.next[node as usize];
        if i >= total {
            return;
        }
        self.next[node as usize] += 1;
        let dest = self.hot[(i as usize + node as usize) % self.hot.len()];
        let pl = src.payload(node, net, &self.spec.sizes);
        let m = &net.machine();
        src.sent.wire_bytes += m.wire_bytes(m.packet_bytes_for_payload(pl)) as f64;
        let p = net.packet(node, dest, pl, src.routing, now);
        src.send(net, q, now, node, p);
    }

    fn peak_rate(&self, src: &Source, m: &Machine) -> f64 {
        super::uniform_peak(src, m, &self.spec.sizes)
    }

    /// Every packet crosses one of the links into the region.
    fn bound_ticks(&self, src: &Source, m: &Machine) -> f64 {
        let r = &self.spec.region;
        let links = bounds::links_into_region(&src.geo, r.region_lo, r.region_size) as f64;
        let wire = if self.spec.sizes.variable_size {
            src.sent.wire_bytes
        } else {
            src.progress.expected_reads as f64 * m.wire_bytes(m.packet_bytes_for_payload(self.spec.sizes.payload(m))) as f64
        };
        wire * m.tick_byte as f64 / links.max(1.0)
    }
}
