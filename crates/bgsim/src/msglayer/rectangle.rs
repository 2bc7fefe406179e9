//! The message layer's allreduce on the torus (BG/P's "rectangle"
//! allreduce): the message is cut into packets, each of one of the deposit
//! broadcast's colours (`deposit.rs`). A colour's way up is its way down
//! backwards, over the opposite links ([`MsgLayer::reduce_route`]): every
//! node reads the partial sums its neighbours send it, combines them with
//! its own part on its rank's core and sends the sum one hop on toward the
//! root; the root spreads each reduced packet back with deposit-bit line
//! packets. Each node's core combines every packet once, and several
//! communicators reducing at once (a VN partition's quarters) do so on
//! their own cores: they share the links, the DMA engine and the torus
//! FIFOs, not a core.

use super::wire::*;
use super::{MsgLayer, ReqId, ReqKind, NONE};
use crate::engine::{EventQueue, Tick};
use crate::node::Work;
use crate::packet::Net;
use std::collections::VecDeque;

/// Not joined yet (a node's core).
const OUT: u8 = u8::MAX;
/// A packet this node has combined and sent on (its count of inputs).
const SENT: u8 = u8::MAX;

/// A node's combined sums waiting for its injection agent, by injection
/// FIFO ([`MsgLayer::reduce_emit`]): the FIFO to look at first, how many
/// wait, and whose turn it is, theirs or the node's messages'.
pub(super) struct ReadySums {
    /// Per FIFO: (allreduce, packet, neighbour, direction).
    fifos: Vec<VecDeque<(u32, u32, u32, u8)>>,
    next: usize,
    left: u32,
    pub(super) turn: bool,
}

/// A message-layer allreduce with one rank on every node.
pub(super) struct LineReduce {
    /// The root node, the bytes and packets (known once a rank of this
    /// partition joined; packets can come first).
    root: u32,
    bytes: u64,
    packets: u32,
    /// Per node: its rank's core and task once it joined (`OUT` before).
    core: Vec<u8>,
    task: Vec<u8>,
    /// Per node: partial sums read per packet (`SENT` once sent on);
    /// empty until the node's first.
    have: Vec<Vec<u8>>,
    /// Packets reduced at the root.
    root_reduced: u32,
    /// The ranks' contributions, on the processes of an MPI job (each
    /// comes with its rank's note).
    pub(super) payloads: Vec<Vec<u8>>,
}

impl LineReduce {
    fn new(nodes: usize) -> LineReduce {
        LineReduce {
            root: 0,
            bytes: 0,
            packets: 0,
            core: vec![OUT; nodes],
            task: vec![0; nodes],
            have: vec![Vec::new(); nodes],
            root_reduced: 0,
            payloads: Vec::new(),
        }
    }
}

impl MsgLayer {
    /// Joins message-layer allreduce `id` (the same on every rank; its ids
    /// share the deposit broadcasts' numbering) of `bytes` to `root`; one
    /// rank on every node. The rank's core first reads what its neighbours
    /// sent before it joined; the request completes when the result's last
    /// packet is at the node.
    #[allow(clippy::too_many_arguments)]
    pub fn line_allreduce(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, rank: u32, id: u32, root: u32, bytes: u64) -> ReqId {
        let req = self.new_req(ReqKind::Timer, rank);
        let packets = bytes.div_ceil(self.maxp as u64) as u32;
        let (rnode, rcore) = self.place(root);
        // The way down: a deposit broadcast of the same id from the root.
        self.bcast_record(net, id, rnode, rcore as u8, packets, None);
        let nodes = net.machine().shape.nodes() as usize;
        let (node, core) = self.place(rank);
        let task = self.ranks[rank as usize].task;
        let r = self.reduces.entry(id).or_insert_with(|| LineReduce::new(nodes));
        (r.root, r.bytes, r.packets) = (rnode, bytes, packets);
        r.core[node as usize] = core as u8;
        r.task[node as usize] = task;
        let backlog: u64 = r.have[node as usize].iter().map(|&h| h as u64).sum();
        if packets == 0 {
            self.complete(req);
            return req;
        }
        self.bcasts.get_mut(&id).expect("a broadcast's record").waiting[node as usize].push(req);
        if backlog > 0 {
            net.charge(q, now, node, core, backlog * self.read_cost(), Work::Protocol);
        }
        for k in 0..packets {
            self.reduce_step(net, q, now, id, node, k);
        }
        req
    }

    /// A core's work to read one packet of the layer from its FIFO.
    fn read_cost(&self) -> Tick {
        if self.dma.is_some() {
            self.costs.memfifo_packet
        } else {
            self.costs.packet
        }
    }

    /// Where packet `k`'s reduction goes through `node`: the partial sums
    /// it reads and the neighbour it sends the sum to, with the direction
    /// (None: the root). The way up is the deposit broadcast's way down
    /// (`MsgLayer::spread`) backwards, over the opposite links: a node
    /// reads the sums of the lines it would send to (a chain of one-hop
    /// sends along each, from its far end), combines, and sends along the
    /// line it would read from, toward that line's sender; a node of the
    /// root's d0 plane sends one hop back to the neighbour plane it would
    /// get the packet from. The colours' ways up use disjoint links, as
    /// their ways down do.
    fn reduce_route(&self, net: &Net, root: u32, node: u32, k: u32) -> (u8, Option<(u32, usize)>) {
        let (order, m) = self.colour_order(k);
        if m == 0 {
            return (0, None);
        }
        let order = &order[..m];
        let g = net.geometry();
        let r = g.coords32(root);
        let c = g.coords32(node);
        // Chains that end at a line's sender: one per direction it sends.
        let ends = |d: usize| -> u8 {
            if self.torus[d] {
                1
            } else {
                u8::from(r[d] > 0) + u8::from(r[d] + 1 < self.dims[d])
            }
        };
        let d0 = order[0];
        if c == r {
            return (ends(d0), None);
        }
        // The root's d0 plane: the broadcast steps into it from `from`.
        let (from, step) = self.plane_step(d0, r[d0]);
        if m >= 2 && c[d0] == r[d0] {
            let mut t = c;
            t[d0] = from;
            return (0, Some((g.index(t), step ^ 1)));
        }
        let mut inputs = 0;
        if m >= 2 && c[d0] == from {
            let mut t = c;
            t[d0] = r[d0];
            inputs += u8::from(t != r);
        }
        // The line this node is on: the last of the order off the root's coordinate.
        let level = (1..m).rev().find(|&i| c[order[i]] != r[order[i]]).unwrap_or(0);
        inputs += order[level + 1..].iter().map(|&d| ends(d)).sum::<u8>();
        let d = order[level];
        let s = self.dims[d];
        let (dir, to) = if self.torus[d] {
            // Relative place p = 1 .. s-1 on the line from the sender: p
            // reads p+1 and sends to p-1.
            let p = (c[d] + s - r[d]) % s;
            inputs += u8::from(p + 1 < s);
            (2 * d + 1, (c[d] + s - 1) % s)
        } else if c[d] < r[d] {
            inputs += u8::from(c[d] > 0);
            (2 * d, c[d] + 1)
        } else {
            inputs += u8::from(c[d] + 1 < s);
            (2 * d + 1, c[d] - 1)
        };
        let mut t = c;
        t[d] = to;
        (inputs, Some((g.index(t), dir)))
    }

    /// Packet `k` of allreduce `id` at `node`: once its rank joined and
    /// every partial sum it waits for is read, the core combines them with
    /// its own part, then (at `tk::REDUCE`) sends the sum on.
    fn reduce_step(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: u32, node: u32, k: u32) {
        let r = &self.reduces[&id];
        let core = r.core[node as usize];
        if core == OUT {
            return;
        }
        let got = r.have[node as usize].get(k as usize).copied().unwrap_or(0);
        let (inputs, _) = self.reduce_route(net, r.root, node, k);
        if got != inputs {
            return;
        }
        let len = (self.maxp as u64).min(r.bytes - k as u64 * self.maxp as u64);
        let packets = r.packets as usize;
        let r = self.reduces.get_mut(&id).expect("an allreduce's record");
        let have = &mut r.have[node as usize];
        if have.len() < packets {
            have.resize(packets, 0);
        }
        have[k as usize] = SENT;
        let core = core as usize;
        let combine = (inputs as u64 * len) as f64 / self.costs.combine_bytes_per_cycle;
        let mut ticks = combine.ceil() as Tick * self.costs.tick_cycle;
        if r.root != node {
            // Sending the sum on: a descriptor for the DMA engine, or the
            // core writes the packet itself.
            ticks += if self.dma.is_some() { self.costs.descriptor } else { self.costs.packet };
        }
        let at = net.charge(q, now, node, core, ticks, Work::Protocol);
        self.reduce_out.entry((node, core as u8)).or_default().push_back((id, k));
        net.timer(q, at, node, core, timer_tag(tk::REDUCE, 0));
    }

    /// A partial sum of allreduce `id` read at `node`.
    pub(super) fn reduce_packet(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, id: u32, k: u32) {
        let nodes = net.machine().shape.nodes() as usize;
        let read = self.read_cost();
        let r = self.reduces.entry(id).or_insert_with(|| LineReduce::new(nodes));
        let have = &mut r.have[node as usize];
        if have.len() <= k as usize {
            have.resize(k as usize + 1, 0);
        }
        have[k as usize] += 1;
        let core = r.core[node as usize];
        if core != OUT {
            net.charge(q, now, node, core as usize, read, Work::Protocol);
            self.reduce_step(net, q, now, id, node, k);
        }
    }

    /// `node`'s `core` combined its oldest packet waiting: the root spreads
    /// it back down; any other node queues the sum one hop on, for its
    /// injection agent to take when it asks for work ([`MsgLayer::reduce_emit`]).
    pub(super) fn reduce_send(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize) {
        let key = (node, core as u8);
        let (id, k) = self.reduce_out.get_mut(&key).and_then(|o| o.pop_front()).expect("a combined packet to send");
        if self.reduce_out.get(&key).is_some_and(|o| o.is_empty()) {
            self.reduce_out.remove(&key);
        }
        let r = &self.reduces[&id];
        let root = r.root;
        if node == root {
            self.spread(net, q, now, id, node, k, 0);
            let r = self.reduces.get_mut(&id).expect("an allreduce's record");
            r.root_reduced += 1;
            if r.root_reduced == r.packets {
                let b = self.bcasts.get_mut(&id).expect("a broadcast's record");
                b.done[node as usize] = true;
                for req in std::mem::take(&mut b.waiting[node as usize]) {
                    self.complete(req);
                }
            }
            return;
        }
        let (_, to) = self.reduce_route(net, root, node, k);
        let (dest, dir) = to.expect("a node other than the root sends on");
        let p = self.reduce_packet_of(net, now, node, id, k, dest, dir);
        let f = self.fifo(net, node, self.reduces[&id].task[node as usize] as usize, NONE, &p);
        let nf = (net.machine().torus().injection_fifos + net.machine().torus().hp_injection_fifos) as usize;
        let ready = self.reduce_ready.entry(node).or_insert_with(|| ReadySums { fifos: vec![VecDeque::new(); nf], next: 0, left: 0, turn: false });
        ready.fifos[f].push_back((id, k, dest, dir as u8));
        ready.left += 1;
        net.wake_fifo_owner(q, now, node, f);
    }

    /// Hands one combined sum of `node` to its injection agent `agent` (the
    /// DMA engine's, or the core owning the FIFO), taking the FIFOs in
    /// turn: the next one after the last served that has a sum and room
    /// for it, else the next with a sum, which waits for room. As the
    /// engine serves its descriptors' FIFOs in turn, a colour whose FIFO
    /// is full does not hold back the others. False if `agent` has none.
    pub(super) fn reduce_emit(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, agent: usize) -> bool {
        let Some(ready) = self.reduce_ready.get(&node) else { return false };
        let cap = net.machine().torus().injection_fifo_bytes;
        let bytes = net.machine().max_packet_bytes();
        let nf = ready.fifos.len();
        let mut pick = None;
        for i in 0..nf {
            let f = (ready.next + i) % nf;
            if ready.fifos[f].is_empty() || net.fifo_owner(f) != agent {
                continue;
            }
            if net.inj_used(node, f) + bytes <= cap {
                pick = Some(f);
                break;
            }
            pick = pick.or(Some(f));
        }
        let Some(f) = pick else { return false };
        let ready = self.reduce_ready.get_mut(&node).expect("sums to send");
        let (id, k, dest, dir) = ready.fifos[f].pop_front().expect("a sum");
        ready.next = (f + 1) % nf;
        ready.left -= 1;
        if ready.left == 0 {
            self.reduce_ready.remove(&node);
        }
        let p = self.reduce_packet_of(net, now, node, id, k, dest, dir as usize);
        self.packets_sent += 1;
        net.send(q, now, node, p, Some(f));
        true
    }

    /// A sum of `node` was written: the agents whose FIFOs have more
    /// waiting ask for the next.
    pub(super) fn reduce_written(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32) {
        if let Some(ready) = self.reduce_ready.get(&node) {
            for f in (0..ready.fifos.len()).filter(|&f| !ready.fifos[f].is_empty()) {
                net.wake_fifo_owner(q, now, node, f);
            }
        }
    }

    /// Packet `k` of allreduce `id` from `node` one hop on toward the root,
    /// to `dest` in direction `dir` ([`MsgLayer::reduce_route`]).
    #[allow(clippy::too_many_arguments)]
    fn reduce_packet_of(&self, net: &Net, now: Tick, node: u32, id: u32, k: u32, dest: u32, dir: usize) -> crate::torus::Packet {
        let len = (self.maxp as u64).min(self.reduces[&id].bytes - k as u64 * self.maxp as u64) as u32;
        let mut p = net.line_packet(node, dest, dir, len, now);
        p.tag = tag(pk::REDUCE, id, k);
        p
    }

    /// The core that reads allreduce `id`'s packets at `node` (its rank's),
    /// for the deposit packets of its way down; None for a broadcast.
    pub(super) fn reduce_core(&self, id: u32, node: u32) -> Option<usize> {
        self.reduces.get(&id).map(|r| r.core[node as usize]).filter(|&c| c != OUT).map(usize::from)
    }

    /// Keeps rank contribution `payload` of allreduce `id` (on the processes
    /// of an MPI job, from the rank's note).
    pub fn reduce_payload(&mut self, net: &Net, id: u32, payload: Vec<u8>) {
        let nodes = net.machine().shape.nodes() as usize;
        self.reduces.entry(id).or_insert_with(|| LineReduce::new(nodes)).payloads.push(payload);
    }

    /// The contributions of allreduce `id` that came with notes.
    pub fn reduce_payloads(&self, id: u32) -> &[Vec<u8>] {
        self.reduces.get(&id).map_or(&[], |r| &r.payloads[..])
    }

    /// Forgets message-layer collective `id`, a deposit broadcast or a
    /// torus allreduce (every rank of this partition is done with it).
    pub fn line_forget(&mut self, id: u32) {
        self.reduces.remove(&id);
        self.bcasts.remove(&id);
    }

    /// Message-layer collectives this partition keeps: (deposit
    /// broadcasts, torus allreduces).
    pub fn line_records(&self) -> (usize, usize) {
        (self.bcasts.len(), self.reduces.len())
    }
}

#[cfg(test)]
mod tests {
    use crate::machine::{self, MachineSource};
    use crate::msglayer::MsgLayer;
    use crate::packet::Net;

    /// On tori, meshes and partitions of 1 to 3 dimensions, from any root,
    /// every colour's way up is a tree into the root: each node is read by
    /// exactly the nodes that send to it, a send goes one hop, and every
    /// node's sums reach the root; no two colours send over the same link.
    #[test]
    fn every_colour_reduces_along_a_tree_into_the_root_over_links_of_its_own() {
        for (shape, mesh) in [("8x8x8", ""), ("4x4x2", "z"), ("4x3x1", "xy"), ("5x1x1", ""), ("1x1x1", ""), ("2x3x4", "y")] {
            let mut set = vec![format!("partition.shape=\"{shape}\"")];
            if !mesh.is_empty() {
                set.push(format!("partition.mesh=\"{mesh}\""));
            }
            let m = machine::load(&MachineSource::Preset("bgp".into()), &set).unwrap();
            let mut net = Net::new(&m, 1);
            let nodes = m.shape.nodes();
            let dims = m.shape.dims;
            let slots: Vec<[u32; 4]> = (0..nodes).map(|i| {
                let c = net.geometry().coords32(i);
                [c[0], c[1], c[2], 0]
            }).collect();
            let ml = MsgLayer::new(&mut net, &slots, true);
            let colours = dims.iter().filter(|&&d| d > 1).count().max(1) as u32;
            for root in [0, nodes / 2, nodes - 1] {
                let mut links = std::collections::HashSet::new();
                for k in 0..colours {
                    let route: Vec<_> = (0..nodes).map(|n| ml.reduce_route(&net, root, n, k)).collect();
                    let mut read = vec![0u8; nodes as usize];
                    for (n, (_, to)) in route.iter().enumerate() {
                        assert_eq!(to.is_none(), n as u32 == root, "{shape} root {root} colour {k} node {n}");
                        if let Some((dest, dir)) = *to {
                            read[dest as usize] += 1;
                            let (a, b) = (net.geometry().coords32(n as u32), net.geometry().coords32(dest));
                            let d = dir / 2;
                            let step = if dir % 2 == 0 { (a[d] + 1) % dims[d] } else { (a[d] + dims[d] - 1) % dims[d] };
                            assert!(b[d] == step && (0..3).all(|e| e == d || a[e] == b[e]), "{shape}: {n} -> {dest} is not one hop {dir}");
                            assert!(links.insert((n, dir)), "{shape} root {root}: colour {k} sends {n} {dir} again");
                        }
                    }
                    for n in 0..nodes as usize {
                        assert_eq!(route[n].0, read[n], "{shape} root {root} colour {k}: node {n} reads {} sums, gets {}", route[n].0, read[n]);
                        let (mut at, mut hops) = (n as u32, 0);
                        while let Some((next, _)) = route[at as usize].1 {
                            at = next;
                            hops += 1;
                            assert!(hops <= nodes, "{shape}: a cycle from {n}");
                        }
                    }
                }
            }
        }
    }
}
