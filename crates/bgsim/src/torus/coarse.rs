//! The coarse tier of the torus: packets without routers. A packet's head
//! at a node (written into an injection FIFO, or arrived from a link)
//! books its next link of a minimal route: it waits until the link is
//! free, holds it for its bytes, and its head reaches the next node a hop
//! latency after it started (cut-through); at its destination its tail is
//! in the reception FIFO its bytes later. Links serve packets in the order
//! their heads reach them. A deterministically routed packet goes x, then
//! y, then z; a dynamically routed one takes, at every node, the productive
//! direction whose link is free first. Its token ack holds the reverse
//! link for the ack's bytes. Nothing else of the router is modelled: no virtual channels or tokens (buffers are unbounded, so
//! nothing backs up and there are no no-token counts), no arbitration. One
//! event per hop and two per packet (its tail leaving the injection FIFO,
//! its arrival) instead of about 3.4 per hop. Everything above the
//! torus - cores, the message layer, MPI, the tree and the barrier - is
//! the packet tier's. `docs/coarse.md` gives its error against packets.
//!
//! The message tier runs on it: a train (`Packet::more`) is one head that
//! holds each link for its packets back to back, their acks the reverse
//! link; at its destination it is in its reception FIFO when its first
//! packet is, and the agent that reads it keeps pace with the rest
//! ([`Torus::train_rest`]).

use super::*;
use std::collections::VecDeque;

/// How far ahead a head's arrival at the next node is scheduled (ticks):
/// a packet whose turn on its link comes later waits in the link's line.
/// One event of the link, when its first packet's arrival is `FAR - SPAN`
/// ahead, schedules the arrivals of those that come within FAR of it (a
/// span of SPAN ticks of them). Events this far ahead stay in the event
/// queue's wheel; a line of a thousand packets does not fill its heap.
const FAR: Tick = 15_360;
const SPAN: Tick = 14_336;

/// One link (node x direction) on the coarse tier, in half a cache line:
/// when it is free again (its last booking ends) and its counters (low 32
/// bits; the carries go to the router's `link_high`, as on packets). A hop
/// reads and writes this one line, not the router's (whose 2.6 KB per node
/// a large torus does not keep in the cache).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
#[repr(C, align(32))]
pub(super) struct Link {
    free_at: Tick,
    packets: u32,
    chunks: u32,
    payload: u32,
}

const _: () = assert!(std::mem::size_of::<Link>() == 32);

/// The coarse tier's links, and each link's line: the packets booked on it
/// whose heads reach the next node more than FAR after they were booked,
/// (start on the link, packet) oldest first. One event per link stands
/// for its line (see FAR); it reads the line, not the packets.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Coarse {
    links: Vec<Link>,
    lines: Vec<VecDeque<(Tick, u32)>>,
    /// Per injection FIFO (node x FIFOs): when its last packet is all out
    /// on its first link (see [`Torus::coarse_inject`]).
    fifo_free: Vec<Tick>,
}

impl Coarse {
    /// Starts bringing link `link`'s line into the cache (for look-ahead).
    #[inline]
    pub(super) fn touch_line(&self, link: usize) {
        if let Some(first) = self.lines.get(link).and_then(|l| l.front()) {
            crate::engine::prefetch(first);
        }
    }

    /// Starts bringing node `n`'s links into the cache (three lines).
    #[inline]
    pub(super) fn touch_links(&self, n: u32) {
        let l = n as usize * NDIR;
        if let Some(first) = self.links.get(l..l + NDIR) {
            for k in (0..NDIR).step_by(2) {
                crate::engine::prefetch(&first[k]);
            }
        }
    }

    /// Link `link`'s packets, chunks and payload bytes, not yet in the
    /// router's carries (see [`Torus::link`]).
    #[inline]
    pub(super) fn counts(&self, link: usize) -> (u64, u64, u64) {
        let l = &self.links[link];
        (l.packets as u64, l.chunks as u64, l.payload as u64)
    }

    /// Restarts the links' counters.
    pub(super) fn reset_counts(&mut self) {
        for l in self.links.iter_mut() {
            (l.packets, l.chunks, l.payload) = (0, 0, 0);
        }
    }
}

impl Torus {
    /// Runs this torus on the coarse tier. Refused on a partition with dead
    /// nodes or links (routes around them are the packet tier's) and on
    /// links with bit errors (their retransmissions are too).
    pub fn set_coarse(&mut self) -> Result<(), String> {
        if self.faults.is_some() {
            return Err("the coarse tier needs a torus without dead nodes or links (their detours are the packet tier's)".into());
        }
        if self.p.bit_error_rate > 0.0 {
            return Err(format!(
                "the coarse tier models error-free links (torus.link_bit_error_rate is {}; CRC retransmissions are the packet tier's): \
                 run on packets (--fidelity packet) or set torus.link_bit_error_rate=0",
                self.p.bit_error_rate
            ));
        }
        if self.p.hop_latency > FAR - SPAN {
            return Err(format!("the coarse tier needs a hop latency of at most {} ticks (it is {})", FAR - SPAN, self.p.hop_latency));
        }
        let links = self.geo.nodes() as usize * NDIR;
        let fifos = self.geo.nodes() as usize * (self.p.ninj + self.p.nhp_inj);
        self.coarse = Some(Box::new(Coarse { links: vec![Link::default(); links], lines: vec![VecDeque::new(); links], fifo_free: vec![0; fifos] }));
        Ok(())
    }

    pub fn is_coarse(&self) -> bool {
        self.coarse.is_some()
    }

    /// A packet written into injection FIFO `f` of node `n` at `now` on the
    /// coarse tier: it takes its first link once the packet before it in
    /// the FIFO is all out. A FIFO sends one packet at a time, so a message
    /// pinned to one leaves at one link's rate at most, as on packets,
    /// whatever links its packets take. A train (the message tier) neither
    /// waits for the FIFO nor holds its packets back: holding trains to it
    /// made the trains of a FIFO queue as wholes (`docs/coarse.md`).
    pub(super) fn coarse_inject(&mut self, n: u32, f: usize, id: u32, now: Tick, q: &mut EventQueue) {
        let k = n as usize * (self.p.ninj + self.p.nhp_inj) + f;
        let train = self.pool.get(id).more > 0;
        let from = if train { now } else { now.max(self.coarse.as_deref().expect("the coarse tier").fifo_free[k]) };
        let hold = self.coarse_hop(n, id, from, q);
        let bytes = self.pool.get(id).chunks as u32 * self.p.chunk_bytes;
        let start = self.pool.get(id).injected;
        let out = start + hold;
        if !train {
            self.coarse.as_deref_mut().expect("the coarse tier").fifo_free[k] = out;
        }
        q.push_at(out, Event { kind: ev::COARSE_LEFT, a: f as u8, b: 0, c: 0, node: n, data: bytes });
    }

    /// Packet `id`'s head is at node `n` at `now` (coarse tier): it books
    /// its next link (and goes on a hop latency after the link is its), or,
    /// at its destination, enters its reception FIFO. Returns how long it
    /// holds a link.
    pub(super) fn coarse_hop(&mut self, n: u32, id: u32, now: Tick, q: &mut EventQueue) -> Tick {
        let pk = *self.pool.get(id);
        let packets = pk.count();
        // The link is held for all of a train's packets.
        let hold = packets as Tick * self.link_ticks(&pk);
        let Some(c) = self.coarse.as_deref_mut() else { unreachable!("coarse_hop on the packet tier") };
        let p = &self.p;
        // The first packet's body (a train's reader paces itself to the
        // rest: see `Torus::train_rest`).
        let body = (pk.chunks as u32 * p.chunk_bytes) as Tick * p.tick_byte;
        let at = self.geo.coords32(n);
        // The productive directions left; a deterministic packet takes the
        // first (x, then y, then z), a dynamic one the one whose link is
        // free first (the first of those on a tie).
        let dynamic = pk.flags & flags::DYNAMIC != 0;
        let mut d = NDIR;
        for k in 0..3 {
            if at[k] == pk.dc[k] as u32 {
                continue;
            }
            let dk = if pk.hint & 1 << (2 * k) != 0 { 2 * k } else { 2 * k + 1 };
            if d == NDIR || (dynamic && c.links[n as usize * NDIR + dk].free_at < c.links[n as usize * NDIR + d].free_at) {
                d = dk;
            }
            if !dynamic {
                break;
            }
        }
        if d == NDIR {
            debug_assert_eq!(n, pk.dest);
            Self::ack(c, p, n, pk.last_dir, packets, now);
            q.push_at(now + body, Event { kind: ev::COARSE_ARRIVE, a: pk.last_dir, b: 0, c: 0, node: n, data: id });
            return hold;
        }
        if pk.flags & flags::DEPOSIT != 0 && pk.hops > 0 {
            // A copy stays at every node the line passes.
            let mut copy = pk;
            copy.flags = (copy.flags | flags::COPY) & !flags::STALLED;
            let cid = self.pool.alloc(copy);
            q.push_at(now + body, Event { kind: ev::COARSE_ARRIVE, a: pk.last_dir, b: 1, c: 0, node: n, data: cid });
        }
        let link = n as usize * NDIR + d;
        let l = &mut c.links[link];
        let start = now.max(l.free_at);
        l.free_at = start + hold;
        let high = &mut self.routers[n as usize].link_high[d];
        count(&mut l.packets, packets, &mut high.packets);
        count(&mut l.chunks, packets * pk.chunks as u32, &mut high.chunks);
        count(&mut l.payload, pk.payload as u32, &mut high.payload);
        if pk.hops > 0 {
            Self::ack(c, p, n, pk.last_dir, packets, now);
        }
        self.global.hops += packets as u64;
        let pkm = self.pool.get_mut(id);
        if pkm.hops == 0 {
            pkm.injected = start;
        }
        pkm.hops += 1;
        pkm.last_dir = d as u8;
        let next_at = start + p.hop_latency;
        let line = &mut c.lines[link];
        if line.is_empty() && next_at <= now + FAR {
            // Its head's arrival at the next node is scheduled now.
            let next = self.geo.neighbor(n, d);
            q.push_at(next_at, Event { kind: ev::COARSE_HOP, a: d as u8, b: 0, c: 0, node: next, data: id });
        } else {
            // It waits in the link's line (behind packets that arrive later
            // than FAR from now, or the first of them).
            if line.is_empty() {
                q.push_at(next_at - (FAR - SPAN), Event { kind: ev::COARSE_LINK, a: d as u8, b: 0, c: 0, node: n, data: 0 });
            }
            line.push_back((start, id));
        }
        hold
    }

    /// The first packet waiting on link `d` of node `n` reaches the next
    /// node `FAR - SPAN` from now: the arrivals there of those that come
    /// within FAR are scheduled (events of that node, which book its next
    /// link: a node's links are booked by its own events only, so that
    /// partitions can run them).
    pub(super) fn on_coarse_link(&mut self, now: Tick, n: u32, d: usize, q: &mut EventQueue) {
        let Some(c) = self.coarse.as_deref_mut() else { unreachable!("on_coarse_link on the packet tier") };
        let line = &mut c.lines[n as usize * NDIR + d];
        let next = self.geo.neighbor(n, d);
        let hop = self.p.hop_latency;
        debug_assert_eq!(line.front().map(|&(start, _)| start + hop), Some(now + FAR - SPAN));
        while let Some(&(start, id)) = line.front() {
            if start + hop > now + FAR {
                q.push_at(start + hop - (FAR - SPAN), Event { kind: ev::COARSE_LINK, a: d as u8, b: 0, c: 0, node: n, data: 0 });
                return;
            }
            line.pop_front();
            q.push_at(start + hop, Event { kind: ev::COARSE_HOP, a: d as u8, b: 0, c: 0, node: next, data: id });
        }
    }

    /// Packet `id`, whose head is on its way to another partition's node,
    /// leaves this one (see [`Torus::emigrate`]): its copy goes with the
    /// event. On the coarse tier nothing here reads it again.
    pub fn coarse_emigrate(&mut self, id: u32) -> Packet {
        let copy = *self.pool.get(id);
        self.pool.release(id);
        copy
    }

    /// The coarse links of nodes `lo..hi` of partition `o` (see
    /// [`Torus::absorb`]): their bookings and counters (their lines hold
    /// `o`'s packets, none once a run has ended).
    pub(super) fn absorb_coarse(&mut self, o: &Torus, lo: u32, hi: u32) {
        if let (Some(c), Some(oc)) = (self.coarse.as_deref_mut(), o.coarse.as_deref()) {
            let r = lo as usize * NDIR..hi as usize * NDIR;
            c.links[r.clone()].copy_from_slice(&oc.links[r]);
        }
    }

    /// The token acks of `packets` packets (a packet, or a train's) that
    /// came in through `port` of node `node` send back upstream: they hold
    /// the reverse link for their bytes, as on the packet tier. An ack goes
    /// out when its packet's tail leaves the node; it is
    /// booked from `now` (the head's arrival) on, so that a booking never
    /// leaves the link idle before it (which would delay packets that
    /// reach the link sooner: bookings are not back-filled).
    #[inline]
    fn ack(c: &mut Coarse, p: &Params, node: u32, port: u8, packets: u32, now: Tick) {
        let back = &mut c.links[node as usize * NDIR + opposite(port as usize)];
        back.free_at = back.free_at.max(now) + (packets * p.ack_bytes) as Tick * p.tick_byte;
    }

    /// How long the rest of a train (`p.more` packets) takes to come in
    /// over a link after its first packet: what the agent that reads it
    /// waits for at the least (0 for a packet).
    #[inline]
    pub fn train_rest(&self, p: &Packet) -> Tick {
        p.more as Tick * self.link_ticks(p)
    }

    /// How long one packet of `p`'s size holds a link (trailer and gap
    /// included).
    #[inline]
    pub fn link_ticks(&self, p: &Packet) -> Tick {
        (p.chunks as u32 * self.p.chunk_bytes + self.p.trailer_gap) as Tick * self.p.tick_byte
    }

    /// The tail of a packet of `bytes` has left injection FIFO `f` of node `n`.
    pub(super) fn on_coarse_left(&mut self, now: Tick, n: u32, f: usize, bytes: u32) {
        let fifo = &mut self.routers[n as usize].inj[f];
        fifo.used -= bytes;
        if fifo.full_since != Tick::MAX && self.p.inj_bytes - fifo.used >= self.p.max_packet_bytes {
            self.nodes[n as usize].inj_full_ticks += now - fifo.full_since.max(self.counters_since);
            fifo.full_since = Tick::MAX;
        }
        self.notices.push(Notice::InjSpace { node: n, fifo: f as u8 });
    }

    /// Packet `id` (a deposit copy if `copy`) is in its reception FIFO at
    /// node `n`, having come in through `port`.
    pub(super) fn on_coarse_arrive(&mut self, now: Tick, n: u32, port: usize, id: u32, copy: bool) {
        // When it came in (a train: its first packet), for the agent that
        // reads it (see `Torus::train_rest`).
        self.pool.get_mut(id).arrived = now;
        let pk = *self.pool.get(id);
        let f = rx_index(pk.flags, port);
        let bytes = pk.chunks as u32 * self.p.chunk_bytes;
        let fifo = &mut self.routers[n as usize].rx[f];
        fifo.used += bytes;
        if self.p.rx_bytes.saturating_sub(fifo.used) < self.p.max_packet_bytes && fifo.full_since == Tick::MAX {
            fifo.full_since = now;
        }
        if copy {
            self.global.deposit_copies += 1;
        } else {
            self.global.in_network = self.global.in_network.wrapping_sub(1);
        }
        self.deliver(now, n, port, id);
    }
}
