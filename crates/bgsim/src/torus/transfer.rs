//! Transfers and tokens: a packet's arrival in a VC, its transfer over a
//! link, the tokens that come back, delivery into a reception FIFO and the
//! deposit-bit copy.

use super::*;

impl Torus {

    /// The tokens held in VC `v` somewhere change by `delta` at `now`.
    #[inline]
    pub(super) fn vc_stat(&mut self, v: usize, now: Tick, delta: i64) {
        self.global.vcs[v].change(now, self.p.token_bytes as u64, delta);
    }

    pub(super) fn on_arrive(&mut self, now: Tick, n: u32, port: usize, id: u32, q: &mut EventQueue) {
        let r = &mut self.routers[n as usize];
        let pk = self.pool.get_mut(id);
        let (v, charge) = (pk.vc as usize, pk.charge as u16);
        let prod = prod_at(r.coords, pk);
        pk.prod = prod;
        pk.arrived = now;
        pk.hops += 1;
        let vc = &mut r.recv[port].vc[v];
        vc.used += charge;
        debug_assert!(vc.used <= self.p.vc_tokens, "VC overflow at node {n} port {port} vc {v}");
        vc.q.push(&mut self.pool, id);
        let new_head = vc.q.head == id;
        let movable = new_head && !vc.busy;
        if new_head {
            vc.set_head(self.pool.get(id), &mut r.hprod[port * 8 + v]);
        }
        let free = r.free();
        if movable {
            r.ready |= 1 << (port * 8 + v);
        }
        let g = &mut self.global.vcs[v];
        g.change(now, self.p.token_bytes as u64, charge as i64);
        // A new head none of whose productive links is free cannot move now;
        // the sender that frees will arbitrate.
        if movable && (prod == 0 || prod & free != 0) {
            self.arbitrate_arrival(n, now, q, port, v);
        }
    }

    pub(super) fn on_xfer_done(&mut self, now: Tick, n: u32, d: usize, q: &mut EventQueue) {
        let r = &mut self.routers[n as usize];
        let s = &mut r.send[d];
        let id = s.xfer;
        debug_assert!(id != NIL);
        s.xfer = NIL;
        if s.owed {
            s.owed = false;
            count(&mut s.payload, self.pool.get(id).payload as u32, &mut r.link_high[d].payload);
        }
        r.xfer_mask &= !(1 << d);
        if !self.leaving.is_empty() && self.leaving[n as usize] & 1 << d != 0 {
            self.left_partition(id);
        }
        let r = &mut self.routers[n as usize];
        let s = &r.send[d];
        let (src, src_vc, charge) = (s.src as usize, s.src_vc as usize, s.src_charge as u16);
        // Sender d is free, and so are a transfer path of the receiver or
        // the injection FIFO the packet came from (with its next head).
        let focus = Focus::dir(d).union(if src < NDIR { Focus::receiver(src) } else { Focus::fifo(src - NDIR) });
        if src < NDIR {
            let vc = &mut r.recv[src].vc[src_vc];
            vc.busy = false;
            vc.used -= charge;
            if !vc.q.is_empty() {
                r.ready |= 1 << (src * 8 + src_vc);
            }
            r.paths_left[src] += 1;
            self.vc_stat(src_vc, now, -(charge as i64));
            self.return_tokens(now, n, src, src_vc, charge, q);
        } else {
            let f = src - NDIR;
            let bytes = charge as u32 * self.p.chunk_bytes;
            let fifo = &mut r.inj[f];
            fifo.busy = false;
            fifo.used -= bytes;
            if !fifo.q.is_empty() {
                r.inj_ready |= 1 << f;
            }
            if fifo.full_since != Tick::MAX && self.p.inj_bytes - fifo.used >= self.p.max_packet_bytes {
                self.nodes[n as usize].inj_full_ticks += now - fifo.full_since.max(self.counters_since);
                fifo.full_since = Tick::MAX;
            }
            self.notices.push(Notice::InjSpace { node: n, fifo: f as u8 });
        }
        self.arbitrate(n, now, q, NO_DIR, focus);
    }

    /// The packet that held `charge` tokens in VC `v` of receiver `port` at
    /// node `n` has left: send the token-ack upstream on the reverse link.
    #[inline(always)]
    pub(super) fn return_tokens(&mut self, now: Tick, n: u32, port: usize, v: usize, charge: u16, q: &mut EventQueue) {
        let back = opposite(port);
        let r = &mut self.routers[n as usize];
        let up = self.geo.neighbor_at(n, r.coords, back);
        let ack = self.p.ack_bytes as Tick * self.p.tick_byte;
        let s = &mut r.send[back];
        let start = s.busy_until.max(now);
        s.busy_until = start + ack;
        count(&mut s.acks, 1, &mut r.link_high[back].acks);
        let arrive = start + ack + self.p.hop_latency;
        q.push_at(arrive, Event { kind: ev::TOKEN, a: port as u8, b: v as u8, c: 0, node: up, data: charge as u32 });
    }

    pub(super) fn on_token(&mut self, now: Tick, n: u32, d: usize, v: usize, amount: u16, q: &mut EventQueue) {
        self.global.token_returns += 1;
        let r = &mut self.routers[n as usize];
        *r.tokens_mut(d, v) += amount;
        debug_assert!(r.tokens(d, v) <= self.p.vc_tokens);
        if r.xfer_mask & (1 << d) == 0 {
            self.arbitrate(n, now, q, d as u8, Focus::dir(d));
        }
    }

    pub(super) fn on_rx_done(&mut self, now: Tick, n: u32, port: usize, v: usize, id: u32, q: &mut EventQueue) {
        let r = &mut self.routers[n as usize];
        let charge = self.pool.get(id).charge as u16;
        let vc = &mut r.recv[port].vc[v];
        vc.busy = false;
        vc.used -= charge;
        if !vc.q.is_empty() {
            r.ready |= 1 << (port * 8 + v);
        }
        r.rx_busy &= !(1 << port);
        self.vc_stat(v, now, -(charge as i64));
        self.return_tokens(now, n, port, v, charge, q);
        // Wrapping: in a partition of a windowed run, packets injected
        // elsewhere arrive here (the partitions' counts add up).
        self.global.in_network = self.global.in_network.wrapping_sub(1);
        self.deliver(now, n, port, id);
        self.arbitrate(n, now, q, NO_DIR, Focus::receiver(port));
    }

    pub(super) fn on_copy_done(&mut self, now: Tick, n: u32, port: usize, id: u32, q: &mut EventQueue) {
        self.routers[n as usize].rx_busy &= !(1 << port);
        self.global.deposit_copies += 1;
        self.deliver(now, n, port, id);
        // The receiver's path to its reception FIFOs is free again.
        self.arbitrate(n, now, q, NO_DIR, Focus::receiver(port));
    }

    pub(super) fn deliver(&mut self, now: Tick, n: u32, port: usize, id: u32) {
        let pk = *self.pool.get(id);
        let f = rx_index(pk.flags, port);
        let r = &mut self.routers[n as usize];
        r.rx[f].q.push(&mut self.pool, id);
        r.rx_nonempty |= 1 << f;
        let g = &mut self.global;
        // (A train of the message tier counts as its packets.)
        let count = pk.count() as u64;
        g.delivered_packets += count;
        g.delivered_payload += pk.payload as u64;
        g.delivered_wire_bytes += count * (pk.chunks as u32 * self.p.chunk_bytes + self.p.trailer_gap + self.p.ack_bytes) as u64;
        // A packet forwarded through this node counts its latency where it
        // ends (each leg is a delivery and a network latency of its own).
        if pk.to == NIL {
            g.latency.record(now - pk.created);
        }
        g.network_latency.record(now - pk.injected);
        let w = ((now - self.counters_since) / self.p.window) as usize;
        if g.window_packets.len() <= w {
            g.window_packets.resize(w + 1, 0);
            g.window_payload.resize(w + 1, 0);
        }
        g.window_packets[w] += count;
        g.window_payload[w] += pk.payload as u64;
        g.last_progress = now;
        self.notices.push(Notice::RxReady { node: n, fifo: f as u8 });
    }
}

/// Starts moving VC `v`'s head packet `id` of receiver `port` at node `n`
/// into reception FIFO `f`.
#[inline]
pub(super) fn start_delivery(p: &Params, r: &mut Router, pool: &mut Pool, global: &mut GlobalCounters, n: u32, now: Tick, port: usize, v: usize, id: u32, f: usize, bytes: u32, q: &mut EventQueue) {
    r.take_vc_head(pool, port, v);
    r.rx_busy |= 1 << port;
    let fifo = &mut r.rx[f];
    fifo.used += bytes;
    if p.rx_bytes - fifo.used < p.max_packet_bytes && fifo.full_since == Tick::MAX {
        fifo.full_since = now;
    }
    pool.get_mut(id).flags &= !flags::STALLED;
    global.last_progress = now;
    q.push_at(now + bytes as Tick * p.tick_byte, Event { kind: ev::RX_DONE, a: port as u8, b: v as u8, c: 0, node: n, data: id });
}

/// Phase 3's grant: request `rq` starts on its link at node `n`.
#[inline(always)]
pub(super) fn start_transfer(p: &Params, geo: &Geometry, r: &mut Router, pool: &mut Pool, global: &mut GlobalCounters, n: u32, now: Tick, rq: Req, q: &mut EventQueue) {
    let d = rq.dir as usize;
    let id = rq.pkt;
    let src = rq.src as usize;
    // Unlink from the source queue; the source stays busy until the tail leaves.
    let src_charge = if src < NDIR {
        // The packet itself is not read before it is written below: what
        // the transfer needs of it is in the request and the VC.
        let charge = r.take_vc_head(pool, src, rq.src_vc as usize);
        debug_assert_eq!(charge, pool.get(id).charge);
        r.paths_left[src] -= 1;
        charge
    } else {
        r.take_inj_head(pool, src - NDIR);
        rq.chunks
    };
    debug_assert!(r.tokens(d, rq.vc as usize) >= rq.charge as u16);
    *r.tokens_mut(d, rq.vc as usize) -= rq.charge as u16;
    r.xfer_mask |= 1 << d;
    let chunks = rq.chunks;
    let bytes = chunks as u32 * p.chunk_bytes;
    // Bit errors: each corrupted attempt takes the link for the whole
    // packet, the receiver's CRC drops it and its nack comes back a hop
    // later; the sender then resends from its buffer. Nothing is lost; the
    // good attempt starts after the failed ones.
    let resend = if p.bit_error_rate > 0.0 { resend_delay(p, r, global, n, d, chunks) } else { 0 };
    let s = &mut r.send[d];
    s.xfer = id;
    s.src = rq.src;
    s.src_vc = rq.src_vc;
    s.src_charge = src_charge;
    let start = now.max(s.busy_until) + resend;
    s.busy_until = start + (bytes + p.trailer_gap) as Tick * p.tick_byte;
    let done = s.busy_until;
    let high = &mut r.link_high[d];
    count(&mut s.packets, 1, &mut high.packets);
    count(&mut s.chunks, chunks as u32, &mut high.chunks);
    if p.payload_at_end {
        s.owed = true;
    } else {
        count(&mut s.payload, pool.get(id).payload as u32, &mut high.payload);
    }
    // Deposit bit: leave a copy here when passing through.
    if rq.flags & flags::DEPOSIT != 0 && src < NDIR {
        let mut copy = *pool.get(id);
        copy.flags |= flags::COPY;
        copy.flags &= !flags::STALLED;
        let cid = pool.alloc(copy);
        r.rx_busy |= 1 << src;
        r.rx[rx_index(copy.flags, src)].used += bytes;
        q.push_at(now + bytes as Tick * p.tick_byte, Event { kind: ev::COPY_DONE, a: src as u8, b: 0, c: 0, node: n, data: cid });
    }
    // Update the packet for its next hop: stores only, nothing it holds is
    // read (the line may still be on its way; its hop count goes up on
    // arrival).
    let pk = pool.get_mut(id);
    debug_assert_eq!((pk.flags, pk.crossed), (rq.flags, rq.crossed));
    if src >= NDIR {
        pk.injected = now;
    }
    // Minimal routes cross a dimension's dateline at most once, so the bit stays set.
    pk.crossed = rq.crossed | (geo.crosses_dateline_at(r.coords, d) as u8) << dim_of(d);
    pk.last_dir = d as u8;
    pk.vc = rq.vc;
    pk.charge = rq.charge;
    pk.flags = rq.flags & !flags::STALLED;
    // A hop and its VC are counted together, when the transfer starts, so
    // that counters restarted between a start and its arrival agree.
    global.hops += 1;
    let v = rq.vc as usize;
    global.vcs[v].packets += 1;
    if v >= p.esc && v < p.hp {
        global.escape_hops += 1;
    } else if v < p.ndyn {
        global.dynamic_hops += 1;
    }
    global.last_progress = now;
    let nb = geo.neighbor_at(n, r.coords, d);
    q.push_at(start + p.hop_latency, Event { kind: ev::ARRIVE, a: d as u8, b: 0, c: 0, node: nb, data: id });
    // The source rides along so that the event's touch-ahead can prefetch it.
    q.push_at(done, Event { kind: ev::XFER_DONE, a: d as u8, b: rq.src, c: rq.src_vc, node: n, data: id });
}

/// The delay of a transfer over link `d` of router `r` by the attempts a
/// bit error corrupts (each bit flipped with the link's bit error rate; a
/// draw from the router's stream per attempt, only on links with errors),
/// and their count in the counters.
#[cold]
#[inline(never)]
fn resend_delay(p: &Params, r: &mut Router, global: &mut GlobalCounters, n: u32, d: usize, chunks: u8) -> Tick {
    use crate::engine::Draws;
    let wire_bytes = chunks as u32 * p.chunk_bytes + p.trailer_gap;
    let corrupt = 1.0 - (1.0 - p.bit_error_rate).powf(8.0 * wire_bytes as f64);
    let mut k = 0u64;
    while k < 1000 && r.rng.draw(n as u64).chance(corrupt) {
        k += 1;
    }
    r.link_high[d].chunks += k * chunks as u64;
    global.retransmissions += k;
    // Per link, apart from the hot counters (links with errors are rare).
    let i = n as usize * NDIR + d;
    if global.link_retransmits.len() <= i {
        global.link_retransmits.resize(i + 1, 0);
    }
    global.link_retransmits[i] += k;
    k * (wire_bytes as Tick * p.tick_byte + p.hop_latency)
}
