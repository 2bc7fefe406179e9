//! The receiving side: posted receives and probes, the envelope's arrival
//! and matching (`recvnew`), completion of both sides (`recvdone`,
//! `senddone`).

use super::log::NO_RECORD;
use super::partition::RECV_SIDE;
use super::wire::*;
use super::{rma, Msg, MsgId, MsgLayer, ReqId, ReqKind, Status, ANY, NONE};
use crate::engine::{EventQueue, Tick};
use crate::machine::Protocol;
use crate::node::Work;
use crate::packet::Net;

impl MsgLayer {
    /// Posts a receive for `rank`: source (or ANY), context, tag (or ANY),
    /// room for `capacity` bytes. Matches the oldest unexpected message first.
    #[allow(clippy::too_many_arguments)]
    pub fn irecv(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, rank: u32, src: i32, ctx: u32, tag: i32, capacity: u32, unaligned: bool) -> ReqId {
        let req = self.new_req(ReqKind::Recv, rank);
        {
            let r = &mut self.reqs[req as usize];
            r.src = src;
            r.ctx = ctx;
            r.tag = tag;
            r.capacity = capacity;
            r.set_flag(super::req_flag::UNALIGNED, unaligned);
        }
        let rs = &mut self.ranks[rank as usize];
        match rs.unexpected.take_message(ctx, src, tag) {
            Some(msg) => self.bind(net, q, now, msg, req),
            None => rs.posted.push(ctx, src, tag, req),
        }
        req
    }

    /// Posts a probe: completes when a matching message is (or becomes)
    /// visible, without receiving it.
    pub fn probe(&mut self, rank: u32, src: i32, ctx: u32, tag: i32) -> ReqId {
        let req = self.new_req(ReqKind::Probe, rank);
        {
            let r = &mut self.reqs[req as usize];
            r.src = src;
            r.ctx = ctx;
            r.tag = tag;
        }
        if let Some(m) = self.ranks[rank as usize].unexpected.peek_message(ctx, src, tag) {
            self.finish_probe(req, m);
        } else {
            self.ranks[rank as usize].probes.push(req);
        }
        req
    }

    pub(super) fn finish_probe(&mut self, req: ReqId, msg: MsgId) {
        let m = &self.msgs[msg as usize];
        self.reqs[req as usize].set_status(Status { source: m.src as i32, tag: m.tag, count: m.bytes, ..Default::default() });
        self.complete(req);
    }

    /// Cancels a pending receive or probe; true if it was still pending.
    pub fn cancel(&mut self, req: ReqId) -> bool {
        let r = &self.reqs[req as usize];
        if r.done() {
            return false;
        }
        let (rank, ctx, src) = (r.rank as usize, r.ctx, r.src);
        let found = match r.kind {
            ReqKind::Recv => self.ranks[rank].posted.remove(ctx, src, req),
            ReqKind::Probe => {
                let probes = &mut self.ranks[rank].probes;
                probes.iter().position(|&x| x == req).map(|i| probes.remove(i)).is_some()
            }
            _ => return false,
        };
        if found {
            self.reqs[req as usize].set_flag(super::req_flag::CANCELLED, true);
            self.complete(req);
            true
        } else {
            false
        }
    }

    /// A message's first packet (or scout) has been read: its envelope is
    /// taken up now or, when the protocol waits (`Costs::wait`), later - and
    /// never before an earlier envelope from the same source.
    pub(super) fn arrived_envelope(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId, core: usize) {
        let m = &self.msgs[id as usize];
        let (dst, src) = (m.dst, m.src);
        let wait = match m.proto {
            Some(p) if !m.direct => self.costs.wait[p.index()],
            _ => 0,
        };
        let ready = &mut self.ranks[dst as usize].envelope_ready;
        if wait == 0 && ready.is_empty() {
            // (The usual case: no waiting, none pending from anyone.)
            return self.envelope(net, q, now, id, core);
        }
        let at = (now + wait).max(ready.get(&src).copied().unwrap_or(0));
        if at > now {
            ready.insert(src, at);
            let (node, _) = self.place(dst);
            net.timer(q, at, node, core, timer_tag(tk::ENVELOPE, id));
        } else {
            self.envelope(net, q, now, id, core);
        }
    }

    /// A message's envelope reached its receiver: charge `recvnew`, match.
    pub(super) fn envelope(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId, core: usize) {
        self.msgs[id as usize].envelope = true;
        let m = &self.msgs[id as usize];
        let (dst, src, ctx, tag) = (m.dst, m.src, m.ctx, m.tag);
        let (node, _) = self.place(dst);
        let cost = match m.proto {
            _ if m.direct || m.rma != rma::NONE => 0,
            Some(p) => self.costs.recv_msg[p.index()] - self.recv_done_ticks(id) + self.costs.mpi_half[p.index()],
            None => self.costs.intranode + self.costs.mpi_half[Protocol::Eager.index()],
        };
        net.charge(q, now, node, core, cost, Work::Protocol);
        if !m.direct && m.rma == rma::NONE {
            self.envelope_taken(net, q, now, id);
        }
        let req = match self.ranks[dst as usize].posted.take_receive(ctx, src, tag) {
            None if !self.ranks[dst as usize].groups.is_empty() => self.group_take(dst, ctx, src, tag),
            r => r,
        };
        match req {
            Some(req) => self.bind(net, q, now, id, req),
            None => {
                self.msgs[id as usize].unexpected = true;
                let rs = &mut self.ranks[dst as usize];
                rs.unexpected.push(ctx, src as i32, tag, id);
                rs.stats.unexpected += 1;
                if let Some(i) = rs.probes.iter().position(|&p| {
                    let r = &self.reqs[p as usize];
                    let m = &self.msgs[id as usize];
                    r.ctx == m.ctx && (r.src == ANY || r.src as u32 == m.src) && (r.tag == ANY || r.tag == m.tag)
                }) {
                    let p = self.ranks[dst as usize].probes.remove(i);
                    self.finish_probe(p, id);
                }
            }
        }
    }

    /// A receive request takes a message whose envelope has arrived.
    pub(super) fn bind(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId, req: ReqId) {
        let m = &mut self.msgs[id as usize];
        m.matched = true;
        m.recv_req = req;
        let intranode = m.intranode;
        self.reqs[req as usize].msg = id;
        if intranode {
            return self.intra_matched(net, q, now, id);
        }
        self.protocol_matched(net, q, now, id);
        self.check_recv(net, q, now, id);
    }

    /// The receiver's per-message work done when the message is complete
    /// (`recvdone`): half of `recv_message_cycles`, the other half (dispatch,
    /// `recvnew`) being done when its envelope is taken up.
    pub(super) fn recv_done_ticks(&self, id: MsgId) -> Tick {
        match &self.msgs[id as usize] {
            m if m.direct || m.rma != rma::NONE => 0,
            Msg { proto: Some(p), .. } => self.costs.recv_msg[p.index()] / 2,
            _ => 0,
        }
    }

    /// Completes the receive of a message once matched and all its data is in.
    pub(super) fn check_recv(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        let m = &self.msgs[id as usize];
        if !m.matched || !m.envelope || m.arrived < m.bytes || m.recv_done || m.finishing {
            return;
        }
        if !m.unexpected && !m.realigned && !m.intranode && self.reqs[m.recv_req as usize].unaligned() {
            // Packets are read into an aligned area and copied into place;
            // the part of the copy not overlapped with the reads costs time.
            let (node, core) = self.place(m.dst);
            let ticks = (self.copy_ticks(m.bytes) as f64 * self.costs.unaligned_fraction) as Tick;
            self.msgs[id as usize].realigned = true;
            net.charge(q, now, node, core, ticks, Work::Copy);
        }
        let m = &self.msgs[id as usize];
        let (node, core) = self.place(m.dst);
        net.charge(q, now, node, core, self.recv_done_ticks(id), Work::Protocol);
        let m = &self.msgs[id as usize];
        if m.unexpected {
            // The data waited in a temporary buffer: copy it out (realigning
            // it on the way if need be).
            let done = net.charge(q, now, node, core, self.copy_ticks(m.bytes), Work::Copy);
            self.msgs[id as usize].unexpected = false;
            self.msgs[id as usize].finishing = true;
            net.timer(q, done, node, core, timer_tag(tk::RECV_COPIED, id));
            return;
        }
        // `recvdone` runs when the receiving rank's core has finished the
        // work charged for this message so far (none for what the DMA
        // engine alone put into memory: that is done when it is in).
        let busy = net.core_busy_until(node, core);
        if busy > now && m.rma == rma::NONE {
            self.msgs[id as usize].finishing = true;
            net.timer(q, busy, node, core, timer_tag(tk::RECV_COPIED, id));
        } else {
            self.recv_complete(now, id);
        }
    }

    pub(super) fn recv_complete(&mut self, now: Tick, id: MsgId) {
        let m = &mut self.msgs[id as usize];
        m.recv_done = true;
        match (self.log.as_mut(), m.record) {
            (None, _) | (_, NO_RECORD) => {}
            // The record is the sender's partition's.
            (Some(log), r) if m.sides == RECV_SIDE => log.remote_done.push((m.src, r, now)),
            (Some(log), r) => log.records[r as usize].recv_done = now,
        }
        let req = m.recv_req;
        let cap = self.reqs[req as usize].capacity;
        let truncated = m.bytes > cap;
        let data = if self.msg_data.is_empty() { None } else { self.msg_data.remove(&id) };
        // (A message without content - a skeleton's - arrives as empty data.)
        let status = Status { source: m.src as i32, tag: m.tag, count: m.bytes.min(cap), cancelled: false, truncated };
        let dst = m.dst;
        let st = &mut self.ranks[dst as usize].stats;
        st.recvs += 1;
        st.bytes_received += status.count as u64;
        let r = &mut self.reqs[req as usize];
        r.set_status(status);
        r.set_flag(super::req_flag::DATA, true);
        if let Some(mut data) = data {
            data.truncate(cap as usize);
            self.req_data.insert(req, data);
        }
        self.complete(req);
        // (The sender may still be writing packets: the slot is kept until then.)
        self.maybe_free_msg(id);
    }

    pub(super) fn send_complete(&mut self, now: Tick, id: MsgId) {
        let m = &mut self.msgs[id as usize];
        if m.send_done {
            return;
        }
        m.send_done = true;
        if let (Some(log), r) = (self.log.as_mut(), m.record) {
            if r != NO_RECORD {
                log.records[r as usize].send_done = now;
            }
        }
        let req = m.send_req;
        if req != NONE {
            self.complete(req);
        }
        self.maybe_free_msg(id);
    }

    /// The sender's side is done when every data packet is written (and, for
    /// a synchronous send, the receiver has matched).
    pub(super) fn check_send(&mut self, now: Tick, id: MsgId) {
        let m = &self.msgs[id as usize];
        let synced = !m.sync || m.acked || m.proto == Some(Protocol::Rendezvous);
        let written = m.written >= m.packets && (m.proto != Some(Protocol::Rendezvous) || m.acked);
        if synced && written {
            self.send_complete(now, id);
        }
    }
}
