//! Layer 3: the BG/P DMA engine, one per node, shared by the node's six
//! links and its intra-node traffic.
//!
//! The engine has two units: the *injection* unit writes every packet into
//! the torus's injection FIFOs, the *reception* unit takes every packet out
//! of the reception FIFOs - into a memory FIFO a core then reads, or, for
//! rendezvous data and remote gets, straight into the receive buffer - so
//! the cores never touch torus packets. Each unit moves
//! `dma.bytes_per_cycle` bytes a cycle plus `dma.packet_cycles` a packet
//! ([`Dma::transfer_ticks`]); an intra-node message is copied by both.
//!
//! Processes hand the engine work through their *work FIFOs*, one per
//! process (task slot), of `dma.work_fifo_descriptors` descriptors: a
//! process whose FIFO is full waits for a descriptor to finish, asks for an
//! interrupt, and refills it ([`Dma::post`], [`Dma::retire`]).
//!
//! The engine is a component of its own, as the torus and the tree are:
//! it owns its units' state (what each is busy with until when, the
//! packets software has queued for injection, the local transfers waiting
//! for the reception unit), its events ([`ev`]) and its counters. The
//! packet layer (`crate::packet::Net`) hands it the torus and passes what
//! a unit moved on to software.
//!
//! Software names the units as it names cores: they are the agent slots
//! after the node's processor cores, the injection unit first
//! ([`Dma::injection_unit`]).

use crate::engine::{Event, EventQueue, Tick};
use crate::machine::Machine;
use crate::torus::{flags, List, Packet, Torus, NRX};

/// Event kinds of the DMA engine.
pub mod ev {
    use crate::machine::Component;
    /// Unit `a` (0 injection, 1 reception) of `node`'s engine takes its
    /// next step.
    pub const WAKE: u8 = Component::Dma.kind(0);
    /// The injection unit has moved packet `data` into injection FIFO `c`
    /// ([`super::LOCAL`]: a local transfer, onto the node's loopback list);
    /// the unit goes on.
    pub const MOVED: u8 = Component::Dma.kind(1);
    /// The reception unit has read train `data` (the message tier: see
    /// [`super::Dma::receive`]): software takes it.
    pub const TRAIN_IN: u8 = Component::Dma.kind(2);
}

/// The `c` of a MOVED event whose packet goes to its own node: a local
/// transfer, memory to memory FIFO, no injection FIFO and no link.
pub const LOCAL: u8 = u8::MAX;

/// The injection unit's index in a node's engine (the `a` of its events).
pub const INJECTION: usize = 0;
/// The reception unit's index.
pub const RECEPTION: usize = 1;

/// Whether `p`, queued on `node`, is a local transfer (to the node itself,
/// not a deposit-bit packet): it takes no injection FIFO.
#[inline]
pub fn is_local(p: &Packet, node: u32) -> bool {
    p.dest == node && !p.is(flags::DEPOSIT)
}

/// Schedules unit `unit` of `node`'s engine to step at `at`.
#[inline]
fn wake_at(q: &mut EventQueue, at: Tick, node: u32, unit: usize) {
    q.push_at(at, Event { kind: ev::WAKE, a: unit as u8, b: 0, c: 0, node, data: 0 });
}

/// What the engine counted over a run, summed over its nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DmaCounters {
    /// Descriptors posted to work FIFOs.
    pub descriptors: u64,
    /// Times a process found its work FIFO full and had to wait for room.
    pub work_fifo_full: u64,
}

/// What a unit did over a run: packets moved, and the time it was moving them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UnitCounters {
    pub packets: u64,
    pub busy_ticks: u64,
}

/// The trains a unit is moving (the message tier, see [`Dma::inject`] and
/// [`Dma::receive`]): until when, and the share of the unit's time each
/// takes meanwhile (its time a packet over the time its packets come or go
/// apart). The rest of the unit's time is for its other packets.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Trains {
    until: [Tick; MAX_TRAINS],
    share: [f32; MAX_TRAINS],
    n: u8,
}

/// Most trains a unit keeps count of at once (one per torus FIFO and a
/// few more); the shares of further ones are not counted.
const MAX_TRAINS: usize = 8;

impl Trains {
    /// The share of the unit's time the trains take at `now` (those done
    /// are dropped).
    fn used(&mut self, now: Tick) -> f64 {
        let mut k = 0;
        let mut used = 0.0;
        for i in 0..self.n as usize {
            if self.until[i] > now {
                self.until[k] = self.until[i];
                self.share[k] = self.share[i];
                used += self.share[k] as f64;
                k += 1;
            }
        }
        self.n = k as u8;
        used
    }

    /// A unit's time for a packet of `each` ticks of its own at `now`: what
    /// the trains leave it (all of it without trains, as on packets).
    fn single(&mut self, now: Tick, each: Tick) -> Tick {
        if self.n == 0 {
            return each;
        }
        let free = (1.0 - self.used(now)).max(MIN_FREE);
        (each as f64 / free).ceil() as Tick
    }

    /// A train of `n` packets of `each` ticks of the unit, whose link takes
    /// a packet every `link` ticks, starting at `now`: how far apart the
    /// unit moves its packets (the link's time, or longer when the trains
    /// under way leave the unit too little), and its first packet's time.
    /// Until `until` (set with [`Trains::add`]) it takes its share.
    fn start(&mut self, now: Tick, each: Tick, link: Tick) -> (Tick, Tick) {
        let first = self.single(now, each);
        (link.max(first), first)
    }

    fn add(&mut self, until: Tick, share: f64) {
        if (self.n as usize) < MAX_TRAINS {
            self.until[self.n as usize] = until;
            self.share[self.n as usize] = share as f32;
            self.n += 1;
        }
    }
}

/// The least share of its time a unit keeps for a new packet or train.
const MIN_FREE: f64 = 1.0 / 16.0;

/// One unit of a node's engine.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Unit {
    busy_until: Tick,
    /// A WAKE event is pending (or the unit is stepping).
    wake_pending: bool,
    /// Injection: waiting for room in the injection FIFO at the head of
    /// the queue.
    waiting: bool,
    /// Injection: software holds packets back until one of the torus
    /// FIFOs they go to has room ([`Dma::hold`]).
    held: bool,
    /// Reception: where the round-robin over the reception FIFOs (and the
    /// loopback list, position NRX) stands.
    rr: u8,
    counters: UnitCounters,
}

/// A node's engine: its two units, the packets software queued for the
/// injection unit, and the local transfers the reception unit has yet to
/// take.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct NodeEngine {
    units: [Unit; 2],
    queue: List,
    queued: u32,
    loopback: List,
}

/// What a unit's step did.
pub enum Step {
    /// The reception unit read `pkt` (released from the torus's pool); the
    /// read is done at `done`.
    Read { pkt: Packet, done: Tick },
    /// The injection unit started moving packet `id`; it is done at `done`
    /// (a MOVED event is scheduled).
    Moving { id: u32, done: Tick },
    /// The reception unit took a train; it has read it at `done`, and a
    /// TRAIN_IN event hands it to software once its last packet is in.
    Train { done: Tick },
    /// Nothing to do (or the injection FIFO is full): idle until woken.
    Idle,
}

/// How fast a unit moves data.
#[derive(Clone, Copy, Debug)]
struct Rate {
    ticks_per_byte: f64,
    packet_ticks: Tick,
}

impl Rate {
    /// A unit's time to move `bytes` (one packet).
    #[inline]
    fn ticks(self, bytes: u32) -> Tick {
        self.packet_ticks + (bytes as f64 * self.ticks_per_byte).ceil() as Tick
    }
}

/// The DMA engines of a machine's nodes.
#[derive(Clone, Debug)]
pub struct Dma {
    /// The injection unit's agent slot in each node (the reception unit is
    /// the next): the slots after the processor cores.
    first_slot: usize,
    rate: Rate,
    /// Descriptors a work FIFO holds.
    work_fifo: u32,
    tasks_per_node: usize,
    /// Per work FIFO (node x tasks per node + task): descriptors posted
    /// and not yet done.
    posted: Vec<u32>,
    /// The message tier (see [`Dma::carry_trains`]): per unit (node x 2 +
    /// unit), the trains it is moving; empty on the other tiers.
    trains: Vec<Trains>,
    counters: DmaCounters,
    nodes: Vec<NodeEngine>,
}

impl Dma {
    /// The engines of machine `m`, if it has them (a `[dma]` section).
    pub fn new(m: &Machine) -> Option<Self> {
        let d = m.spec.dma.as_ref()?;
        let t = m.tick_cycle;
        let tasks_per_node = m.tasks_per_node() as usize;
        Some(Dma {
            first_slot: m.cores() as usize,
            rate: Rate { ticks_per_byte: t as f64 / d.bytes_per_cycle, packet_ticks: d.packet_cycles as Tick * t },
            work_fifo: d.work_fifo_descriptors,
            tasks_per_node,
            posted: vec![0; m.shape.nodes() as usize * tasks_per_node],
            trains: Vec::new(),
            counters: DmaCounters::default(),
            nodes: vec![NodeEngine::default(); m.shape.nodes() as usize],
        })
    }

    /// Lets the units carry the message tier's trains (`Packet::more`):
    /// each keeps count of the trains it is moving, which take a share of
    /// its time (see [`Dma::inject`], [`Dma::receive`]).
    pub fn carry_trains(&mut self) {
        self.trains = vec![Trains::default(); self.nodes.len() * 2];
    }

    /// A unit's time for a packet of `each` ticks of its own: all of it,
    /// or what the trains it is moving leave it.
    #[inline]
    fn single(trains: &mut [Trains], node: u32, unit: usize, now: Tick, each: Tick) -> Tick {
        match trains.get_mut(node as usize * 2 + unit) {
            Some(t) => t.single(now, each),
            None => each,
        }
    }

    /// The injection unit's agent slot in its node.
    #[inline]
    pub fn injection_unit(&self) -> usize {
        self.first_slot
    }

    /// The reception unit's agent slot in its node.
    #[inline]
    pub fn reception_unit(&self) -> usize {
        self.first_slot + 1
    }

    /// The unit (INJECTION or RECEPTION) at agent slot `slot`, if it is one.
    #[inline]
    pub fn unit_of(&self, slot: usize) -> Option<usize> {
        slot.checked_sub(self.first_slot).filter(|&u| u < 2)
    }

    /// A unit's time to move `bytes` (one packet).
    #[inline]
    pub fn transfer_ticks(&self, bytes: u32) -> Tick {
        self.rate.ticks(bytes)
    }

    fn fifo(&self, node: u32, task: u32) -> usize {
        node as usize * self.tasks_per_node + task as usize
    }

    /// Posts a descriptor to the work FIFO of `task` on `node`; false (and
    /// nothing posted) when the FIFO is full: the process waits for room.
    pub fn post(&mut self, node: u32, task: u32) -> bool {
        let f = self.fifo(node, task);
        if self.posted[f] >= self.work_fifo {
            self.counters.work_fifo_full += 1;
            return false;
        }
        self.posted[f] += 1;
        self.counters.descriptors += 1;
        true
    }

    /// Counts `n` posts that found the FIFO full, as [`Dma::post`] would
    /// have one by one (sends held whole by their software, which wait
    /// for room as one).
    pub fn count_full(&mut self, n: u64) {
        self.counters.work_fifo_full += n;
    }

    /// The engine has done a descriptor of the work FIFO of `task` on
    /// `node`: room for one more.
    pub fn retire(&mut self, node: u32, task: u32) {
        let f = self.fifo(node, task);
        self.posted[f] -= 1;
    }

    /// Whether the work FIFO of `task` on `node` has room for a descriptor.
    pub fn has_room(&self, node: u32, task: u32) -> bool {
        self.posted[self.fifo(node, task)] < self.work_fifo
    }

    /// What the engines counted.
    pub fn counters(&self) -> DmaCounters {
        self.counters
    }

    /// What unit `unit` (INJECTION or RECEPTION) moved, summed over nodes.
    pub fn unit_counters(&self, unit: usize) -> UnitCounters {
        self.nodes.iter().fold(UnitCounters::default(), |a, n| {
            let c = n.units[unit].counters;
            UnitCounters { packets: a.packets + c.packets, busy_ticks: a.busy_ticks + c.busy_ticks }
        })
    }

    // ----- the units as the event loop drives them -----

    /// Queues packet `id` (in `torus`'s pool) for `node`'s injection unit.
    pub fn queue(&mut self, torus: &mut Torus, node: u32, id: u32) {
        let e = &mut self.nodes[node as usize];
        e.queue.push(&mut torus.pool, id);
        e.queued += 1;
    }

    /// Packets queued for `node`'s injection unit, not yet moved.
    pub fn queued(&self, node: u32) -> u32 {
        self.nodes[node as usize].queued
    }

    /// Schedules a step of `unit` of `node` when it is free, unless one is
    /// pending.
    pub fn wake(&mut self, q: &mut EventQueue, now: Tick, node: u32, unit: usize) {
        let u = &mut self.nodes[node as usize].units[unit];
        if !u.wake_pending {
            u.wake_pending = true;
            wake_at(q, u.busy_until.max(now), node, unit);
        }
    }

    /// For a notice of the current event: true (and the wake taken) when
    /// the unit is free now and steps at the end of the event; otherwise
    /// as [`Dma::wake`].
    pub fn wake_now(&mut self, q: &mut EventQueue, now: Tick, node: u32, unit: usize) -> bool {
        let u = &mut self.nodes[node as usize].units[unit];
        if !u.wake_pending && u.busy_until <= now {
            u.wake_pending = true;
            return true;
        }
        self.wake(q, now, node, unit);
        false
    }

    /// An injection FIFO of `node` has room: whether the injection unit
    /// was waiting for it (it is no longer).
    pub fn fifo_freed(&mut self, node: u32) -> bool {
        let u = &mut self.nodes[node as usize].units[INJECTION];
        std::mem::replace(&mut u.waiting, false) | std::mem::replace(&mut u.held, false)
    }

    /// Software has packets for `node`'s injection unit, but every torus
    /// FIFO they go to is full: the unit is woken when one has room.
    pub fn hold(&mut self, node: u32) {
        self.nodes[node as usize].units[INJECTION].held = true;
    }

    /// The start of a unit's step: false (and its WAKE rescheduled) while
    /// it is busy. Its wake stays pending while it steps, so that work
    /// queued meanwhile does not schedule a second one.
    pub fn begin(&mut self, q: &mut EventQueue, now: Tick, node: u32, unit: usize) -> bool {
        let u = &mut self.nodes[node as usize].units[unit];
        u.wake_pending = true;
        if u.busy_until > now {
            wake_at(q, u.busy_until, node, unit);
            return false;
        }
        true
    }

    /// Whether the unit has nothing queued (software may queue more). The
    /// reception unit never has.
    pub fn nothing_queued(&self, node: u32, unit: usize) -> bool {
        unit != INJECTION || self.nodes[node as usize].queue.is_empty()
    }

    /// The injection unit's step: moves the packet at the head of its
    /// queue into its injection FIFO (or, for a local transfer, towards
    /// the loopback list) at the engine's rate, if there is room.
    pub fn inject(&mut self, torus: &mut Torus, q: &mut EventQueue, now: Tick, node: u32) -> Step {
        let e = &mut self.nodes[node as usize];
        let u = &mut e.units[INJECTION];
        if !e.queue.is_empty() && !u.waiting {
            let id = e.queue.head;
            let (f, bytes, local) = {
                let p = torus.pool.get(id);
                (p.aux as usize, p.chunks as u32 * torus.p.chunk_bytes, is_local(p, node))
            };
            // A transfer waits for room in its injection FIFO (a local
            // one takes none).
            if local || (torus.inj_free(node, f) >= bytes && torus.inj_reserve(node, f, bytes, now)) {
                let each = self.rate.ticks(bytes);
                let p = torus.pool.get(id);
                let n = p.count() as Tick;
                e.queue.pop(&torus.pool);
                e.queued -= 1;
                u.counters.busy_ticks += n * each;
                u.counters.packets += n as u64;
                let c = if local { LOCAL } else { f as u8 };
                if n == 1 {
                    let moved = now + Self::single(&mut self.trains, node, INJECTION, now, each);
                    u.busy_until = moved;
                    q.push_at(moved, Event { kind: ev::MOVED, a: INJECTION as u8, b: 0, c, node, data: id });
                    return Step::Moving { id, done: moved };
                }
                // A train (the message tier; never local): its first packet
                // enters the FIFO once moved, and the link takes the rest
                // back to back while the unit moves them between its other
                // packets, as it serves its FIFOs in turn. A unit that the
                // trains under way leave too little time moves them further
                // apart, and holds the first back so that the link, which
                // carries the train in one go, ends when the unit does.
                let link = torus.link_ticks(p);
                let trains = &mut self.trains[node as usize * 2 + INJECTION];
                let (spacing, first) = trains.start(now, each, link);
                let moved = now + first;
                let last = moved + (n - 1) * spacing;
                trains.add(last, each as f64 / spacing as f64);
                u.busy_until = moved;
                let entered = moved + (n - 1) * (spacing - link);
                q.push_at(entered, Event { kind: ev::MOVED, a: INJECTION as u8, b: 0, c, node, data: id });
                if entered > moved {
                    wake_at(q, moved, node, INJECTION);
                }
                return Step::Moving { id, done: last };
            }
            u.waiting = true;
        }
        u.wake_pending = false;
        Step::Idle
    }

    /// The reception unit's step: takes the next packet, in round-robin
    /// over the node's reception FIFOs and its local transfers, at the
    /// engine's rate.
    pub fn receive(&mut self, torus: &mut Torus, q: &mut EventQueue, now: Tick, node: u32) -> Step {
        let e = &mut self.nodes[node as usize];
        let mask = torus.rx_mask(node) | if e.loopback.is_empty() { 0 } else { 1 << NRX };
        let u = &mut e.units[RECEPTION];
        if mask == 0 {
            u.wake_pending = false;
            return Step::Idle;
        }
        let mut f = u.rr as usize;
        for _ in 0..=NRX {
            f = (f + 1) % (NRX + 1);
            if mask & (1 << f) != 0 {
                break;
            }
        }
        let id = if f == NRX { e.loopback.pop(&torus.pool) } else { torus.rx_pop(node, f, now, q) };
        let pkt = *torus.pool.get(id);
        let each = self.rate.ticks(pkt.chunks as u32 * torus.p.chunk_bytes);
        let n = pkt.count() as Tick;
        u.rr = f as u8;
        u.counters.busy_ticks += n * each;
        u.counters.packets += n as u64;
        if n > 1 {
            // A train: the unit reads its packets as they come in, the
            // first since it `arrived`, the rest a link's packet time apart
            // (further when the trains under way leave it too little),
            // between its other packets; software takes the train when the
            // last is read (TRAIN_IN).
            let trains = &mut self.trains[node as usize * 2 + RECEPTION];
            let (spacing, first) = trains.start(now, each, torus.link_ticks(&pkt));
            let last = (pkt.arrived + torus.train_rest(&pkt)).max(now + (n - 1) * spacing) + first;
            trains.add(last, each as f64 / spacing as f64);
            let done = now + first;
            u.busy_until = done;
            q.push_at(last, Event { kind: ev::TRAIN_IN, a: RECEPTION as u8, b: 0, c: 0, node, data: id });
            return Step::Train { done };
        }
        let done = now + Self::single(&mut self.trains, node, RECEPTION, now, each);
        u.busy_until = done;
        torus.pool.release(id);
        Step::Read { pkt, done }
    }

    /// The end of a read: the reception unit goes on when the read is done
    /// (one WAKE).
    pub fn read_done(&mut self, q: &mut EventQueue, node: u32, done: Tick) {
        wake_at(q, self.nodes[node as usize].units[RECEPTION].busy_until.max(done), node, RECEPTION);
    }

    /// A MOVED event: the packet enters its injection FIFO, or the node's
    /// loopback list. True when it is a local transfer (the reception unit
    /// should be woken).
    pub fn moved(&mut self, torus: &mut Torus, q: &mut EventQueue, now: Tick, e: &Event) -> bool {
        if e.c == LOCAL {
            self.nodes[e.node as usize].loopback.push(&mut torus.pool, e.data);
            true
        } else {
            torus.inj_push(e.node, e.c as usize, e.data, now, q);
            false
        }
    }

    /// Starts bringing `node`'s engine into the cache.
    #[inline]
    pub fn prefetch(&self, node: u32) {
        if let Some(n) = self.nodes.get(node as usize) {
            crate::engine::prefetch(n);
        }
    }

    // ----- partitions of a windowed run -----

    /// The engines of nodes `lo..hi`, to send to the process that merges a
    /// distributed run.
    pub fn export_part(&self, lo: u32, hi: u32) -> Vec<NodeEngine> {
        self.nodes[lo as usize..hi as usize].to_vec()
    }

    /// Takes in node `n`'s engine from another partition, its packet lists
    /// moved into this partition's pool by `rehome`.
    pub fn absorb_node(&mut self, o: &NodeEngine, n: u32, mut rehome: impl FnMut(List) -> List) {
        let mut e = *o;
        e.queue = rehome(o.queue);
        e.loopback = rehome(o.loopback);
        self.nodes[n as usize] = e;
    }

    /// Node `n`'s engine, to absorb into another partition.
    pub fn node(&self, n: u32) -> &NodeEngine {
        &self.nodes[n as usize]
    }

    /// Makes nodes `lo..hi` the engines a partition exported.
    pub fn import_part(&mut self, part: &[NodeEngine], lo: u32, hi: u32) {
        self.nodes[lo as usize..hi as usize].copy_from_slice(part);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{self, MachineSource};

    fn bgp() -> Machine {
        machine::load(&MachineSource::Preset("bgp".into()), &["partition.shape=\"2x1x1\"".into(), "dma.work_fifo_descriptors=2".into()]).unwrap()
    }

    #[test]
    fn a_full_work_fifo_refuses_until_a_descriptor_retires() {
        let m = bgp();
        let mut d = Dma::new(&m).unwrap();
        assert!(d.post(1, 3) && d.post(1, 3) && !d.has_room(1, 3));
        assert!(!d.post(1, 3), "a third descriptor in a FIFO of two");
        assert!(d.post(1, 2) && d.post(0, 3), "other processes' FIFOs are their own");
        d.retire(1, 3);
        assert!(d.has_room(1, 3) && d.post(1, 3));
        assert_eq!(d.counters(), DmaCounters { descriptors: 5, work_fifo_full: 1 });
    }

    #[test]
    fn units_follow_the_cores_and_move_bytes_at_the_engines_rate() {
        let m = bgp();
        let d = Dma::new(&m).unwrap();
        assert_eq!((d.injection_unit(), d.reception_unit()), (4, 5));
        assert_eq!([3, 4, 5, 6].map(|s| d.unit_of(s)), [None, Some(INJECTION), Some(RECEPTION), None]);
        // 3 bytes a cycle, no per-packet time: a 256-byte packet in 86 cycles.
        assert_eq!(d.transfer_ticks(256), 86 * m.tick_cycle);
        let bgl = machine::load(&MachineSource::Preset("bgl".into()), &[]).unwrap();
        assert!(Dma::new(&bgl).is_none());
    }

    #[test]
    fn a_local_transfer_is_moved_by_one_unit_and_read_by_the_other() {
        let m = bgp();
        let mut d = Dma::new(&m).unwrap();
        let mut torus = Torus::new(&m, 1);
        let mut q = EventQueue::new();
        let p = torus.make_packet(1, 1, 240, 0);
        let id = torus.pool.alloc(p);
        d.queue(&mut torus, 1, id);
        assert_eq!((d.queued(1), d.queued(0)), (1, 0));
        assert!(d.begin(&mut q, 0, 1, INJECTION));
        let Step::Moving { id: moved, done } = d.inject(&mut torus, &mut q, 0, 1) else { panic!("the injection unit did not move the packet") };
        assert_eq!((moved, done, d.queued(1)), (id, d.transfer_ticks(256), 0));
        // The unit is busy until the move is done: a step before then is
        // put off; the MOVED event lands the packet on the loopback list.
        assert!(!d.begin(&mut q, 1, 1, INJECTION));
        let e = Event { kind: ev::MOVED, a: INJECTION as u8, b: 0, c: LOCAL, node: 1, data: id };
        assert!(d.moved(&mut torus, &mut q, done, &e), "a local transfer wakes the reception unit");
        assert!(d.begin(&mut q, done, 1, RECEPTION));
        let Step::Read { pkt, done: read } = d.receive(&mut torus, &mut q, done, 1) else { panic!("the reception unit read nothing") };
        assert_eq!((pkt.src, pkt.dest, read), (1, 1, 2 * done));
        assert!(matches!(d.receive(&mut torus, &mut q, read, 1), Step::Idle), "one packet, read once");
        assert_eq!(d.unit_counters(INJECTION), UnitCounters { packets: 1, busy_ticks: done });
        assert_eq!(d.unit_counters(RECEPTION), UnitCounters { packets: 1, busy_ticks: done });
        assert_eq!(torus.live_packets(), 0);
    }

    /// The message tier's trains take a unit's time in proportion: a train
    /// whose link takes a packet every 524 ticks and the unit 86 leaves the
    /// unit 438 of every 524 ticks for other packets, which take that much
    /// longer until the train is done; trains that want more than the unit
    /// has go further apart (slower than their links), and a unit keeps a
    /// sixteenth of its time for a newcomer.
    #[test]
    fn trains_take_their_share_of_a_unit_and_leave_it_the_rest() {
        let mut t = Trains::default();
        assert_eq!(t.single(0, 86), 86, "no train: a packet's own time, as on packets");
        assert_eq!(t.start(0, 86, 524), (524, 86));
        t.add(10_000, 86.0 / 524.0);
        assert_eq!(t.single(100, 86), (86.0f64 / (1.0 - 86.0f64 / 524.0)).ceil() as Tick);
        assert_eq!(t.single(10_000, 86), 86, "the train is done");
        for _ in 0..MAX_TRAINS {
            t.add(20_000, 0.25);
        }
        assert_eq!(t.n as usize, MAX_TRAINS);
        let (spacing, first) = t.start(15_000, 86, 524);
        assert_eq!((spacing, first), (86 * 16, 86 * 16), "an overloaded unit keeps a sixteenth for it");
        assert_eq!(t.single(20_000, 86), 86);
    }
}
