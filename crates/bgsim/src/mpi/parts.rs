//! MPI programs on a machine cut into partitions, on threads (the windowed
//! engine of `engine::parallel`; `docs/architecture.md`, "MPI programs on
//! partitions"). Each partition is a copy of the world that runs its own
//! nodes - their routers, cores, message layer and ranks - in the engine's
//! windows. What crosses between partitions is what crosses between nodes
//! anyway: packets (with the events that carry them to the next router)
//! and, when a rank sends to a rank of another partition, the message's
//! envelope (`msglayer::Envelope`), handed over at the end of the window
//! the send was posted in, before any of its packets can arrive.
//!
//! A rank's program runs in its partition: when a rank may go on at tick
//! t, its partition first handles the rest of tick t, then steps its ready
//! ranks in rank order, as ranks driven from outside are ([`super::driven::Ranks::run`]). What a rank
//! does at t reaches another partition a hop later at the earliest, past
//! the window's end, so the result is the same for every cut, bit for bit.
//!
//! The same partitions run on the processes of an MPI job ([`run_distributed`]),
//! one each, with the same result.
//!
//! Ranks driven from outside (the Python runtime's) run on the same
//! partitions through [`super::driven::Ranks`]; hardware collectives'
//! joins and deposit-bit broadcasts' roots are notes to every partition
//! ([`super::hw`]); so does the coarse torus (a node's links are booked by
//! its own events), and so do timelines' message log and node samples
//! (`super::timeline`).

use super::{BlockedRank, MpiError, World};
use crate::engine::{Engine, EngineStats, Event, EventQueue, Model, Partitioned, Tick, Transport, NO_NODE};
use crate::msglayer::{Envelope, NOTE_ENVELOPE};
use crate::torus::{ev as torus_ev, Packet};

/// What the ranks of a partition run: their calls on the world, made when
/// a rank starts and whenever it may go on.
pub trait Program: Send + Sync {
    /// Rank `rank`'s first calls, at time 0.
    fn start(&mut self, w: &mut World, rank: u32) -> Result<(), MpiError>;
    /// Rank `rank` was blocked and may go on now.
    fn step(&mut self, w: &mut World, rank: u32) -> Result<(), MpiError>;
}

/// A world that is one partition of a windowed run.
pub(super) struct PartState {
    lo: u32,
    hi: u32,
    program: Option<Box<dyn Program>>,
    /// The first error a rank's call gave.
    failed: Option<MpiError>,
    /// The time of the last event handled.
    last: Tick,
    /// Ranks driven from outside: the tick at which the last window run
    /// stopped with ranks that may go on ([`World::run_driven`]), and the
    /// events handled when the window opened.
    pub(super) stop: Option<Tick>,
    pub(super) opened: u64,
}

/// What crosses to another partition with an event or a note.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum Load {
    /// A packet moving on to the next router.
    Packet(Packet),
    /// A message to a rank of that partition.
    Envelope(Envelope),
    /// A rank's join of a hardware collective (to every partition).
    Join(super::hw::Join),
    /// A deposit-bit broadcast's id, root node and packets, and the root's
    /// data on the processes of an MPI job (to every partition, from its
    /// root).
    Deposit(u32, u32, u8, u32, Option<Vec<u8>>),
    /// A rank's contribution to a message-layer allreduce, on the
    /// processes of an MPI job (to every partition).
    Contribution(u32, Vec<u8>),
}

impl Model for World {
    fn handle(&mut self, now: Tick, ev: Event, q: &mut EventQueue) {
        self.stack.handle(now, ev, q);
    }
}

impl Partitioned for World {
    type Load = Load;
    fn emigrate(&mut self, ev: &Event) -> Option<Load> {
        match ev.kind {
            torus_ev::ARRIVE => Some(Load::Packet(self.stack.net.emigrate(ev.data))),
            torus_ev::COARSE_HOP => Some(Load::Packet(self.stack.net.coarse_emigrate(ev.data))),
            NOTE_ENVELOPE => Some(Load::Envelope(self.stack.ml.take_note(ev.data))),
            super::hw::NOTE_JOIN => Some(Load::Join(self.joins.emigrate(ev))),
            super::hw::NOTE_DEPOSIT => {
                let (root, core, packets, payload) = self.stack.ml.bcast_of(ev.data);
                Some(Load::Deposit(ev.data, root, core, packets, payload))
            }
            super::hw::NOTE_CONTRIB => {
                let (id, p) = self.contrib_of(ev);
                Some(Load::Contribution(id, p))
            }
            _ => None,
        }
    }
    fn immigrate(&mut self, ev: &mut Event, load: Load) {
        match load {
            Load::Packet(pk) => ev.data = self.stack.net.immigrate(pk),
            Load::Envelope(_) | Load::Join(_) | Load::Deposit(..) | Load::Contribution(..) => unreachable!("an envelope, a join or a broadcast comes as a note"),
        }
    }
    fn note(&mut self, q: &mut EventQueue, ev: &Event, load: Option<Load>) {
        match (ev.kind, load) {
            (NOTE_ENVELOPE, Some(Load::Envelope(e))) => self.stack.ml.take_envelope(e),
            (super::hw::NOTE_JOIN, Some(Load::Join(j))) => self.joins.take(&mut self.stack, q, j),
            (super::hw::NOTE_JOIN, None) => self.joins.take_own(&mut self.stack, q, ev),
            (super::hw::NOTE_DEPOSIT, Some(Load::Deposit(id, root, core, packets, payload))) => {
                self.stack.ml.bcast_record(&self.stack.net, id, root, core, packets, payload)
            }
            (super::hw::NOTE_DEPOSIT, None) => {}
            (super::hw::NOTE_CONTRIB, Some(Load::Contribution(id, p))) => self.take_contrib(ev, Some((id, p))),
            (super::hw::NOTE_CONTRIB, None) => self.take_contrib(ev, None),
            (k, _) => unreachable!("note of kind {k} without its load"),
        }
    }
    fn run_window(&mut self, q: &mut EventQueue, end: Tick, stats: &mut EngineStats) {
        // The engine keeps the partition's queue; the world's calls use its own.
        std::mem::swap(q, &mut self.q);
        let before = self.stats.events;
        let p = self.part.as_mut().expect("a partition");
        p.opened = before;
        if p.program.is_some() {
            self.run_part_window(end);
        } else {
            // Ranks driven from outside: stop where one may go on.
            let stop = self.run_driven(end);
            self.part.as_mut().expect("a partition").stop = stop;
        }
        stats.events += self.stats.events - before;
        std::mem::swap(q, &mut self.q);
    }
    fn stopped(&self) -> bool {
        self.part.as_ref().is_some_and(|p| p.stop.is_some())
    }
}

impl World {
    /// A new world like this one (same machine, ranks, mapping, seed and
    /// costs, torus tier), at time 0.
    pub fn fresh_copy(&self) -> Result<World, MpiError> {
        let (mapping, seed, mpi) = &self.origin;
        let mut w = World::new(self.machine(), self.nranks, mapping, *seed, *mpi)?;
        match self.fidelity() {
            "message" => w.set_trains(self.stack.ml.trains())?,
            "coarse" => w.set_coarse()?,
            _ => {}
        }
        Ok(w)
    }

    /// The ranks of this partition (see [`World::set_driven`]) run
    /// `program` in the core instead of being driven from outside.
    fn set_program(&mut self, program: Box<dyn Program>) {
        self.part.as_mut().expect("a partition").program = Some(program);
    }

    /// Makes this world the partition owning nodes `lo..hi` of a windowed
    /// run whose ranks are driven from outside (`mpi::driven`), in its
    /// first window.
    pub(super) fn set_driven(&mut self, lo: u32, hi: u32) -> Result<(), MpiError> {
        assert_eq!(self.now(), 0, "a world is cut into partitions before it runs");
        self.stack.net.set_partition(lo, hi);
        self.stack.ml.set_partition(lo, hi);
        self.q = EventQueue::windowed(lo, hi);
        self.q.window = (0, self.lookahead);
        self.part = Some(PartState { lo, hi, program: None, failed: None, last: 0, stop: None, opened: 0 });
        Ok(())
    }

    /// The nodes this world runs: its partition's, or all of them.
    pub(super) fn own_nodes(&self) -> (u32, u32) {
        self.part.as_ref().map_or((0, self.machine().shape.nodes()), |p| (p.lo, p.hi))
    }

    /// The time of the last event this partition handled.
    pub(super) fn last_event(&self) -> Tick {
        self.part.as_ref().map_or(0, |p| p.last)
    }

    /// The ranks of this partition start (in rank order), on the engine's
    /// queue `q`.
    fn start_part(&mut self, q: &mut EventQueue) {
        std::mem::swap(q, &mut self.q);
        let p = self.part.as_mut().expect("a partition");
        let (lo, hi) = (p.lo, p.hi);
        let mut program = p.program.take().expect("a program");
        for r in 0..self.nranks {
            let node = self.stack.ml.place(r).0;
            if node >= lo && node < hi {
                if let Err(e) = program.start(self, r) {
                    self.part.as_mut().expect("a partition").failed.get_or_insert(e);
                }
            }
        }
        self.part.as_mut().expect("a partition").program = Some(program);
        self.step_ready();
        std::mem::swap(q, &mut self.q);
    }

    /// Runs this partition's window up to `end`: when a rank may go on, the
    /// rest of the tick first, then the ready ranks.
    fn run_part_window(&mut self, end: Tick) {
        while self.run_driven(end).is_some() {
            self.step_ready();
        }
    }

    /// Runs this partition's window up to `end` until a rank may go on:
    /// returns the tick t at which one may, with the rest of tick t
    /// handled and the ranks in `ready`; None at the window's end (time
    /// then stands there).
    pub(super) fn run_driven(&mut self, end: Tick) -> Option<Tick> {
        self.collect();
        if !self.ready.is_empty() {
            return Some(self.q.now());
        }
        let mut last = None;
        let mut stop = None;
        while let Some((t, ev)) = self.q.pop_before(end) {
            self.stats.events += 1;
            crate::engine::touch_ahead(&self.q, |e, stage| self.stack.touch(e, stage));
            self.q.cur = ev.node;
            self.stack.handle(t, ev, &mut self.q);
            self.q.cur = NO_NODE;
            last = Some(t);
            if !self.stack.ml.completed.is_empty() {
                self.collect();
                if !self.ready.is_empty() {
                    while let Some((t2, ev)) = self.q.pop_before(t + 1) {
                        self.stats.events += 1;
                        self.q.cur = ev.node;
                        self.stack.handle(t2, ev, &mut self.q);
                    }
                    self.q.cur = NO_NODE;
                    self.collect();
                    if self.advance_own_agents() {
                        // Every rank that went on was in a collective the
                        // core runs, and is waiting again: no stop.
                        continue;
                    }
                    stop = Some(t);
                    break;
                }
            }
        }
        if let (Some(t), Some(p)) = (last, self.part.as_mut()) {
            p.last = t;
        }
        if stop.is_none() {
            self.q.advance_to(end);
        }
        stop
    }

    /// Advances the agents (`super::agent`) of this partition's ready
    /// ranks in rank order up to the first rank the driver must resume,
    /// as [`super::driven::Ranks::run`] does, without stopping for the driver: true if
    /// none is left to resume. What an agent does at tick t reaches other
    /// partitions a hop later, and the driver's ranks of other partitions
    /// ready at t act on their own nodes: the result is the one the driver
    /// would get advancing every agent in the global rank order. An error
    /// is kept for the driver ([`World::take_failure`]).
    fn advance_own_agents(&mut self) -> bool {
        if self.agents.is_empty() || self.part.as_ref().is_some_and(|p| p.program.is_some()) {
            return false;
        }
        let mut ready = std::mem::take(&mut self.ready);
        ready.sort_unstable();
        if let Err(e) = self.advance_agents(&mut ready) {
            self.part.as_mut().expect("a partition").failed.get_or_insert(e);
            ready.clear();
            self.ready = ready;
            return false;
        }
        // The driver marks the ranks it steps itself, over every
        // partition's list.
        for r in ready.iter_mut() {
            *r &= !super::agent::AGENT_RANK;
        }
        self.ready = ready;
        self.ready.is_empty()
    }

    /// The first error an agent of this partition gave (see
    /// [`World::advance_own_agents`]).
    pub(super) fn take_failure(&mut self) -> Option<MpiError> {
        self.part.as_mut().and_then(|p| p.failed.take())
    }

    /// Steps the ready ranks in rank order, and those their calls made
    /// ready, until none is.
    fn step_ready(&mut self) {
        let mut program = self.part.as_mut().expect("a partition").program.take().expect("a program");
        loop {
            self.collect();
            if self.ready.is_empty() {
                break;
            }
            let mut ready = std::mem::take(&mut self.ready);
            ready.sort_unstable();
            for &r in &ready {
                if let Err(e) = program.step(self, r) {
                    self.part.as_mut().expect("a partition").failed.get_or_insert(e);
                }
            }
            ready.clear();
            if self.ready.is_empty() {
                self.ready = ready;
            }
        }
        self.part.as_mut().expect("a partition").program = Some(program);
    }

    /// What this partition's run did: the first error of a rank's call, the
    /// last event's time, the messages received here, its blocked ranks.
    fn part_outcome(&mut self) -> (Option<MpiError>, Tick, u64, Vec<BlockedRank>) {
        let st = self.part.as_mut().expect("a partition");
        let (failed, last) = (st.failed.take(), st.last);
        (failed, last, self.messages_done(), self.blocked())
    }
}

/// What a run on partitions did, summed over them.
#[derive(Clone, Debug)]
pub struct PartsRun {
    /// The last event's time.
    pub end: Tick,
    pub events: u64,
    pub messages: u64,
}

/// Runs `program` (one copy per partition, from `make`) on copies of the
/// fresh world `w` cut into `parts` partitions, on `threads` threads. The
/// result is the same for every number of partitions and threads, and the
/// same as on `w` itself (one partition).
pub fn run(w: &World, parts: usize, threads: usize, make: &dyn Fn() -> Box<dyn Program>) -> Result<PartsRun, MpiError> {
    let nodes = w.machine().shape.nodes();
    let parts = parts.clamp(1, nodes as usize);
    let threads = threads.clamp(1, parts);
    // The copies are built, and their ranks started, on the run's threads
    // (on a million ranks each takes seconds).
    let built: Vec<Result<World, MpiError>> = std::thread::scope(|s| {
        let jobs: Vec<_> = (0..parts).map(|_| s.spawn(|| w.fresh_copy())).collect();
        jobs.into_iter().map(|j| j.join().expect("building a copy of the world does not panic")).collect()
    });
    let worlds = built.into_iter().collect::<Result<Vec<_>, _>>()?;
    let mut eng = Engine::new(worlds, nodes, w.lookahead, threads);
    for p in eng.parts.iter_mut() {
        p.model.set_driven(p.lo, p.hi)?;
    }
    run_program(&mut eng, threads, make)
}

/// Runs `program` (one copy per partition, from `make`) on the partitions
/// of `eng` (fresh worlds, each made a partition by [`World::set_driven`],
/// their queues in the engine's parts), their ranks started on `threads`
/// threads.
pub(super) fn run_program(eng: &mut Engine<World>, threads: usize, make: &dyn Fn() -> Box<dyn Program>) -> Result<PartsRun, MpiError> {
    for p in eng.parts.iter_mut() {
        p.model.set_program(make());
    }
    let threads = threads.clamp(1, eng.parts.len());
    if threads == 1 {
        for p in eng.parts.iter_mut() {
            p.model.start_part(&mut p.q);
        }
    } else {
        std::thread::scope(|s| {
            let mut groups: Vec<Vec<&mut crate::engine::Part<World>>> = (0..threads).map(|_| Vec::new()).collect();
            for (k, p) in eng.parts.iter_mut().enumerate() {
                groups[k % threads].push(p);
            }
            for g in groups {
                s.spawn(move || {
                    for p in g {
                        p.model.start_part(&mut p.q);
                    }
                });
            }
        });
    }
    eng.run_until(Tick::MAX);
    let mut blocked: Vec<BlockedRank> = Vec::new();
    let mut out = PartsRun { end: 0, events: 0, messages: 0 };
    for p in eng.parts.iter_mut() {
        let (failed, last, messages, b) = p.model.part_outcome();
        if let Some(e) = failed {
            return Err(e);
        }
        out.end = out.end.max(last);
        out.events += p.stats.events;
        out.messages += messages;
        blocked.extend(b);
    }
    if !blocked.is_empty() {
        blocked.sort_by_key(|b| b.rank);
        return Err(MpiError::Blocked(blocked));
    }
    Ok(out)
}

/// Runs `program` on the processes of `transport` (an MPI job), one
/// partition each: every process calls this with the same fresh world and
/// program, and every process gets the result, the same as [`run`]'s.
pub fn run_distributed(w: &World, transport: Box<dyn Transport>, make: &dyn Fn() -> Box<dyn Program>) -> Result<PartsRun, MpiError> {
    let nodes = w.machine().shape.nodes();
    if transport.size() > nodes as usize {
        return Err(MpiError::Usage(format!("{} processes for a machine of {nodes} nodes: at most one process a node", transport.size())));
    }
    let mut eng = Engine::distributed(w.fresh_copy()?, nodes, w.lookahead, transport);
    let p = &mut eng.parts[0];
    p.model.set_driven(p.lo, p.hi)?;
    p.model.set_program(make());
    p.model.start_part(&mut p.q);
    eng.run_until(Tick::MAX);
    let p = &mut eng.parts[0];
    let (failed, last, messages, blocked) = p.model.part_outcome();
    let mut sums = [p.stats.events, messages, failed.is_some() as u64, blocked.len() as u64];
    let mut maxes = [last];
    let t = eng.transport().expect("a distributed run");
    t.reduce(&mut sums, &mut maxes);
    if let Some(e) = failed {
        return Err(e);
    }
    if sums[2] > 0 {
        return Err(MpiError::Usage("a rank's call failed on another process of the MPI job".into()));
    }
    if sums[3] > 0 {
        return Err(MpiError::Blocked(all_blocked(t, blocked)));
    }
    Ok(PartsRun { end: maxes[0], events: sums[0], messages: sums[1] })
}

/// Every process's bytes, in process order: each sends `bytes` to all.
pub(super) fn share(t: &dyn Transport, bytes: Vec<u8>) -> Vec<Vec<u8>> {
    let out = (0..t.size()).map(|p| if p == t.rank() { Vec::new() } else { bytes.clone() }).collect();
    let mut all = t.exchange(out);
    all[t.rank()] = bytes;
    all
}

/// The blocked ranks of every process (each gives its own `mine`), by rank.
pub(super) fn all_blocked(t: &dyn Transport, mine: Vec<BlockedRank>) -> Vec<BlockedRank> {
    let mine: Vec<(u32, Vec<String>)> = mine.into_iter().map(|b| (b.rank, b.waiting_for)).collect();
    let mut list: Vec<BlockedRank> = share(t, bincode::serialize(&mine).expect("blocked ranks serialize"))
        .iter()
        .flat_map(|b| bincode::deserialize::<Vec<(u32, Vec<String>)>>(b).expect("blocked ranks from a process of this job"))
        .map(|(rank, waiting_for)| BlockedRank { rank, waiting_for })
        .collect();
    list.sort_by_key(|b| b.rank);
    list
}
