//! Layer 3: the BG/L-style torus network at packet level.
//!
//! Every node has a router with one receiver per arrival direction (each with
//! its virtual channels: the dynamic VCs, the escape VC or dateline pair, and
//! the high-priority VC), one sender per output link, the injection FIFOs and
//! the reception FIFOs. Packets move by virtual cut-through under token flow
//! control; routers arbitrate in the three phases of the hardware (packet
//! choice of direction and VC, receiver arbitration, sender arbitration).
//! See `docs/torus.md` for the mechanisms and their parameters.

//!
//! The files follow the router: `router` (state and its cache-line layout),
//! `params` (the parameters as the hot path reads them), `routing` (the
//! moves a head may take), `arbitration` (the three phases), `transfer`
//! (links, tokens, delivery), `counters`, `deadlock` (detection and
//! invariants) and `lookahead` (prefetching, no effect on results).

mod arbitration;
pub mod coarse;
pub mod counters;
mod deadlock;
pub mod faults;
pub mod geometry;
pub mod packet;
mod params;
mod lookahead;
mod router;
mod routing;
mod transfer;

pub use faults::{FaultMap, NoRoute};
pub use counters::{GlobalCounters, Histogram, LinkCounters, NodeCounters, VcCounters};
pub use geometry::{dim_of, is_minus, opposite, Geometry, DIR_NAMES, NDIR};
pub use packet::{flags, List, Packet, Pool, NIL, NO_DIR};
pub use params::Params;
pub use routing::{prod_at, Routing};

use arbitration::*;
use params::*;
use router::*;
use routing::*;
use transfer::*;

use crate::engine::{Event, EventQueue, StreamState, Tick};
use std::collections::HashMap;
use crate::machine::Machine;

/// Most virtual channels per receiver (4 dynamic + 2 escape + 1 high priority).
pub const MAXV: usize = 7;
/// Most injection FIFOs per node.
pub const MAXF: usize = 24;
/// Reception FIFOs per node, per group, and groups (hardware constants the
/// machine description validates against).
pub use crate::machine::{NRX, RX_GROUP, RX_GROUPS};
/// Index of the high-priority reception FIFO.
pub const RX_HP: usize = 6;

/// The reception FIFO a packet arriving through `port` goes to: its
/// direction's FIFO (or the high-priority one) in the group the sender chose.
#[inline]
pub fn rx_index(pk_flags: u8, port: usize) -> usize {
    let f = if pk_flags & flags::HIGH_PRIORITY != 0 { RX_HP } else { port };
    if pk_flags & flags::GROUP1 != 0 { f + RX_GROUP } else { f }
}

/// Event kinds owned by the torus.
pub mod ev {
    use crate::machine::Component;
    /// A packet's head arrives in a VC of the next router.
    pub const ARRIVE: u8 = Component::Torus.kind(1);
    /// A transfer over a link (or into a reception FIFO) ends.
    pub const XFER_DONE: u8 = Component::Torus.kind(2);
    /// A packet is in its reception FIFO.
    pub const RX_DONE: u8 = Component::Torus.kind(3);
    /// A deposit-bit copy is in its reception FIFO.
    pub const COPY_DONE: u8 = Component::Torus.kind(4);
    /// Tokens come back to a sender.
    pub const TOKEN: u8 = Component::Torus.kind(5);
    /// Coarse tier: a packet's tail has left its injection FIFO.
    pub const COARSE_LEFT: u8 = Component::Torus.kind(6);
    /// Coarse tier: a packet (or a deposit copy) is in its reception FIFO.
    pub const COARSE_ARRIVE: u8 = Component::Torus.kind(7);
    /// Coarse tier: a packet's head is at a node on its way.
    pub const COARSE_HOP: u8 = Component::Torus.kind(8);
    /// Coarse tier: the oldest packet waiting on a link has started on it.
    pub const COARSE_LINK: u8 = Component::Torus.kind(9);
}

/// A broken invariant of the torus (a model error, never an input error).
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum TorusError {
    /// A sender's tokens and what its downstream VC holds do not add up to
    /// the VC's size once nothing is in flight.
    #[error("node {node} dir {dir} vc {vc}: tokens {tokens} + used downstream {used} != {size}")]
    Tokens { node: u32, dir: &'static str, vc: usize, tokens: u16, used: u16, size: u16 },
}

/// What the torus tells the node layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// A packet arrived in reception FIFO `fifo` of `node`.
    RxReady { node: u32, fifo: u8 },
    /// Injection FIFO `fifo` of `node` has room again.
    InjSpace { node: u32, fifo: u8 },
}

/// The torus network of a partition.
pub struct Torus {
    pub p: Params,
    pub geo: Geometry,
    routers: Vec<Router>,
    pub pool: Pool,
    pub nodes: Vec<NodeCounters>,
    pub global: GlobalCounters,
    /// Notices for the node layer, drained by the dispatcher after each event.
    pub notices: Vec<Notice>,
    /// Time the counters were last reset.
    pub counters_since: Tick,
    /// Arbitration's requests (scratch, kept to spare the zeroing per call).
    reqs: [Req; NDIR + MAXF],
    /// Dead nodes and links, when the partition has any.
    pub faults: Option<Box<FaultMap>>,
    /// In a windowed run cut into several partitions: this one's share,
    /// and per node the directions whose links leave it.
    part: Option<Share>,
    pub(super) leaving: Vec<u8>,
    /// On the coarse tier (`coarse`): the links' bookings and waiting packets.
    coarse: Option<Box<coarse::Coarse>>,
}

/// A partition's share of a windowed run (see [`crate::engine::parallel`]):
/// the packets it has handed to a neighbouring partition whose tails are
/// still leaving its links, and the live packets merged into it.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Share {
    /// Packets handed over and not yet released here.
    away: u32,
    /// Live packets of the partitions merged into this one.
    merged_live: u32,
    /// Copies of their packets made here for the report.
    rehomed: u32,
}

/// A partition's torus as [`Torus::export_part`] sends it.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct TorusPart {
    routers: Vec<Router>,
    nodes: Vec<NodeCounters>,
    global: GlobalCounters,
    rerouted: u64,
    forwarded: u64,
    pool: Pool,
    share: Option<Share>,
    coarse: Option<Box<coarse::Coarse>>,
}

/// A handed-over packet whose tail is still leaving (its `next`, unused
/// once a packet left its queue, says so).
const HANDED_OVER: u32 = NIL - 1;
/// A packet whose tail has left and that is still to be handed over.
const TAIL_LEFT: u32 = NIL - 2;
impl Torus {
    pub fn new(m: &Machine, seed: u64) -> Self {
        let p = Params::from_machine(m);
        let geo = Geometry::new(&m.shape);
        let n = geo.nodes() as usize;
        let routers = crate::engine::huge_vec(n, |i| {
            let mut r = Router {
                hprod: [0; NDIR * 8],
                ready: 0,
                paths_left: [p.paths; NDIR],
                xfer_mask: 0,
                rx_busy: 0,
                tokens_lo: [[0; 4]; NDIR],
                rng: StreamState::new(seed, i as u64),
                coords: geo.coords(i as u32),
                inj_ready: 0,
                inj_hprod: [0; MAXF],
                tokens_hi: [[0; MAXV - 4]; NDIR],
                rx_nonempty: 0,
                send: [Sender::default(); NDIR],
                link_high: [LinkHigh::default(); NDIR],
                recv: [Receiver::default(); NDIR],
                inj: [Fifo::default(); MAXF],
                rx: [Fifo::default(); NRX],
            };
            for d in 0..NDIR {
                for v in 0..p.nvc {
                    *r.tokens_mut(d, v) = p.vc_tokens;
                }
            }
            r
        });
        Torus {
            nodes: vec![NodeCounters::default(); n],
            global: GlobalCounters::default(),
            pool: Pool::with_capacity(1024),
            notices: Vec::with_capacity(64),
            counters_since: 0,
            reqs: [Req::default(); NDIR + MAXF],
            faults: FaultMap::new(&geo, &m.faults).map(Box::new),
            part: None,
            leaving: Vec::new(),
            coarse: None,
            routers,
            geo,
            p,
        }
    }

    pub fn node_count(&self) -> u32 {
        self.geo.nodes()
    }

    /// Bytes of router state per node (excluding packets and counters).
    pub fn router_bytes_per_node() -> usize {
        std::mem::size_of::<Router>()
    }

    /// Makes a packet from `src` to `dest` carrying `payload` bytes, with
    /// minimal-route hint bits. The caller sets routing flags.
    pub fn make_packet(&self, src: u32, dest: u32, payload: u32, created: Tick) -> Packet {
        let bytes = payload + self.p.hw_header + self.p.sw_header;
        let chunks = bytes.div_ceil(self.p.chunk_bytes).clamp(1, self.p.max_packet_bytes / self.p.chunk_bytes);
        let mut pk = Packet::new(src, dest, chunks as u8, payload.min(u16::MAX as u32) as u16, created);
        pk.hint = self.geo.hint_bits(src, dest);
        pk.dc = self.geo.coords(dest);
        pk
    }

    /// Routes `pk` around the partition's dead nodes and links (see
    /// [`faults`]): its hint bits, and whether it may still route
    /// adaptively. A pair with no clean dimension-ordered route goes first
    /// to the intermediate node it is forwarded through (`pk.to` keeps
    /// where it goes on to; see [`Torus::forward`]). Panics on a pair the
    /// run did not check: runs refuse unreachable pairs before they start
    /// ([`FaultMap::unreachable`]).
    pub fn route_around_faults(&self, pk: &mut Packet) -> bool {
        let Some(f) = &self.faults else { return true };
        if let Some((hint, adaptive)) = f.route(&self.geo, pk.src, pk.dest, pk.hint) {
            pk.hint = hint;
            return adaptive;
        }
        let Some(via) = f.via(&self.geo, pk.src, pk.dest) else {
            panic!("{} (a pair the run should have refused before it started)",
                NoRoute { src: self.geo.coords32(pk.src), dst: self.geo.coords32(pk.dest) })
        };
        f.count_forwarded();
        pk.to = pk.dest;
        self.aim(pk, pk.src, via);
        false
    }

    /// Points `pk`, at node `from`, at node `to` by a clean
    /// dimension-ordered route.
    fn aim(&self, pk: &mut Packet, from: u32, to: u32) {
        let f = self.faults.as_ref().expect("forwarding on a partition with faults");
        pk.dest = to;
        pk.dc = self.geo.coords(to);
        pk.hint = f.leg(&self.geo, from, to).expect("a forwarding node joined to both ends");
    }

    /// The packet `pk`, read at the intermediate node `node` it is
    /// forwarded through, sent on to where it goes: dimension-ordered,
    /// as a fresh injection (software at `node` does not see it).
    pub fn forward(&self, pk: &Packet, node: u32) -> Packet {
        let mut p = *pk;
        p.next = NIL;
        p.last_dir = NO_DIR;
        p.crossed = 0;
        p.vc = 0;
        p.charge = 0;
        p.prod = 0;
        p.flags = (p.flags & !(flags::DYNAMIC | flags::STALLED | flags::COPY)) | flags::FORWARDED;
        let to = std::mem::replace(&mut p.to, NIL);
        self.aim(&mut p, node, to);
        p
    }

    /// Overrides the hint bits: travel along direction `d` only (used by
    /// deposit-bit line broadcasts, which may go the long way round).
    pub fn set_line_route(&self, pk: &mut Packet, d: usize) {
        pk.hint = 1 << d;
    }

    /// Free bytes of injection FIFO `f` of node `n`.
    pub fn inj_free(&self, n: u32, f: usize) -> u32 {
        self.p.inj_bytes - self.routers[n as usize].inj[f].used
    }

    /// Reserves room for a packet of `bytes` in injection FIFO `f` (the core
    /// starts writing it). Returns false if it does not fit.
    pub fn inj_reserve(&mut self, n: u32, f: usize, bytes: u32, now: Tick) -> bool {
        let cap = self.p.inj_bytes;
        let maxp = self.p.max_packet_bytes;
        let fifo = &mut self.routers[n as usize].inj[f];
        if fifo.used + bytes > cap {
            return false;
        }
        fifo.used += bytes;
        if cap - fifo.used < maxp && fifo.full_since == Tick::MAX {
            fifo.full_since = now;
        }
        true
    }

    /// The packet, written by a core, enters injection FIFO `f`.
    pub fn inj_push(&mut self, n: u32, f: usize, id: u32, now: Tick, q: &mut EventQueue) {
        self.global.injected_packets += self.pool.get(id).count() as u64;
        self.global.in_network = self.global.in_network.wrapping_add(1);
        if self.coarse.is_some() {
            return self.coarse_inject(n, f, id, now, q);
        }
        let r = &mut self.routers[n as usize];
        let prod = prod_at(r.coords, self.pool.get(id));
        self.pool.get_mut(id).prod = prod;
        r.inj[f].q.push(&mut self.pool, id);
        if r.inj[f].q.head == id {
            r.inj[f].set_head(self.pool.get(id), &mut r.inj_hprod[f]);
            if !r.inj[f].busy {
                r.inj_ready |= 1 << f;
                self.arbitrate_injection(n, now, q, f);
            }
        }
    }

    /// Packets waiting in reception FIFO `f` of node `n`.
    pub fn rx_head(&self, n: u32, f: usize) -> u32 {
        self.routers[n as usize].rx[f].q.head
    }

    /// Removes the head of reception FIFO `f` (a core has read it); frees its
    /// space, which may let a waiting packet arrive. The caller owns the id.
    pub fn rx_pop(&mut self, n: u32, f: usize, now: Tick, q: &mut EventQueue) -> u32 {
        let rxb = self.p.rx_bytes;
        let maxp = self.p.max_packet_bytes;
        let r = &mut self.routers[n as usize];
        let id = r.rx[f].q.pop(&self.pool);
        if r.rx[f].q.is_empty() {
            r.rx_nonempty &= !(1 << f);
        }
        if id == NIL {
            return NIL;
        }
        let bytes = self.pool.get(id).chunks as u32 * self.p.chunk_bytes;
        let fifo = &mut r.rx[f];
        // (On the coarse tier a FIFO holds what arrives, past its size.)
        let was_full = rxb.saturating_sub(fifo.used) < maxp;
        fifo.used -= bytes;
        if fifo.full_since != Tick::MAX && rxb.saturating_sub(fifo.used) >= maxp {
            self.nodes[n as usize].rx_full_ticks += now - fifo.full_since.max(self.counters_since);
            fifo.full_since = Tick::MAX;
        }
        if was_full && self.coarse.is_none() {
            self.arbitrate(n, now, q, NO_DIR, Focus::ALL);
        }
        id
    }

    /// Mask of reception FIFOs holding packets.
    pub fn rx_mask(&self, n: u32) -> u16 {
        self.routers[n as usize].rx_nonempty
    }

    /// Packets in the network (in VCs, in transit or in FIFOs) plus those held
    /// by software.
    pub fn live_packets(&self) -> u32 {
        match &self.part {
            None => self.pool.live(),
            Some(s) => self.pool.live() - s.away - s.rehomed + s.merged_live,
        }
    }

    /// Makes this torus the partition owning nodes `lo..hi` of a windowed
    /// run (nothing changes if that is every node).
    pub fn set_partition(&mut self, lo: u32, hi: u32) {
        self.part = (lo > 0 || hi < self.node_count()).then_some(Share::default());
        self.leaving = match self.part {
            None => Vec::new(),
            Some(_) => (0..self.node_count())
                .map(|n| {
                    let c = self.geo.coords(n);
                    (0..NDIR).filter(|&d| !(lo..hi).contains(&self.geo.neighbor_at(n, c, d))).fold(0u8, |m, d| m | 1 << d)
                })
                .collect(),
        };
    }

    /// A transfer to another partition ended: the packet is released here
    /// once also handed over.
    #[cold]
    #[inline(never)]
    pub(super) fn left_partition(&mut self, id: u32) {
        let Some(s) = &mut self.part else { return };
        let pk = self.pool.get_mut(id);
        if pk.next == HANDED_OVER {
            s.away -= 1;
            self.pool.release(id);
        } else {
            pk.next = TAIL_LEFT;
        }
    }

    /// The packet of an ARRIVE event leaves for another partition (at the
    /// end of the window that sent it): its copy goes with the event.
    pub fn emigrate(&mut self, id: u32) -> Packet {
        let s = self.part.as_mut().expect("only a partition hands packets over");
        let pk = self.pool.get_mut(id);
        let mut copy = *pk;
        copy.next = NIL;
        if pk.next == TAIL_LEFT {
            self.pool.release(id);
        } else {
            pk.next = HANDED_OVER;
            s.away += 1;
        }
        copy
    }

    /// A packet arrives from another partition: the id its ARRIVE event
    /// now carries.
    pub fn immigrate(&mut self, pk: Packet) -> u32 {
        self.pool.alloc(pk)
    }

    /// Takes in the results of the partition `o` (nodes `lo..hi`) of the
    /// same windowed run: its nodes' state and counters, its share of the
    /// machine-wide counters, and copies of the packets its nodes hold
    /// (`map`: its packet ids to theirs here), for the report and the
    /// deadlock analysis.
    pub fn absorb(&mut self, o: &Torus, lo: u32, hi: u32, map: &mut HashMap<u32, u32>) {
        let (a, b) = (lo as usize, hi as usize);
        self.nodes[a..b].copy_from_slice(&o.nodes[a..b]);
        for n in a..b {
            let mut r = o.routers[n].clone();
            for port in r.recv.iter_mut() {
                for vc in port.vc.iter_mut() {
                    vc.q = self.rehome(&o.pool, vc.q, map);
                }
            }
            for f in r.inj.iter_mut().chain(r.rx.iter_mut()) {
                f.q = self.rehome(&o.pool, f.q, map);
            }
            for d in 0..NDIR {
                let s = &mut r.send[d];
                if s.xfer == NIL {
                    continue;
                }
                let pk = o.pool.get(s.xfer);
                if pk.next == HANDED_OVER {
                    // Its copy is the next partition's; what the link
                    // still owes is its payload.
                    if s.owed {
                        s.owed = false;
                        count(&mut s.payload, pk.payload as u32, &mut r.link_high[d].payload);
                    }
                    s.xfer = NIL;
                } else {
                    s.xfer = self.rehome_one(&o.pool, s.xfer, map);
                }
            }
            self.routers[n] = r;
        }
        self.absorb_coarse(o, lo, hi);
        self.global.merge(&o.global);
        if let (Some(f), Some(g)) = (&self.faults, &o.faults) {
            f.add_counts(g.rerouted(), g.forwarded());
        }
        let live = o.live_packets();
        if let Some(s) = &mut self.part {
            s.merged_live += live;
        }
    }

    /// What [`Self::absorb`] reads of this partition (nodes `lo..hi`), to
    /// send to the process that merges a distributed run.
    pub fn export_part(&self, lo: u32, hi: u32) -> TorusPart {
        TorusPart {
            routers: self.routers[lo as usize..hi as usize].to_vec(),
            nodes: self.nodes[lo as usize..hi as usize].to_vec(),
            global: self.global.clone(),
            rerouted: self.faults.as_ref().map_or(0, |f| f.rerouted()),
            forwarded: self.faults.as_ref().map_or(0, |f| f.forwarded()),
            pool: self.pool.clone(),
            share: self.part,
            coarse: self.coarse.clone(),
        }
    }

    /// Makes this (fresh) torus the partition `st` came from, as far as
    /// [`Self::absorb`] reads it.
    pub fn import_part(&mut self, st: TorusPart, lo: u32, hi: u32) {
        self.routers[lo as usize..hi as usize].clone_from_slice(&st.routers);
        self.nodes[lo as usize..hi as usize].copy_from_slice(&st.nodes);
        self.global = st.global;
        if let Some(f) = &self.faults {
            f.add_counts(st.rerouted, st.forwarded);
        }
        self.pool = st.pool;
        self.part = st.share;
        self.coarse = st.coarse;
    }

    /// A copy here of the packets of list `l` of pool `from` (see [`Self::absorb`]).
    pub fn rehome(&mut self, from: &Pool, l: List, map: &mut HashMap<u32, u32>) -> List {
        let mut out = List::default();
        if l.is_empty() {
            return out;
        }
        let mut id = l.head;
        loop {
            let new = self.rehome_one(from, id, map);
            out.push(&mut self.pool, new);
            if id == l.tail {
                return out;
            }
            id = from.get(id).next;
        }
    }

    fn rehome_one(&mut self, from: &Pool, id: u32, map: &mut HashMap<u32, u32>) -> u32 {
        if let Some(&new) = map.get(&id) {
            return new;
        }
        let new = self.pool.alloc(*from.get(id));
        map.insert(id, new);
        // Copies for the report: the live count is the partitions' own.
        if let Some(s) = &mut self.part {
            s.rehomed += 1;
        }
        new
    }

    /// Handles a torus event.
    pub fn handle(&mut self, now: Tick, e: Event, q: &mut EventQueue) {
        match e.kind {
            ev::ARRIVE => self.on_arrive(now, e.node, e.a as usize, e.data, q),
            ev::XFER_DONE => self.on_xfer_done(now, e.node, e.a as usize, q),
            ev::RX_DONE => self.on_rx_done(now, e.node, e.a as usize, e.b as usize, e.data, q),
            ev::COPY_DONE => self.on_copy_done(now, e.node, e.a as usize, e.data, q),
            ev::TOKEN => self.on_token(now, e.node, e.a as usize, e.b as usize, e.data as u16, q),
            ev::COARSE_LEFT => self.on_coarse_left(now, e.node, e.a as usize, e.data),
            ev::COARSE_ARRIVE => self.on_coarse_arrive(now, e.node, e.a as usize, e.data, e.b != 0),
            ev::COARSE_HOP => {
                self.coarse_hop(e.node, e.data, now, q);
            }
            ev::COARSE_LINK => self.on_coarse_link(now, e.node, e.a as usize, q),
            _ => unreachable!("not a torus event: {}", e.kind),
        }
    }
}
