//! The torus packet as the hardware sees it, and the packet pool.

use crate::engine::Tick;

/// Marks "no packet" in intrusive lists.
pub const NIL: u32 = u32::MAX;

/// Packet flags.
pub mod flags {
    /// Dynamically (adaptively) routed; otherwise deterministic on the escape VC.
    pub const DYNAMIC: u8 = 1;
    /// Deposit bit: delivered to every node the packet passes.
    pub const DEPOSIT: u8 = 2;
    /// High priority (high-priority VC and FIFOs).
    pub const HIGH_PRIORITY: u8 = 4;
    /// Counted once as a no-token stall at its current hop.
    pub const STALLED: u8 = 8;
    /// A copy made by the deposit bit at an intermediate node.
    pub const COPY: u8 = 16;
    /// Deliver into the second reception FIFO group (the second core's or
    /// the second task's); otherwise the first.
    pub const GROUP1: u8 = 32;
    /// Sent on by the packet layer of an intermediate node, on the way
    /// round a fault (see `torus::faults`): software hears of it at its
    /// destination only.
    pub const FORWARDED: u8 = 64;
}

/// One torus packet. `next` links it into exactly one queue at a time.
/// Exactly one cache line, aligned to one: reading a packet is one miss.
/// The fields are in a fixed order (`repr(C)`) so that the four bytes
/// arbitration keeps beside a VC's queue (flags, chunks, last direction,
/// datelines crossed: see `torus::Head`) are adjacent and read as one word,
/// and apart from the bytes an arrival writes just before reading them (a
/// wider read over a byte still being stored waits for the store).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
#[repr(C, align(64))]
pub struct Packet {
    /// Driver data (message id, sequence number, colour ...).
    pub tag: u64,
    /// When software created the packet (latency is measured from here).
    pub created: Tick,
    /// When it entered the network (left the injection FIFO).
    pub injected: Tick,
    /// When its header arrived at the VC it occupies.
    pub arrived: Tick,
    pub next: u32,
    pub src: u32,
    pub dest: u32,
    /// Payload bytes (excluding both headers).
    pub payload: u16,
    /// Hops taken so far, counted on arrival at each node (what the tests
    /// of minimal routes check).
    pub hops: u8,
    /// The packets after the first that this one stands for: a train of
    /// the message tier (`msglayer`'s trains, on the coarse torus), 1 +
    /// `more` packets of `chunks` each moving back to back, `payload` their
    /// payload together. 0 on the packet tier.
    pub more: u8,
    pub flags: u8,
    /// Size in chunks.
    pub chunks: u8,
    /// Direction of its last hop (`NO_DIR` before the first).
    pub last_dir: u8,
    /// Dimensions whose dateline the packet has crossed (dateline escape schemes).
    pub crossed: u8,
    /// Destination coordinates.
    pub dc: [u8; 3],
    /// Hint bits: bit d = travel in direction d.
    pub hint: u8,
    /// VC the packet occupies (or will occupy after its current hop).
    pub vc: u8,
    /// Tokens the packet holds in the VC it occupies.
    pub charge: u8,
    /// Driver byte (e.g. a colour or FIFO choice).
    pub aux: u8,
    /// Productive directions at the node the packet is at (set on arrival).
    pub prod: u8,
    /// Where the packet goes after `dest`, when `dest` is an intermediate
    /// node it is forwarded through (NIL: `dest` is where it goes).
    pub to: u32,
}

const _: () = assert!(std::mem::size_of::<Packet>() == 64);
const _: () = assert!(std::mem::offset_of!(Packet, flags) % 4 == 0);
const _: () = assert!(std::mem::offset_of!(Packet, crossed) == std::mem::offset_of!(Packet, flags) + 3);

pub const NO_DIR: u8 = 255;

impl Packet {
    pub fn new(src: u32, dest: u32, chunks: u8, payload: u16, created: Tick) -> Self {
        Packet {
            next: NIL,
            src,
            dest,
            tag: 0,
            created,
            injected: 0,
            arrived: 0,
            payload,
            hops: 0,
            more: 0,
            dc: [0; 3],
            chunks,
            flags: 0,
            hint: 0,
            vc: 0,
            last_dir: NO_DIR,
            crossed: 0,
            charge: 0,
            aux: 0,
            prod: 0,
            to: NIL,
        }
    }
    #[inline]
    pub fn is(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    /// The packets it stands for (more than one: a train).
    #[inline]
    pub fn count(&self) -> u32 {
        1 + self.more as u32
    }
}

/// A pool of packets addressed by dense ids, with a free list, so moving a
/// packet never allocates once the pool has grown to the working set.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Pool {
    pkts: Vec<Packet>,
    free: u32,
    live: u32,
}

impl Pool {
    pub fn with_capacity(n: usize) -> Self {
        Pool { pkts: Vec::with_capacity(n), free: NIL, live: 0 }
    }
    #[inline]
    pub fn alloc(&mut self, p: Packet) -> u32 {
        self.live += 1;
        if self.free != NIL {
            let id = self.free;
            self.free = self.pkts[id as usize].next;
            self.pkts[id as usize] = p;
            // The next allocation reads the next free slot's link: start
            // bringing it in (a slot freed a while ago is out of the cache).
            if let Some(next) = self.pkts.get(self.free as usize) {
                crate::engine::prefetch(next);
            }
            id
        } else {
            if self.pkts.len() == self.pkts.capacity() {
                self.grow();
            }
            self.pkts.push(p);
            (self.pkts.len() - 1) as u32
        }
    }
    /// Doubles the room for packets; the new part is backed by huge pages
    /// where the system allows (packets are reached at random).
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.pkts.reserve(self.pkts.capacity().max(1024));
        crate::engine::advise_huge(&self.pkts);
    }
    #[inline]
    pub fn release(&mut self, id: u32) {
        self.live -= 1;
        self.pkts[id as usize].next = self.free;
        self.free = id;
    }
    #[inline]
    pub fn get(&self, id: u32) -> &Packet {
        &self.pkts[id as usize]
    }
    /// Packet `id`, if it is a slot of the pool.
    #[inline]
    pub fn try_get(&self, id: u32) -> Option<&Packet> {
        self.pkts.get(id as usize)
    }
    #[inline]
    pub fn get_mut(&mut self, id: u32) -> &mut Packet {
        &mut self.pkts[id as usize]
    }
    /// Packets allocated and not released.
    pub fn live(&self) -> u32 {
        self.live
    }
    /// Slots ever allocated (high-water mark).
    pub fn capacity_used(&self) -> usize {
        self.pkts.len()
    }
}

/// An intrusive FIFO list of packet ids.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct List {
    pub head: u32,
    pub tail: u32,
}

impl Default for List {
    fn default() -> Self {
        List { head: NIL, tail: NIL }
    }
}

impl List {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }
    #[inline]
    pub fn push(&mut self, pool: &mut Pool, id: u32) {
        pool.get_mut(id).next = NIL;
        if self.tail == NIL {
            self.head = id;
        } else {
            pool.get_mut(self.tail).next = id;
        }
        self.tail = id;
    }
    /// Unlinks the head. A list of one packet (the usual VC) does not read
    /// the packet: its successor is known to be none.
    #[inline]
    pub fn pop(&mut self, pool: &Pool) -> u32 {
        let id = self.head;
        if id == self.tail {
            *self = List::default();
        } else {
            self.head = pool.get(id).next;
        }
        id
    }
}
