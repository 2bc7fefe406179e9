//! Layer 5: the packet layer - the thin, stateless API software uses to drive
//! the torus (inject a packet into a FIFO, poll FIFO status, peek at a
//! header, read a packet) - and the loop each core runs over it, with the
//! processor cost of every operation from the machine description.
//!
//! Software above (traffic drivers now, the message layer later) implements
//! [`Software`]: it is called when a core has read a packet and when one of
//! its timers fires, and it queues packets with [`Net::send`].

use crate::engine::{Event, EventQueue, Tick};
use crate::barrier::Barrier;
use crate::collective::{Participant, Tree, TreeOp};
use crate::dma::{self, Dma};
use crate::machine::{Component, Machine};
use crate::node::{CoreCounters, Cores};
pub use crate::torus::Routing;
use crate::torus::{flags, Geometry, Notice, Packet, Torus, DIR_NAMES, NIL, NRX};

/// Event kinds of the node / packet layer.
pub mod ev {
    use crate::machine::Component;
    /// Core `a` takes its next step.
    pub const CORE_WAKE: u8 = Component::Node.kind(0);
    /// A core has written packet `data` into injection FIFO `c`: the packet
    /// enters the FIFO and core `a` goes on (a CORE_WAKE).
    pub const WRITTEN: u8 = Component::Node.kind(1);
    /// A software timer with tag `data` fires on core `a`.
    pub const TIMER: u8 = Component::Node.kind(2);
}

/// Processor costs of the packet layer, in ticks.
#[derive(Clone, Copy, Debug)]
pub struct Costs {
    pub read: Tick,
    pub write_cached: Tick,
    pub write_memory: Tick,
    pub poll: Tick,
    pub interrupt: Tick,
}

impl Costs {
    pub fn from_machine(m: &Machine) -> Self {
        let c = &m.spec.cpu;
        let t = m.tick_cycle;
        Costs {
            read: c.packet_read_cycles as Tick * t,
            write_cached: c.packet_write_cycles_cached as Tick * t,
            write_memory: c.packet_write_cycles_memory as Tick * t,
            poll: c.poll_cycles as Tick * t,
            interrupt: c.interrupt_cycles as Tick * t,
        }
    }
}

/// The header of a packet as software sees it (peek).
#[derive(Clone, Copy, Debug)]
pub struct Header {
    pub src: u32,
    pub dest: u32,
    pub payload: u16,
    pub tag: u64,
    pub aux: u8,
    pub deposit_copy: bool,
}

/// The simulated machine below the software: its hardware components
/// (torus, cores, and the collective and barrier networks where the machine
/// has them), and the packet layer's state.
pub struct Net {
    machine: Machine,
    torus: Torus,
    cores: Cores,
    tree: Option<Tree>,
    barrier: Option<Barrier>,
    dma: Option<Dma>,
    costs: Costs,
    /// Writes come from main memory (true) or cache (false).
    write_from_memory: bool,
    /// Software's own work per packet a core writes (the message layer's
    /// per-packet work), charged with the write as protocol time.
    sw_write_ticks: Tick,
    /// Per node: where the round-robin over injection FIFOs stands.
    rr_fifo: Vec<u8>,
    /// Idle agents (cores, DMA units) a notice of the current event wakes:
    /// they take their next step right after the event, at the same tick,
    /// without an event of their own.
    step_now: Vec<(u32, u8)>,
}

/// A partition's machine as [`Net::export_part`] sends it.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct NetPart {
    torus: crate::torus::TorusPart,
    cores: Vec<crate::node::Core>,
    rr_fifo: Vec<u8>,
    dma: Vec<dma::NodeEngine>,
}

/// Software running on the cores (a traffic driver, the message layer ...).
pub trait Software {
    /// Called once at time 0.
    fn start(&mut self, net: &mut Net, q: &mut EventQueue);
    /// A core of `node` finished reading a packet at `now`.
    fn on_packet(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize, pkt: &Packet);
    /// A timer set with [`Net::timer`] fired.
    fn on_timer(&mut self, _net: &mut Net, _q: &mut EventQueue, _now: Tick, _node: u32, _core: usize, _tag: u32) {}
    /// The core has nothing queued to send: software may queue more now
    /// (sources that inject as fast as they can pull work here).
    fn refill(&mut self, _net: &mut Net, _q: &mut EventQueue, _now: Tick, _node: u32, _core: usize) {}
    /// A core finished writing `pkt` into an injection FIFO at `now` (the
    /// send buffer behind it may be reused).
    #[inline]
    fn on_written(&mut self, _net: &mut Net, _q: &mut EventQueue, _now: Tick, _node: u32, _core: usize, _pkt: &Packet) {}
}

impl Net {
    pub fn new(machine: &Machine, seed: u64) -> Self {
        let dma = Dma::new(machine);
        Net {
            torus: Torus::new(machine, seed),
            cores: Cores::new(machine, dma.is_some()),
            dma,
            tree: machine.spec.collective.is_some().then(|| Tree::new(machine)),
            barrier: machine.spec.barrier.is_some().then(|| Barrier::new(machine)),
            costs: Costs::from_machine(machine),
            machine: machine.clone(),
            write_from_memory: false,
            sw_write_ticks: 0,
            rr_fifo: vec![0; machine.shape.nodes() as usize],
            step_now: Vec::new(),
        }
    }

    // ----- what software may know of the machine (the packet layer is its
    // only road to the torus and the cores: Net's fields are private, and
    // the views below are read-only) -----

    /// The machine this is.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The torus, to read (counters for reports and timelines, checks in
    /// tests); software changes it only through the packet layer's calls.
    pub fn torus(&self) -> &Torus {
        &self.torus
    }

    /// The cores, to read (their counters, for reports).
    pub fn cores(&self) -> &Cores {
        &self.cores
    }

    /// The partition's geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.torus.geo
    }

    /// Communication cores per node (the others compute).
    pub fn comm_cores(&self) -> usize {
        self.cores.comm
    }

    /// The node's DMA engine, where the machine has one: the slot of its
    /// injection unit (the reception unit is the next).
    pub fn dma_slot(&self) -> Option<usize> {
        self.dma.as_ref().map(Dma::injection_unit)
    }

    /// The DMA engines, to read (their counters), where the machine has them.
    pub fn dma(&self) -> Option<&Dma> {
        self.dma.as_ref()
    }

    /// The DMA engines of a machine that has them (the `dma_*` calls are
    /// for such machines only).
    fn engine(&self) -> &Dma {
        self.dma.as_ref().expect("a machine with a DMA engine")
    }
    fn engine_mut(&mut self) -> &mut Dma {
        self.dma.as_mut().expect("a machine with a DMA engine")
    }

    /// Posts a descriptor to the DMA work FIFO of `task` on `node` (see
    /// [`Dma::post`]); false when it is full.
    pub fn dma_post(&mut self, node: u32, task: u32) -> bool {
        self.engine_mut().post(node, task)
    }

    /// Counts `n` posts to a full DMA work FIFO (see [`Dma::count_full`]).
    pub fn dma_count_full(&mut self, n: u64) {
        self.engine_mut().count_full(n)
    }

    /// A descriptor of the DMA work FIFO of `task` on `node` is done (see
    /// [`Dma::retire`]).
    pub fn dma_retire(&mut self, node: u32, task: u32) {
        self.engine_mut().retire(node, task)
    }

    /// Whether the DMA work FIFO of `task` on `node` has room.
    pub fn dma_has_room(&self, node: u32, task: u32) -> bool {
        self.engine().has_room(node, task)
    }

    /// Software's work per packet a core writes, done with the write (one
    /// busy stretch, no extra wake-up); not on a DMA engine.
    pub fn set_write_overhead(&mut self, ticks: Tick) {
        self.sw_write_ticks = ticks;
    }

    /// Processor cores per node.
    pub fn cores_per_node(&self) -> usize {
        self.cores.per_node
    }

    /// Agents per node that software hands packets to or hears from: the
    /// processor cores, then the DMA engine's two units where the machine
    /// has one.
    pub fn agents_per_node(&self) -> usize {
        self.cores.per_node + if self.dma.is_some() { 2 } else { 0 }
    }

    /// Agents of the machine (nodes x agents per node), and the dense index
    /// of one.
    pub fn agent_count(&self) -> usize {
        self.torus.geo.nodes() as usize * self.agents_per_node()
    }
    pub fn agent_index(&self, node: u32, agent: usize) -> usize {
        node as usize * self.agents_per_node() + agent
    }

    /// The agent a core or DMA event is for.
    #[inline]
    pub fn agent_of(&self, e: &Event) -> usize {
        match &self.dma {
            Some(d) if e.owner() == Component::Dma as u8 => d.injection_unit() + e.a as usize,
            _ => e.a as usize,
        }
    }

    /// The DMA unit at agent slot `agent`, if it is one.
    #[inline]
    fn unit_of(&self, agent: usize) -> Option<usize> {
        if agent < self.cores.per_node {
            None
        } else {
            self.dma.as_ref().and_then(|d| d.unit_of(agent))
        }
    }

    /// The cores' counters summed, with the DMA units' packets and time
    /// counted as writes (injection unit) and reads (reception unit).
    pub fn core_totals(&self) -> CoreCounters {
        let mut t = self.cores.totals();
        if let Some(d) = &self.dma {
            let (i, r) = (d.unit_counters(dma::INJECTION), d.unit_counters(dma::RECEPTION));
            t.inject_ticks += i.busy_ticks;
            t.packets_written += i.packets;
            t.read_ticks += r.busy_ticks;
            t.packets_read += r.packets;
        }
        t
    }

    /// When a core has done what it was given.
    pub fn core_busy_until(&self, node: u32, core: usize) -> Tick {
        self.cores.get(node, core).busy_until
    }

    /// A core's counters (time by category, packets).
    pub fn core_counters(&self, node: u32, core: usize) -> CoreCounters {
        self.cores.get(node, core).counters
    }

    /// Which core reads each reception FIFO (`readers`, and how many cores
    /// read), and which task owns each injection FIFO (VN mode): how software
    /// lays its tasks over the node.
    /// (On a machine with a DMA engine the engine reads and writes every
    /// FIFO whatever software asks.)
    pub fn assign_fifos(&mut self, readers: [u8; NRX], reading_cores: usize, owners: Option<Vec<u8>>) {
        if self.dma.is_some() {
            return;
        }
        self.cores.set_readers(readers, reading_cores);
        self.cores.owners = owners;
    }

    /// Bytes held or reserved in injection FIFO `f` of `node`.
    pub fn inj_used(&self, node: u32, f: usize) -> u32 {
        self.torus.inj_used(node, f)
    }

    /// A packet that is still in the machine (None once freed).
    pub fn live_packet(&self, id: u32) -> Option<&Packet> {
        self.torus.pool.try_get(id)
    }

    /// Sets `p` to travel along direction `d` only (a line route).
    pub fn set_line_route(&self, p: &mut Packet, d: usize) {
        self.torus.set_line_route(p, d);
    }

    /// Runs the torus on its coarse tier (`torus::coarse`), or says why not.
    pub fn set_coarse_torus(&mut self) -> Result<(), String> {
        self.torus.set_coarse()
    }
    /// Lets the DMA engine carry the message tier's trains (see
    /// [`Dma::carry_trains`]); nothing on a machine without one.
    pub fn carry_trains(&mut self) {
        if let Some(d) = self.dma.as_mut() {
            d.carry_trains();
        }
    }
    /// Whether the torus runs on its coarse tier.
    pub fn coarse_torus(&self) -> bool {
        self.torus.is_coarse()
    }

    // ----- the collective and barrier networks -----

    /// Whether the machine has a collective (tree) network / a GI barrier.
    pub fn has_tree(&self) -> bool {
        self.tree.is_some()
    }
    pub fn has_barrier(&self) -> bool {
        self.barrier.is_some()
    }

    /// The collective network, where the machine has one (its counters).
    pub fn tree(&self) -> Option<&Tree> {
        self.tree.as_ref()
    }

    /// Hands an operation to the collective network; each participant's
    /// core is told when its part is done (see [`Tree::operate`]).
    /// Panics on a machine without one: check [`Net::has_tree`].
    pub fn tree_operation(&mut self, q: &mut EventQueue, op: TreeOp, bytes: u64, two_pass: bool, who: &[Participant], floor: Tick) {
        self.tree.as_mut().expect("a machine with a collective network").operate(q, op, bytes, two_pass, who, floor);
    }

    /// Hands a barrier to the global-interrupt network (see
    /// [`Barrier::operate`]). Panics on a machine without one: check
    /// [`Net::has_barrier`].
    pub fn barrier_operation(&mut self, q: &mut EventQueue, who: &[Participant], floor: Tick) {
        self.barrier.as_mut().expect("a machine with a global-interrupt barrier").operate(q, who, floor);
    }

    // ----- measurement, for the run loop -----

    /// Counts throughput in windows of `ticks`.
    pub fn set_window(&mut self, ticks: Tick) {
        self.torus.p.window = ticks;
    }
    /// Restarts every counter at `now` (after a warm-up).
    pub fn reset_counters(&mut self, now: Tick) {
        self.torus.reset_counters(now);
    }
    /// Closes the counters' open integrals at `now` (the run's end).
    pub fn close_counters(&mut self, now: Tick) {
        self.torus.close_counters(now);
    }
    /// Makes this the partition owning nodes `lo..hi` of a windowed run
    /// (see [`crate::engine::parallel`]).
    pub fn set_partition(&mut self, lo: u32, hi: u32) {
        self.torus.set_partition(lo, hi);
    }
    /// The packet of an ARRIVE event leaves for another partition (see
    /// [`crate::torus::Torus::emigrate`]).
    pub fn emigrate(&mut self, id: u32) -> Packet {
        self.torus.emigrate(id)
    }
    /// The packet of a coarse-tier head (COARSE_HOP) leaves for another
    /// partition (see [`crate::torus::Torus::coarse_emigrate`]).
    pub fn coarse_emigrate(&mut self, id: u32) -> Packet {
        self.torus.coarse_emigrate(id)
    }
    /// A packet arrives from another partition: its id here.
    pub fn immigrate(&mut self, pk: Packet) -> u32 {
        self.torus.immigrate(pk)
    }
    /// Packet slots allocated (the most packets held at once).
    pub fn packet_slots(&self) -> u64 {
        self.torus.pool.capacity_used() as u64
    }
    /// Takes in the nodes `lo..hi` of another partition of the same
    /// windowed run, and its share of the machine-wide counters.
    pub fn absorb(&mut self, o: &Net, lo: u32, hi: u32) {
        let mut map = std::collections::HashMap::new();
        self.torus.absorb(&o.torus, lo, hi, &mut map);
        self.cores.absorb(&o.cores, lo, hi);
        for n in lo..hi {
            for c in 0..self.cores.per_node {
                let q = self.cores.get(n, c).sendq;
                self.cores.get_mut(n, c).sendq = self.torus.rehome(&o.torus.pool, q, &mut map);
            }
            if let (Some(d), Some(od)) = (self.dma.as_mut(), o.dma.as_ref()) {
                let torus = &mut self.torus;
                d.absorb_node(od.node(n), n, |l| torus.rehome(&o.torus.pool, l, &mut map));
            }
        }
        self.rr_fifo[lo as usize..hi as usize].copy_from_slice(&o.rr_fifo[lo as usize..hi as usize]);
    }
    /// What [`Self::absorb`] reads of this partition (nodes `lo..hi`), to
    /// send to the process that merges a distributed run.
    pub fn export_part(&self, lo: u32, hi: u32) -> NetPart {
        let (a, b) = (self.cores.idx(lo, 0), self.cores.idx(hi, 0));
        NetPart {
            torus: self.torus.export_part(lo, hi),
            cores: self.cores.cores[a..b].to_vec(),
            rr_fifo: self.rr_fifo[lo as usize..hi as usize].to_vec(),
            dma: self.dma.as_ref().map_or(Vec::new(), |d| d.export_part(lo, hi)),
        }
    }
    /// Makes this (fresh) machine the partition `st` came from, as far as
    /// [`Self::absorb`] reads it.
    pub fn import_part(&mut self, st: NetPart, lo: u32, hi: u32) {
        let (a, b) = (self.cores.idx(lo, 0), self.cores.idx(hi, 0));
        self.torus.import_part(st.torus, lo, hi);
        self.cores.cores[a..b].copy_from_slice(&st.cores);
        self.rr_fifo[lo as usize..hi as usize].copy_from_slice(&st.rr_fifo);
        if let Some(d) = self.dma.as_mut() {
            d.import_part(&st.dma, lo, hi);
        }
    }
    /// Packets in the network or held by software.
    pub fn live_packets(&self) -> u32 {
        self.torus.live_packets()
    }
    /// With nothing in flight: every sender's tokens and its downstream VC
    /// add up to the VC's size (see [`Torus::check_tokens_quiescent`]).
    pub fn check_tokens(&self) -> Result<(), crate::torus::TorusError> {
        self.torus.check_tokens_quiescent()
    }
    /// When a packet last moved.
    pub fn last_progress(&self) -> Tick {
        self.torus.global.last_progress
    }
    /// The time the first cycle of escape moves waiting on each other
    /// closed, if one did (see [`Torus::deadlock_cycle`]).
    pub fn deadlock_formed(&self) -> Option<Tick> {
        self.torus.deadlock_cycle().map(|(formed, _)| formed)
    }

    /// A packet from `src` to `dest` with `payload` bytes, routed as given.
    /// On a partition with dead nodes or links the route goes around them,
    /// in dimension order where an adaptive route could meet one.
    pub fn packet(&self, src: u32, dest: u32, payload: u32, routing: Routing, now: Tick) -> Packet {
        let mut p = self.torus.make_packet(src, dest, payload, now);
        let adaptive = self.torus.faults.is_none() || src == dest || self.torus.route_around_faults(&mut p);
        p.flags |= if adaptive { routing.flags() } else { Routing::Deterministic.flags() };
        p
    }

    /// A deposit-bit packet from `src` along direction `d` to `dest` (on the
    /// same line), delivered to every node it passes.
    pub fn line_packet(&self, src: u32, dest: u32, d: usize, payload: u32, now: Tick) -> Packet {
        let mut p = self.torus.make_packet(src, dest, payload, now);
        self.torus.set_line_route(&mut p, d);
        p.flags |= flags::DEPOSIT;
        if let Some(f) = &self.torus.faults {
            let g = &self.torus.geo;
            assert!(f.line_clean(g, src, d, g.hops_along(src, dest, d)), "a line broadcast from node {src} along {} crosses a dead node or link (runs with faults refuse line broadcasts before they start)", DIR_NAMES[d]);
        }
        p
    }

    /// Dead nodes and links of the partition, if it has any.
    pub fn faults(&self) -> Option<&crate::torus::FaultMap> {
        self.torus.faults.as_deref()
    }

    /// The injection FIFO of a packet when software does not choose: FIFOs
    /// are pinned to directions of travel (FIFO d serves direction d).
    /// Deterministic packets use the FIFO of their first direction, so all
    /// packets to one destination share a FIFO and stay in order. Dynamic
    /// packets take the emptiest FIFO among their productive directions
    /// (ties round-robin): every head can leave by its FIFO's direction, and
    /// a node injects on several links at once.
    pub fn default_fifo(&mut self, node: u32, p: &Packet) -> usize {
        let nf = self.machine.torus().injection_fifos as usize;
        if p.is(flags::HIGH_PRIORITY) {
            return nf;
        }
        let first = if p.hint == 0 { 0 } else { p.hint.trailing_zeros() as usize };
        if !Routing::of(p.flags).adaptive() || p.hint.count_ones() < 2 {
            return first % nf;
        }
        let start = self.rr_fifo[node as usize] as usize;
        let f = (0..6)
            .map(|i| (start + i) % 6)
            .filter(|&d| p.hint & (1 << d) != 0)
            .map(|d| d % nf)
            .min_by_key(|&f| self.torus.inj_used(node, f))
            .unwrap_or(first % nf);
        self.rr_fifo[node as usize] = ((f + 1) % 6) as u8;
        f
    }

    /// The agent that writes into injection FIFO `f`: the DMA engine's
    /// injection unit where the machine has one; otherwise, with two
    /// communication cores, one serves the + directions (even FIFOs) and
    /// the other the - directions (odd FIFOs), and high-priority FIFOs
    /// belong to the first core.
    pub fn fifo_owner(&self, f: usize) -> usize {
        if let Some(d) = &self.dma {
            return d.injection_unit();
        }
        if let Some(o) = &self.cores.owners {
            return o[f] as usize;
        }
        if f >= self.machine.torus().injection_fifos as usize {
            0
        } else {
            f % self.cores.comm
        }
    }

    /// Queues a packet for injection into FIFO `fifo` of `node` (None: the
    /// pinned FIFO of its direction). The core that owns the FIFO writes it
    /// when it gets to it. On a machine with a DMA engine a packet to its
    /// own node is a local transfer: the injection unit moves it (its
    /// time, no injection FIFO) and the reception unit takes it, as it
    /// takes packets from the reception FIFOs; it never enters the torus.
    pub fn send(&mut self, q: &mut EventQueue, now: Tick, node: u32, mut p: Packet, fifo: Option<usize>) {
        assert!(!dma::is_local(&p, node) || self.dma.is_some(), "packet to its own node must not enter the torus");
        let nfifo = (self.machine.torus().injection_fifos + self.machine.torus().hp_injection_fifos) as usize;
        let f = fifo.unwrap_or_else(|| self.default_fifo(node, &p)).min(nfifo - 1);
        p.aux = f as u8;
        let id = self.torus.pool.alloc(p);
        if let Some(d) = self.dma.as_mut() {
            d.queue(&mut self.torus, node, id);
            return d.wake(q, now, node, dma::INJECTION);
        }
        let core = self.fifo_owner(f);
        let c = self.cores.get_mut(node, core);
        c.sendq.push(&mut self.torus.pool, id);
        c.sendq_len += 1;
        self.wake(q, now, node, core);
    }

    /// Packets queued by software on `node`'s agent `core` (a core or the
    /// DMA engine's injection unit), not yet written.
    pub fn pending(&self, node: u32, core: usize) -> u32 {
        match self.unit_of(core) {
            Some(dma::INJECTION) => self.engine().queued(node),
            Some(_) => 0,
            None => self.cores.get(node, core).sendq_len,
        }
    }

    /// Packets queued by software on `node` and not yet written, by its
    /// communication cores or its DMA engine.
    pub fn pending_on_node(&self, node: u32) -> u32 {
        (0..self.cores.comm).map(|c| self.cores.get(node, c).sendq_len).sum::<u32>() + self.dma.as_ref().map_or(0, |d| d.queued(node))
    }

    /// Wakes every agent of `node` that writes or reads packets (its
    /// communication cores, then the DMA engine's units): sources that
    /// inject as fast as they can then pull their work in
    /// [`Software::refill`].
    pub fn wake_agents(&mut self, q: &mut EventQueue, now: Tick, node: u32) {
        for c in 0..self.cores.comm {
            self.wake(q, now, node, c);
        }
        if let Some(d) = self.dma.as_mut() {
            d.wake(q, now, node, dma::INJECTION);
            d.wake(q, now, node, dma::RECEPTION);
        }
    }

    /// Software of `node` holds packets back for its DMA engine until a
    /// torus injection FIFO has room ([`Dma::hold`]).
    pub fn dma_hold(&mut self, node: u32) {
        self.engine_mut().hold(node);
    }

    /// Wakes the agent that writes injection FIFO `f` of `node` (the DMA
    /// engine's injection unit, or the FIFO's core): software that queued
    /// work for it hands it over in [`Software::refill`].
    pub fn wake_fifo_owner(&mut self, q: &mut EventQueue, now: Tick, node: u32, f: usize) {
        let owner = self.fifo_owner(f);
        self.wake(q, now, node, owner);
    }

    /// Sets a timer for `node`'s `core` at absolute time `at`.
    pub fn timer(&mut self, q: &mut EventQueue, at: Tick, node: u32, core: usize, tag: u32) {
        q.push_at(at, Event { kind: ev::TIMER, a: core as u8, b: 0, c: 0, node, data: tag });
    }

    /// Charges `ticks` of application compute to a core.
    pub fn compute(&mut self, q: &mut EventQueue, now: Tick, node: u32, core: usize, ticks: Tick) {
        let c = self.cores.get_mut(node, core);
        let start = c.busy_until.max(now);
        c.busy_until = start + ticks;
        c.counters.compute_ticks += ticks;
        self.wake(q, now, node, core);
    }

    /// Charges `ticks` of work of kind `what` to a core, after what it is
    /// already busy with; returns when the work is done.
    pub fn charge(&mut self, q: &mut EventQueue, now: Tick, node: u32, core: usize, ticks: Tick, what: crate::node::Work) -> Tick {
        use crate::node::Work;
        let c = self.cores.get_mut(node, core);
        let start = c.busy_until.max(now);
        c.busy_until = start + ticks;
        match what {
            Work::Poll => c.counters.poll_ticks += ticks,
            Work::Protocol => c.counters.protocol_ticks += ticks,
            Work::Copy => c.counters.copy_ticks += ticks,
            Work::Compute => c.counters.compute_ticks += ticks,
            Work::Interrupt => c.counters.interrupt_ticks += ticks,
        }
        let done = c.busy_until;
        self.wake(q, now, node, core);
        done
    }

    /// [`Net::charge`] for the work of `each` a packet on train `pkt`
    /// (the message tier), taken in now that its last packet is in memory:
    /// the core could work on each packet as the DMA engine put it there,
    /// the first a packet's move after the train `arrived`, so what of the
    /// work fits between then and now is done by now. A packet: `each`.
    pub fn charge_train(&mut self, q: &mut EventQueue, now: Tick, node: u32, core: usize, pkt: &Packet, each: Tick, what: crate::node::Work) -> Tick {
        if pkt.more == 0 {
            return self.charge(q, now, node, core, each, what);
        }
        let n = pkt.count() as Tick;
        let first = pkt.arrived + self.engine().transfer_ticks(pkt.chunks as u32 * self.torus.p.chunk_bytes);
        let c = self.cores.get(node, core);
        let start = c.busy_until.max(now);
        let end = (c.busy_until.max(first) + n * each).max(now + each);
        // The core's counters hold the whole work; its time goes on to `end`.
        let done = self.charge(q, now, node, core, n * each, what);
        self.cores.get_mut(node, core).busy_until = end;
        debug_assert!(end >= start && done >= end);
        end
    }

    /// Polls the reception FIFOs of a node: mask of non-empty FIFOs.
    pub fn poll(&self, node: u32) -> u16 {
        self.torus.rx_mask(node)
    }

    /// Peeks at the header of the packet at the head of reception FIFO `f`.
    pub fn peek(&self, node: u32, f: usize) -> Option<Header> {
        let id = self.torus.rx_head(node, f);
        (id != NIL).then(|| {
            let p = self.torus.pool.get(id);
            Header { src: p.src, dest: p.dest, payload: p.payload, tag: p.tag, aux: p.aux, deposit_copy: p.is(flags::COPY) }
        })
    }

    fn wake(&mut self, q: &mut EventQueue, now: Tick, node: u32, core: usize) {
        if let Some(u) = self.unit_of(core) {
            return self.engine_mut().wake(q, now, node, u);
        }
        let c = self.cores.get_mut(node, core);
        if !c.wake_pending {
            c.wake_pending = true;
            q.push_at(c.busy_until.max(now), Event { kind: ev::CORE_WAKE, a: core as u8, b: 0, c: 0, node, data: 0 });
        }
    }

    /// As [`Net::wake`], for a notice: a core that is free now steps at the
    /// end of the current event (see `step_now`).
    fn wake_for_notice(&mut self, q: &mut EventQueue, now: Tick, node: u32, core: usize) {
        if let Some(u) = self.unit_of(core) {
            if self.engine_mut().wake_now(q, now, node, u) {
                self.step_now.push((node, core as u8));
            }
            return;
        }
        let c = self.cores.get_mut(node, core);
        if !c.wake_pending && c.busy_until <= now {
            c.wake_pending = true;
            self.step_now.push((node, core as u8));
        } else {
            self.wake(q, now, node, core);
        }
    }

    /// The agent that reads reception FIFO `f`: the DMA engine's reception
    /// unit where the machine has one, else the core assigned to it.
    #[inline]
    fn reader_of(&self, f: usize) -> usize {
        match &self.dma {
            Some(d) => d.reception_unit(),
            None => self.cores.reader_of(f),
        }
    }

    /// Routes the torus's notices to the cores or the DMA engine.
    pub fn drain_notices(&mut self, q: &mut EventQueue, now: Tick) {
        while let Some(n) = self.torus.notices.pop() {
            match n {
                Notice::RxReady { node, fifo } => {
                    let core = self.reader_of(fifo as usize);
                    self.wake_for_notice(q, now, node, core);
                }
                Notice::InjSpace { node, fifo } => {
                    let core = self.fifo_owner(fifo as usize);
                    if let Some(d) = self.dma.as_mut() {
                        if d.fifo_freed(node) {
                            self.wake_for_notice(q, now, node, core);
                        }
                        continue;
                    }
                    let waiting = self.cores.get(node, core).waiting_fifo;
                    if waiting {
                        self.cores.get_mut(node, core).waiting_fifo = false;
                        self.wake_for_notice(q, now, node, core);
                    }
                }
            }
        }
    }

    /// One step of a core's packet-layer loop: read a packet from its
    /// reception FIFOs or write a queued packet into an injection FIFO,
    /// alternating when both are possible.
    pub fn core_step<S: Software + ?Sized>(&mut self, sw: &mut S, q: &mut EventQueue, now: Tick, node: u32, core: usize) {
        let ci = self.cores.idx(node, core);
        {
            // wake_pending stays set while the core works, so that sends made
            // by software during this step do not schedule a second wake-up.
            let c = &mut self.cores.cores[ci];
            c.wake_pending = true;
            if c.busy_until > now {
                q.push_at(c.busy_until, Event { kind: ev::CORE_WAKE, a: core as u8, b: 0, c: 0, node, data: 0 });
                return;
            }
            if c.sendq.is_empty() && core < self.cores.comm {
                sw.refill(self, q, now, node, core);
                // What software did in the refill (starting a message costs
                // its per-message work) comes before the packets it queued.
                let busy = self.cores.cores[ci].busy_until;
                if busy > now {
                    q.push_at(busy, Event { kind: ev::CORE_WAKE, a: core as u8, b: 0, c: 0, node, data: 0 });
                    return;
                }
            }
        }
        let rx_mask = self.torus.rx_mask(node) & self.cores.group_mask(core);
        let c = self.cores.cores[ci];
        let mut can_send = !c.sendq.is_empty() && !c.waiting_fifo;
        if can_send {
            // A write waits for room in its injection FIFO; meanwhile the
            // core keeps reading (its reads may be what frees the network).
            let p = self.torus.pool.get(c.sendq.head);
            if self.torus.inj_free(node, p.aux as usize) < p.chunks as u32 * self.torus.p.chunk_bytes {
                self.cores.cores[ci].waiting_fifo = true;
                can_send = false;
            }
        }
        let poll = if c.idle { self.costs.poll } else { 0 };
        let do_read = rx_mask != 0 && (!can_send || !c.turn);
        if do_read {
            // Round-robin over the FIFOs of this core's group.
            let mut f = c.rr as usize;
            for _ in 0..NRX {
                f = (f + 1) % NRX;
                if rx_mask & (1 << f) != 0 {
                    break;
                }
            }
            let id = self.torus.rx_pop(node, f, now, q);
            let cost = poll + self.costs.read;
            let done = now + cost;
            {
                let c = &mut self.cores.cores[ci];
                c.rr = f as u8;
                c.turn = true;
                c.idle = false;
                c.busy_until = done;
                c.counters.read_ticks += cost - poll;
                c.counters.poll_ticks += poll;
                c.counters.packets_read += 1;
            }
            let pkt = *self.torus.pool.get(id);
            self.torus.pool.release(id);
            self.take(sw, q, done, node, core, &pkt);
            // The core goes on when the read and whatever work the packet
            // caused on this core are done (one wake-up, not one per piece).
            let at = self.cores.cores[ci].busy_until.max(done);
            q.push_at(at, Event { kind: ev::CORE_WAKE, a: core as u8, b: 0, c: 0, node, data: 0 });
            self.drain_notices(q, now);
            return;
        }
        if can_send {
            let id = c.sendq.head;
            let (f, bytes) = {
                let p = self.torus.pool.get(id);
                (p.aux as usize, p.chunks as u32 * self.torus.p.chunk_bytes)
            };
            if self.torus.inj_reserve(node, f, bytes, now) {
                let extra = self.sw_write_ticks;
                let cost = poll + extra + if self.write_from_memory {
                    self.costs.write_memory
                } else {
                    self.costs.write_cached
                };
                let done = now + cost;
                let c = &mut self.cores.cores[ci];
                c.sendq.pop(&self.torus.pool);
                c.sendq_len -= 1;
                c.turn = false;
                c.idle = false;
                c.busy_until = done;
                c.counters.inject_ticks += cost - poll - extra;
                c.counters.protocol_ticks += extra;
                c.counters.poll_ticks += poll;
                c.counters.packets_written += 1;
                // One event when the write is done: the packet enters the
                // FIFO, then the core goes on.
                q.push_at(done, Event { kind: ev::WRITTEN, a: core as u8, b: 0, c: f as u8, node, data: id });
                self.written(sw, q, done, node, core, id);
                return;
            }
            self.cores.cores[ci].waiting_fifo = true;
        }
        // Nothing to do: idle (polling) until something arrives.
        let c = &mut self.cores.cores[ci];
        c.idle = true;
        c.wake_pending = false;
    }

    /// One step of a DMA unit (see [`Dma::inject`], [`Dma::receive`]),
    /// passing what it moved on to software. Like a core, a unit with
    /// nothing queued first lets software queue more.
    fn unit_step<S: Software + ?Sized>(&mut self, sw: &mut S, q: &mut EventQueue, now: Tick, node: u32, unit: usize) {
        let d = self.engine_mut();
        if !d.begin(q, now, node, unit) {
            return;
        }
        let slot = d.injection_unit() + unit;
        if d.nothing_queued(node, unit) {
            sw.refill(self, q, now, node, slot);
        }
        let d = self.dma.as_mut().expect("a machine with a DMA engine");
        let step = if unit == dma::INJECTION { d.inject(&mut self.torus, q, now, node) } else { d.receive(&mut self.torus, q, now, node) };
        match step {
            dma::Step::Read { pkt, done } => {
                self.take(sw, q, done, node, slot, &pkt);
                self.engine_mut().read_done(q, node, done);
                self.drain_notices(q, now);
            }
            dma::Step::Moving { id, done } => self.written(sw, q, done, node, slot, id),
            dma::Step::Train { done } => self.engine_mut().read_done(q, node, done),
            dma::Step::Idle => {}
        }
    }

    /// A packet `agent` of `node` has read, at `now`: software's, or, at
    /// the intermediate node of a route round a fault, sent on to where it
    /// goes (see [`Torus::forward`]; written as any packet, by the agent
    /// that owns its injection FIFO).
    #[inline]
    fn take<S: Software + ?Sized>(&mut self, sw: &mut S, q: &mut EventQueue, now: Tick, node: u32, agent: usize, pkt: &Packet) {
        if pkt.to == NIL {
            return sw.on_packet(self, q, now, node, agent, pkt);
        }
        let p = self.torus.forward(pkt, node);
        self.send(q, now, node, p, None);
    }

    /// Agent `agent` of `node` has written packet `id` (done at `now`):
    /// software hears of it, unless the packet layer is forwarding it
    /// round a fault (the software that sent it heard at its source).
    #[inline]
    fn written<S: Software + ?Sized>(&mut self, sw: &mut S, q: &mut EventQueue, now: Tick, node: u32, agent: usize, id: u32) {
        let pkt = *self.torus.pool.get(id);
        if !pkt.is(flags::FORWARDED) {
            sw.on_written(self, q, now, node, agent, &pkt);
        }
    }

    /// One step of agent `agent` of `node`: a core, or a DMA unit.
    #[inline]
    fn agent_step<S: Software + ?Sized>(&mut self, sw: &mut S, q: &mut EventQueue, now: Tick, node: u32, agent: usize) {
        match self.unit_of(agent) {
            Some(u) => self.unit_step(sw, q, now, node, u),
            None => self.core_step(sw, q, now, node, agent),
        }
    }

    /// Reads the state an upcoming event will use (see
    /// [`crate::engine::Model::touch`]): the router for a torus event (and
    /// the core it will notify, see `touch_notified_core`), the core for a
    /// core event (and for a timer the node's injection FIFOs).
    #[inline(always)]
    pub fn touch(&self, e: &Event, stage: usize) {
        use crate::torus::{ev as tev, NDIR};
        if e.owner() == Component::Torus as u8 {
            self.torus.touch(e, stage);
            if stage == 1 && (e.kind == tev::RX_DONE || (e.kind == tev::XFER_DONE && e.b as usize >= NDIR)) {
                self.touch_notified_core(e);
            }
        } else if stage == 0 && e.owner() == Component::Dma as u8 {
            self.engine().prefetch(e.node);
        } else if stage == 0 && (e.a as usize) < self.cores.per_node {
            self.cores.prefetch(e.node, e.a as usize);
            if e.kind == ev::TIMER {
                // Timers make packets: the FIFO choice reads how full the
                // node's injection FIFOs are.
                self.torus.touch_injection(e.node);
            }
        }
    }

    /// Prefetches the core a torus event will notify: the owner of an
    /// injection FIFO a transfer leaves (it may wait for the room), the
    /// reader of the reception FIFO a packet is delivered to (the packet was
    /// prefetched at stage 0), and that FIFO. Out of line: one event in
    /// twenty needs it.
    #[inline(never)]
    fn touch_notified_core(&self, e: &Event) {
        use crate::torus::{ev as tev, rx_index, NDIR};
        let core = if e.kind == tev::XFER_DONE {
            self.fifo_owner(e.b as usize - NDIR)
        } else if let Some(p) = self.torus.pool.try_get(e.data) {
            // And the reception FIFO the packet joins.
            let f = rx_index(p.flags, e.a as usize).min(NRX - 1);
            self.torus.touch_rx_fifo(e.node, f);
            self.reader_of(f)
        } else {
            return;
        };
        match &self.dma {
            Some(d) => d.prefetch(e.node),
            None => self.cores.prefetch(e.node, core),
        }
    }

    /// Dispatches one event to the torus or the cores.
    #[inline]
    pub fn handle<S: Software + ?Sized>(&mut self, sw: &mut S, now: Tick, e: Event, q: &mut EventQueue) {
        if e.owner() == Component::Torus as u8 {
            self.torus.handle(now, e, q);
        } else {
            match e.kind {
                ev::CORE_WAKE => self.core_step(sw, q, now, e.node, e.a as usize),
                dma::ev::WAKE => self.unit_step(sw, q, now, e.node, e.a as usize),
                dma::ev::MOVED => {
                    if self.dma.as_mut().expect("a machine with a DMA engine").moved(&mut self.torus, q, now, &e) {
                        // A local transfer is in memory: the reception
                        // unit takes it when it gets to it.
                        let rx = self.engine().reception_unit();
                        self.wake_for_notice(q, now, e.node, rx);
                    } else if !self.torus.notices.is_empty() {
                        self.drain_notices(q, now);
                    }
                    self.unit_step(sw, q, now, e.node, dma::INJECTION)
                }
                dma::ev::TRAIN_IN => {
                    let pkt = *self.torus.pool.get(e.data);
                    self.torus.pool.release(e.data);
                    let slot = self.engine().reception_unit();
                    self.take(sw, q, now, e.node, slot, &pkt);
                    self.drain_notices(q, now);
                }
                ev::WRITTEN => {
                    self.torus.inj_push(e.node, e.c as usize, e.data, now, q);
                    if !self.torus.notices.is_empty() {
                        self.drain_notices(q, now);
                    }
                    self.core_step(sw, q, now, e.node, e.a as usize)
                }
                // A software timer, or the collective and barrier networks
                // telling a core its part of an operation is done, with the
                // tag software gave them.
                ev::TIMER | crate::collective::ev::DONE | crate::barrier::ev::RELEASE => {
                    sw.on_timer(self, q, now, e.node, e.a as usize, e.data)
                }
                k => unreachable!("unknown event kind {k}"),
            }
        }
        if !self.torus.notices.is_empty() {
            self.drain_notices(q, now);
        }
        // Cores woken by this event's notices, in the order they were woken
        // (their steps may wake more).
        let mut i = 0;
        while i < self.step_now.len() {
            let (node, agent) = self.step_now[i];
            i += 1;
            self.agent_step(sw, q, now, node, agent as usize);
            if !self.torus.notices.is_empty() {
                self.drain_notices(q, now);
            }
        }
        self.step_now.clear();
    }
}
