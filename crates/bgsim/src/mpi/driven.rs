//! MPI ranks driven from outside (the Python runtime's) on a machine that
//! may be cut into partitions run on threads ([`Ranks`]).
//!
//! Each partition is a copy of the world that owns a block of nodes, as for
//! skeletons ([`super::parts`]): their routers, cores, message layer and
//! the ranks placed there. The driver stays on one thread. Every partition
//! runs the current window until a rank of its own may go on (the rest of
//! that tick handled) or to the window's end; the partitions that run do so
//! at once, on the threads. The ranks of the earliest tick at which any
//! partition stopped are returned to the driver, in rank order, and their
//! partitions go on from there at the next [`Ranks::run`]; the others wait
//! where they stopped. When every partition is at the window's end, the
//! events and envelopes they held for each other are exchanged as the
//! windowed engine does ([`Engine::close_window`]).
//!
//! What a rank does at tick t reaches another partition a hop later at the
//! earliest, past the end of the window t lies in, and ranks are resumed
//! in the order of simulated time and then rank, as on one partition: the
//! run is the same for every cut, bit for bit, and a program's own output
//! comes in the same order.
//!
//! A request id handed out names its partition in its low bits. Not on
//! partitions yet: hardware collectives and deposit-bit broadcasts, the
//! message log, the coarse tier.

use super::agent::{advance_agents, Agent, Agents};
use super::{BlockedRank, HwOp, MpiError, World};
use crate::engine::{Engine, Halt, Tick};
use crate::machine::{Machine, Protocol};
use crate::msglayer::{MsgRecord, ReqId, SendMode, Status};
use crate::report::MpiReport;

/// Bounds of the windows run on the driver's thread before the rest until
/// a stop run on threads (see [`Ranks::run_windows`]).
const LEAST_ON_ONE: u64 = 16;
const MOST_ON_ONE: u64 = 4096;

/// Where a partition stands in the current window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    /// It may run on.
    Running,
    /// It stopped at this tick, with ranks that may go on.
    Stopped(Tick),
    /// It ran to the window's end.
    End,
}

/// The ranks of one world, whole or cut into partitions on threads.
pub struct Ranks {
    eng: Engine<World>,
    /// A request's low `bits` bits name its partition.
    bits: u32,
    /// The partition of each rank.
    part_of_rank: Vec<u16>,
    at: Vec<At>,
    /// The current window's end; whether no partition has run in it yet.
    end: Tick,
    fresh: bool,
    /// Windows run on this thread before threads (see [`Ranks::run_windows`]).
    on_one: u64,
    /// The tick of the ranks last returned.
    now: Tick,
}

impl Ranks {
    /// `w` (a fresh world) cut into `threads` partitions, one per thread
    /// (one: `w` itself, run by its own loop).
    pub fn new(w: World, threads: usize) -> Result<Ranks, MpiError> {
        let nodes = w.machine().shape.nodes();
        let parts = threads.clamp(1, nodes as usize);
        let lookahead = w.lookahead;
        let mut worlds = Vec::with_capacity(parts);
        if parts > 1 {
            if w.now() > 0 {
                return Err(MpiError::Usage("a world is cut into partitions before it runs".into()));
            }
            for _ in 1..parts {
                worlds.push(w.fresh_copy()?);
            }
        }
        worlds.insert(0, w);
        let mut eng = Engine::new(worlds, nodes, lookahead, parts);
        if parts > 1 {
            for p in eng.parts.iter_mut() {
                p.model.set_driven(p.lo, p.hi)?;
            }
        }
        let first = &eng.parts[0].model;
        let part_of_rank = (0..first.nranks())
            .map(|r| {
                let node = first.place(r).0;
                eng.parts.iter().position(|p| node >= p.lo && node < p.hi).expect("every node is in a partition") as u16
            })
            .collect();
        Ok(Ranks {
            eng,
            bits: usize::BITS - (parts - 1).leading_zeros(),
            part_of_rank,
            at: vec![At::Running; parts],
            end: lookahead,
            fresh: true,
            on_one: LEAST_ON_ONE,
            now: 0,
        })
    }

    /// How many partitions the machine is cut into.
    pub fn partitions(&self) -> usize {
        self.eng.parts.len()
    }
    /// The whole world, when it is not cut.
    pub fn whole(&mut self) -> Option<&mut World> {
        (self.eng.parts.len() == 1).then(|| &mut self.eng.parts[0].model)
    }
    fn first(&self) -> &World {
        &self.eng.parts[0].model
    }
    /// The world that runs `rank`.
    fn of(&self, rank: u32) -> &World {
        &self.eng.parts[self.part_of_rank[rank as usize] as usize].model
    }
    fn of_mut(&mut self, rank: u32) -> &mut World {
        &mut self.eng.parts[self.part_of_rank[rank as usize] as usize].model
    }
    /// The world holding request `g`, and its id there.
    fn req(&self, g: ReqId) -> (&World, ReqId) {
        let k = (g & ((1 << self.bits) - 1)) as usize;
        (&self.eng.parts[k].model, g >> self.bits)
    }
    fn req_mut(&mut self, g: ReqId) -> (&mut World, ReqId) {
        let k = (g & ((1 << self.bits) - 1)) as usize;
        (&mut self.eng.parts[k].model, g >> self.bits)
    }
    /// The id handed out for `rank`'s request `r`.
    fn global(&self, rank: u32, r: ReqId) -> ReqId {
        debug_assert!(r < 1 << (32 - self.bits), "request ids fit beside the partition's");
        r << self.bits | self.part_of_rank[rank as usize] as u32
    }

    pub fn nranks(&self) -> u32 {
        self.first().nranks()
    }
    pub fn machine(&self) -> &Machine {
        self.first().machine()
    }
    pub fn fidelity(&self) -> &'static str {
        self.first().fidelity()
    }
    /// The current simulated time: the tick of the ranks last returned by
    /// [`Ranks::run`] (after [`Ranks::drain`], the last event's).
    pub fn now(&self) -> Tick {
        match self.eng.parts.len() {
            1 => self.first().now(),
            _ => self.now,
        }
    }
    pub fn events(&self) -> u64 {
        self.eng.parts.iter().map(|p| p.model.events()).sum()
    }
    pub fn rank_time(&self, rank: u32) -> Tick {
        self.of(rank).rank_time(rank)
    }
    pub fn place(&self, rank: u32) -> (u32, u32) {
        self.first().place(rank)
    }
    pub fn coords(&self, rank: u32) -> [u32; 4] {
        self.first().coords(rank)
    }
    pub fn protocol_for(&self, bytes: u32, force: Option<Protocol>) -> Protocol {
        self.first().protocol_for(bytes, force)
    }
    /// One node's torus activity so far (see [`World::node_sample`]).
    pub fn node_sample(&self, node: u32) -> ([u64; 6], u64) {
        let p = self.eng.parts.iter().find(|p| node >= p.lo && node < p.hi).expect("a node of the machine");
        p.model.node_sample(node)
    }

    pub fn record_traffic(&mut self) {
        for p in self.eng.parts.iter_mut() {
            p.model.record_traffic();
        }
    }
    /// The recorded traffic (each send is counted where it is posted).
    pub fn traffic_matrix(&self) -> Vec<(u32, u32, u64)> {
        let mut v: Vec<(u32, u32, u64)> = self.eng.parts.iter().flat_map(|p| p.model.traffic_matrix()).collect();
        v.sort_unstable();
        v
    }
    pub fn record_messages(&mut self, watched: Vec<bool>, limit: usize) -> Result<(), MpiError> {
        match self.whole() {
            Some(w) => {
                w.record_messages(watched, limit);
                Ok(())
            }
            None => Err(MpiError::Usage("the message log (timelines) is kept on one partition only: run on one thread".into())),
        }
    }
    pub fn message_log(&self) -> (&[MsgRecord], u64) {
        self.first().message_log()
    }

    #[allow(clippy::too_many_arguments)]
    pub fn isend(&mut self, rank: u32, dest: i64, ctx: u32, tag: i32, data: Vec<u8>, mode: SendMode, force: Option<Protocol>) -> Result<ReqId, MpiError> {
        let r = self.of_mut(rank).isend(rank, dest, ctx, tag, data, mode, force)?;
        Ok(self.global(rank, r))
    }
    #[allow(clippy::too_many_arguments)]
    pub fn isend_sized(&mut self, rank: u32, dest: i64, ctx: u32, tag: i32, data: Vec<u8>, bytes: u32, mode: SendMode, force: Option<Protocol>) -> Result<ReqId, MpiError> {
        let r = self.of_mut(rank).isend_sized(rank, dest, ctx, tag, data, bytes, mode, force)?;
        Ok(self.global(rank, r))
    }
    pub fn irecv_into(&mut self, rank: u32, src: i64, ctx: u32, tag: i32, capacity: u32, unaligned: bool) -> Result<ReqId, MpiError> {
        let r = self.of_mut(rank).irecv_into(rank, src, ctx, tag, capacity, unaligned)?;
        Ok(self.global(rank, r))
    }
    pub fn probe(&mut self, rank: u32, src: i64, ctx: u32, tag: i32) -> Result<ReqId, MpiError> {
        let r = self.of_mut(rank).probe(rank, src, ctx, tag)?;
        Ok(self.global(rank, r))
    }
    pub fn compute(&mut self, rank: u32, ticks: Tick) -> ReqId {
        let r = self.of_mut(rank).compute(rank, ticks);
        self.global(rank, r)
    }
    pub fn poll(&mut self, rank: u32) -> ReqId {
        let r = self.of_mut(rank).poll(rank);
        self.global(rank, r)
    }
    pub fn hw_collective(&mut self, rank: u32, key: u64, expected: u32, what: HwOp) -> Result<ReqId, MpiError> {
        let r = self.of_mut(rank).hw_collective(rank, key, expected, what)?;
        Ok(self.global(rank, r))
    }
    pub fn line_bcast(&mut self, rank: u32, id: u32, root: u32, bytes: u64) -> Result<ReqId, MpiError> {
        let Some(w) = self.whole() else {
            return Err(MpiError::Usage(
                "deposit-bit broadcasts do not run on a machine cut into partitions yet: run on one thread, or choose another bcast algorithm (--coll bcast=binomial)".into(),
            ));
        };
        let r = w.line_bcast(rank, id, root, bytes);
        Ok(self.global(rank, r))
    }
    pub fn cancel(&mut self, g: ReqId) -> bool {
        let (w, r) = self.req_mut(g);
        w.cancel(r)
    }
    pub fn is_done(&self, g: ReqId) -> bool {
        let (w, r) = self.req(g);
        w.is_done(r)
    }
    pub fn status(&self, g: ReqId) -> Status {
        let (w, r) = self.req(g);
        w.status(r)
    }
    pub fn take_data(&mut self, g: ReqId) -> Option<Vec<u8>> {
        let (w, r) = self.req_mut(g);
        w.take_data(r)
    }
    pub fn release(&mut self, g: ReqId) {
        let (w, r) = self.req_mut(g);
        w.release(r)
    }
    /// A buffer holding a copy of `data` (buffers move freely between
    /// partitions: the first one keeps the spare ones).
    pub fn buffer_from(&mut self, data: &[u8]) -> Vec<u8> {
        self.eng.parts[0].model.buffer_from(data)
    }
    pub fn recycle(&mut self, v: Vec<u8>) {
        self.eng.parts[0].model.recycle(v)
    }
    /// Blocks `rank` until `need` of its requests `reqs` are complete; false
    /// if they already are.
    pub fn block(&mut self, rank: u32, reqs: Vec<ReqId>, need: usize) -> bool {
        let bits = self.bits;
        debug_assert!(reqs.iter().all(|&g| g & ((1 << bits) - 1) == self.part_of_rank[rank as usize] as u32), "a rank waits for its own requests");
        let local = if bits == 0 { reqs } else { reqs.into_iter().map(|g| g >> bits).collect() };
        self.of_mut(rank).block(rank, local, need)
    }
    /// Hands `rank` to a collective the core runs (see [`World::start`]).
    pub fn start(&mut self, rank: u32, agent: Agent) -> Result<bool, MpiError> {
        self.of_mut(rank).start(rank, agent)
    }
    pub fn step(&mut self, rank: u32) -> Result<bool, MpiError> {
        self.of_mut(rank).step(rank)
    }
    pub fn take_result(&mut self, rank: u32) -> Option<Agent> {
        self.of_mut(rank).take_result(rank)
    }

    /// Advances simulated time until at least one blocked rank may go on;
    /// returns those ranks, as [`World::run`] does (the same ranks at the
    /// same ticks, whatever the cut).
    pub fn run(&mut self) -> Result<Vec<u32>, MpiError> {
        if let Some(w) = self.whole() {
            return w.run();
        }
        loop {
            let mut ready = self.run_parts()?;
            advance_agents(self, &mut ready)?;
            if !ready.is_empty() {
                return Ok(ready);
            }
        }
    }

    /// Runs the partitions until some have ranks that may go on: those of
    /// the earliest tick, in rank order. Error: nothing is pending anywhere
    /// (with the blocked ranks, if any).
    fn run_parts(&mut self) -> Result<Vec<u32>, MpiError> {
        loop {
            if self.at.iter().all(|&a| a == At::Running) && self.fresh {
                // Every partition at a window's start: the engine runs the
                // windows on the threads, up to one in which ranks may go on.
                if !self.run_windows() {
                    return Err(self.nothing_pending());
                }
            } else {
                // The rest of a window, where ranks went on: on this thread.
                let end = self.end;
                for (p, at) in self.eng.parts.iter_mut().zip(self.at.iter_mut()) {
                    if *at == At::Running {
                        *at = p.model.run_driven(end).map_or(At::End, At::Stopped);
                    }
                }
            }
            let first = self.at.iter().filter_map(|a| if let At::Stopped(t) = a { Some(*t) } else { None }).min();
            if let Some(t) = first {
                let mut ready = Vec::new();
                for (p, at) in self.eng.parts.iter_mut().zip(self.at.iter_mut()) {
                    if *at == At::Stopped(t) {
                        ready.append(&mut p.model.ready);
                        *at = At::Running;
                    }
                }
                ready.sort_unstable();
                self.now = t;
                self.fresh = false;
                return Ok(ready);
            }
            if !self.close_window() {
                return Err(self.nothing_pending());
            }
        }
    }

    /// Runs windows on the engine from the current one's start until one
    /// in which a partition stops; false if nothing is pending anywhere.
    /// While ranks act often the windows between two stops are few, and
    /// starting the threads would cost more than they gain: the first
    /// `on_one` windows run on this thread, the rest on threads. `on_one`
    /// doubles when the threads ran few windows before a stop, and halves
    /// when they ran many.
    fn run_windows(&mut self) -> bool {
        let lookahead = self.first().lookahead;
        let mut threads = 1;
        let halt = loop {
            self.eng.set_threads(threads);
            let start = self.eng.now();
            for p in self.eng.parts.iter_mut() {
                std::mem::swap(&mut p.q, &mut p.model.q);
            }
            let halt = self.eng.run_until_stop(if threads == 1 { self.on_one } else { u64::MAX });
            for p in self.eng.parts.iter_mut() {
                std::mem::swap(&mut p.q, &mut p.model.q);
            }
            match halt {
                Halt::Limit(_) => threads = self.partitions(),
                h => {
                    if threads > 1 {
                        let ran = match h {
                            Halt::Stopped(t, _) => (t - start) / lookahead,
                            _ => u64::MAX,
                        };
                        self.on_one = if ran < 4 * self.on_one { (self.on_one * 2).min(MOST_ON_ONE) } else { (self.on_one / 2).max(LEAST_ON_ONE) };
                    }
                    break h;
                }
            }
        };
        let Halt::Stopped(_, end) = halt else { return false };
        self.end = end;
        for (p, at) in self.eng.parts.iter().zip(self.at.iter_mut()) {
            *at = p.model.part.as_ref().and_then(|s| s.stop).map_or(At::End, At::Stopped);
        }
        true
    }

    /// Nothing is pending anywhere: the blocked ranks (none if every rank
    /// is done).
    fn nothing_pending(&self) -> MpiError {
        let mut blocked: Vec<BlockedRank> = self.eng.parts.iter().flat_map(|p| p.model.blocked()).collect();
        blocked.sort_by_key(|b| b.rank);
        MpiError::Blocked(blocked)
    }

    /// Every partition is at the window's end: the window closes (see
    /// [`Engine::close_window`]) and the next one opens. False if nothing
    /// is pending anywhere.
    fn close_window(&mut self) -> bool {
        let ran: Vec<bool> = self.eng.parts.iter().map(|p| p.model.events() != p.model.part.as_ref().map_or(0, |s| s.opened)).collect();
        // The engine exchanges what the partitions' queues hold.
        for p in self.eng.parts.iter_mut() {
            std::mem::swap(&mut p.q, &mut p.model.q);
        }
        let next = self.eng.close_window(self.end, &ran);
        let lookahead = self.first().lookahead;
        for p in self.eng.parts.iter_mut() {
            std::mem::swap(&mut p.q, &mut p.model.q);
            let events = p.model.events();
            let st = p.model.part.as_mut().expect("a partition");
            st.opened = events;
            st.stop = None;
            if next != Tick::MAX {
                p.model.q.window = (next, next + lookahead);
            }
        }
        if next == Tick::MAX {
            return false;
        }
        self.end = next + lookahead;
        self.at.fill(At::Running);
        self.fresh = true;
        true
    }

    /// Runs until nothing is left to do (see [`World::drain`]); returns the
    /// time it ends.
    pub fn drain(&mut self) -> Tick {
        if let Some(w) = self.whole() {
            return w.drain();
        }
        // No rank waits any more; one that does stays as it is.
        while self.run_parts().is_ok() {}
        self.now = self.eng.parts.iter().map(|p| p.model.last_event()).max().unwrap_or(0).max(self.now);
        self.now
    }

    /// The run's report (see [`crate::report::mpi_report`]): each rank's
    /// figures from its partition, each link's from its node's, the
    /// network's counters summed.
    pub fn report(&self, finished: &[Option<Tick>]) -> MpiReport {
        let mut reports = self.eng.parts.iter().map(|p| crate::report::mpi_report(&p.model, finished));
        let mut out = reports.next().expect("a partition");
        for (k, o) in reports.enumerate() {
            let k = k + 1;
            let (lo, hi) = (self.eng.parts[k].lo, self.eng.parts[k].hi);
            for (r, rr) in o.ranks.into_iter().enumerate() {
                if self.part_of_rank[r] as usize == k {
                    out.ranks[r] = rr;
                }
            }
            let links = (lo as usize * 6)..(hi as usize * 6);
            out.link_packets[links.clone()].copy_from_slice(&o.link_packets[links.clone()]);
            out.link_util_pct[links.clone()].copy_from_slice(&o.link_util_pct[links.clone()]);
            out.link_stalls[links.clone()].copy_from_slice(&o.link_stalls[links]);
            out.tree_links.extend(o.tree_links);
            out.counters.absorb(&o.counters);
        }
        out.counters.no_token_stalls = out.link_stalls.iter().sum();
        out
    }
}

impl Agents for Ranks {
    fn in_agent(&self, rank: u32) -> bool {
        self.of(rank).in_agent(rank)
    }
    fn step(&mut self, rank: u32) -> Result<bool, MpiError> {
        Ranks::step(self, rank)
    }
}
