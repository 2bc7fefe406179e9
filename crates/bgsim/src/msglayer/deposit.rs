//! The message layer's broadcast with deposit-bit line packets: the root
//! cuts the message into colours, each spread along its own order of the
//! torus's dimensions, and every node forwards each packet into the next
//! dimensions as soon as it has read it.

use super::wire::*;
use super::{MsgLayer, ReqId, ReqKind, NONE};
use crate::engine::{EventQueue, Tick};
use crate::node::Work;
use crate::packet::Net;

/// A message-layer broadcast with deposit-bit line packets (three colours,
/// each spread along its own dimension order, forwarded per packet).
pub(super) struct LineBcast {
    root: u32,
    /// The root rank's core: on a DMA machine, the core that forwards the
    /// packets on every node (a rectangle's ranks share their T).
    core: u8,
    packets: u32,
    /// Per node: packets read; the rank's request once it joined; done.
    got: Vec<u32>,
    pub(super) waiting: Vec<Vec<ReqId>>,
    pub(super) done: Vec<bool>,
    /// Line packets the root writes, and how many it has written.
    root_expected: u32,
    root_written: u32,
    root_done: bool,
    started: bool,
    /// Whether `root` and `packets` are known yet (a later id's record can
    /// come first on a machine cut into partitions).
    known: bool,
    /// The root's data, on the processes of an MPI job (it comes with the
    /// root's note; in one process the driver holds it).
    payload: Option<Vec<u8>>,
}

impl MsgLayer {
    /// Joins message-layer broadcast `id` (the same on every rank) of
    /// `bytes` from `root`; one rank per node. The root starts sending when
    /// it joins; every other node forwards each packet into the next
    /// dimensions as soon as it has read it, whether or not its rank has
    /// joined yet. `payload`: the root's data, kept for the other processes
    /// of an MPI job (see [`MsgLayer::bcast_record`]).
    #[allow(clippy::too_many_arguments)]
    pub fn line_bcast(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, rank: u32, id: u32, root: u32, bytes: u64, payload: Option<Vec<u8>>) -> ReqId {
        let req = self.new_req(ReqKind::Timer, rank);
        let packets = bytes.div_ceil(self.maxp as u64) as u32;
        let (rnode, rcore) = self.place(root);
        self.bcast_record(net, id, rnode, rcore as u8, packets, payload);
        let node = self.place(rank).0;
        let b = self.bcasts.get_mut(&id).expect("a broadcast's record");
        if node == b.root {
            b.started = true;
            let (rnode, packets) = (b.root, b.packets);
            let mut n = 0;
            for k in 0..packets {
                n += self.spread(net, q, now, id, rnode, k, 0);
            }
            let b = self.bcasts.get_mut(&id).expect("a broadcast's record");
            b.root_expected = n;
            if n == 0 {
                b.root_done = true;
            }
            if b.root_done {
                self.complete(req);
            } else {
                b.waiting[node as usize].push(req);
            }
        } else if b.done[node as usize] || b.packets == 0 {
            self.complete(req);
        } else {
            b.waiting[node as usize].push(req);
        }
        req
    }

    /// Makes sure broadcast `id` (from node `root`, core `core`, of `packets` packets) has
    /// its record: from a rank's join, or, on a machine cut into
    /// partitions, from the root's note, before any of its packets comes.
    pub fn bcast_record(&mut self, net: &Net, id: u32, root: u32, core: u8, packets: u32, payload: Option<Vec<u8>>) {
        let nodes = net.machine().shape.nodes() as usize;
        let b = self.bcasts.entry(id).or_insert_with(|| LineBcast {
            root: 0,
            core: 0,
            packets: 0,
            got: vec![0; nodes],
            waiting: vec![Vec::new(); nodes],
            done: vec![false; nodes],
            root_expected: 0,
            root_written: 0,
            root_done: false,
            started: false,
            known: false,
            payload: None,
        });
        if !b.known {
            (b.root, b.core, b.packets, b.known) = (root, core, packets, true);
        }
        if payload.is_some() {
            b.payload = payload;
        }
    }

    /// The root's data of broadcast `id`, where it came with the root's
    /// note (on the processes of an MPI job).
    pub fn bcast_payload(&self, id: u32) -> Option<&[u8]> {
        self.bcasts.get(&id).and_then(|b| b.payload.as_deref())
    }

    /// Broadcast `id`'s root node and core and packets, and the root's
    /// data if kept (see [`MsgLayer::bcast_record`]).
    pub fn bcast_of(&self, id: u32) -> (u32, u8, u32, Option<Vec<u8>>) {
        let b = &self.bcasts[&id];
        (b.root, b.core, b.packets, b.payload.clone())
    }

    /// The core that forwards broadcast `id`'s packets at `node` on a DMA
    /// machine: a torus allreduce's rank's, else the root's (0 before
    /// the broadcast is known).
    pub(super) fn deposit_core(&self, id: u32, node: u32) -> usize {
        self.reduce_core(id, node).unwrap_or_else(|| self.bcasts.get(&id).map_or(0, |b| b.core as usize))
    }

    /// Forwards packet `k` of broadcast `id` from `node`, which got it at
    /// `stage` (0: the root). Colour c = k mod m (m: dimensions longer than
    /// one) spreads along its own rotation (d0, d1, d2) of them: stage 1 the
    /// root's d0 line, stage 2 d1 lines from it, stage 3 d2 lines from that
    /// plane - every node outside the root's d0 = R plane; stage 4 one hop
    /// into that plane from its neighbour plane. The root sends only along
    /// d0, so each colour leaves the root by its own link and the colours'
    /// line packets use disjoint links (on a torus the lines run + only; on a
    /// mesh both ways from the sender). Returns the packets sent.
    pub(super) fn spread(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: u32, node: u32, k: u32, stage: usize) -> u32 {
        let (order, m) = self.colour_order(k);
        if m == 0 {
            return 0;
        }
        let b = &self.bcasts[&id];
        let root = net.geometry().coords32(b.root);
        let c = net.geometry().coords32(node);
        let len = (self.maxp as u64).min(b.packets as u64 * self.maxp as u64 - k as u64 * self.maxp as u64) as u32;
        // (direction, hops, stage) of every line packet to send.
        let mut lines: Vec<(usize, u32, usize)> = Vec::new();
        let stages = if stage == 0 { 1..=1 } else { (stage + 1)..=m };
        for st in stages {
            let d = order[st - 1];
            let size = self.dims[d];
            if self.torus[d] {
                lines.push((2 * d, size - 1, st));
            } else {
                lines.push((2 * d, size - 1 - c[d], st));
                lines.push((2 * d + 1, c[d], st));
            }
        }
        // The step into the root's d0 plane.
        let d0 = order[0];
        if m >= 2 && (1..=m).contains(&stage) {
            let (from, dir) = self.plane_step(d0, root[d0]);
            let mut t = c;
            t[d0] = root[d0];
            if c[d0] == from && t != root {
                lines.push((dir, 1, m + 1));
            }
        }
        let mut sent = 0;
        for (dir, hops, st) in lines {
            if hops == 0 {
                continue;
            }
            let d = dir / 2;
            let size = self.dims[d];
            let mut t = c;
            t[d] = if dir % 2 == 0 { (c[d] + hops) % size } else { (c[d] + size - hops) % size };
            let dest = net.geometry().index(t);
            let mut p = net.line_packet(node, dest, dir, len, now);
            p.tag = tag(pk::DEPOSIT, id, ((st as u32) << 26) | k);
            let f = self.fifo(net, node, 0, NONE, &p);
            self.packets_sent += 1;
            net.send(q, now, node, p, Some(f));
            sent += 1;
        }
        sent
    }

    /// Packet `k`'s colour as its order of dimensions (the first `m` of the
    /// array; m: the dimensions longer than one, 0 on a single node):
    /// colour c = k mod m is the rotation of them starting at the c-th.
    pub(super) fn colour_order(&self, k: u32) -> ([usize; 3], usize) {
        let mut dims = [0; 3];
        let mut m = 0;
        for d in (0..3).filter(|&d| self.dims[d] > 1) {
            dims[m] = d;
            m += 1;
        }
        let mut order = [0; 3];
        if m > 0 {
            let colour = k as usize % m;
            for (i, o) in order.iter_mut().take(m).enumerate() {
                *o = dims[(colour + i) % m];
            }
        }
        (order, m)
    }

    /// Where a colour whose first dimension is `d0` steps into the root's
    /// d0 plane (at coordinate `r`): the neighbouring plane it comes from
    /// and the direction of the hop.
    pub(super) fn plane_step(&self, d0: usize, r: u32) -> (u32, usize) {
        let size = self.dims[d0];
        if self.torus[d0] {
            ((r + size - 1) % size, 2 * d0)
        } else if r + 1 < size {
            (r + 1, 2 * d0 + 1)
        } else {
            (r - 1, 2 * d0)
        }
    }

    pub(super) fn line_bcast_packet(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize, id: u32, offset: u32) {
        let (stage, k) = ((offset >> 26) as usize, offset & ((1 << 26) - 1));
        net.charge(q, now, node, core, self.costs.packet, Work::Protocol);
        self.spread(net, q, now, id, node, k, stage);
        let b = self.bcasts.get_mut(&id).expect("a broadcast's record");
        b.got[node as usize] += 1;
        if b.got[node as usize] == b.packets {
            b.done[node as usize] = true;
            let busy = net.core_busy_until(node, core).max(now);
            for r in std::mem::take(&mut b.waiting[node as usize]) {
                self.complete_at(net, q, r, busy);
            }
        }
    }

    /// A line packet of broadcast `id` written at node `src`: the root's
    /// join completes once all of its packets are written. A torus
    /// allreduce's record is gone once its ranks here are done, while the
    /// packets their nodes forwarded last may still be being written:
    /// those count for nothing.
    pub(super) fn line_bcast_written(&mut self, id: u32, src: u32) {
        let Some(b) = self.bcasts.get_mut(&id) else { return };
        if src == b.root {
            b.root_written += 1;
            if b.root_written == b.root_expected {
                b.root_done = true;
                let root = b.root as usize;
                for r in std::mem::take(&mut b.waiting[root]) {
                    self.complete(r);
                }
            }
        }
    }
}
