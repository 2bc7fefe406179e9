//! Router state and its memory layout: VCs, receivers, senders, injection
//! and reception FIFOs, the first cache line every arbitration reads, and the
//! heads an event lets move (`Focus`).

use super::*;
use wide::u8x16;

/// What arbitration reads of the packet at the head of a queue, kept beside
/// the queue so that choosing a head's move does not read the packet (its
/// productive directions are in the router's first line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[repr(C)]
pub(super) struct Head {
    pub(super) flags: u8,
    pub(super) chunks: u8,
    pub(super) last_dir: u8,
    pub(super) crossed: u8,
}

impl Head {
    #[inline]
    pub(super) fn of(pk: &Packet) -> Self {
        Head { flags: pk.flags, chunks: pk.chunks, last_dir: pk.last_dir, crossed: pk.crossed }
    }
    #[inline]
    pub(super) fn is(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// A virtual channel: 16 bytes, four to a cache line.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Vc {
    pub(super) q: List,
    /// Tokens held by packets in this VC (queued or leaving).
    pub(super) used: u16,
    /// The head is being transferred out.
    pub(super) busy: bool,
    /// The head packet as arbitration sees it.
    pub(super) head: Head,
    /// Tokens the head packet holds here (its `charge`).
    pub(super) charge: u8,
}

impl Vc {
    /// Takes `pk`, its queue's new head, as the head arbitration sees it;
    /// `hprod` is where the router keeps the head's productive directions.
    #[inline(always)]
    pub(super) fn set_head(&mut self, pk: &Packet, hprod: &mut u8) {
        (self.head, self.charge) = (Head::of(pk), pk.charge);
        *hprod = pk.prod;
    }
}

/// A receiver's VCs in two cache lines: the first holds the first four
/// (all of them in the BG/L configuration).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
#[repr(C, align(64))]
pub(super) struct Receiver {
    pub(super) vc: [Vc; 8],
}

/// A link direction's sender: 32 bytes, two to a cache line, with the
/// link's counters in the form the hot path updates (wire bytes follow from
/// chunks and packets): their low 32 bits here, carries in the router's
/// `link_high` (see [`count`]).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Sender {
    /// The link is busy (packet, trailer, gap and acks) until then.
    pub(super) busy_until: Tick,
    /// Packet being transmitted, or NIL.
    pub(super) xfer: u32,
    /// Source of the transfer: receiver index 0..6, or 6 + injection FIFO.
    pub(super) src: u8,
    pub(super) src_vc: u8,
    /// Tokens the packet held at its source VC; its chunks when it came
    /// from an injection FIFO (whose room it frees when it has left).
    pub(super) src_charge: u8,
    /// The payload of the packet in transfer belongs in `payload` but has
    /// not been added yet: it is added when the transfer ends (the packet
    /// is read then, prefetched, rather than at the grant, where it may
    /// be cold), and [`Torus::link`] counts it meanwhile (see
    /// `Params::payload_at_end`).
    pub(super) owed: bool,
    pub(super) packets: u32,
    pub(super) chunks: u32,
    pub(super) payload: u32,
    pub(super) acks: u32,
}

impl Default for Sender {
    fn default() -> Self {
        Sender { busy_until: 0, xfer: NIL, src: 0, src_vc: 0, src_charge: 0, owed: false, packets: 0, chunks: 0, payload: 0, acks: 0 }
    }
}

/// A link direction's counters beyond the senders' 32 bits, and its
/// no-token stalls (rare).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct LinkHigh {
    pub(super) packets: u64,
    pub(super) chunks: u64,
    pub(super) payload: u64,
    pub(super) acks: u64,
    pub(super) stalls: u64,
}

/// Adds `x` to a 32-bit counter whose carries go to `high`.
#[inline]
pub(super) fn count(low: &mut u32, x: u32, high: &mut u64) {
    let (v, carry) = low.overflowing_add(x);
    *low = v;
    if carry {
        add_carry(high);
    }
}

#[cold]
pub(super) fn add_carry(high: &mut u64) {
    *high += 1 << 32;
}

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Fifo {
    pub(super) q: List,
    /// Bytes reserved or held.
    pub(super) used: u32,
    pub(super) busy: bool,
    /// Since when the FIFO could not take a full packet (Tick::MAX: not full).
    pub(super) full_since: Tick,
    /// An injection FIFO's head packet as arbitration sees it, and the VC
    /// class it asks for (so that choosing its move does not read it).
    pub(super) head: Head,
    pub(super) vc: u8,
}

impl Fifo {
    /// Takes `pk`, its queue's new head, as the head arbitration sees it;
    /// `hprod` is where the router keeps the head's productive directions.
    #[inline(always)]
    pub(super) fn set_head(&mut self, pk: &Packet, hprod: &mut u8) {
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
/// (BENCHMARKS.md of 2026-11-24, commit c375420, in git history).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[repr(C, align(64))]
pub(super) struct Router {
    // Line 0: what every arbitration reads first.
    /// Productive directions of each VC head, index port * 8 + vc.
    #[serde(with = "serde_big_array::BigArray")]
    pub(super) hprod: [u8; NDIR * 8],
    /// VC heads that may move: bit port * 8 + vc (queue non-empty, head not leaving).
    pub(super) ready: u64,
    /// Transfer paths to senders left free, per receiver.
    pub(super) paths_left: [u8; NDIR],
    /// Senders with a packet in transfer (bit d). A sender without one is
    /// free to be granted the next packet, which starts once the acks it is
    /// sending have left: the sender arbiter works ahead of the link.
    pub(super) xfer_mask: u8,
    /// Receivers whose path to the reception FIFOs is in use (bit port).
    pub(super) rx_busy: u8,
    // Line 1: what choosing a move reads.
    /// Per sender (direction): tokens of the downstream receiver's first four
    /// VCs as the sender knows them (every VC in the BG/L configuration; the
    /// dynamic VCs always), all six directions in one line.
    pub(super) tokens_lo: [[u16; 4]; NDIR],
    /// The router's random stream (its increment follows from the node).
    pub(super) rng: StreamState,
    pub(super) coords: [u8; 3],
    /// Injection FIFOs whose head may move.
    pub(super) inj_ready: u32,
    // Line 2: read when injection FIFOs hold packets or a receiver has more
    // than four VCs.
    /// Productive directions of each injection FIFO's head.
    pub(super) inj_hprod: [u8; MAXF],
    /// Tokens of VCs 4.. (see `tokens_lo`).
    pub(super) tokens_hi: [[u16; MAXV - 4]; NDIR],
    /// Reception FIFOs holding packets (bit f).
    pub(super) rx_nonempty: u16,
    // Lines 3 to 5: the six senders.
    pub(super) send: [Sender; NDIR],
    /// The link directions' counters beyond the senders' 32 bits.
    pub(super) link_high: [LinkHigh; NDIR],
    pub(super) recv: [Receiver; NDIR],
    pub(super) inj: [Fifo; MAXF],
    pub(super) rx: [Fifo; NRX],
}

impl Router {
    #[inline]
    pub(super) fn rx_busy(&self, port: usize) -> bool {
        self.rx_busy & (1 << port) != 0
    }

    /// Tokens sender `d` knows of downstream VC `v`.
    #[inline]
    pub(super) fn tokens(&self, d: usize, v: usize) -> u16 {
        if v < 4 {
            self.tokens_lo[d][v]
        } else {
            self.tokens_hi[d][v - 4]
        }
    }

    #[inline]
    pub(super) fn tokens_mut(&mut self, d: usize, v: usize) -> &mut u16 {
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
    pub(super) fn take_vc_head(&mut self, pool: &Pool, port: usize, v: usize) -> u8 {
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
    pub(super) fn take_inj_head(&mut self, pool: &Pool, f: usize) {
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
    pub(super) fn free(&self) -> u8 {
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
    pub(super) fn candidates(&self, focus: Focus) -> (u64, u32) {
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
pub(super) struct Focus {
    /// VC heads (bit port * 8 + vc).
    pub(super) vcs: u64,
    /// Injection FIFO heads (bit f).
    pub(super) inj: u32,
    /// Heads with a productive link among these directions.
    pub(super) dirs: u8,
}

impl Focus {
    /// Every head (an event whose effect on the heads is not worked out).
    pub(super) const ALL: Focus = Focus { vcs: u64::MAX, inj: u32::MAX, dirs: 0 };
    /// The heads of receiver `port`.
    pub(super) fn receiver(port: usize) -> Focus {
        Focus { vcs: 0xff << (port * 8), inj: 0, dirs: 0 }
    }
    /// The head of injection FIFO `f`.
    pub(super) fn fifo(f: usize) -> Focus {
        Focus { vcs: 0, inj: 1 << f, dirs: 0 }
    }
    /// The heads with direction `d` among their productive links.
    pub(super) fn dir(d: usize) -> Focus {
        Focus { vcs: 0, inj: 0, dirs: 1 << d }
    }
    /// The heads in either.
    pub(super) fn union(self, o: Focus) -> Focus {
        Focus { vcs: self.vcs | o.vcs, inj: self.inj | o.inj, dirs: self.dirs | o.dirs }
    }
}

/// For each set of receivers (bit port), the mask of their VC heads' bits
/// (port * 8 + vc).
pub(super) const PORT_BYTES: [u64; 1 << NDIR] = {
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
// A link's high counters: one more u64 here (48 bytes) made the torus
// benchmark 1.12-1.16 times slower (paired, 12 rounds twice); rare per-link
// counts such as retransmissions live in GlobalCounters instead.
const _: () = assert!(std::mem::size_of::<LinkHigh>() == 40);

// Injection FIFOs two to a line (see `Torus::touch_injection`).
const _: () = assert!(std::mem::size_of::<Fifo>() == 32 && std::mem::offset_of!(Router, inj) % 64 == 0);

#[cfg(test)]
mod tests {
    use super::*;

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
