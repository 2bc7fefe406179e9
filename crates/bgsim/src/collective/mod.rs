//! Layer 3: the collective (tree) network and the global-interrupt barrier.
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
//! The global-interrupt barrier completes a fixed latency after the last node
//! has entered it.

use crate::engine::Tick;
use crate::machine::Machine;

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
        let c = &m.spec.collective;
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

/// The global-interrupt network: a partition-wide AND with a fixed latency.
#[derive(Clone, Copy, Debug)]
pub struct Barrier {
    pub latency: Tick,
    pub entry: Tick,
    pub exit: Tick,
}

impl Barrier {
    pub fn new(m: &Machine) -> Self {
        let b = &m.spec.barrier;
        let t = m.tick_cycle as f64;
        Barrier {
            latency: (b.latency_ns * 1e-3 * m.spec.clock.cpu_mhz * t).round() as Tick,
            entry: (b.entry_cycles as f64 * t) as Tick,
            exit: (b.exit_cycles as f64 * t) as Tick,
        }
    }
    /// When every participant leaves, given when each entered.
    pub fn release(&self, entered: impl Iterator<Item = Tick>) -> Tick {
        entered.map(|t| t + self.entry).max().unwrap_or(0) + self.latency + self.exit
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
        // bgl.md gives 2.5 us round trip (hop latency derived from it).
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
}
