//! The sending side: posting a send, the per-peer queues that keep a
//! rank's messages to one peer in order, the injection FIFO a packet goes
//! into, and the advance loop's turns between a core's messages. What
//! differs between protocols is in `protocol/`.

use super::partition::{RECV_SIDE, SEND_SIDE};
use super::wire::*;
use super::{pend, req_flag, rma, Msg, MsgId, MsgLayer, PacketOut, Pending, ReqId, ReqKind, SendMode, SendReq, IDLE, NONE, PEER_QUEUES_KEPT};
use crate::engine::{EventQueue, Tick};
use crate::machine::Protocol;
use crate::node::Work;
use crate::packet::{Net, Routing};
use crate::torus::{flags, Geometry, Packet};

impl MsgLayer {
    /// Posts a send (see [`SendReq`]). The protocol is chosen by the
    /// caller; messages to a rank on the same node use the intra-node
    /// protocol, except on a machine with a DMA engine: there they take
    /// the same protocols, packets and software as any other message, the
    /// packets going through the engine and not the torus (a local
    /// transfer, see [`crate::packet::Net::send`]).
    pub fn post_send(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, s: SendReq) -> ReqId {
        if self.ranks[s.rank as usize].lazy != NONE && s.group == NONE {
            // (Another send of the rank's - a one-sided answer - sees the
            // held sends as if posted one by one.)
            self.unhold(s.rank);
        }
        let SendReq { rank, dest, ctx, tag, data, bytes, proto, mode, group } = s;
        let req = if group == NONE { self.new_req(ReqKind::Send, rank) } else { group };
        debug_assert!(data.is_empty() || data.len() as u32 == bytes);
        let intranode = self.dma.is_none() && self.ranks[rank as usize].node == self.ranks[dest as usize].node;
        let direct = mode == SendMode::Direct;
        // One-sided traffic: with a DMA engine, a direct put or a remote
        // get's answer (packets into memory, no handshake); else an MPI send.
        let rma = match (mode, self.dma.is_some()) {
            (SendMode::Remote, true) => rma::REMOTE,
            (SendMode::Served, true) => rma::SERVED,
            _ => rma::NONE,
        };
        let mode = if matches!(mode, SendMode::Remote | SendMode::Served) { SendMode::Standard } else { mode };
        let proto = if direct || rma != rma::NONE || (proto == Protocol::OnePacket && bytes > self.maxp - self.meta) { Protocol::Eager } else { proto };
        let record = self.log_record(rank, dest, bytes, if intranode { 4 } else { proto.index() as u8 }, now);
        // The message waits as a `Pending` until it starts; its `Msg` is
        // made then.
        let mut bits = proto.index() as u8 | (rma << pend::RMA_SHIFT);
        if intranode {
            bits |= pend::INTRANODE;
        }
        if mode == SendMode::Synchronous {
            bits |= pend::SYNC;
        }
        let pd = self.new_pending(Pending { src: rank, dst: dest, ctx, tag, bytes, req, record, next: NONE, bits });
        if !data.is_empty() {
            self.pending_data.insert(pd, data);
        }
        if group == NONE {
            self.reqs[req as usize].msg = pd;
            self.reqs[req as usize].set_flag(req_flag::PENDING, true);
        }
        let st = &mut self.ranks[rank as usize].stats;
        st.sends += 1;
        st.bytes_sent += bytes as u64;
        st.by_protocol[if intranode { 4 } else { proto.index() }] += 1;
        // A standard send to one's own rank of a size that would go eager
        // is buffered as MPI buffers it (MPICH's self path): copied, and
        // complete, before any receive is posted. (Between two tasks of a
        // node the receiver copies from the send buffer, as the machine's
        // VN protocol does.)
        let to_self = rank == dest && mode == SendMode::Standard && proto != Protocol::Rendezvous;
        if mode == SendMode::Buffered || to_self {
            // The data is copied into the attached buffer: the request is
            // complete after the copy, the message goes on by itself.
            let (node, core) = self.place(rank);
            let done = net.charge(q, now, node, core, self.copy_ticks(bytes), Work::Copy);
            self.pending[pd as usize].req = NONE;
            net.timer(q, done, node, core, timer_tag(tk::REQ_DONE, req));
        }
        if direct && !intranode {
            let msg = self.materialize(q, pd);
            self.msgs[msg as usize].direct = true;
            self.stream(net, q, now, msg);
            return req;
        }
        // A message to a peer with one in progress (or about to start)
        // waits behind it.
        let peers = &mut self.ranks[rank as usize].peers;
        let first = match peers.get_mut(&dest) {
            Some(ends) if ends.0 == IDLE => {
                *ends = (NONE, NONE);
                true
            }
            Some(ends) => {
                if ends.0 == NONE {
                    ends.0 = pd;
                } else {
                    self.pending[ends.1 as usize].next = pd;
                }
                ends.1 = pd;
                false
            }
            None => {
                peers.insert(dest, (NONE, NONE));
                true
            }
        };
        if first {
            // The rank's calls run one after the other on its core: a send
            // posted while the core still works on earlier calls starts
            // when it is free.
            let (node, core) = self.place(rank);
            let busy = net.core_busy_until(node, core);
            if busy > now {
                let rs = &mut self.ranks[rank as usize];
                if rs.chain.0 != NONE && rs.chain_at == busy && rs.chain_mark == q.pushes() {
                    self.pending[rs.chain.1 as usize].next = pd;
                    rs.chain.1 = pd;
                } else {
                    net.timer(q, busy, node, core, timer_tag(tk::START, pd));
                    let rs = &mut self.ranks[rank as usize];
                    (rs.chain, rs.chain_at, rs.chain_mark) = ((pd, pd), busy, q.pushes());
                }
            } else {
                self.start(net, q, now, pd);
            }
        }
        req
    }

    /// The start timer of send `pd`: it starts, and the sends chained
    /// behind it (see `RankState::chain`) after it, in order.
    pub(super) fn start_chain(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, pd: u32) {
        let rank = self.pending[pd as usize].src as usize;
        if self.ranks[rank].chain.0 == pd {
            self.ranks[rank].chain = (NONE, NONE);
        }
        let mut p = pd;
        while p != NONE {
            // (Read before it starts: starting frees its slot.)
            let next = std::mem::replace(&mut self.pending[p as usize].next, NONE);
            self.start(net, q, now, p);
            p = next;
        }
    }

    pub(super) fn new_pending(&mut self, p: Pending) -> u32 {
        super::slot(&mut self.pending, &mut self.free_pending, p, "sends waiting to start")
    }

    /// Makes a waiting send's `Msg` (and hands its envelope to the
    /// receiver's partition if that is another).
    pub(super) fn materialize(&mut self, q: &mut EventQueue, pd: u32) -> MsgId {
        let p = self.pending[pd as usize];
        self.free_pending.push(pd);
        let proto = Protocol::ALL[(p.bits & pend::PROTO) as usize];
        let intranode = p.bits & pend::INTRANODE != 0;
        let packets = if intranode { 0 } else { self.data_packets(proto, p.bytes) };
        let away = !self.owns(self.ranks[p.dst as usize].node);
        let msg = self.new_msg(Msg {
            src: p.src,
            dst: p.dst,
            ctx: p.ctx,
            tag: p.tag,
            bytes: p.bytes,
            proto: if intranode { None } else { Some(proto) },
            intranode,
            sync: p.bits & pend::SYNC != 0,
            send_req: p.req,
            recv_req: NONE,
            packets,
            rma: (p.bits & pend::RMA) >> pend::RMA_SHIFT,
            record: p.record,
            sides: if away { SEND_SIDE } else { SEND_SIDE | RECV_SIDE },
            ..Default::default()
        });
        if !self.pending_data.is_empty() {
            if let Some(d) = self.pending_data.remove(&pd) {
                self.msg_data.insert(msg, d);
            }
        }
        if away {
            self.send_away(q, msg);
        }
        // (A request freed before its send started is no longer this
        // message's: its slot may serve another by now.)
        match self.reqs.get_mut(p.req as usize) {
            Some(r) if r.flag(req_flag::PENDING) && r.msg == pd => {
                r.msg = msg;
                r.set_flag(req_flag::PENDING, false);
            }
            // (A send group's request is freed only once its sends are done.)
            Some(r) if r.kind == ReqKind::SendGroup && r.live() => {}
            _ => self.msgs[msg as usize].send_req = NONE,
        }
        msg
    }

    /// Starts a waiting send, the head of its peer queue: its `Msg` is
    /// made once it has the rank's core and, with a DMA engine, room in
    /// the rank's work FIFO.
    pub(super) fn start(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, pd: u32) {
        let p = &self.pending[pd as usize];
        if p.bits & pend::LAZY != 0 {
            return self.start_held(net, q, now, pd, false);
        }
        let rma_kind = (p.bits & pend::RMA) >> pend::RMA_SHIFT;
        if p.bits & pend::INTRANODE != 0 {
            let id = self.materialize(q, pd);
            return self.intra_start(net, q, now, id);
        }
        if rma_kind == rma::SERVED {
            // The engine answers a remote get from its own FIFO: neither the
            // core nor the rank's work FIFO is involved.
            let id = self.materialize(q, pd);
            return self.stream(net, q, now, id);
        }
        let src = p.src as usize;
        if self.dma.is_some() {
            // A descriptor goes into the rank's work FIFO; with the FIFO
            // full the message waits for room (see `descriptor_done`).
            if !net.dma_post(self.ranks[src].node, self.ranks[src].task as u32) {
                self.ranks[src].dma_waiting.push_back(pd);
                return;
            }
        }
        let id = self.materialize(q, pd);
        let m = &self.msgs[id as usize];
        let (node, core) = self.place(m.src);
        let p = m.proto.expect("network message").index();
        let cost = self.costs.send_msg[p] + self.costs.mpi_half[p] + self.costs.descriptor;
        let posted = net.charge(q, now, node, core, cost, Work::Protocol);
        if self.dma.is_some() && posted > now {
            // The DMA engine starts on the message once the core has
            // written its descriptor.
            net.timer(q, posted, node, core, timer_tag(tk::POSTED, id));
        } else {
            self.stream(net, q, now, id);
        }
    }

    /// Puts a message on its sender's core's list of streams.
    pub(super) fn stream(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        let (node, core) = self.injector(self.msgs[id as usize].src);
        let ci = net.agent_index(node, core);
        let lane = self.lane(net, id);
        let m = &self.msgs[id as usize];
        let st = self.streams[ci].lane_mut(lane);
        if m.proto == Some(Protocol::Rendezvous) && !m.scout_sent {
            st.scouts.push_back(id);
        } else {
            st.data.push_back(id);
        }
        if net.pending(node, core) == 0 {
            self.emit(net, q, now, node, core);
        }
    }

    /// The next message of a peer queue may start.
    pub(super) fn advance_peer(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, src: u32, dst: u32) {
        let peers = &mut self.ranks[src as usize].peers;
        let many = peers.len() > PEER_QUEUES_KEPT;
        let ends = peers.get_mut(&dst).expect("peer queue");
        let next = ends.0;
        if next == NONE {
            // Idle: kept for the next message to the same peer (a
            // neighbour exchange then touches the map's table only), up to
            // PEER_QUEUES_KEPT of them.
            if many {
                peers.remove(&dst);
            } else {
                *ends = (IDLE, IDLE);
            }
            return;
        }
        ends.0 = self.pending[next as usize].next;
        self.start(net, q, now, next);
    }

    /// The lane of its injector's streams ([`super::Streams`]) message
    /// `id` goes in: the one lane of a core; on a DMA engine, that of the
    /// torus FIFO its peer is pinned to, or, for a local transfer, the last.
    fn lane(&self, net: &Net, id: MsgId) -> usize {
        if self.dma.is_none() {
            return 0;
        }
        let m = &self.msgs[id as usize];
        let (node, dnode) = (self.ranks[m.src as usize].node, self.ranks[m.dst as usize].node);
        if node == dnode {
            return net.machine().torus().injection_fifos as usize;
        }
        self.peer_fifo(net, node, dnode, m.dst, net.geometry().hint_bits(node, dnode))
    }

    /// On a machine whose DMA engine writes the torus FIFOs, the FIFO every
    /// packet from `node` to rank `peer` on `dnode`, travelling in the
    /// directions `hint`, goes into ([`pinned_direction`]).
    fn peer_fifo(&self, net: &Net, node: u32, dnode: u32, peer: u32, hint: u8) -> usize {
        let key = dnode + self.ranks.get(peer as usize).map_or(0, |r| r.task as u32);
        pinned_direction(net.geometry(), node, dnode, hint, key) * net.machine().torus().injection_fifos as usize / 6
    }

    /// The injection FIFO of a packet from a task: FIFOs are pinned to
    /// directions. Where cores write the packets (BG/L), each VN task has
    /// its own share of them and a dynamically routed packet takes the
    /// emptiest FIFO of its productive directions. Where a DMA engine
    /// writes them, the node's processes share every FIFO and all packets
    /// to one peer (rank `peer`) go through one FIFO ([`pinned_direction`];
    /// a line packet, which goes one way, has no peer rank: `NONE`).
    pub(super) fn fifo(&self, net: &Net, node: u32, task: usize, peer: u32, p: &Packet) -> usize {
        if self.dma.is_some() {
            return self.peer_fifo(net, node, p.dest, peer, p.hint);
        }
        let k = self.fifos_per_task;
        let base = if self.tasks_per_node > 1 { task * k } else { 0 };
        let fifo_of = |d: usize| base + d * k / 6;
        let first = if p.hint == 0 { 0 } else { p.hint.trailing_zeros() as usize };
        if !Routing::of(p.flags).adaptive() || p.hint.count_ones() < 2 {
            return fifo_of(first);
        }
        (0..6).filter(|&d| p.hint & (1 << d) != 0).map(fifo_of).min_by_key(|&f| net.inj_used(node, f)).unwrap_or(fifo_of(first))
    }

    /// Writes one packet of the layer (a [`PacketOut`]) into the injection
    /// FIFO its sender's task and direction pin it to.
    pub(super) fn send_packet(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, out: PacketOut) {
        self.send_train(net, q, now, out, 1);
    }

    /// Writes `count` full packets of the layer as one train (the message
    /// tier: see [`MsgLayer::set_trains`]; 1, a packet), `out.payload`
    /// their payload together.
    pub(super) fn send_train(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, out: PacketOut, count: u32) {
        let PacketOut { from, to, kind, msg, arg, payload, routing, coproc } = out;
        let (node, _) = self.place(from);
        let (dnode, _) = self.place(to);
        let mut p = net.packet(node, dnode, payload / count, routing, now);
        if count > 1 {
            p.more = (count - 1) as u8;
            p.payload = payload as u16;
        }
        p.tag = tag(kind, msg, arg);
        if coproc || self.to_group1(to) {
            p.flags |= flags::GROUP1;
        }
        let f = self.fifo(net, node, self.ranks[from as usize].task as usize, to, &p);
        self.packets_sent += count as u64;
        net.send(q, now, node, p, Some(f));
    }

    /// Emits the next packets of the core's streams ([`super::Streams`]):
    /// a scout and a data turn in turn, each list round-robin. As the
    /// advance loop fills an injection FIFO, a message's data goes out up
    /// to a FIFO's worth of packets per turn (so starting the next
    /// messages, which costs the core far more than a packet, does not
    /// leave the link waiting between two packets); a scout ends the turn.
    pub(super) fn emit(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize) {
        let ci = net.agent_index(node, core);
        let Some((lane, room)) = self.next_lane(net, node, ci) else { return };
        if !room {
            // A DMA engine serves the FIFOs with room; it waits for one.
            net.dma_hold(node);
            return;
        }
        let st = &mut self.streams[ci];
        st.next = lane + 1;
        let st = &mut st.lanes[lane];
        let scout = st.scout_next && !st.scouts.is_empty() || st.data.is_empty();
        let Some(id) = (if scout { st.scouts.pop_front() } else { st.data.pop_front() }) else { return };
        st.scout_next = !scout;
        // The message layer's direct-injection alltoall interleaves its
        // destinations packet by packet: one packet per turn there. A DMA
        // engine serves its injection FIFOs' descriptors in turn, one
        // packet each.
        let burst = if self.msgs[id as usize].direct || self.dma.is_some() { 1 } else { self.burst };
        let mut more = true;
        for _ in 0..burst {
            more = self.emit_packet(net, q, now, id);
            if !more {
                break;
            }
        }
        if more {
            self.streams[ci].lanes[lane].data.push_back(id);
        }
    }

    /// The lane of agent `ci`'s streams whose turn it is: round-robin over
    /// the lanes with messages, passing over those whose torus FIFO has no
    /// room for a packet; and whether it has room (a core's one lane
    /// always: the core itself waits for room as it writes).
    fn next_lane(&self, net: &Net, node: u32, ci: usize) -> Option<(usize, bool)> {
        let st = &self.streams[ci];
        let n = st.lanes.len();
        let nf = net.machine().torus().injection_fifos as usize;
        let room = net.machine().torus().injection_fifo_bytes.saturating_sub(net.machine().max_packet_bytes());
        let mut first = None;
        for i in 0..n {
            let l = (st.next + i) % n;
            if st.lanes[l].is_empty() {
                continue;
            }
            if self.dma.is_none() || l >= nf || net.inj_used(node, l) <= room {
                return Some((l, true));
            }
            first = first.or(Some((l, false)));
        }
        first
    }
}

/// The direction whose FIFO carries every packet from `node` to a peer on
/// node `dest` (productive directions `hint`) on a machine whose DMA
/// engine writes the FIFOs: of the productive directions, the one with the
/// most hops to go (the direction of travel), ties shared out among peers
/// by `key` (the peer's node index plus its task: the tasks of one node go
/// different ways). A single message then leaves through one FIFO, as a
/// DMA injection FIFO pinned to a peer feeds one torus FIFO, and a node's
/// traffic to many peers spreads over the six.
pub(super) fn pinned_direction(geo: &Geometry, node: u32, dest: u32, hint: u8, key: u32) -> usize {
    if hint.count_ones() < 2 {
        return if hint == 0 { 0 } else { hint.trailing_zeros() as usize };
    }
    let mut best = [0usize; 3];
    let (mut n, mut most) = (0, 0);
    for d in (0..6).filter(|&d| hint & (1 << d) != 0) {
        let hops = geo.hops_along(node, dest, d);
        if hops > most {
            (most, n) = (hops, 0);
        }
        if hops == most {
            best[n] = d;
            n += 1;
        }
    }
    best[key as usize % n]
}

#[cfg(test)]
mod tests {
    use super::pinned_direction;
    use crate::machine::{self, MachineSource};
    use crate::torus::{dim_of, Geometry};

    /// From any node, the FIFO a destination is pinned to is one of its
    /// productive directions, one along which it is farthest; over all
    /// destinations of a cube the three dimensions carry about equal shares.
    #[test]
    fn a_destination_is_pinned_to_a_farthest_productive_direction_and_the_dimensions_share_the_load() {
        for shape in ["8x8x8", "4x4x2", "6x1x1"] {
            let m = machine::load(&MachineSource::Preset("bgp".into()), &[format!("partition.shape=\"{shape}\"")]).unwrap();
            let geo = Geometry::new(&m.shape);
            for src in [0, geo.nodes() / 2, geo.nodes() - 1] {
                let mut per_dir = [0u32; 6];
                for dst in (0..geo.nodes()).filter(|&d| d != src) {
                    let hint = geo.hint_bits(src, dst);
                    let d = pinned_direction(&geo, src, dst, hint, dst);
                    assert!(hint & (1 << d) != 0, "{shape}: {src} -> {dst} pinned to an unproductive direction {d}");
                    let (a, b) = (geo.coords32(src), geo.coords32(dst));
                    let hops = |k: usize| {
                        let size = geo.dims[k];
                        let o = (b[k] + size - a[k]) % size;
                        o.min(size - o)
                    };
                    assert!((0..3).all(|k| hops(k) <= hops(dim_of(d))), "{shape}: {src} -> {dst} pinned to {d}, not its longest dimension");
                    per_dir[d] += 1;
                }
                if shape == "8x8x8" {
                    // (Within a dimension, + carries more: a node half way
                    // round is reached going +, as routing sends it.)
                    let per_dim: Vec<u32> = (0..3).map(|k| per_dir[2 * k] + per_dir[2 * k + 1]).collect();
                    let (lo, hi) = (per_dim.iter().min().unwrap(), per_dim.iter().max().unwrap());
                    assert!(*lo as f64 > 0.9 * *hi as f64, "{shape} from {src}: {per_dir:?}");
                }
            }
        }
    }
}
