//! Layer 3: the collective (tree) network.
//!
//! The tree joins every node of the partition: each node has a link to its
//! parent and up to two children (three links at most), the root is set by
//! the machine description. Packets have a fixed size (256 bytes, all
//! payload) plus wire overhead; every link direction is its own resource,
//! busy one packet time per packet. Packets cut through a node after the hop
//! latency. Going up, every node's ALU combines packet k of its children with
//! packet k of its own contribution on the fly, starting when all their heads
//! are in; the root's result goes down to every node. Cores write the packets they contribute and
//! read the packets they receive at their per-packet costs, one at a time.
//!
//! An operation's timing is a dataflow over (node, packet) computed when the
//! last node has joined: leaves first going up, root first going down. Link
//! busy times persist between operations, so back-to-back collectives queue.
//! The data itself (the ALU's integer and two-pass floating-point sums) is
//! computed by the layer that owns the buffers.
//!
//! The tree is a component with its own event kind: software hands it an
//! operation (who joins when, which node's core to tell, with which tag)
//! and it tells each participant's core with a [`ev::DONE`] event when its
//! part is done. Its timing is worked out as the dataflow above when the
//! last node joins: exact, as nothing else uses the tree's links.

use crate::engine::{Event, EventQueue, Tick};
use crate::machine::Machine;

/// Event kinds of the collective network.
pub mod ev {
    use crate::machine::Component;
    /// A participant's part of an operation is done: core `a` of the node
    /// is told with tag `data`.
    pub const DONE: u8 = Component::Collective.kind(0);
}

/// Who takes part in an operation and whom to tell when it is done: node,
/// its core, the tag the core is told with, and a time before which it is
/// not done (the participant joined then).
#[derive(Clone, Copy, Debug)]
pub struct Participant {
    pub node: u32,
    pub core: usize,
    pub tag: u32,
    pub joined: Tick,
}

/// The collective network's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TreeCounters {
    pub operations: u64,
    pub link_packets: u64,
    pub link_busy_ticks: u64,
}

/// What a tree operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeOp {
    /// One node's data to every node (up to the tree root, then down).
    Bcast { source: u32 },
    /// Every node's data combined, result at one node.
    Reduce { dest: u32 },
    /// Every node's data combined, result at every node.
    Allreduce,
}

/// The tree network of a partition.
pub struct Tree {
    /// Parent of every node (root: itself).
    parent: Vec<u32>,
    /// Nodes in breadth-first order from the root.
    order: Vec<u32>,
    /// Per node: when its up link (to the parent) and its down link (from
    /// the parent) are free.
    up_free: Vec<Tick>,
    down_free: Vec<Tick>,
    pub root: u32,
    pkt_ticks: Tick,
    hop: Tick,
    write: Tick,
    read: Tick,
    pub payload_bytes: u32,
    /// Per node: packets over its up link (to the parent) and its down link.
    pub up_packets: Vec<u64>,
    pub down_packets: Vec<u64>,
    /// Counters: packets over links, operations.
    pub link_packets: u64,
    pub link_busy_ticks: u64,
    pub operations: u64,
}

impl Tree {
    pub fn new(m: &Machine) -> Self {
        let n = m.shape.nodes();
        let c = m.spec.collective.as_ref().expect("a machine with a collective network");
        let geo = crate::torus::Geometry::new(&m.shape);
        let root = geo.index([c.root_node[0] % m.shape.dims[0], c.root_node[1] % m.shape.dims[1], c.root_node[2] % m.shape.dims[2]]);
        // A binary heap over positions; position 0 is the root, position p
        // holds node (p + root) mod N.
        let node_at = |p: u32| (p + root) % n;
        let mut parent = vec![0u32; n as usize];
        for p in 0..n {
            parent[node_at(p) as usize] = if p == 0 { root } else { node_at((p - 1) / 2) };
        }
        let order = (0..n).map(node_at).collect();
        let t = m.tick_cycle;
        Tree {
            parent,
            order,
            up_free: vec![0; n as usize],
            down_free: vec![0; n as usize],
            root,
            pkt_ticks: ((c.packet_bytes + c.overhead_bytes) as f64 * c.cycles_per_byte * t as f64).round() as Tick,
            hop: c.hop_latency_cycles as Tick * t,
            write: m.spec.cpu.packet_write_cycles_cached as Tick * t,
            read: m.spec.cpu.packet_read_cycles as Tick * t,
            payload_bytes: c.packet_bytes,
            up_packets: vec![0; n as usize],
            down_packets: vec![0; n as usize],
            link_packets: 0,
            link_busy_ticks: 0,
            operations: 0,
        }
    }

    /// The parent of a node (the root's is itself).
    pub fn parent(&self, n: u32) -> u32 {
        self.parent[n as usize]
    }
    /// One tree packet's time on a link, ticks.
    pub fn packet_ticks(&self) -> Tick {
        self.pkt_ticks
    }

    /// Depth of the tree (links from the root to the deepest node).
    pub fn depth(&self) -> u32 {
        let mut d = 0;
        for &n in &self.order {
            let mut k = 0;
            let mut x = n;
            while x != self.root {
                x = self.parent[x as usize];
                k += 1;
            }
            d = d.max(k);
        }
        d
    }

    /// Packets an operation of `bytes` takes (at least one).
    pub fn packets(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.payload_bytes as u64).max(1)
    }

    /// Runs an operation of `bytes` for `who` (a node may appear for several
    /// of its tasks: it joins when the last of them has), and schedules each
    /// participant's [`ev::DONE`]. With `two_pass` (floating-point sums), a
    /// first allreduce pass of the maximum exponents (2 bytes per 8-byte
    /// value) precedes the mantissas, summed as integers. No participant is
    /// done before `floor`.
    pub fn operate(&mut self, q: &mut EventQueue, op: TreeOp, bytes: u64, two_pass: bool, who: &[Participant], floor: Tick) {
        let nodes = self.parent.len();
        let mut join: Vec<Option<Tick>> = vec![None; nodes];
        for p in who {
            let n = p.node as usize;
            join[n] = Some(join[n].map_or(p.joined, |x: Tick| x.max(p.joined)));
        }
        let packets = self.packets(bytes);
        let done = if two_pass {
            let first = self.run(TreeOp::Allreduce, &join, self.packets(bytes.div_ceil(4)));
            let join2: Vec<Option<Tick>> = join.iter().zip(&first).map(|(j, &f)| j.map(|_| f)).collect();
            self.run(op, &join2, packets)
        } else {
            self.run(op, &join, packets)
        };
        for p in who {
            let at = done[p.node as usize].max(p.joined).max(floor);
            q.push_at(at, Event { kind: ev::DONE, a: p.core as u8, b: 0, c: 0, node: p.node, data: p.tag });
        }
    }

    /// The counters.
    pub fn counters(&self) -> TreeCounters {
        TreeCounters { operations: self.operations, link_packets: self.link_packets, link_busy_ticks: self.link_busy_ticks }
    }

    /// Runs one operation of `packets` packets. `join[n]`: when node n's
    /// core can start (None: the node takes no part - it contributes the
    /// identity and reads nothing). Returns when each node is done (its last
    /// packet written, and read where it receives the result).
    pub fn run(&mut self, op: TreeOp, join: &[Option<Tick>], packets: u64) -> Vec<Tick> {
        let n = self.parent.len();
        self.operations += 1;
        let contributes = |v: u32| match op {
            TreeOp::Bcast { source } => v == source,
            _ => join[v as usize].is_some(),
        };
        let reads = |v: u32| match op {
            TreeOp::Bcast { source } => v != source && join[v as usize].is_some(),
            TreeOp::Reduce { dest } => v == dest,
            TreeOp::Allreduce => join[v as usize].is_some(),
        };
        // Nodes whose subtree holds a contribution send upward.
        let mut sends_up = vec![false; n];
        for &v in self.order.iter().rev() {
            if contributes(v) {
                sends_up[v as usize] = true;
            }
            if sends_up[v as usize] && v != self.root {
                sends_up[self.parent[v as usize] as usize] = true;
            }
        }
        let start: Vec<Tick> = (0..n).map(|v| join[v].unwrap_or(0)).collect();
        let mut inj = start.clone();
        let mut rd = start.clone();
        let mut done = start.clone();
        let mut head = vec![0 as Tick; n];
        let mut tail = vec![0 as Tick; n];
        for _k in 0..packets {
            // Up: leaves first. `ready[v]`: when the heads of all of v's inputs
            // for packet k are in (its own packet: fully written).
            let mut ready = vec![0 as Tick; n];
            for &v in self.order.iter().rev() {
                let vi = v as usize;
                if contributes(v) {
                    inj[vi] += self.write;
                    ready[vi] = ready[vi].max(inj[vi]);
                    done[vi] = done[vi].max(inj[vi]);
                }
                if v != self.root && sends_up[vi] {
                    let s = ready[vi].max(self.up_free[vi]);
                    self.up_free[vi] = s + self.pkt_ticks;
                    self.up_packets[vi] += 1;
                    self.link_packets += 1;
                    self.link_busy_ticks += self.pkt_ticks;
                    let p = self.parent[vi] as usize;
                    ready[p] = ready[p].max(s + self.hop);
                }
            }
            // Down: root first; cut-through (a child link starts when the head is in).
            for &v in &self.order {
                let vi = v as usize;
                if v == self.root {
                    head[vi] = ready[vi];
                    // The combined packet streams out of the root's ALU.
                    tail[vi] = ready[vi] + if n > 1 { self.pkt_ticks } else { 0 };
                } else {
                    let p = self.parent[vi] as usize;
                    let s = head[p].max(self.down_free[vi]);
                    self.down_free[vi] = s + self.pkt_ticks;
                    self.down_packets[vi] += 1;
                    self.link_packets += 1;
                    self.link_busy_ticks += self.pkt_ticks;
                    head[vi] = s + self.hop;
                    tail[vi] = (s + self.hop + self.pkt_ticks).max(tail[p]);
                }
                if reads(v) {
                    rd[vi] = rd[vi].max(tail[vi]) + self.read;
                    done[vi] = done[vi].max(rd[vi]);
                }
            }
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::bgl;

    #[test]
    fn tree_shape_and_full_machine_round_trip() {
        let m = bgl(&["partition.shape=\"64x32x32\""]).unwrap();
        let mut t = Tree::new(&m);
        assert_eq!(t.depth(), 16);
        // Every node has at most two children (three links with its parent).
        let mut kids = vec![0u32; t.parent.len()];
        for (v, &p) in t.parent.iter().enumerate() {
            if v as u32 != t.root {
                kids[p as usize] += 1;
            }
        }
        assert!(kids.iter().all(|&k| k <= 2));
        // One-packet allreduce over the full machine, network part only:
        // The published BG/L figures give 2.5 us round trip (hop latency derived from it).
        let join = vec![Some(0); t.parent.len()];
        let done = t.run(TreeOp::Allreduce, &join, 1);
        let net = done.iter().max().unwrap() - t.write - t.read;
        let us = m.micros(net);
        assert!((us - 2.5).abs() < 0.1, "round trip {us} us");
    }

    #[test]
    fn long_messages_stream_at_the_link_rate() {
        let m = bgl(&["partition.shape=\"8x8x8\""]).unwrap();
        let mut t = Tree::new(&m);
        let join = vec![Some(0); 512];
        let p = 4096;
        let done = t.run(TreeOp::Allreduce, &join, p);
        let end = *done.iter().max().unwrap();
        let per_packet = end as f64 / p as f64;
        // 266 bytes at 2 cycles per byte per packet.
        assert!((per_packet - 532.0).abs() < 5.0, "{per_packet}");
        // Back-to-back operations queue on the links.
        let again = t.run(TreeOp::Allreduce, &join, 1);
        assert!(*again.iter().max().unwrap() > end);
    }

    #[test]
    fn bcast_reaches_every_node_and_reduce_only_the_destination() {
        let m = bgl(&["partition.shape=\"4x4x2\""]).unwrap();
        let mut t = Tree::new(&m);
        let join = vec![Some(100); 32];
        let d = t.run(TreeOp::Bcast { source: 7 }, &join, 3);
        assert!(d.iter().enumerate().all(|(v, &x)| x > 100 || v == 7));
        let mut t = Tree::new(&m);
        let d = t.run(TreeOp::Reduce { dest: 5 }, &join, 1);
        let max_other = d.iter().enumerate().filter(|&(v, _)| v != 5).map(|(_, &x)| x).max().unwrap();
        assert!(d[5] > max_other);
    }

    #[test]
    fn an_operation_tells_each_participant_when_its_node_is_done() {
        let m = bgl(&["partition.shape=\"4x2x1\""]).unwrap();
        let join = vec![Some(50); 8];
        let done = Tree::new(&m).run(TreeOp::Allreduce, &join, 2);
        let mut t = Tree::new(&m);
        let mut q = EventQueue::new();
        // Node 3 has two tasks: the later one's join counts for the node.
        let mut who: Vec<Participant> = (0..8).map(|n| Participant { node: n, core: 0, tag: n, joined: 50 }).collect();
        who.push(Participant { node: 3, core: 1, tag: 99, joined: 20 });
        t.operate(&mut q, TreeOp::Allreduce, 2 * t.payload_bytes as u64, false, &who, 0);
        let mut seen = 0;
        while let Some((at, e)) = q.pop_before(Tick::MAX) {
            assert_eq!(e.kind, ev::DONE);
            assert_eq!(at, done[e.node as usize], "node {} tag {}", e.node, e.data);
            assert_eq!((e.a, e.data), if e.data == 99 { (1, 99) } else { (0, e.node) });
            seen += 1;
        }
        assert_eq!(seen, 9);
        assert_eq!(t.counters().operations, 1);
    }
}
