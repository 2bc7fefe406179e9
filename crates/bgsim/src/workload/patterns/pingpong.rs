//! Packet-layer ping-pong between node 0 and a node `hops` away: one-way
//! latency of a message of `message_bytes`, `iters` round trips.

use super::{Source, TrafficPattern};
use crate::engine::{EventQueue, Tick};
use crate::machine::Machine;
use crate::packet::Net;
use crate::torus::{Geometry, Packet};
use crate::workload::spec::{PingpongSpec, WorkloadError};

pub struct Pingpong {
    spec: PingpongSpec,
    a: u32,
    b: u32,
    /// Packets per message.
    npk: u32,
    started: Tick,
    got: u32,
    legs: u32,
}

impl Pingpong {
    pub fn new(spec: PingpongSpec) -> Self {
        Pingpong { spec, a: 0, b: 0, npk: 0, started: 0, got: 0, legs: 0 }
    }

    fn send_message(&self, src: &mut Source, net: &mut Net, q: &mut EventQueue, now: Tick, from: u32, to: u32) {
        let maxp = net.machine().max_payload_bytes();
        let mut left = self.spec.message_bytes;
        for i in 0..self.npk {
            let pl = left.min(maxp);
            left -= pl;
            let mut p = net.packet(from, to, pl, src.routing, now);
            p.tag = i as u64;
            src.send(net, q, now, from, p);
        }
    }
}

/// The node `hops` hops from node 0, filling X, then Y, then Z.
pub fn node_at_hops(g: &Geometry, hops: u32) -> Option<u32> {
    let mut left = hops;
    let mut c = [0u32; 3];
    for k in 0..3 {
        let reach = if g.torus[k] { g.dims[k] / 2 } else { g.dims[k] - 1 };
        let t = left.min(reach);
        c[k] = t;
        left -= t;
    }
    (left == 0).then(|| g.index(c))
}

impl TrafficPattern for Pingpong {
    /// The two nodes share the exchange's state (who has what, since when).
    fn partitionable(&self) -> bool {
        false
    }

    fn setup(&mut self, src: &mut Source, net: &Net) -> Result<(), WorkloadError> {
        self.b = node_at_hops(&src.geo, self.spec.hops).ok_or_else(|| WorkloadError::Invalid {
            key: "hops",
            value: self.spec.hops.to_string(),
            allowed: format!("the partition {} has no node that far from node 0", net.machine().shape),
        })?;
        self.npk = self.spec.message_bytes.div_ceil(net.machine().max_payload_bytes());
        src.progress.expected_reads = self.npk as u64 * 2 * self.spec.iters as u64;
        Ok(())
    }

    fn start(&mut self, src: &mut Source, net: &mut Net, q: &mut EventQueue) {
        self.started = 0;
        self.send_message(src, net, q, 0, self.a, self.b);
    }

    fn on_packet(&mut self, src: &mut Source, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, _core: usize, _pkt: &Packet) {
        self.got += 1;
        src.count_read(now);
        if self.got == self.npk {
            src.progress.oneway.push(now - self.started);
            self.got = 0;
            self.legs += 1;
            if self.legs < 2 * self.spec.iters {
                let other = if node == self.a { self.b } else { self.a };
                self.started = now;
                self.send_message(src, net, q, now, node, other);
            }
        }
    }

    /// The hops' latency plus the message's bytes (and the gaps between its
    /// packets) at the link rate.
    fn bound_ticks(&self, src: &Source, m: &Machine) -> f64 {
        let geo = &src.geo;
        let hops = geo.distance(0, self.b) as f64;
        let maxp = m.max_payload_bytes();
        let mut left = self.spec.message_bytes;
        let mut bytes = 0.0;
        let mut count = 0;
        while left > 0 {
            let pl = left.min(maxp);
            left -= pl;
            bytes += m.packet_bytes_for_payload(pl) as f64;
            count += 1;
        }
        let gaps = (count - 1) as f64 * (m.torus().trailer_bytes + m.torus().gap_bytes) as f64;
        hops * m.hop_latency as f64 + (bytes + gaps) * m.tick_byte as f64
    }
}
