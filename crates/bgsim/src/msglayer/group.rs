//! A post-all exchange's receives and sends held whole: one request for
//! all of a rank's receives and one for all of its sends, so that what a
//! posted message costs is a few bytes in the group instead of a request
//! and a matching entry of its own (an all-to-all on n ranks posts n (n -
//! 1) messages at once).
//!
//! A *receive group* is one entry that matches a message from any of its
//! sources not yet matched, with its context and tag. A message takes it
//! where it would have taken the group's receive from its source: after
//! every receive posted before (the rank posts nothing while the group
//! is out, see `mpi::agent`), and messages that came before the group are
//! taken from the unexpected ones at posting, source by source in the
//! group's order, as the receives one by one would. A source costs the
//! group 8 bytes (its place, and its count once in). A matched message gets
//! a request of its own then, freed when it completes and its count (and
//! data, if any) is kept in the group's place for its source.
//!
//! A *send group* is one request that the sends name as theirs: it
//! completes when the last of them does. The sends start and go as any
//! others, but on a machine with a DMA engine those that would wait - for
//! the rank's core, in the chain of sends posted behind a busy core, or
//! for room in the work FIFO - are *held*: one `Pending` (`pend::LAZY`)
//! stands where the first of them would, in the chain or in the FIFO's
//! waiting list, and 4 bytes a send keep the rest, in order (12 where
//! their sizes differ). Each gets
//! its `Pending` and its peer queue when it would have started, and
//! starts as it would have: the same events in the same order. A send of
//! the rank's own posted meanwhile (a one-sided answer) first gives every
//! held send its `Pending` where it would be (`unhold`).

use super::log::NO_RECORD;
use super::{pend, MsgLayer, Pending, ReqId, ReqKind, SendMode, SendReq, IDLE, NONE};
use crate::engine::{EventQueue, Tick};
use crate::machine::Protocol;
use crate::packet::Net;
use rustc_hash::FxHashMap;

/// A place whose message has not come.
const WAITING: u32 = u32::MAX;
/// A place whose message is matched and not complete.
const MATCHED: u32 = u32::MAX - 1;

#[derive(Debug)]
pub(super) struct RecvGroup {
    rank: u32,
    ctx: u32,
    tag: i32,
    capacity: u32,
    unaligned: bool,
    req: ReqId,
    /// Where each source's message goes in the group's order.
    index: Index,
    /// Per place: `WAITING`, `MATCHED`, or the count received.
    counts: Vec<u32>,
    /// The contents of messages that had any, by place.
    data: FxHashMap<u32, Vec<u8>>,
}

/// A receive group's places by source: a table over the range of its
/// sources where they fill at least half of it (an all-to-all's: 4 bytes
/// a source), else (source, place) pairs sorted by source.
#[derive(Debug)]
enum Index {
    Dense { lo: u32, place: Vec<u32> },
    Sparse(Vec<(u32, u32)>),
}

/// Not a source of the group (in a dense index).
const ABSENT: u32 = u32::MAX;

impl Index {
    /// The index of `srcs` (in the group's order); None if one repeats.
    fn new(srcs: &[u32]) -> Option<Index> {
        let (Some(&lo), Some(&hi)) = (srcs.iter().min(), srcs.iter().max()) else { return Some(Index::Sparse(Vec::new())) };
        let span = (hi - lo) as usize + 1;
        if span <= 2 * srcs.len() {
            let mut place = vec![ABSENT; span];
            for (k, &s) in srcs.iter().enumerate() {
                let p = &mut place[(s - lo) as usize];
                if *p != ABSENT {
                    return None;
                }
                *p = k as u32;
            }
            return Some(Index::Dense { lo, place });
        }
        let mut by_src: Vec<(u32, u32)> = srcs.iter().enumerate().map(|(k, &s)| (s, k as u32)).collect();
        by_src.sort_unstable();
        if by_src.windows(2).any(|w| w[0].0 == w[1].0) {
            return None;
        }
        Some(Index::Sparse(by_src))
    }

    fn place(&self, src: u32) -> Option<u32> {
        match self {
            Index::Dense { lo, place } => place.get(src.checked_sub(*lo)? as usize).copied().filter(|&p| p != ABSENT),
            Index::Sparse(v) => v.binary_search_by_key(&src, |e| e.0).ok().map(|i| v[i].1),
        }
    }

    /// (place, source) of every source, in no particular order.
    fn all(&self) -> Vec<(u32, u32)> {
        match self {
            Index::Dense { lo, place } => place.iter().enumerate().filter(|e| *e.1 != ABSENT).map(|(i, &p)| (p, lo + i as u32)).collect(),
            Index::Sparse(v) => v.iter().map(|&(s, p)| (p, s)).collect(),
        }
    }
}

/// What a receive group took in, in its sources' order: per message its
/// count and its contents (None for a message without any).
pub type Received = Vec<(u32, Option<Vec<u8>>)>;

impl MsgLayer {
    /// Posts `rank`'s receives from each of `srcs` (distinct ranks, in the
    /// order the receives would be posted) as one group; None if a source
    /// is named twice (then post them one by one).
    #[allow(clippy::too_many_arguments)]
    pub fn irecv_group(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, rank: u32, srcs: &[u32], ctx: u32, tag: i32, capacity: u32, unaligned: bool) -> Option<ReqId> {
        if tag < 0 {
            return None;
        }
        let index = Index::new(srcs)?;
        let req = self.new_req(ReqKind::RecvGroup, rank);
        self.reqs[req as usize].count = srcs.len() as u32;
        let g = RecvGroup { rank, ctx, tag, capacity, unaligned, req, index, counts: vec![WAITING; srcs.len()], data: FxHashMap::default() };
        let gid = self.new_group(g);
        self.reqs[req as usize].msg = gid;
        if srcs.is_empty() {
            self.complete(req);
            return Some(req);
        }
        self.ranks[rank as usize].groups.push(gid);
        // Messages already here are taken as the receives, posted one by
        // one, would take them.
        for (place, &src) in srcs.iter().enumerate() {
            if self.ranks[rank as usize].unexpected.is_empty() {
                break;
            }
            if let Some(msg) = self.ranks[rank as usize].unexpected.take_message(ctx, src as i32, tag) {
                let member = self.member(gid, place as u32, src);
                self.bind(net, q, now, msg, member);
            }
        }
        Some(req)
    }

    /// A request for `n` sends of `rank` that name it as theirs
    /// ([`super::SendReq::group`]); it completes when the last of them
    /// does (at once for none).
    pub fn send_group(&mut self, rank: u32, n: u32) -> ReqId {
        let req = self.new_req(ReqKind::SendGroup, rank);
        self.reqs[req as usize].count = n;
        if n == 0 {
            self.complete(req);
        }
        req
    }

    /// What a completed receive group took in; frees the group (its
    /// request stays until released).
    pub fn take_group(&mut self, req: ReqId) -> Received {
        let gid = self.reqs[req as usize].msg;
        let g = self.groups[gid as usize].take().expect("a receive group");
        self.free_groups.push(gid);
        let mut data = g.data;
        g.counts.into_iter().enumerate().map(|(k, c)| (c, data.remove(&(k as u32)))).collect()
    }

    fn new_group(&mut self, g: RecvGroup) -> u32 {
        super::slot(&mut self.groups, &mut self.free_groups, Some(g), "receive groups")
    }

    /// A request of its own for the message from `src`, of `place` in
    /// group `gid`.
    fn member(&mut self, gid: u32, place: u32, src: u32) -> ReqId {
        let g = self.groups[gid as usize].as_mut().expect("a receive group");
        g.counts[place as usize] = MATCHED;
        let (rank, ctx, tag, capacity, unaligned) = (g.rank, g.ctx, g.tag, g.capacity, g.unaligned);
        let req = self.new_req(ReqKind::Recv, rank);
        let r = &mut self.reqs[req as usize];
        (r.src, r.ctx, r.tag, r.capacity) = (src as i32, ctx, tag, capacity);
        r.set_flag(super::req_flag::UNALIGNED, unaligned);
        self.members.insert(req, (gid, place));
        req
    }

    /// The receive of a group of `rank`'s that a message from `src` with
    /// `ctx` and `tag` (matched by no receive posted before) takes, if
    /// any: a request of its own.
    pub(super) fn group_take(&mut self, rank: u32, ctx: u32, src: u32, tag: i32) -> Option<ReqId> {
        let groups = &self.ranks[rank as usize].groups;
        let (gid, place) = groups.iter().find_map(|&gid| {
            let g = self.groups[gid as usize].as_ref()?;
            if g.ctx != ctx || g.tag != tag {
                return None;
            }
            let place = g.index.place(src)?;
            (g.counts[place as usize] == WAITING).then_some((gid, place))
        })?;
        Some(self.member(gid, place, src))
    }

    /// Completes a request that is a group's member (true) or counts one
    /// of a send group's sends; false for any other request.
    pub(super) fn group_done(&mut self, id: ReqId) -> bool {
        if let Some((gid, place)) = self.members.remove(&id) {
            let count = self.reqs[id as usize].count;
            let data = if self.reqs[id as usize].flag(super::req_flag::DATA) { self.req_data.remove(&id) } else { None };
            self.release(id);
            let g = self.groups[gid as usize].as_mut().expect("a receive group");
            debug_assert!(count < MATCHED, "a count of 4 GiB");
            g.counts[place as usize] = count;
            if let Some(d) = data.filter(|d| !d.is_empty()) {
                g.data.insert(place, d);
            }
            let (req, rank) = (g.req, g.rank);
            let r = &mut self.reqs[req as usize];
            r.count -= 1;
            if r.count == 0 {
                self.ranks[rank as usize].groups.retain(|&x| x != gid);
                self.finish(req);
            }
            return true;
        }
        let r = &mut self.reqs[id as usize];
        if r.kind != ReqKind::SendGroup {
            return false;
        }
        r.count -= 1;
        if r.count == 0 {
            self.finish(id);
        }
        true
    }

    /// How many of a group's requests are still to complete (for the
    /// report of a blocked rank).
    pub(super) fn group_left(&self, req: ReqId) -> u32 {
        self.reqs[req as usize].count
    }

    /// What a receive group still waits for (for the report of a blocked
    /// rank): the sources of the messages not complete, in the group's
    /// order, with its tag and context.
    pub(super) fn describe_group(&self, req: ReqId) -> String {
        let Some(g) = self.groups.get(self.reqs[req as usize].msg as usize).and_then(Option::as_ref) else {
            return "messages of an exchange".to_string();
        };
        let mut left: Vec<(u32, u32)> = g.index.all().into_iter().filter(|e| g.counts[e.0 as usize] >= MATCHED).collect();
        left.sort_unstable();
        const SHOWN: usize = 8;
        let (tag, ctx) = (g.tag, g.ctx);
        if let [(_, src)] = left[..] {
            return format!("a message from rank {src} with tag {tag} (context {ctx})");
        }
        let mut names: Vec<String> = left.iter().take(SHOWN).map(|e| e.1.to_string()).collect();
        if left.len() > SHOWN {
            names.push(format!("{} more", left.len() - SHOWN));
        }
        format!("messages from ranks {} with tag {tag} (context {ctx})", names.join(", "))
    }
}


/// A held send: its destination, size and protocol (`Protocol::index`).
#[derive(Clone, Copy, Debug)]
pub(super) struct HeldSend {
    dst: u32,
    bytes: u32,
    proto: u8,
}

/// The held sends of a send group, in the order they were posted: their
/// destinations, and their sizes and protocols where they differ (one
/// for all where they do not: 4 bytes a send); `next` is the first not
/// started.
#[derive(Debug)]
pub(super) struct Held {
    dsts: Vec<u32>,
    each: Vec<HeldSend>,
    same: HeldSend,
    next: usize,
}

impl Held {
    fn new(sends: Vec<HeldSend>) -> Held {
        let same = sends[0];
        if sends.iter().all(|s| s.bytes == same.bytes && s.proto == same.proto) {
            Held { dsts: sends.iter().map(|s| s.dst).collect(), each: Vec::new(), same, next: 0 }
        } else {
            Held { dsts: Vec::new(), each: sends, same, next: 0 }
        }
    }

    fn len(&self) -> usize {
        if self.each.is_empty() { self.dsts.len() } else { self.each.len() }
    }

    fn get(&self, k: usize) -> HeldSend {
        if self.each.is_empty() {
            HeldSend { dst: self.dsts[k], ..self.same }
        } else {
            self.each[k]
        }
    }
}

impl MsgLayer {
    /// Posts `sends` of `rank`'s, each naming send group `group` (see the
    /// module's notes): as [`MsgLayer::post_send`] one by one, holding the
    /// ones that would wait.
    pub fn post_send_group(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, rank: u32, group: ReqId, sends: Vec<SendReq>) {
        let r = rank as usize;
        let (ctx, tag) = sends.first().map_or((0, 0), |s| (s.ctx, s.tag));
        let holdable = self.dma.is_some()
            && self.log.is_none()
            && self.ranks[r].lazy == NONE
            && sends.iter().all(|s| {
                s.group == group && s.rank == rank && s.ctx == ctx && s.tag == tag && s.mode == SendMode::Standard && s.dest != rank && s.data.is_empty()
            });
        if !holdable {
            for s in sends {
                self.post_send(net, q, now, s);
            }
            return;
        }
        let (node, core) = self.place(rank);
        let task = self.ranks[r].task as u32;
        let mut held = Vec::new();
        for s in sends {
            // Behind a message to its peer: posted as ever (no event).
            let peer_busy = matches!(self.ranks[r].peers.get(&s.dest), Some(e) if e.0 != IDLE);
            let waits = net.core_busy_until(node, core) > now || !net.dma_has_room(node, task);
            if peer_busy || (held.is_empty() && !waits) {
                self.post_send(net, q, now, s);
                continue;
            }
            // (Once one waits, every later one does: nothing frees the core
            // or the work FIFO at this instant.)
            debug_assert!(waits, "a send after a held one would start");
            let proto = if s.proto == Protocol::OnePacket && s.bytes > self.maxp - self.meta { Protocol::Eager } else { s.proto };
            let st = &mut self.ranks[r].stats;
            st.sends += 1;
            st.bytes_sent += s.bytes as u64;
            st.by_protocol[proto.index()] += 1;
            held.push(HeldSend { dst: s.dest, bytes: s.bytes, proto: proto.index() as u8 });
        }
        if held.is_empty() {
            return;
        }
        let n = held.len() as u64;
        let lid = super::slot(&mut self.lazy, &mut self.free_lazy, Some(Held::new(held)), "held send groups");
        let pv = self.new_pending(Pending { src: rank, dst: lid, ctx, tag, bytes: 0, req: group, record: NO_RECORD, next: NONE, bits: pend::LAZY });
        self.ranks[r].lazy = pv;
        let busy = net.core_busy_until(node, core);
        if busy > now {
            // Where the first would go: the chain of sends behind the core.
            let rs = &mut self.ranks[r];
            if rs.chain.0 != NONE && rs.chain_at == busy && rs.chain_mark == q.pushes() {
                self.pending[rs.chain.1 as usize].next = pv;
                rs.chain.1 = pv;
            } else {
                net.timer(q, busy, node, core, super::wire::timer_tag(super::wire::tk::START, pv));
                let rs = &mut self.ranks[r];
                (rs.chain, rs.chain_at, rs.chain_mark) = ((pv, pv), busy, q.pushes());
            }
        } else {
            // The core is free and the work FIFO full: each would have
            // found it so and waited for room.
            net.dma_count_full(n);
            self.ranks[r].dma_waiting.push_back(pv);
        }
    }

    /// Starts held sends `pv` in order, as they would have started one by
    /// one: each while the work FIFO has room; once it has none, the rest
    /// wait for room - at the front of the rank's waiting sends (`front`:
    /// the FIFO's refill took `pv` from there) or at the back, each
    /// having found the FIFO full.
    pub(super) fn start_held(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, pv: u32, front: bool) {
        let rank = self.pending[pv as usize].src;
        let lid = self.pending[pv as usize].dst as usize;
        let (node, task) = (self.ranks[rank as usize].node, self.ranks[rank as usize].task as u32);
        loop {
            let h = self.lazy[lid].as_ref().expect("held sends");
            let left = (h.len() - h.next) as u64;
            if left == 0 {
                self.lazy[lid] = None;
                self.free_lazy.push(lid as u32);
                self.free_pending.push(pv);
                self.ranks[rank as usize].lazy = NONE;
                return;
            }
            if !net.dma_has_room(node, task) {
                let w = &mut self.ranks[rank as usize].dma_waiting;
                if front {
                    w.push_front(pv);
                } else {
                    net.dma_count_full(left);
                    w.push_back(pv);
                }
                return;
            }
            let pd = self.held_pending(pv);
            self.start(net, q, now, pd);
        }
    }

    /// The `Pending` of the next of held sends `pv`, with its peer queue
    /// (as posting gave it; the queue was idle then, and nothing of the
    /// rank's has gone to that peer since).
    fn held_pending(&mut self, pv: u32) -> u32 {
        let Pending { src, dst: lid, ctx, tag, req, .. } = self.pending[pv as usize];
        let h = self.lazy[lid as usize].as_mut().expect("held sends");
        let s = h.get(h.next);
        h.next += 1;
        let peers = &mut self.ranks[src as usize].peers;
        match peers.get_mut(&s.dst) {
            Some(ends) => {
                debug_assert!(ends.0 == IDLE, "a held send's peer queue is busy");
                *ends = (NONE, NONE);
            }
            None => {
                peers.insert(s.dst, (NONE, NONE));
            }
        }
        self.new_pending(Pending { src, dst: s.dst, ctx, tag, bytes: s.bytes, req, record: NO_RECORD, next: NONE, bits: s.proto })
    }

    /// Gives each of `rank`'s held sends its `Pending` where it would be:
    /// the first takes the held sends' place (in the chain or the waiting
    /// list), the others follow it.
    pub(super) fn unhold(&mut self, rank: u32) {
        let pv = std::mem::replace(&mut self.ranks[rank as usize].lazy, NONE);
        let lid = self.pending[pv as usize].dst as usize;
        let after = self.pending[pv as usize].next;
        let h = self.lazy[lid].as_ref().expect("held sends");
        let left = h.len() - h.next;
        // The rest after the first, linked as a chain's are.
        let mut ids = Vec::with_capacity(left);
        for _ in 0..left {
            ids.push(self.held_pending(pv));
        }
        self.lazy[lid] = None;
        self.free_lazy.push(lid as u32);
        let first = ids[0];
        // The first moves into pv's slot, which the chain or list names.
        let mut p = self.pending[first as usize];
        p.next = if left > 1 { ids[1] } else { after };
        self.pending[pv as usize] = p;
        self.free_pending.push(first);
        ids[0] = pv;
        for k in 1..left {
            self.pending[ids[k] as usize].next = if k + 1 < left { ids[k + 1] } else { after };
        }
        let rs = &mut self.ranks[rank as usize];
        if rs.chain.1 == pv {
            rs.chain.1 = ids[left - 1];
        }
        if let Some(at) = rs.dma_waiting.iter().position(|&x| x == pv) {
            // In the waiting list the chain's links mean nothing: each is
            // an entry of its own.
            for (k, &id) in ids.iter().enumerate().skip(1) {
                rs.dma_waiting.insert(at + k, id);
            }
            for &id in &ids {
                self.pending[id as usize].next = NONE;
            }
        }
    }
}
