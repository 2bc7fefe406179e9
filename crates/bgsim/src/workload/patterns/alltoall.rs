//! All-to-all: `alltoall` (every node sends `message_bytes` to every other
//! node, until all are read) and `alltoall_stream` (timed: every node cycles
//! through the destinations as fast as it can inject). Each node walks the
//! other nodes in index order from an offset: its own index (the next node
//! first), or a random one with `random_start`.

use super::{uniform_peak, Source, TrafficPattern};
use crate::engine::{Draws, EventQueue, Tick};
use crate::machine::Machine;
use crate::packet::Net;
use crate::workload::bounds;
use crate::workload::spec::{AlltoallSpec, AlltoallStreamSpec, Sizes, WorkloadError};

pub struct Alltoall {
    random_start: bool,
    /// alltoall: bytes per pair; alltoall_stream: its packet sizes.
    message_bytes: Option<u32>,
    sizes: Sizes,
    /// Per node: where its walk starts, and the next item.
    start: Vec<u32>,
    next: Vec<u32>,
    items_per_node: u32,
}

impl Alltoall {
    pub fn finite(s: AlltoallSpec) -> Self {
        Alltoall { random_start: s.random_start, message_bytes: Some(s.message_bytes), sizes: Sizes::default(), start: vec![], next: vec![], items_per_node: 0 }
    }

    pub fn stream(s: AlltoallStreamSpec) -> Self {
        Alltoall { random_start: s.random_start, message_bytes: None, sizes: s.sizes, start: vec![], next: vec![], items_per_node: 0 }
    }
}

impl TrafficPattern for Alltoall {
    fn setup(&mut self, src: &mut Source, net: &Net) -> Result<(), WorkloadError> {
        let n = src.geo.nodes();
        if n < 2 {
            let pattern = if self.message_bytes.is_some() { "alltoall" } else { "alltoall_stream" };
            return Err(WorkloadError::Unfit { pattern, reason: format!("needs at least 2 nodes (shape {})", net.machine().shape) });
        }
        let random = self.random_start;
        self.start = (0..n).map(|v| if random { src.rngs[v as usize].below(n - 1) } else { v % (n - 1) }).collect();
        self.next = vec![0; n as usize];
        if let Some(bytes) = self.message_bytes {
            let per_pair = bytes.div_ceil(net.machine().max_payload_bytes());
            self.items_per_node = per_pair * (n - 1);
            src.progress.expected_reads = n as u64 * self.items_per_node as u64;
        }
        Ok(())
    }

    fn refill(&mut self, src: &mut Source, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, _core: usize) {
        let n = src.geo.nodes();
        let i = self.next[node as usize];
        match self.message_bytes {
            Some(_) if i >= self.items_per_node => return,
            None if now >= src.gen_until => return,
            _ => {}
        }
        self.next[node as usize] += 1;
        let j = i % (n - 1);
        let k = (self.start[node as usize] + j) % (n - 1);
        let dest = if k < node { k } else { k + 1 };
        let pl = match self.message_bytes {
            Some(bytes) => {
                // Packet r of the pair's message.
                let r = i / (n - 1);
                let maxp = net.machine().max_payload_bytes();
                (bytes - r * maxp).min(maxp)
            }
            None => src.payload(node, net, &self.sizes),
        };
        let p = net.packet(node, dest, pl, src.routing, now);
        src.send(net, q, now, node, p);
    }

    fn peak_rate(&self, src: &Source, m: &Machine) -> f64 {
        uniform_peak(src, m, &self.sizes)
    }

    /// The stream injects as fast as it can.
    fn offered_rate(&self, _peak: f64) -> f64 {
        f64::INFINITY
    }

    /// Uniform traffic: every node sends the same to every other node, one
    /// packet of each pair's message at a time.
    fn bound_ticks(&self, src: &Source, m: &Machine) -> f64 {
        let Some(bytes) = self.message_bytes else { return 0.0 };
        let geo = &src.geo;
        let maxp = m.max_payload_bytes();
        let mut t = 0.0;
        let mut left = bytes;
        for _ in 0..bytes.div_ceil(maxp) {
            let pl = left.min(maxp);
            left -= pl;
            let rate = bounds::uniform_peak_rate(geo, m, m.packet_bytes_for_payload(pl));
            t += (geo.nodes() - 1) as f64 / rate;
        }
        t
    }
}
