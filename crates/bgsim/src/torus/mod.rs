//! Layer 3: the BG/L-style torus network at packet level.
//!
//! Every node has a router with one receiver per arrival direction (each with
//! its virtual channels: the dynamic VCs, the escape VC or dateline pair, and
//! the high-priority VC), one sender per output link, the injection FIFOs and
//! the reception FIFOs. Packets move by virtual cut-through under token flow
//! control; routers arbitrate in the three phases of the hardware (packet
//! choice of direction and VC, receiver arbitration, sender arbitration).
//! See `docs/torus.md` for the mechanisms and their parameters.

pub mod geometry;
pub mod packet;
pub mod stats;

pub use geometry::{dim_of, is_minus, opposite, Geometry, DIR_NAMES, NDIR};
pub use packet::{flags, List, Packet, Pool, NIL, NO_DIR};
pub use stats::{GlobalCounters, Histogram, LinkCounters, NodeCounters, VcCounters};

use crate::engine::{nth_set_bit, prefetch, Draws, Event, EventQueue, StreamState, Tick};
use crate::machine::{Arbitration, BubbleAccounting, Escape, Machine};
use wide::{i16x8, u8x16, CmpEq, CmpGt};

/// Most virtual channels per receiver (4 dynamic + 2 escape + 1 high priority).
pub const MAXV: usize = 7;
/// Most injection FIFOs per node.
pub const MAXF: usize = 24;
/// Reception FIFOs per node: one per arrival direction plus high priority.
pub const NRX: usize = 14;
/// Index of the high-priority reception FIFO.
pub const RX_HP: usize = 6;
/// Reception FIFOs per group (6 directions + high priority).
pub const RX_GROUP: usize = 7;

/// The reception FIFO a packet arriving through `port` goes to: its
/// direction's FIFO (or the high-priority one) in the group the sender chose.
#[inline]
pub fn rx_index(pk_flags: u8, port: usize) -> usize {
    let f = if pk_flags & flags::HIGH_PRIORITY != 0 { RX_HP } else { port };
    if pk_flags & flags::GROUP1 != 0 { f + RX_GROUP } else { f }
}

/// Event kinds owned by the torus (the dispatcher routes kinds < 16 here).
pub mod ev {
    pub const ARRIVE: u8 = 1;
    pub const XFER_DONE: u8 = 2;
    pub const RX_DONE: u8 = 3;
    pub const COPY_DONE: u8 = 4;
    pub const TOKEN: u8 = 5;
    /// Kinds below this belong to the torus.
    pub const TORUS_MAX: u8 = 16;
}

/// What the torus tells the node layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// A packet arrived in reception FIFO `fifo` of `node`.
    RxReady { node: u32, fifo: u8 },
    /// Injection FIFO `fifo` of `node` has room again.
    InjSpace { node: u32, fifo: u8 },
}

/// What arbitration reads of the packet at the head of a queue, kept beside
/// the queue so that choosing a head's move does not read the packet (its
/// productive directions are in the router's first line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
struct Head {
    flags: u8,
    chunks: u8,
    last_dir: u8,
    crossed: u8,
}

impl Head {
    #[inline]
    fn of(pk: &Packet) -> Self {
        Head { flags: pk.flags, chunks: pk.chunks, last_dir: pk.last_dir, crossed: pk.crossed }
    }
    #[inline]
    fn is(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// A virtual channel: 16 bytes, four to a cache line.
#[derive(Clone, Copy, Debug, Default)]
struct Vc {
    q: List,
    /// Tokens held by packets in this VC (queued or leaving).
    used: u16,
    /// The head is being transferred out.
    busy: bool,
    /// The head packet as arbitration sees it.
    head: Head,
    /// Tokens the head packet holds here (its `charge`).
    charge: u8,
}

impl Vc {
    /// Takes `pk`, its queue's new head, as the head arbitration sees it;
    /// `hprod` is where the router keeps the head's productive directions.
    #[inline(always)]
    fn set_head(&mut self, pk: &Packet, hprod: &mut u8) {
        (self.head, self.charge) = (Head::of(pk), pk.charge);
        *hprod = pk.prod;
    }
}

/// A receiver's VCs in two cache lines: the first holds the first four
/// (all of them in the BG/L configuration).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct Receiver {
    vc: [Vc; 8],
}

/// A link direction's sender: 32 bytes, two to a cache line, with the
/// link's counters in the form the hot path updates (wire bytes follow from
/// chunks and packets): their low 32 bits here, carries in the router's
/// `link_high` (see [`count`]).
#[derive(Clone, Copy, Debug)]
struct Sender {
    /// The link is busy (packet, trailer, gap and acks) until then.
    busy_until: Tick,
    /// Packet being transmitted, or NIL.
    xfer: u32,
    /// Source of the transfer: receiver index 0..6, or 6 + injection FIFO.
    src: u8,
    src_vc: u8,
    /// Tokens the packet held at its source VC; its chunks when it came
    /// from an injection FIFO (whose room it frees when it has left).
    src_charge: u8,
    /// The payload of the packet in transfer belongs in `payload` but has
    /// not been added yet: it is added when the transfer ends (the packet
    /// is read then, prefetched, rather than at the grant, where it may
    /// be cold), and [`Torus::link`] counts it meanwhile (see
    /// `Params::payload_at_end`).
    owed: bool,
    packets: u32,
    chunks: u32,
    payload: u32,
    acks: u32,
}

impl Default for Sender {
    fn default() -> Self {
        Sender { busy_until: 0, xfer: NIL, src: 0, src_vc: 0, src_charge: 0, owed: false, packets: 0, chunks: 0, payload: 0, acks: 0 }
    }
}

/// A link direction's counters beyond the senders' 32 bits, and its
/// no-token stalls (rare).
#[derive(Clone, Copy, Debug, Default)]
struct LinkHigh {
    packets: u64,
    chunks: u64,
    payload: u64,
    acks: u64,
    stalls: u64,
}

/// Adds `x` to a 32-bit counter whose carries go to `high`.
#[inline]
fn count(low: &mut u32, x: u32, high: &mut u64) {
    let (v, carry) = low.overflowing_add(x);
    *low = v;
    if carry {
        add_carry(high);
    }
}

#[cold]
fn add_carry(high: &mut u64) {
    *high += 1 << 32;
}

#[derive(Clone, Copy, Debug)]
struct Fifo {
    q: List,
    /// Bytes reserved or held.
    used: u32,
    busy: bool,
    /// Since when the FIFO could not take a full packet (Tick::MAX: not full).
    full_since: Tick,
    /// An injection FIFO's head packet as arbitration sees it, and the VC
    /// class it asks for (so that choosing its move does not read it).
    head: Head,
    vc: u8,
}

impl Fifo {
    /// Takes `pk`, its queue's new head, as the head arbitration sees it;
    /// `hprod` is where the router keeps the head's productive directions.
    #[inline(always)]
    fn set_head(&mut self, pk: &Packet, hprod: &mut u8) {
        (self.head, self.vc) = (Head::of(pk), pk.vc);
        *hprod = pk.prod;
    }
}

impl Default for Fifo {
    fn default() -> Self {
        Fifo { q: List::default(), used: 0, busy: false, full_since: Tick::MAX, head: Head::default(), vc: 0 }
    }
}

/// Router state of one node (fixed size: no per-node allocation). The first
/// cache line holds what every arbitration reads: which VC heads may move,
/// where they want to go, and which senders and paths are free; a head's
/// queue and packet are read only when it could move. Aligned to one cache
/// line, not two: aligned to 128 bytes (every router's first line then
/// starts a 128-byte pair) the torus benchmark ran 1.13 times slower, while
/// the same 64 bytes added at the end made no measurable difference
/// (BENCHMARKS.md, 2026-11-24).
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Router {
    // Line 0: what every arbitration reads first.
    /// Productive directions of each VC head, index port * 8 + vc.
    hprod: [u8; NDIR * 8],
    /// VC heads that may move: bit port * 8 + vc (queue non-empty, head not leaving).
    ready: u64,
    /// Transfer paths to senders left free, per receiver.
    paths_left: [u8; NDIR],
    /// Senders with a packet in transfer (bit d). A sender without one is
    /// free to be granted the next packet, which starts once the acks it is
    /// sending have left: the sender arbiter works ahead of the link.
    xfer_mask: u8,
    /// Receivers whose path to the reception FIFOs is in use (bit port).
    rx_busy: u8,
    // Line 1: what choosing a move reads.
    /// Per sender (direction): tokens of the downstream receiver's first four
    /// VCs as the sender knows them (every VC in the BG/L configuration; the
    /// dynamic VCs always), all six directions in one line.
    tokens_lo: [[u16; 4]; NDIR],
    /// The router's random stream (its increment follows from the node).
    rng: StreamState,
    coords: [u8; 3],
    /// Injection FIFOs whose head may move.
    inj_ready: u32,
    // Line 2: read when injection FIFOs hold packets or a receiver has more
    // than four VCs.
    /// Productive directions of each injection FIFO's head.
    inj_hprod: [u8; MAXF],
    /// Tokens of VCs 4.. (see `tokens_lo`).
    tokens_hi: [[u16; MAXV - 4]; NDIR],
    /// Reception FIFOs holding packets (bit f).
    rx_nonempty: u16,
    // Lines 3 to 5: the six senders.
    send: [Sender; NDIR],
    /// The link directions' counters beyond the senders' 32 bits.
    link_high: [LinkHigh; NDIR],
    recv: [Receiver; NDIR],
    inj: [Fifo; MAXF],
    rx: [Fifo; NRX],
}

impl Router {
    #[inline]
    fn rx_busy(&self, port: usize) -> bool {
        self.rx_busy & (1 << port) != 0
    }

    /// Tokens sender `d` knows of downstream VC `v`.
    #[inline]
    fn tokens(&self, d: usize, v: usize) -> u16 {
        if v < 4 {
            self.tokens_lo[d][v]
        } else {
            self.tokens_hi[d][v - 4]
        }
    }

    #[inline]
    fn tokens_mut(&mut self, d: usize, v: usize) -> &mut u16 {
        if v < 4 {
            &mut self.tokens_lo[d][v]
        } else {
            &mut self.tokens_hi[d][v - 4]
        }
    }

    /// VC `v` of receiver `port` starts sending its head packet out (the VC
    /// stays busy until the packet's tail has left): the packet leaves the
    /// queue and the next one becomes the head arbitration sees. Returns
    /// the tokens the leaving packet holds in the VC.
    #[inline(always)]
    fn take_vc_head(&mut self, pool: &Pool, port: usize, v: usize) -> u8 {
        let vc = &mut self.recv[port].vc[v];
        let charge = vc.charge;
        vc.q.pop(pool);
        if vc.q.head != NIL {
            vc.set_head(pool.get(vc.q.head), &mut self.hprod[port * 8 + v]);
        }
        vc.busy = true;
        self.ready &= !(1 << (port * 8 + v));
        charge
    }

    /// Injection FIFO `f` starts sending its head packet out (see
    /// [`Router::take_vc_head`]).
    #[inline(always)]
    fn take_inj_head(&mut self, pool: &Pool, f: usize) {
        let fifo = &mut self.inj[f];
        fifo.q.pop(pool);
        if fifo.q.head != NIL {
            fifo.set_head(pool.get(fifo.q.head), &mut self.inj_hprod[f]);
        }
        fifo.busy = true;
        self.inj_ready &= !(1 << f);
    }

    /// Senders without a packet in transfer (bit d).
    #[inline]
    fn free(&self) -> u8 {
        !self.xfer_mask & ((1 << NDIR) - 1)
    }

    /// The heads an arbitration evaluates now, found at once, a byte per
    /// head, from the router's first lines: VC heads (bit port * 8 + vc)
    /// whose productive links include a free one while their receiver has a
    /// transfer path left, or that are at their destination while their
    /// receiver's path to the reception FIFOs is free; and injection FIFO
    /// heads (bit f) whose productive links include a free one. Every other
    /// head has nothing to decide until something it waits for frees, and
    /// that will arbitrate again. Of these, only the heads in `focus`.
    #[inline]
    fn candidates(&self, focus: Focus) -> (u64, u32) {
        let free = u8x16::splat(self.free());
        let dirs = u8x16::splat(focus.dirs);
        let zero = u8x16::splat(0);
        // Per head (byte): a productive link is free; at its destination; a
        // productive link in the focus.
        let (mut forward, mut at_dest, mut hit) = (0u64, 0u64, focus.vcs);
        for c in 0..3 {
            let h = u8x16::new(self.hprod[c * 16..c * 16 + 16].try_into().unwrap());
            forward |= ((!(h & free).cmp_eq(zero)).move_mask() as u64) << (c * 16);
            at_dest |= (h.cmp_eq(zero).move_mask() as u64) << (c * 16);
            hit |= ((!(h & dirs).cmp_eq(zero)).move_mask() as u64) << (c * 16);
        }
        let pl = self.paths_left;
        let path_left = nonzero_bytes(u64::from_le_bytes([pl[0], pl[1], pl[2], pl[3], pl[4], pl[5], 0, 0])) as usize;
        let rx_free = !self.rx_busy as usize & ((1 << NDIR) - 1);
        let cand = ((forward & PORT_BYTES[path_left]) | (at_dest & PORT_BYTES[rx_free])) & hit;
        // Injection FIFO heads: bytes 0..16 and 8..24 (they overlap), read
        // only when one may move (their line is the router's third).
        if self.inj_ready == 0 {
            return (cand & self.ready, 0);
        }
        let lo = u8x16::new(self.inj_hprod[..16].try_into().unwrap());
        let hi = u8x16::new(self.inj_hprod[MAXF - 16..].try_into().unwrap());
        let inj = (!(lo & free).cmp_eq(zero)).move_mask() as u32 | ((!(hi & free).cmp_eq(zero)).move_mask() as u32) << (MAXF - 16);
        let inj_hit = (!(lo & dirs).cmp_eq(zero)).move_mask() as u32 | ((!(hi & dirs).cmp_eq(zero)).move_mask() as u32) << (MAXF - 16);
        (cand & self.ready, inj & self.inj_ready & (inj_hit | focus.inj))
    }
}

/// The heads an arbitration looks at: those an event may have let move.
/// Arbitration leaves no head that could move (see
/// [`Torus::movable_head`]), and a head that cannot move draws no random
/// number, so after an event only the heads whose inputs it changed need a
/// look: a new head, the heads of a receiver whose transfer path or path
/// to the reception FIFOs freed, the heads with a productive link whose
/// sender freed or got tokens back. Looking at no other head changes no
/// result.
#[derive(Clone, Copy, Debug)]
struct Focus {
    /// VC heads (bit port * 8 + vc).
    vcs: u64,
    /// Injection FIFO heads (bit f).
    inj: u32,
    /// Heads with a productive link among these directions.
    dirs: u8,
}

impl Focus {
    /// Every head (an event whose effect on the heads is not worked out).
    const ALL: Focus = Focus { vcs: u64::MAX, inj: u32::MAX, dirs: 0 };
    /// The heads of receiver `port`.
    fn receiver(port: usize) -> Focus {
        Focus { vcs: 0xff << (port * 8), inj: 0, dirs: 0 }
    }
    /// The head of injection FIFO `f`.
    fn fifo(f: usize) -> Focus {
        Focus { vcs: 0, inj: 1 << f, dirs: 0 }
    }
    /// The heads with direction `d` among their productive links.
    fn dir(d: usize) -> Focus {
        Focus { vcs: 0, inj: 0, dirs: 1 << d }
    }
    /// The heads in either.
    fn union(self, o: Focus) -> Focus {
        Focus { vcs: self.vcs | o.vcs, inj: self.inj | o.inj, dirs: self.dirs | o.dirs }
    }
}

/// For each set of receivers (bit port), the mask of their VC heads' bits
/// (port * 8 + vc).
const PORT_BYTES: [u64; 1 << NDIR] = {
    let mut t = [0u64; 1 << NDIR];
    let mut m = 0;
    while m < t.len() {
        let mut port = 0;
        while port < NDIR {
            if m & (1 << port) != 0 {
                t[m] |= 0xff << (port * 8);
            }
            port += 1;
        }
        m += 1;
    }
    t
};

/// Static parameters in the form the hot path wants.
#[derive(Clone, Debug)]
pub struct Params {
    pub tick_byte: Tick,
    pub hop_latency: Tick,
    pub chunk_bytes: u32,
    pub token_bytes: u32,
    pub trailer_gap: u32,
    pub ack_bytes: u32,
    pub ndyn: usize,
    /// First escape VC; dateline schemes use esc and esc + 1.
    pub esc: usize,
    pub hp: usize,
    pub nvc: usize,
    pub vc_tokens: u16,
    pub full_tokens: u16,
    pub escape: Escape,
    pub bubble: BubbleAccounting,
    pub arbitration: Arbitration,
    pub slq_fraction: f64,
    pub ranges: u32,
    pub net_priority: f64,
    pub paths: u8,
    pub ninj: usize,
    pub nhp_inj: usize,
    pub inj_bytes: u32,
    pub rx_bytes: u32,
    pub max_packet_bytes: u32,
    pub sw_header: u32,
    pub hw_header: u32,
    /// Ticks per throughput window.
    pub window: Tick,
    /// Tokens per chunk.
    pub tokens_per_chunk: u16,
    /// Range (0..token_ranges) of a token count or VC occupancy, by count.
    pub token_range: Vec<u8>,
    /// JSQ's score of a dynamic VC with a given token count: 0 when it
    /// cannot take a full packet, else 1 + its token range (1 for all under
    /// random arbitration).
    pub jsq_score: Vec<u8>,
    /// The token counts at which JSQ's score steps up by one, less one,
    /// biased by 0x8000 for signed comparison (a count passes step `s` when
    /// `(count ^ 0x8000) as i16 > s`): a count's score is the number of
    /// steps it passes (see [`jsq_options`]).
    pub jsq_steps: Vec<i16>,
    /// When some `m` gives every count's score as `((count * m) >> 16) + 1`
    /// from one full packet on (0 below): that `m` (0 under random
    /// arbitration, whose scores are all 1). Then [`jsq_options`] scores a
    /// count with one multiplication instead of a comparison per step.
    pub jsq_mul: Option<i16>,
    /// A link's payload counter takes a packet's payload when its transfer
    /// ends rather than when it starts (the counters read the same: see
    /// `Sender::owed`). Only when the packet is sure to exist then: its
    /// delivery at the next node, after which software may free it, ends
    /// after its transfer here when a hop's latency exceeds the trailer and
    /// gap's time.
    pub payload_at_end: bool,
    /// Random picks among set bits use the bit-deposit instruction (a
    /// property of the processor running the model, not of the machine;
    /// see [`crate::engine::fast_bit_deposit`]).
    pub bit_deposit: bool,
}

impl Params {
    pub fn from_machine(m: &Machine) -> Self {
        let t = m.torus();
        let ndyn = t.dynamic_vcs as usize;
        let esc = ndyn;
        let hp = esc + t.escape.escape_vcs();
        let token_range: Vec<u8> = (0..=m.vc_tokens).map(|v| quantize(v, m.vc_tokens, t.token_ranges)).collect();
        let jsq_score: Vec<u8> = token_range
            .iter()
            .enumerate()
            .map(|(v, &range)| match () {
                _ if (v as u32) < m.full_packet_tokens => 0,
                _ if t.arbitration == Arbitration::Random => 1,
                _ => range + 1,
            })
            .collect();
        // The score starts at 0 (no count below one full packet scores) and
        // never falls; a step of k is k steps at the same count.
        let jsq_steps = (1..jsq_score.len())
            .flat_map(|c| (jsq_score[c - 1]..jsq_score[c]).map(move |_| ((c as u16 - 1) ^ 0x8000) as i16))
            .collect();
        let jsq_mul = score_multiplier(&jsq_score, m.full_packet_tokens as u16, t.arbitration, t.token_ranges);
        Params {
            tick_byte: m.tick_byte,
            hop_latency: m.hop_latency,
            chunk_bytes: t.chunk_bytes,
            token_bytes: t.token_bytes,
            trailer_gap: t.trailer_bytes + t.gap_bytes,
            ack_bytes: t.ack_bytes,
            ndyn,
            esc,
            hp,
            nvc: hp + 1,
            vc_tokens: m.vc_tokens as u16,
            full_tokens: m.full_packet_tokens as u16,
            escape: t.escape,
            bubble: t.bubble_accounting,
            arbitration: t.arbitration,
            slq_fraction: t.slq_fraction,
            ranges: t.token_ranges,
            net_priority: t.in_network_priority_fraction,
            paths: t.paths_per_receiver as u8,
            ninj: t.injection_fifos as usize,
            nhp_inj: t.hp_injection_fifos as usize,
            inj_bytes: t.injection_fifo_bytes,
            rx_bytes: t.reception_fifo_bytes,
            max_packet_bytes: m.max_packet_bytes(),
            sw_header: t.sw_header_bytes,
            hw_header: t.hw_header_bytes,
            window: 10_000 * m.tick_byte,
            tokens_per_chunk: (t.chunk_bytes / t.token_bytes) as u16,
            jsq_score,
            jsq_steps,
            jsq_mul,
            payload_at_end: m.hop_latency > (t.trailer_bytes + t.gap_bytes) as Tick * m.tick_byte,
            bit_deposit: crate::engine::fast_bit_deposit(),
            token_range,
        }
    }
}

/// The multiplier `m` with which `((count * m) >> 16) + 1` (signed 16-bit
/// multiplication, high half) is the JSQ score `scores[count]` of every
/// count from `full` on, if there is one: a count's range is
/// `count * ranges / (size + 1)`, which `m = ceil(65536 * ranges / (size +
/// 1))` gives exactly for the small sizes of real machines. Checked here
/// for every count, so a machine it does not fit keeps the steps.
fn score_multiplier(scores: &[u8], full: u16, arbitration: Arbitration, ranges: u32) -> Option<i16> {
    let m = if arbitration == Arbitration::Random { 0 } else { (65536 * ranges as u64).div_ceil(scores.len() as u64) };
    let m = i16::try_from(m).ok()?;
    let fits = scores.len() <= i16::MAX as usize
        && scores.iter().enumerate().all(|(c, &s)| {
            let want = if (c as u16) < full { 0 } else { ((c as i32 * m as i32) >> 16) + 1 };
            s as i32 == want
        });
    fits.then_some(m)
}

/// A request made in arbitration phase 1.
#[derive(Clone, Copy, Debug, Default)]
struct Req {
    /// Receiver index 0..6 or 6 + FIFO index.
    src: u8,
    src_vc: u8,
    /// Output direction.
    dir: u8,
    vc: u8,
    /// Tokens to charge downstream.
    charge: u8,
    /// Queue fullness range of the source (for SLQ).
    fill: u8,
    hp: bool,
    pkt: u32,
    /// The packet's size, flags and datelines crossed (from its head
    /// summary, which the packet's own fields equal).
    chunks: u8,
    flags: u8,
    crossed: u8,
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
}

/// Productive directions of a packet at a node with coordinates `c`: the
/// hint bits of the dimensions where it has not reached its destination.
#[inline]
pub fn prod_at(c: [u8; 3], pk: &Packet) -> u8 {
    let mut open = 0u8;
    for k in 0..3 {
        open |= ((c[k] != pk.dc[k]) as u8 * 3) << (2 * k);
    }
    pk.hint & open
}

#[inline]
fn quantize(v: u32, cap: u32, ranges: u32) -> u8 {
    ((v as u64 * ranges as u64) / (cap as u64 + 1)).min(ranges as u64 - 1) as u8
}

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

    // ----- packet creation and the processor interface -----

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
        self.global.injected_packets += 1;
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
        let was_full = rxb - fifo.used < maxp;
        fifo.used -= bytes;
        if fifo.full_since != Tick::MAX && rxb - fifo.used >= maxp {
            self.nodes[n as usize].rx_full_ticks += now - fifo.full_since.max(self.counters_since);
            fifo.full_since = Tick::MAX;
        }
        if was_full {
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
        self.pool.live()
    }

    // ----- events -----

    /// Handles a torus event.
    pub fn handle(&mut self, now: Tick, e: Event, q: &mut EventQueue) {
        match e.kind {
            ev::ARRIVE => self.on_arrive(now, e.node, e.a as usize, e.data, q),
            ev::XFER_DONE => self.on_xfer_done(now, e.node, e.a as usize, q),
            ev::RX_DONE => self.on_rx_done(now, e.node, e.a as usize, e.b as usize, e.data, q),
            ev::COPY_DONE => self.on_copy_done(now, e.node, e.a as usize, e.data, q),
            ev::TOKEN => self.on_token(now, e.node, e.a as usize, e.b as usize, e.data as u16, q),
            _ => unreachable!("not a torus event: {}", e.kind),
        }
    }

    /// Prefetches what an upcoming event will read (see
    /// [`crate::engine::Model::touch`]). Stage 0: the router lines every
    /// arbitration reads and what the event needs first - the packet and
    /// receiver of an arrival, the sender and packet of a finished transfer
    /// and the VC or FIFO it leaves, the packet of a finished delivery.
    /// Stage 1, from the lines stage 0 brought: what the event's
    /// arbitration will read, and an arrival at its destination's reception
    /// FIFO.
    #[inline]
    pub fn touch(&self, e: &Event, stage: usize) {
        if e.kind >= ev::TORUS_MAX {
            return;
        }
        let Some(r) = self.routers.get(e.node as usize) else { return };
        let d = (e.a as usize).min(NDIR - 1);
        match stage {
            0 => {
                // The two lines every arbitration reads.
                prefetch(&r.ready);
                prefetch(&r.tokens_lo);
                match e.kind {
                    ev::ARRIVE => {
                        if let Some(p) = self.pool.try_get(e.data) {
                            prefetch(p);
                        }
                        // The packet's VC is in the packet: the receiver's lines.
                        prefetch(&r.recv[d].vc[0]);
                        if self.p.nvc > 4 {
                            prefetch(&r.recv[d].vc[4]);
                        }
                    }
                    ev::XFER_DONE => {
                        prefetch(&r.send[d]);
                        // Its packet, whose payload the link counts now.
                        if self.p.payload_at_end {
                            if let Some(p) = self.pool.try_get(e.data) {
                                prefetch(p);
                            }
                        }
                        // The VC or injection FIFO the transfer leaves.
                        let src = e.b as usize;
                        if src < NDIR {
                            prefetch(&r.recv[src].vc[e.c as usize % 8]);
                        } else {
                            prefetch(&r.inj[(src - NDIR).min(MAXF - 1)]);
                        }
                    }
                    ev::RX_DONE => {
                        if let Some(p) = self.pool.try_get(e.data) {
                            prefetch(p);
                        }
                        prefetch(&r.recv[d].vc[e.b as usize % 8]);
                    }
                    _ => {}
                }
            }
            _ => {
                if e.kind == ev::TOKEN && r.xfer_mask & (1 << d) != 0 {
                    // Its sender is busy: the token return will not arbitrate.
                    return;
                }
                // An arrival arbitrates for its own head only (its VC and
                // packet came in at stage 0): at its destination, the
                // reception FIFO whose room it checks, else the senders it
                // may start on.
                if e.kind == ev::ARRIVE {
                    if let Some(pk) = self.pool.try_get(e.data) {
                        if prod_at(r.coords, pk) == 0 {
                            prefetch(&r.rx[rx_index(pk.flags, d)]);
                            return;
                        }
                    }
                    prefetch(&r.send[0]);
                    prefetch(&r.send[2]);
                    prefetch(&r.send[4]);
                    return;
                }
                // What the event will read as things stand: the third line
                // when injection FIFOs hold packets or VCs 4.. exist, the
                // first VC line of every receiver with a head that may move,
                // the senders' three lines (a grant starts a transfer on one,
                // a token-ack goes out on another). Without a branch per
                // line: a line not needed is replaced by one already on its
                // way.
                let third = r.inj_ready != 0 || self.p.nvc > 4;
                prefetch(if third { &r.inj_hprod[0] } else { &r.hprod[0] });
                // The first injection FIFO whose head may move (its queue
                // is read right after, for the head packet).
                if r.inj_ready != 0 {
                    prefetch(&r.inj[(r.inj_ready.trailing_zeros() as usize).min(MAXF - 1)]);
                }
                let ready = nonzero_bytes(r.ready);
                let first = (ready | 1 << (NDIR - 1)).trailing_zeros() as usize;
                for port in 0..NDIR {
                    prefetch(&r.recv[if ready & (1 << port) != 0 { port } else { first }].vc[0]);
                }
                prefetch(&r.send[0]);
                prefetch(&r.send[2]);
                prefetch(&r.send[4]);
            }
        }
    }

    /// Starts bringing node `n`'s normal injection FIFOs into the cache
    /// (software about to send reads how full they are): one FIFO per line.
    #[inline]
    pub fn touch_injection(&self, n: u32) {
        if let Some(r) = self.routers.get(n as usize) {
            for f in (0..self.p.ninj.min(MAXF)).step_by(64 / std::mem::size_of::<Fifo>()) {
                prefetch(&r.inj[f]);
            }
        }
    }

    /// Starts bringing reception FIFO `f` of node `n` into the cache (a
    /// packet is about to join it).
    #[inline]
    pub fn touch_rx_fifo(&self, n: u32, f: usize) {
        if let Some(r) = self.routers.get(n as usize) {
            prefetch(&r.rx[f.min(NRX - 1)]);
        }
    }

    /// Brings the state arbitration is about to read at router `ni` into the
    /// cache in parallel rather than one miss after another: the queues of
    /// the heads it will evaluate, then their head packets. Changes nothing.
    #[inline]
    fn prefetch_heads(&self, ni: usize, cand: u64, inj: u32) {
        let r = &self.routers[ni];
        let (mut c, mut f) = (cand, inj);
        while c != 0 {
            let i = c.trailing_zeros() as usize;
            c &= c - 1;
            prefetch(&r.recv[i / 8].vc[i % 8]);
        }
        while f != 0 {
            let i = f.trailing_zeros() as usize;
            f &= f - 1;
            prefetch(&r.inj[i.min(MAXF - 1)]);
        }
        let (mut c, mut f) = (cand, inj);
        while c != 0 {
            let i = c.trailing_zeros() as usize;
            c &= c - 1;
            if let Some(p) = self.pool.try_get(r.recv[i / 8].vc[i % 8].q.head) {
                prefetch(p);
            }
        }
        while f != 0 {
            let i = f.trailing_zeros() as usize;
            f &= f - 1;
            if let Some(p) = self.pool.try_get(r.inj[i.min(MAXF - 1)].q.head) {
                prefetch(p);
            }
        }
    }

    /// The tokens held in VC `v` somewhere change by `delta` at `now`.
    #[inline]
    fn vc_stat(&mut self, v: usize, now: Tick, delta: i64) {
        self.global.vcs[v].change(now, self.p.token_bytes as u64, delta);
    }

    fn on_arrive(&mut self, now: Tick, n: u32, port: usize, id: u32, q: &mut EventQueue) {
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
        g.packets += 1;
        // A new head none of whose productive links is free cannot move now;
        // the sender that frees will arbitrate.
        if movable && (prod == 0 || prod & free != 0) {
            self.arbitrate_arrival(n, now, q, port, v);
        }
    }

    /// [`Torus::arbitrate`] after a packet became the head of injection FIFO
    /// `f`, a head that may move. Only this head can move (see [`Focus`]):
    /// it is evaluated straight away if one of its productive links is free.
    #[inline]
    fn arbitrate_injection(&mut self, n: u32, now: Tick, q: &mut EventQueue, f: usize) {
        self.global.arbitrations += 1;
        let r = &self.routers[n as usize];
        if r.inj_hprod[f] & r.free() != 0 {
            self.arbitrate_one(n, now, q, NO_DIR, 0, 1 << f);
        }
    }

    /// [`Torus::arbitrate`] after a packet became the head of VC `v` of
    /// receiver `port`, a head that may move and has a free productive link
    /// or is at its destination. Only this head can move (see [`Focus`]):
    /// it is evaluated straight away if its receiver has a transfer path
    /// left (if at its destination, its path to the reception FIFOs is
    /// free). Its queue and packet are in the cache: the arrival wrote them.
    #[inline(always)]
    fn arbitrate_arrival(&mut self, n: u32, now: Tick, q: &mut EventQueue, port: usize, v: usize) {
        self.global.arbitrations += 1;
        let r = &self.routers[n as usize];
        let candidate = if r.hprod[port * 8 + v] == 0 { !r.rx_busy(port) } else { r.paths_left[port] != 0 };
        if candidate {
            self.arbitrate_one(n, now, q, NO_DIR, 1 << (port * 8 + v), 0);
        }
    }

    /// The three arbitration phases at node `n` for its one head worth
    /// evaluating: VC head bit `c0` (port * 8 + vc) or, if `c0` is 0,
    /// injection FIFO head bit `c1`. They draw nothing beyond its choice of
    /// move. `trigger` as for [`Torus::arbitrate`].
    #[inline(always)]
    fn arbitrate_one(&mut self, n: u32, now: Tick, q: &mut EventQueue, trigger: u8, c0: u64, c1: u32) {
        let Torus { p, geo, routers, pool, global, .. } = self;
        let r = &mut routers[n as usize];
        let rq = if c0 != 0 {
            let (port, v) = (c0.trailing_zeros() as usize / 8, c0.trailing_zeros() as usize % 8);
            global.head_evaluations += 1;
            if r.hprod[port * 8 + v] == 0 {
                if let Some((id, f, bytes)) = delivery_room(p, r, pool, port, v) {
                    start_delivery(p, r, pool, global, n, now, port, v, id, f, bytes, q);
                }
                return;
            }
            vc_request(p, geo, r, pool, global, n, port, v, r.free())
        } else {
            inj_request(p, geo, r, pool, global, n, c1.trailing_zeros() as usize, r.free())
        };
        if let Some(rq) = rq {
            if trigger == rq.dir && rq.flags & flags::STALLED != 0 {
                global.unblocking_returns += 1;
            }
            start_transfer(p, geo, r, pool, global, n, now, rq, q);
        }
    }

    fn on_xfer_done(&mut self, now: Tick, n: u32, d: usize, q: &mut EventQueue) {
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
    fn return_tokens(&mut self, now: Tick, n: u32, port: usize, v: usize, charge: u16, q: &mut EventQueue) {
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

    fn on_token(&mut self, now: Tick, n: u32, d: usize, v: usize, amount: u16, q: &mut EventQueue) {
        self.global.token_returns += 1;
        let r = &mut self.routers[n as usize];
        *r.tokens_mut(d, v) += amount;
        debug_assert!(r.tokens(d, v) <= self.p.vc_tokens);
        if r.xfer_mask & (1 << d) == 0 {
            self.arbitrate(n, now, q, d as u8, Focus::dir(d));
        }
    }

    fn on_rx_done(&mut self, now: Tick, n: u32, port: usize, v: usize, id: u32, q: &mut EventQueue) {
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
        self.deliver(now, n, port, id);
        self.arbitrate(n, now, q, NO_DIR, Focus::receiver(port));
    }

    fn on_copy_done(&mut self, now: Tick, n: u32, port: usize, id: u32, q: &mut EventQueue) {
        self.routers[n as usize].rx_busy &= !(1 << port);
        self.global.deposit_copies += 1;
        self.deliver(now, n, port, id);
        // The receiver's path to its reception FIFOs is free again.
        self.arbitrate(n, now, q, NO_DIR, Focus::receiver(port));
    }

    fn deliver(&mut self, now: Tick, n: u32, port: usize, id: u32) {
        let pk = *self.pool.get(id);
        let f = rx_index(pk.flags, port);
        let r = &mut self.routers[n as usize];
        r.rx[f].q.push(&mut self.pool, id);
        r.rx_nonempty |= 1 << f;
        let g = &mut self.global;
        g.delivered_packets += 1;
        g.delivered_payload += pk.payload as u64;
        g.delivered_wire_bytes += (pk.chunks as u32 * self.p.chunk_bytes + self.p.trailer_gap + self.p.ack_bytes) as u64;
        g.latency.record(now - pk.created);
        g.network_latency.record(now - pk.injected);
        let w = ((now - self.counters_since) / self.p.window) as usize;
        if g.window_packets.len() <= w {
            g.window_packets.resize(w + 1, 0);
            g.window_payload.resize(w + 1, 0);
        }
        g.window_packets[w] += 1;
        g.window_payload[w] += pk.payload as u64;
        g.last_progress = now;
        self.notices.push(Notice::RxReady { node: n, fifo: f as u8 });
    }

    // ----- arbitration -----

    /// Runs the three arbitration phases at node `n` for the heads in
    /// `focus` (see [`Focus`]). `trigger` is the direction whose tokens just
    /// came back (for the unblocking statistic).
    ///
    /// A receiver starts at most one transfer per round; when a receiver had
    /// several movable VCs and something was granted, or a request lost at
    /// its sender while its head still has a free productive link, another
    /// round runs at once (the hardware would run it on the next cycle).
    fn arbitrate(&mut self, n: u32, now: Tick, q: &mut EventQueue, trigger: u8, focus: Focus) {
        let ni = n as usize;
        self.global.arbitrations += 1;
        let mut cands = self.routers[ni].candidates(focus);
        if cands == (0, 0) {
            return;
        }
        self.prefetch_heads(ni, cands.0, cands.1);
        let (c0, c1) = cands;
        if if c0 != 0 { c0 & (c0 - 1) == 0 && c1 == 0 } else { c1 & (c1 - 1) == 0 } {
            // One head to evaluate (the usual case).
            self.arbitrate_one(n, now, q, trigger, c0, c1);
            return;
        }
        let Torus { p, geo, routers, pool, global, reqs, .. } = self;
        let r = &mut routers[ni];
        let slq = p.arbitration == Arbitration::Slq;
        // Requests in a fixed array; phase 3 finds a sender's requests
        // through per-direction bit masks (request i = bit i).
        for round in 0..NDIR {
            // Phases 1 and 2 for the receivers' VC heads worth evaluating
            // (found before the first round, again for later ones).
            if round > 0 {
                cands = r.candidates(focus);
                if cands == (0, 0) {
                    return;
                }
            }
            let (cand, inj_cand) = cands;
            let free = r.free();
            let mut nreq = 0usize;
            let mut net_by_dir = [0u32; NDIR];
            let mut fresh_by_dir = [0u32; NDIR];
            // Directions with a request.
            let mut req_dirs = 0u8;
            let mut multi = false;
            let mut ports = nonzero_bytes(cand);
            while ports != 0 {
                let port = ports.trailing_zeros() as usize;
                ports &= ports - 1;
                let mut bits = (cand >> (port * 8)) as u8;
                // This receiver's candidates go to reqs[nreq..nreq + ncand];
                // the one it lets go then moves to reqs[nreq].
                let mut ncand = 0usize;
                // The receiver's path to its reception FIFOs serves the VC
                // heads waiting for it first come, first served.
                let mut delivery: Option<(usize, u32, usize, u32, Tick)> = None;
                while bits != 0 {
                    let v = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    global.head_evaluations += 1;
                    if r.hprod[port * 8 + v] == 0 {
                        // Delivery uses the receiver's own path to its reception FIFO.
                        if let Some((id, f, bytes)) = delivery_room(p, r, pool, port, v) {
                            let arrived = pool.get(id).arrived;
                            if delivery.is_none_or(|d| arrived < d.4) {
                                delivery = Some((v, id, f, bytes, arrived));
                            }
                        }
                        continue;
                    }
                    if let Some(rq) = vc_request(p, geo, r, pool, global, n, port, v, free) {
                        reqs[nreq + ncand] = rq;
                        ncand += 1;
                    }
                }
                if let Some((v, id, f, bytes, _)) = delivery {
                    start_delivery(p, r, pool, global, n, now, port, v, id, f, bytes, q);
                }
                if ncand > 0 {
                    let pick = receiver_pick(p, r, n, &reqs[nreq..nreq + ncand]);
                    let rq = reqs[nreq + pick];
                    net_by_dir[rq.dir as usize] |= 1 << nreq;
                    req_dirs |= 1 << rq.dir;
                    reqs[nreq] = rq;
                    nreq += 1;
                    multi |= ncand > 1;
                }
            }
            // Phase 1 for the injection FIFO heads.
            let mut ib = inj_cand;
            while ib != 0 {
                let f = ib.trailing_zeros() as usize;
                ib &= ib - 1;
                if let Some(rq) = inj_request(p, geo, r, pool, global, n, f, free) {
                    fresh_by_dir[rq.dir as usize] |= 1 << nreq;
                    req_dirs |= 1 << rq.dir;
                    reqs[nreq] = rq;
                    nreq += 1;
                }
            }
            // Phase 3: each free sender with requests picks one: packets
            // already in the network first (on a programmable fraction of
            // decisions), SLQ / random among equals.
            let mut m = req_dirs;
            // The productive directions of the heads whose requests lost at
            // their senders: a head with one of them still free chooses again.
            let mut lost_prod = 0u8;
            while m != 0 {
                let d = m.trailing_zeros() as usize;
                m &= m - 1;
                let (net, fresh) = (net_by_dir[d], fresh_by_dir[d]);
                let mut rng = r.rng.draw(n as u64);
                let prefer_net = net != 0 && (fresh == 0 || rng.chance(p.net_priority));
                let set = if prefer_net { net } else { fresh };
                let chosen = pick_slq_mask(&mut rng, &reqs[..], set, slq, p);
                let rq = reqs[chosen];
                if trigger == d as u8 && rq.flags & flags::STALLED != 0 {
                    global.unblocking_returns += 1;
                }
                let mut losers = (net | fresh) & !(1 << chosen);
                while losers != 0 {
                    let l = &reqs[losers.trailing_zeros() as usize];
                    losers &= losers - 1;
                    let src = l.src as usize;
                    lost_prod |= if src < NDIR { r.hprod[src * 8 + l.src_vc as usize] } else { r.inj_hprod[src - NDIR] };
                }
                start_transfer(p, geo, r, pool, global, n, now, rq, q);
            }
            if !multi && lost_prod & r.free() == 0 {
                return;
            }
        }
    }

    // ----- counters -----

    /// Restarts every counter at `now` (measurement after a warm-up).
    pub fn reset_counters(&mut self, now: Tick) {
        // Close open integrals so that they restart at now.
        for r in self.routers.iter_mut() {
            for f in r.inj.iter_mut().chain(r.rx.iter_mut()) {
                if f.full_since != Tick::MAX {
                    f.full_since = now;
                }
            }
            r.link_high = [LinkHigh::default(); NDIR];
            for s in r.send.iter_mut() {
                // A transfer under way was counted before the restart.
                (s.packets, s.chunks, s.payload, s.acks, s.owed) = (0, 0, 0, 0, false);
            }
        }
        for c in self.nodes.iter_mut() {
            *c = NodeCounters::default();
        }
        let last = self.global.last_progress;
        let mut vcs = self.global.vcs;
        for c in vcs.iter_mut() {
            *c = VcCounters { used: c.used, last_change: now, ..Default::default() };
        }
        self.global = GlobalCounters { last_progress: last, vcs, ..Default::default() };
        self.counters_since = now;
    }

    /// Brings time integrals up to `now` (call before reading counters).
    pub fn close_counters(&mut self, now: Tick) {
        let token_bytes = self.p.token_bytes as u64;
        for c in self.global.vcs.iter_mut() {
            c.advance(now, token_bytes);
        }
        for n in 0..self.routers.len() {
            let r = &mut self.routers[n];
            for f in r.inj.iter_mut() {
                if f.full_since != Tick::MAX {
                    self.nodes[n].inj_full_ticks += now - f.full_since.max(self.counters_since);
                    f.full_since = now;
                }
            }
            for f in r.rx.iter_mut() {
                if f.full_since != Tick::MAX {
                    self.nodes[n].rx_full_ticks += now - f.full_since.max(self.counters_since);
                    f.full_since = now;
                }
            }
        }
    }

    // ----- invariants (tests and debug checks) -----

    /// Checks that every sender's view of downstream tokens plus what the
    /// downstream VC holds plus what is in flight adds up to the VC size, and
    /// that no VC holds more than its size. Only exact when no packet or
    /// token is in flight (e.g. after the network drained).
    pub fn check_tokens_quiescent(&self) -> Result<(), String> {
        for n in 0..self.routers.len() as u32 {
            for d in 0..NDIR {
                if !self.geo.has_link(n, d) {
                    continue;
                }
                let nb = self.geo.neighbor(n, d);
                for v in 0..self.p.nvc {
                    let t = self.routers[n as usize].tokens(d, v);
                    let used = self.routers[nb as usize].recv[d].vc[v].used;
                    if t + used != self.p.vc_tokens {
                        return Err(format!("node {n} dir {} vc {v}: tokens {t} + used downstream {used} != {}", DIR_NAMES[d], self.p.vc_tokens));
                    }
                }
            }
        }
        Ok(())
    }

    /// Arbitration is work-conserving: after an event at node `n` has been
    /// handled, no head there could start now - a VC head at its
    /// destination with the path to the reception FIFOs free and room in
    /// its FIFO, or a head whose preferred move is on a free sender (and,
    /// for a VC head, a transfer path left). Returns the first such head.
    /// Evaluates the moves on a copy of the router, so the run is unchanged.
    pub fn movable_head(&self, n: u32) -> Option<String> {
        let (p, pool) = (&self.p, &self.pool);
        let mut r = self.routers[n as usize].clone();
        let free = r.free();
        for port in 0..NDIR {
            for v in 0..p.nvc {
                let vc = &r.recv[port].vc[v];
                if vc.q.is_empty() || vc.busy {
                    continue;
                }
                let h = vc.head;
                let prod = r.hprod[port * 8 + v];
                let movable = if prod == 0 {
                    delivery_room(p, &r, pool, port, v).is_some() && !r.rx_busy(port)
                } else if r.paths_left[port] == 0 || (h.is(flags::DEPOSIT) && !deposit_ok(p, &r, port, h)) {
                    false
                } else {
                    matches!(choose_move(p, &self.geo, &mut r, n, h, v as u8, prod, free), Choice::Move(d, ..) if free & (1 << d) != 0)
                };
                if movable {
                    return Some(format!("node {n}: the head of receiver {} VC {v} could move", DIR_NAMES[port]));
                }
            }
        }
        for f in 0..p.ninj + p.nhp_inj {
            let fifo = &r.inj[f];
            if fifo.q.is_empty() || fifo.busy {
                continue;
            }
            let (h, vc, prod) = (fifo.head, fifo.vc, r.inj_hprod[f]);
            if matches!(choose_move(p, &self.geo, &mut r, n, h, vc, prod, free), Choice::Move(d, ..) if free & (1 << d) != 0) {
                return Some(format!("node {n}: the head of injection FIFO {f} could move"));
            }
        }
        None
    }

    /// Largest occupancy of any VC right now, in tokens (never above the VC size).
    pub fn max_vc_used(&self) -> u16 {
        self.routers.iter().flat_map(|r| r.recv.iter().flat_map(|rv| rv.vc.iter().map(|v| v.used))).max().unwrap_or(0)
    }

    /// Packets sitting in VCs (a snapshot; used by deadlock detection).
    pub fn packets_in_vcs(&self) -> u64 {
        let mut c = 0u64;
        for r in &self.routers {
            for rv in &r.recv {
                for v in &rv.vc {
                    let mut id = v.q.head;
                    while id != NIL {
                        c += 1;
                        id = self.pool.get(id).next;
                    }
                }
            }
        }
        c
    }

    /// A sender's state: (busy until, packet in transfer or NIL, tokens per VC).
    pub fn sender_state(&self, n: u32, d: usize) -> (Tick, u32, Vec<u16>) {
        let s = &self.routers[n as usize].send[d];
        let r = &self.routers[n as usize];
        (s.busy_until, s.xfer, (0..self.p.nvc).map(|v| r.tokens(d, v)).collect())
    }

    /// After the network stopped moving: follows the escape moves that the
    /// waiting VC heads are blocked on until they close cycles of waiting
    /// heads. Returns, for the cycle that closed first, (the time it closed =
    /// the latest arrival among its packets, the number of VCs in it), or
    /// None when no cycle exists.
    pub fn deadlock_cycle(&self) -> Option<(Tick, usize)> {
        let nvc = self.p.nvc;
        let idx = |n: u32, port: usize, v: usize| (n as usize * NDIR + port) * nvc + v;
        let total = self.routers.len() * NDIR * nvc;
        let mut state = vec![0u32; total]; // 0 unvisited, else walk id
        let mut walk = 0u32;
        let mut best: Option<(Tick, usize)> = None;
        for n in 0..self.routers.len() as u32 {
            for port in 0..NDIR {
                for v in 0..nvc {
                    let mut cur = (n, port, v);
                    walk += 1;
                    let mut path: Vec<usize> = Vec::new();
                    loop {
                        let (cn, cp, cv) = cur;
                        let i = idx(cn, cp, cv);
                        let vc = &self.routers[cn as usize].recv[cp].vc[cv];
                        if vc.busy || vc.q.head == NIL {
                            break;
                        }
                        if state[i] == walk {
                            // Closed a cycle: the part of the path from i on.
                            let start = path.iter().position(|&x| x == i).unwrap_or(0);
                            let members = &path[start..];
                            let mut latest = 0;
                            for &m in members {
                                let (mn, rest) = (m / (NDIR * nvc), m % (NDIR * nvc));
                                let (mp, mv) = (rest / nvc, rest % nvc);
                                let h = self.routers[mn].recv[mp].vc[mv].q.head;
                                latest = latest.max(self.pool.get(h).arrived);
                            }
                            // Several cycles may exist by now: keep the one that closed first.
                            if best.is_none_or(|(t, _)| latest < t) {
                                best = Some((latest, members.len()));
                            }
                            break;
                        }
                        if state[i] != 0 {
                            break;
                        }
                        state[i] = walk;
                        path.push(i);
                        let pk = self.pool.get(vc.q.head);
                        if pk.prod == 0 {
                            break;
                        }
                        let (d, tv) = escape_move(&self.p, &self.geo, self.geo.coords(cn), Head::of(pk), pk.prod);
                        cur = (self.geo.neighbor(cn, d), d, tv);
                    }
                }
            }
        }
        best
    }

    /// Counters of the link leaving node `n` in direction `d`.
    pub fn link(&self, n: u32, d: usize) -> LinkCounters {
        let r = &self.routers[n as usize];
        let (s, h) = (&r.send[d], &r.link_high[d]);
        let (packets, chunks) = (h.packets + s.packets as u64, h.chunks + s.chunks as u64);
        LinkCounters {
            bytes: chunks * self.p.chunk_bytes as u64 + packets * self.p.trailer_gap as u64,
            packets,
            payload: h.payload + s.payload as u64 + if s.owed { self.pool.get(s.xfer).payload as u64 } else { 0 },
            ack_bytes: (h.acks + s.acks as u64) * self.p.ack_bytes as u64,
            stalls: h.stalls,
        }
    }

    /// Counters of every link direction, node by node, in direction order.
    pub fn links(&self) -> impl Iterator<Item = LinkCounters> + '_ {
        (0..self.routers.len() as u32).flat_map(move |n| (0..NDIR).map(move |d| self.link(n, d)))
    }

    /// Bytes in the injection FIFO `f` of node `n` (reserved or held).
    pub fn inj_used(&self, n: u32, f: usize) -> u32 {
        self.routers[n as usize].inj[f].used
    }
}

/// Tokens needed downstream and tokens charged for a move of head `h`, now
/// in VC `at_vc`, in direction `d` onto escape VC `v`.
#[inline]
fn escape_need(p: &Params, h: Head, at_vc: u8, d: usize, v: usize) -> (u16, u16) {
    let actual = h.chunks as u16 * p.tokens_per_chunk;
    let full = p.full_tokens;
    match p.escape {
        Escape::Bubble => {
            // Continuing on the bubble VC in the same direction needs
            // tokens for one packet; entering it (injection, turning into
            // a new dimension, falling back from a dynamic VC) needs two.
            // With full-size accounting every packet on the bubble VC
            // counts (and is charged) as full-sized. The naive
            // actual-size accounting counts real sizes, so the free space
            // fragments into holes too small for the waiting packets.
            let staying = h.last_dir == d as u8 && at_vc as usize == v;
            let unit = match p.bubble {
                BubbleAccounting::FullSize => full,
                BubbleAccounting::ActualSize => actual,
            };
            (if staying { unit } else { 2 * unit }, unit)
        }
        _ => (full, actual),
    }
}

/// The escape move of head `h` at a node with coordinates `c` and
/// productive mask `prod`: (direction, VC).
#[inline]
fn escape_move(p: &Params, geo: &Geometry, c: [u8; 3], h: Head, prod: u8) -> (usize, usize) {
    let d = match p.escape {
        Escape::DatelineDir => {
            // x+, y+, z+, then x-, y-, z-.
            let plus = prod & 0b01_0101;
            let m = if plus != 0 { plus } else { prod };
            m.trailing_zeros() as usize
        }
        _ => prod.trailing_zeros() as usize,
    };
    let base = if h.is(flags::HIGH_PRIORITY) { p.hp } else { p.esc };
    let v = match p.escape {
        Escape::Bubble => base,
        _ if h.is(flags::HIGH_PRIORITY) => base,
        _ => {
            let k = dim_of(d);
            if h.crossed & (1 << k) != 0 || geo.crosses_dateline_at(c, d) {
                base + 1
            } else {
                base
            }
        }
    };
    (d, v)
}

/// The outcome of phase 1 for one head.
#[derive(Clone, Copy, Debug)]
enum Choice {
    /// Move in direction `.0` onto VC `.1`, charging `.2` tokens downstream.
    Move(u8, u8, u8),
    /// No downstream tokens for the escape move in direction `.0` onto VC `.1`.
    NoTokens(usize, usize),
    /// Every option in the best token range is on a busy link.
    Busy,
}

/// For a mask of free senders, the JSQ option bits (direction * 4 + VC) on
/// them.
const FREE_OPTIONS: [u64; 64] = {
    let mut t = [0u64; 64];
    let mut free = 0;
    while free < 64 {
        let mut d = 0;
        while d < NDIR {
            if free & (1 << d) != 0 {
                t[free] |= 0xf << (4 * d);
            }
            d += 1;
        }
        free += 1;
    }
    t
};

/// Phase 1 for a head `h` with productive directions `prod` (not zero), now
/// in VC `at_vc`, at router `r` whose senders `free` are free: its
/// preferred move. JSQ among the (direction, dynamic VC) pairs that can take
/// a full packet, ties at random among those on a free link (the hardware
/// draws anew every cycle; the model only when something changes here), no
/// request while the best range is all on busy links; else the escape move
/// if it has the tokens.
#[inline(always)]
fn choose_move(p: &Params, geo: &Geometry, r: &mut Router, n: u32, h: Head, at_vc: u8, prod: u8, free: u8) -> Choice {
    if h.flags & (flags::DYNAMIC | flags::HIGH_PRIORITY) == flags::DYNAMIC {
        // The (direction, dynamic VC) options in the best token range, as
        // bits direction * 4 + VC; one of those on a free link at random
        // when several tie.
        let best = jsq_options(p, r, prod);
        if best != 0 {
            let opts = best & FREE_OPTIONS[free as usize];
            if opts == 0 {
                return Choice::Busy;
            }
            // A tie draws a number, one option does not. Whether it ties is
            // a coin flip for the branch predictor: the number is worked
            // out either way (scaled to one option it is 0, that option)
            // and only the stream's advance depends on the tie.
            let nopt = opts.count_ones();
            let x = r.rng.draw_if(n as u64, nopt > 1);
            let i = nth_set_bit(opts, ((x as u64 * nopt as u64) >> 32) as u32, p.bit_deposit);
            let actual = (h.chunks as u16 * p.tokens_per_chunk) as u8;
            return Choice::Move((i >> 2) as u8, (i & 3) as u8, actual);
        }
    }
    let (d, v) = escape_move(p, geo, r.coords, h, prod);
    let (need, charge) = escape_need(p, h, at_vc, d, v);
    if r.tokens(d, v) >= need {
        Choice::Move(d as u8, v as u8, charge as u8)
    } else {
        Choice::NoTokens(d, v)
    }
}

/// JSQ's options for a head with productive directions `prod` among the
/// machine's dynamic VCs: the (direction, VC) pairs in the best token range that can
/// take a full packet, as bits direction * 4 + VC. At most one direction
/// per dimension is productive (the minus one when both are); each of the
/// three vectors holds one dimension's two directions, so all 24 scores
/// come out together, without a branch per direction.
#[inline(always)]
fn jsq_options(p: &Params, r: &Router, prod: u8) -> u64 {
    let t = &r.tokens_lo;
    let dim = |k: usize| {
        let (a, b) = (t[2 * k], t[2 * k + 1]);
        i16x8::new([a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]].map(|x| x as i16))
    };
    let (x0, x1, x2) = (dim(0), dim(1), dim(2));
    // The scores: one multiplication (see `Params::jsq_mul`), else +1 per
    // step passed (counts biased by 0x8000 for the signed comparison).
    let (mut s0, mut s1, mut s2);
    if let Some(m) = p.jsq_mul {
        (s0, s1, s2) = (mul_scores(x0, m, p.full_tokens), mul_scores(x1, m, p.full_tokens), mul_scores(x2, m, p.full_tokens));
    } else {
        let bias = i16x8::splat(i16::MIN);
        let (x0, x1, x2) = (x0 ^ bias, x1 ^ bias, x2 ^ bias);
        (s0, s1, s2) = (i16x8::splat(0), i16x8::splat(0), i16x8::splat(0));
        for &step in &p.jsq_steps {
            let step = i16x8::splat(step);
            s0 -= x0.cmp_gt(step);
            s1 -= x1.cmp_gt(step);
            s2 -= x2.cmp_gt(step);
        }
    }
    let lanes = &JSQ_LANES[p.ndyn];
    let hint = |k: usize| ((prod >> (2 * k)) & 3) as usize;
    s0 &= i16x8::new(lanes[hint(0)]);
    s1 &= i16x8::new(lanes[hint(1)]);
    s2 &= i16x8::new(lanes[hint(2)]);
    let best = s0.max(s1).max(s2).reduce_max();
    if best == 0 {
        return 0;
    }
    let best = i16x8::splat(best);
    let m = |s: i16x8| s.cmp_eq(best).move_mask() as u64;
    m(s0) | m(s1) << 8 | m(s2) << 16
}

/// JSQ scores of eight token counts with multiplier `m` (see
/// `Params::jsq_mul`): `((count * m) >> 16) + 1` from `full` tokens on, 0
/// below.
#[inline(always)]
fn mul_scores(x: i16x8, m: i16, full: u16) -> i16x8 {
    (i16x8::mul_keep_high(x, i16x8::splat(m)) + i16x8::splat(1)) & x.cmp_gt(i16x8::splat(full as i16 - 1))
}

/// For n dynamic VCs and a dimension's hint bits (plus, minus), the lanes
/// (direction * 4 + VC within the dimension) JSQ considers: VCs 0..n of the
/// productive direction, the minus one when both are.
const JSQ_LANES: [[[i16; 8]; 4]; 5] = {
    let mut t = [[[0i16; 8]; 4]; 5];
    let mut n = 0;
    while n <= 4 {
        let mut hint = 1;
        while hint < 4 {
            let mut v = 0;
            while v < n {
                t[n][hint][(hint >> 1) * 4 + v] = -1;
                v += 1;
            }
            hint += 1;
        }
        n += 1;
    }
    t
};

/// The head of VC `v` of receiver `port` at router `r`, at its destination:
/// (the packet, its reception FIFO, its bytes) if that FIFO has room for it.
#[inline(always)]
fn delivery_room(p: &Params, r: &Router, pool: &Pool, port: usize, v: usize) -> Option<(u32, usize, u32)> {
    let (id, h) = (r.recv[port].vc[v].q.head, r.recv[port].vc[v].head);
    debug_assert_eq!(h, Head::of(pool.get(id)));
    let f = rx_index(h.flags, port);
    let bytes = h.chunks as u32 * p.chunk_bytes;
    (r.rx[f].used + bytes <= p.rx_bytes).then_some((id, f, bytes))
}

/// Phase 1 for the head of VC `v` of receiver `port` at router `r` of node
/// `n`, a head not at its destination, with the senders `free` free: its
/// request, if it may move now.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn vc_request(p: &Params, geo: &Geometry, r: &mut Router, pool: &mut Pool, global: &mut GlobalCounters, n: u32, port: usize, v: usize, free: u8) -> Option<Req> {
    let vc = &r.recv[port].vc[v];
    let (id, used, h) = (vc.q.head, vc.used, vc.head);
    debug_assert_eq!(h, Head::of(pool.get(id)));
    if h.is(flags::DEPOSIT) && !deposit_ok(p, r, port, h) {
        return None;
    }
    let (d, tv, ch) = match choose_move(p, geo, r, n, h, v as u8, r.hprod[port * 8 + v], free) {
        Choice::Busy => return None,
        Choice::Move(d, tv, ch) => (d, tv, ch),
        Choice::NoTokens(d, tv) => {
            r.recv[port].vc[v].head.flags = record_stall(r, pool, global, id, h, d, tv);
            return None;
        }
    };
    // An escape move on a busy link: the head waits for it.
    (free & (1 << d) != 0).then(|| Req { src: port as u8, src_vc: v as u8, dir: d, vc: tv, charge: ch, fill: p.token_range[used as usize], hp: v == p.hp, pkt: id, chunks: h.chunks, flags: h.flags, crossed: h.crossed })
}

/// Phase 1 for the head of injection FIFO `f` (see [`vc_request`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn inj_request(p: &Params, geo: &Geometry, r: &mut Router, pool: &mut Pool, global: &mut GlobalCounters, n: u32, f: usize, free: u8) -> Option<Req> {
    let fifo = &r.inj[f];
    let (id, fused, h, vc) = (fifo.q.head, fifo.used, fifo.head, fifo.vc);
    debug_assert_eq!((h, vc), (Head::of(pool.get(id)), pool.get(id).vc));
    let (d, tv, ch) = match choose_move(p, geo, r, n, h, vc, r.inj_hprod[f], free) {
        Choice::Busy => return None,
        Choice::Move(d, tv, ch) => (d, tv, ch),
        Choice::NoTokens(d, tv) => {
            r.inj[f].head.flags = record_stall(r, pool, global, id, h, d, tv);
            return None;
        }
    };
    (free & (1 << d) != 0).then(|| Req { src: (NDIR + f) as u8, src_vc: 0, dir: d, vc: tv, charge: ch, fill: quantize(fused, p.inj_bytes, p.ranges), hp: f >= p.ninj, pkt: id, chunks: h.chunks, flags: h.flags, crossed: h.crossed })
}

/// A head that found no downstream tokens for its escape move in direction
/// `d` onto VC `v`: a no-token stall, counted once per packet and hop.
/// Returns the head's flags with the stall marked.
#[inline]
fn record_stall(r: &mut Router, pool: &mut Pool, global: &mut GlobalCounters, id: u32, h: Head, d: usize, v: usize) -> u8 {
    if !h.is(flags::STALLED) {
        pool.get_mut(id).flags |= flags::STALLED;
        r.link_high[d].stalls += 1;
        global.stalls_by_vc[v] += 1;
    }
    h.flags | flags::STALLED
}

/// Deposit packets at an intermediate node also need reception room.
#[inline]
fn deposit_ok(p: &Params, r: &Router, port: usize, h: Head) -> bool {
    !r.rx_busy(port) && r.rx[rx_index(h.flags, port)].used + h.chunks as u32 * p.chunk_bytes <= p.rx_bytes
}

/// Phase 2: a receiver lets one of its requesting VCs go: high priority
/// first, else SLQ on a fraction of decisions, else random.
#[inline]
fn receiver_pick(p: &Params, r: &mut Router, n: u32, cand: &[Req]) -> usize {
    if cand.len() == 1 {
        return 0;
    }
    if let Some(i) = cand.iter().position(|c| c.hp) {
        return i;
    }
    let slq = p.arbitration == Arbitration::Slq;
    let all = (1u32 << cand.len()) - 1;
    pick_slq_mask(&mut r.rng.draw(n as u64), cand, all, slq, p)
}

/// Starts moving VC `v`'s head packet `id` of receiver `port` at node `n`
/// into reception FIFO `f`.
#[inline]
fn start_delivery(p: &Params, r: &mut Router, pool: &mut Pool, global: &mut GlobalCounters, n: u32, now: Tick, port: usize, v: usize, id: u32, f: usize, bytes: u32, q: &mut EventQueue) {
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
fn start_transfer(p: &Params, geo: &Geometry, r: &mut Router, pool: &mut Pool, global: &mut GlobalCounters, n: u32, now: Tick, rq: Req, q: &mut EventQueue) {
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
    let s = &mut r.send[d];
    s.xfer = id;
    s.src = rq.src;
    s.src_vc = rq.src_vc;
    s.src_charge = src_charge;
    let start = now.max(s.busy_until);
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
    global.hops += 1;
    let v = rq.vc as usize;
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

/// Bit i set when byte i of `x` is not zero.
#[inline]
fn nonzero_bytes(x: u64) -> u8 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let high = (((x & LOW7) + LOW7) | x) & !LOW7;
    ((high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

/// Picks among the requests whose bits are set in `set` (in increasing
/// order): on `slq_fraction` of the decisions (when SLQ is on) one from the
/// fullest source queue (ties at random), otherwise one at random. Returns
/// the chosen request's index.
fn pick_slq_mask(rng: &mut impl Draws, reqs: &[Req], set: u32, slq: bool, p: &Params) -> usize {
    let len = set.count_ones();
    if len == 1 {
        return set.trailing_zeros() as usize;
    }
    if slq && rng.chance(p.slq_fraction) {
        // The fullest source queues; one of them at random.
        let mut best = 0u8;
        let mut tied = 0u32;
        let mut m = set;
        while m != 0 {
            let i = m.trailing_zeros();
            m &= m - 1;
            let fill = reqs[i as usize].fill;
            if tied == 0 || fill > best {
                best = fill;
                tied = 0;
            }
            if fill == best {
                tied |= 1 << i;
            }
        }
        nth_set_bit(tied as u64, rng.below(tied.count_ones()), p.bit_deposit)
    } else {
        nth_set_bit(set as u64, rng.below(len), p.bit_deposit)
    }
}

// The router's lines as its comments place them: what every arbitration
// reads in the first two, the injection FIFO heads and VCs 4.. in the third,
// the six senders from the fourth on.
const _: () = assert!(std::mem::offset_of!(Router, tokens_lo) == 64);
const _: () = assert!(std::mem::offset_of!(Router, inj_ready) + 4 <= 128);
const _: () = assert!(std::mem::offset_of!(Router, inj_hprod) == 128);
const _: () = assert!(std::mem::offset_of!(Router, rx_nonempty) + 2 <= 192);
const _: () = assert!(std::mem::offset_of!(Router, send) == 192);
// A sender and its link counters: two to a cache line.
const _: () = assert!(std::mem::size_of::<Sender>() == 32);
const _: () = assert!(std::mem::size_of::<Vc>() == 16);
// Injection FIFOs two to a line (see `Torus::touch_injection`).
const _: () = assert!(std::mem::size_of::<Fifo>() == 32 && std::mem::offset_of!(Router, inj) % 64 == 0);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonzero_bytes_marks_exactly_the_nonzero_bytes() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Zero some bytes, keep single high or low bits in others.
            let w = x & (x >> 8 | 0x8001_0080_0100_8001) & !(i.wrapping_mul(0x00ff_0000_ff00_00ff) & 0xff00_ff00_00ff_ff00);
            let expect = (0..8).fold(0u8, |m, b| if (w >> (8 * b)) & 0xff != 0 { m | 1 << b } else { m });
            assert_eq!(nonzero_bytes(w), expect, "{w:#018x}");
        }
        assert_eq!(nonzero_bytes(0), 0);
        assert_eq!(nonzero_bytes(u64::MAX), 0xff);
        assert_eq!(nonzero_bytes(0x8000_0000_0000_0001), 0x81);
    }

    #[test]
    fn one_multiplication_scores_the_counts_of_real_machines_and_others_keep_the_steps() {
        let params = |settings: &[&str]| Params::from_machine(&crate::machine::bgl(settings).unwrap());
        // BG/L: 32 tokens in 4 ranges; random arbitration scores 1 from a full packet on.
        assert_eq!(params(&[]).jsq_mul, Some(7944));
        assert_eq!(params(&["torus.arbitration=random"]).jsq_mul, Some(0));
        // 64 ranges of 32 tokens need a multiplier beyond 16 bits.
        assert_eq!(params(&["torus.token_ranges=64"]).jsq_mul, None);
        for settings in [&[][..], &["torus.token_ranges=3", "torus.token_bytes=8"], &["torus.arbitration=random"]] {
            let p = params(settings);
            let m = p.jsq_mul.unwrap();
            for (c, &score) in p.jsq_score.iter().enumerate() {
                let got = mul_scores(i16x8::splat(c as i16), m, p.full_tokens);
                assert_eq!(got.to_array(), [score as i16; 8], "{settings:?} count {c}");
            }
        }
    }

    /// JSQ's options by the definition: the open (direction, dynamic VC)
    /// pairs with the best non-zero score from the score table.
    fn jsq_by_table(p: &Params, tokens: &[[u16; 4]; NDIR], prod: u8) -> u64 {
        let open: Vec<(usize, usize)> = (0..3)
            .filter_map(|k| {
                let hint = (prod >> (2 * k)) & 3;
                (hint != 0).then_some(2 * k + (hint >> 1) as usize)
            })
            .flat_map(|d| (0..p.ndyn).map(move |v| (d, v)))
            .collect();
        let score = |&(d, v): &(usize, usize)| p.jsq_score[tokens[d][v] as usize];
        let best = open.iter().map(score).max().unwrap_or(0);
        if best == 0 {
            return 0;
        }
        open.iter().filter(|o| score(o) == best).fold(0, |m, &(d, v)| m | 1 << (d * 4 + v))
    }

    proptest::proptest! {
        #[test]
        fn jsq_options_are_the_best_scoring_open_pairs(
            ndyn in 1u32..=4, ranges in 1u32..=64, arb in 0usize..3, buffer_packets in 1u32..=8,
            token_bytes in proptest::sample::select(vec![8u32, 16, 32]),
            seed: [u16; NDIR * 4], prod in 0u8..64)
        {
            let arb = ["random", "jsq", "slq"][arb];
            let settings = [
                format!("torus.dynamic_vcs={ndyn}"),
                format!("torus.token_ranges={ranges}"),
                format!("torus.arbitration={arb}"),
                format!("torus.token_bytes={token_bytes}"),
                format!("torus.vc_buffer_bytes={}", buffer_packets * 256),
            ];
            let m = crate::machine::bgl(&settings.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
            let p = Params::from_machine(&m);
            let mut torus = Torus::new(&m, 1);
            let r = &mut torus.routers[0];
            // Token counts anywhere from empty to full, with the steps' edges likely.
            let mut tokens = [[0u16; 4]; NDIR];
            for (i, t) in tokens.iter_mut().flatten().enumerate() {
                let x = seed[i] as u32;
                *t = if x % 3 == 0 { p.full_tokens - (x % 2) as u16 } else { (x % (p.vc_tokens as u32 + 1)) as u16 };
            }
            r.tokens_lo = tokens;
            let got = jsq_options(&p, r, prod);
            proptest::prop_assert_eq!(got, jsq_by_table(&p, &tokens, prod), "tokens {:?} prod {:#08b}", tokens, prod);
        }
    }

    /// JSQ compares token ranges only, but the hardware draws its tie-break
    /// anew every cycle: of tied options it ends up on a free link, and it
    /// waits only when every option in the best range is on a busy one.
    #[test]
    fn a_tie_goes_to_a_free_link_and_a_busy_best_range_waits() {
        let m = crate::machine::bgl(&[]).unwrap();
        let p = Params::from_machine(&m);
        let mut torus = Torus::new(&m, 7);
        let Torus { geo, routers, .. } = &mut torus;
        let r = &mut routers[0];
        let h = Head { flags: flags::DYNAMIC, chunks: 8, last_dir: 0, crossed: 0 };
        // Productive: x+ (direction 0) and y+ (direction 2), all tokens full.
        let prod = 0b0101;
        let choices = |r: &mut Router, busy: u8| {
            r.xfer_mask = busy;
            let free = r.free();
            (0..200)
                .map(|_| match choose_move(&p, geo, r, 0, h, 0, prod, free) {
                    Choice::Move(d, v, _) => Some((d, v)),
                    Choice::Busy => None,
                    Choice::NoTokens(..) => panic!("full tokens, yet no move"),
                })
                .collect::<Vec<_>>()
        };
        // Both links free: the four tied options all come up.
        let all = choices(r, 0);
        for opt in [(0, 0), (0, 1), (2, 0), (2, 1)] {
            assert!(all.contains(&Some(opt)), "{opt:?} never chosen: {all:?}");
        }
        // x+ busy: every draw takes y+, on either VC.
        let ys = choices(r, 1);
        assert!(ys.iter().all(|c| matches!(c, Some((2, _)))), "{ys:?}");
        assert!(ys.contains(&Some((2, 0))) && ys.contains(&Some((2, 1))));
        // Both busy: no request.
        assert!(choices(r, 0b101).iter().all(Option::is_none));
        // y+ in a lower token range and x+ busy: the head waits for x+ (JSQ
        // does not trade tokens for a free link).
        r.tokens_lo[2] = [p.full_tokens; 4];
        assert!(choices(r, 1).iter().all(Option::is_none));
        assert!(choices(r, 0).iter().all(|c| matches!(c, Some((0, _)))));
    }

    #[test]
    fn link_counters_carry_beyond_32_bits() {
        let (mut low, mut high) = (u32::MAX - 5, 0u64);
        count(&mut low, 4, &mut high);
        assert_eq!((low, high), (u32::MAX - 1, 0));
        count(&mut low, 240, &mut high);
        assert_eq!(high + low as u64, u32::MAX as u64 - 1 + 240);
        for _ in 0..3 {
            count(&mut low, u32::MAX, &mut high);
        }
        assert_eq!(high + low as u64, u32::MAX as u64 - 1 + 240 + 3 * u32::MAX as u64);
    }
}
