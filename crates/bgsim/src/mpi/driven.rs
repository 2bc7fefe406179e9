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
//! A request id handed out names its partition in its low bits.
//! Hardware collectives run on partitions (`super::hw`; on processes their
//! contributions travel with the joins), so do deposit-bit broadcasts (on
//! processes the root's data go with its note), so do timelines' message
//! log and node samples (`super::timeline`).

use super::agent::{advance_agents, Agent, Agents};
use super::{timeline, BlockedRank, HwOp, MpiError, SendCall, World};
use crate::engine::{Engine, Halt, Tick, Transport};
use crate::machine::{Machine, Protocol};
use crate::msglayer::{MsgRecord, ReqId, Status};

/// Bounds of the windows run on the driver's thread before the rest until
/// a stop run on threads (see [`Ranks::run_windows`]).
const LEAST_ON_ONE: u64 = 16;
const MOST_ON_ONE: u64 = 4096;

/// The partition of a rank another process runs.
const REMOTE: u16 = u16::MAX;

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
    /// Simulated time run on the threads (the rest ran on this one).
    on_threads: Tick,
    /// The threads the partitions' windows run on, when not on this one.
    threads: usize,
}

impl Ranks {
    /// `w` (a fresh world) cut into `threads` partitions, one per thread
    /// (one: `w` itself, the whole machine as one partition).
    pub fn new(w: World, threads: usize) -> Result<Ranks, MpiError> {
        Ranks::cut(w, threads, threads)
    }

    /// `w` (a fresh world) cut into `parts` partitions whose windows run
    /// on up to `threads` threads (at most one a partition, at least one).
    pub fn cut(w: World, parts: usize, threads: usize) -> Result<Ranks, MpiError> {
        let nodes = w.machine().shape.nodes();
        let parts = parts.clamp(1, nodes as usize);
        let threads = threads.clamp(1, parts);
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
        let mut eng = Engine::new(worlds, nodes, lookahead, threads);
        for p in eng.parts.iter_mut() {
            p.model.set_driven(p.lo, p.hi)?;
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
            on_threads: 0,
            threads,
        })
    }

    /// The ranks of `w` (a fresh world) on the processes of `transport` (an
    /// MPI job), one partition each: this process runs its partition's
    /// nodes and the ranks placed there ([`Ranks::is_local`]); every
    /// process drives its own ranks and makes the same calls of [`Ranks::run`],
    /// [`Ranks::drain`], [`crate::report::ranks_report`] and [`Ranks::share`] in the same
    /// order, and each gets the same result as one process would.
    pub fn distributed(w: World, transport: Box<dyn Transport>) -> Result<Ranks, MpiError> {
        let nodes = w.machine().shape.nodes();
        if transport.size() > nodes as usize {
            return Err(MpiError::Usage(format!("{} processes for a machine of {nodes} nodes: at most one process a node", transport.size())));
        }
        if w.now() > 0 {
            return Err(MpiError::Usage("a world is cut into partitions before it runs".into()));
        }
        let lookahead = w.lookahead;
        let mut eng = Engine::distributed(w, nodes, lookahead, transport);
        let p = &mut eng.parts[0];
        p.model.set_driven(p.lo, p.hi)?;
        let (lo, hi) = (p.lo, p.hi);
        let part_of_rank = (0..p.model.nranks())
            .map(|r| {
                let node = p.model.place(r).0;
                if node >= lo && node < hi { 0 } else { REMOTE }
            })
            .collect();
        Ok(Ranks { eng, bits: 0, part_of_rank, at: vec![At::Running], end: lookahead, fresh: true, on_one: LEAST_ON_ONE, now: 0, on_threads: 0, threads: 1 })
    }

    /// The threads the partitions run on (1 on one partition, and on the
    /// processes of an MPI job).
    pub fn threads(&self) -> usize {
        self.threads
    }
    /// How many partitions the machine is cut into (over every process).
    pub fn partitions(&self) -> usize {
        self.eng.transport().map_or(self.eng.parts.len(), |t| t.size())
    }
    /// This process's index and how many there are (0 and 1 unless the
    /// ranks run on the processes of an MPI job).
    pub fn process(&self) -> (usize, usize) {
        self.eng.transport().map_or((0, 1), |t| (t.rank(), t.size()))
    }
    /// Whether this process runs `rank` (always, unless on the processes
    /// of an MPI job).
    pub fn is_local(&self, rank: u32) -> bool {
        self.part_of_rank.get(rank as usize).is_some_and(|&k| k != REMOTE)
    }
    /// Every process's `bytes`, in process order (this process's alone if
    /// it is the only one).
    pub fn share(&self, bytes: Vec<u8>) -> Vec<Vec<u8>> {
        match self.eng.transport() {
            Some(t) => super::parts::share(t, bytes),
            None => vec![bytes],
        }
    }
    /// Every process's `mine`, in process order (this process's alone if
    /// it is the only one).
    fn gathered<T: serde::Serialize + serde::de::DeserializeOwned>(&self, mine: Vec<T>) -> Vec<T> {
        match self.eng.transport() {
            Some(_) => self
                .share(bincode::serialize(&mine).expect("a run's figures serialize"))
                .iter()
                .flat_map(|b| bincode::deserialize::<Vec<T>>(b).expect("figures from a process of this job"))
                .collect(),
            None => mine,
        }
    }
    /// The world of the first partition (the whole machine's if the run
    /// is not cut): a fresh copy of it is a fresh whole world
    /// ([`World::fresh_copy`]).
    pub fn first(&self) -> &World {
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
        debug_assert!(u64::from(r) < 1u64 << (32 - self.bits), "request ids fit beside the partition's");
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
        self.now
    }
    pub fn events(&self) -> u64 {
        self.eng.parts.iter().map(|p| p.model.events()).sum()
    }
    /// The share of the simulated time so far that ran on the threads
    /// (0 on one partition): while ranks act every few windows the engine
    /// runs on this thread, where starting threads would cost more than
    /// they gain ([`Ranks::run_windows`]).
    pub fn threaded_share(&self) -> f64 {
        if self.now == 0 { 0.0 } else { (self.on_threads as f64 / self.now as f64).min(1.0) }
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
    pub fn record_traffic(&mut self) {
        for p in self.eng.parts.iter_mut() {
            p.model.record_traffic();
        }
    }
    /// The recorded traffic (each send is counted where it is posted).
    pub fn traffic_matrix(&self) -> Vec<(u32, u32, u64)> {
        let mut v = self.gathered(self.eng.parts.iter().flat_map(|p| p.model.traffic_matrix()).collect());
        v.sort_unstable();
        v
    }
    /// From now on, logs the point-to-point messages of the ranks
    /// `watched` says, at most `limit` of them (see [`World::record_messages`]).
    pub fn record_messages(&mut self, watched: Vec<bool>, limit: usize) {
        for p in self.eng.parts.iter_mut() {
            p.model.record_messages(watched.clone(), limit);
        }
    }
    /// The message log: the records of every partition (on every process),
    /// merged ([`timeline::merge_logs`]), and how many were left out.
    pub fn message_log(&self) -> (Vec<MsgRecord>, u64) {
        let parts = self.gathered(self.eng.parts.iter().map(|p| p.model.message_log()).collect());
        let first = self.first();
        timeline::merge_logs(parts, first.message_limit(), |r| first.place(r).0)
    }
    /// From now on, samples the torus counters of `nodes` (see
    /// [`World::sample_nodes`]).
    pub fn sample_nodes(&mut self, nodes: &[u32], interval: Tick, cap: usize) {
        for p in self.eng.parts.iter_mut() {
            p.model.sample_nodes(nodes, interval, cap);
        }
    }
    /// Every sampled node's samples (by node; on every process), once the
    /// run is drained ([`Ranks::drain`]) and ends at [`Ranks::now`].
    pub fn node_samples(&self) -> Vec<(u32, Vec<timeline::Sample>)> {
        let end = self.now();
        let mut v = self.gathered(self.eng.parts.iter().flat_map(|p| p.model.node_samples(end)).collect());
        v.sort_unstable_by_key(|(n, _)| *n);
        v
    }

    /// Posts `rank`'s send `s` (see [`World::isend`]).
    pub fn isend(&mut self, rank: u32, s: SendCall) -> Result<ReqId, MpiError> {
        let r = self.of_mut(rank).isend(rank, s)?;
        Ok(self.global(rank, r))
    }
    /// Posts `rank`'s send when request `after` completes (see
    /// [`World::isend_after`]): `after` must be a request of a rank the
    /// same partition runs.
    pub fn isend_after(&mut self, after: ReqId, rank: u32, s: SendCall) -> Result<(), MpiError> {
        let part = self.part_of_rank[rank as usize] as usize;
        let k = (after & ((1 << self.bits) - 1)) as usize;
        if k != part {
            return Err(MpiError::Usage(format!("a send by rank {rank} chained to a request of another partition's rank")));
        }
        let (w, r) = self.req_mut(after);
        w.isend_after(r, rank, s)
    }
    /// Request `g` is released when it completes (see [`World::unwatch`]).
    pub fn unwatch(&mut self, g: ReqId) {
        let (w, r) = self.req_mut(g);
        w.unwatch(r)
    }
    /// Posts a receive (see [`World::irecv`]).
    pub fn irecv(&mut self, rank: u32, src: i64, ctx: u32, tag: i32, capacity: u32) -> Result<ReqId, MpiError> {
        self.irecv_into(rank, src, ctx, tag, capacity, false)
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
    pub fn combine(&mut self, rank: u32, bytes: u64) -> ReqId {
        let r = self.of_mut(rank).combine(rank, bytes);
        self.global(rank, r)
    }
    pub fn pack(&mut self, rank: u32, bytes: u64) -> ReqId {
        let r = self.of_mut(rank).pack(rank, bytes);
        self.global(rank, r)
    }
    pub fn poll(&mut self, rank: u32) -> ReqId {
        let r = self.of_mut(rank).poll(rank);
        self.global(rank, r)
    }
    /// Joins hardware collective `key` (see [`World::hw_collective`]); on
    /// the processes of an MPI job the driver, which sees only its own
    /// ranks, passes each rank's contribution as `payload` and reads every
    /// rank's with [`Ranks::hw_payloads`].
    pub fn hw_collective(&mut self, rank: u32, key: u64, expected: u32, what: HwOp, payload: Vec<u8>) -> Result<ReqId, MpiError> {
        let r = self.of_mut(rank).hw_collective(rank, key, expected, what, payload)?;
        Ok(self.global(rank, r))
    }
    /// Every participant's payload of finished hardware collective `key`
    /// (every partition has them).
    pub fn hw_payloads(&self, key: u64) -> Option<&[(u32, Vec<u8>)]> {
        self.first().hw_payloads(key)
    }
    pub fn hw_forget(&mut self, key: u64) {
        for p in self.eng.parts.iter_mut() {
            p.model.hw_forget(key);
        }
    }
    /// Joins deposit-bit broadcast `id` (see [`World::line_bcast`]). On
    /// the processes of an MPI job the ids must be the same on every
    /// process, and the root's `payload` goes to the others with its note.
    pub fn line_bcast(&mut self, rank: u32, id: u32, root: u32, bytes: u64, payload: Option<Vec<u8>>) -> ReqId {
        let payload = payload.filter(|_| self.eng.transport().is_some());
        let r = self.of_mut(rank).line_bcast(rank, id, root, bytes, payload);
        self.global(rank, r)
    }
    /// Joins message-layer allreduce `id` (see [`World::line_allreduce`]).
    /// On the processes of an MPI job the ids must be the same on every
    /// process, and each rank's `payload` goes to the others with its note.
    pub fn line_allreduce(&mut self, rank: u32, id: u32, root: u32, bytes: u64, payload: Option<Vec<u8>>) -> ReqId {
        let payload = payload.filter(|_| self.eng.transport().is_some());
        let r = self.of_mut(rank).line_allreduce(rank, id, root, bytes, payload);
        self.global(rank, r)
    }
    /// The contributions to message-layer allreduce `id` that came from
    /// the other processes of an MPI job (empty elsewhere).
    pub fn reduce_payloads(&self, id: u32) -> &[Vec<u8>] {
        self.first().reduce_payloads(id)
    }
    /// Forgets message-layer collective `id` (a deposit-bit broadcast or a
    /// torus allreduce) in every partition of this process (its ranks are
    /// all done with it).
    pub fn line_forget(&mut self, id: u32) {
        for p in self.eng.parts.iter_mut() {
            p.model.line_forget(id);
        }
    }
    /// Message-layer collectives kept, over this process's partitions:
    /// (deposit-bit broadcasts, torus allreduces).
    pub fn line_records(&self) -> (usize, usize) {
        self.eng.parts.iter().map(|p| p.model.line_records()).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }
    /// The root's data of deposit-bit broadcast `id` on the processes of an
    /// MPI job (None elsewhere: the driver holds it).
    pub fn bcast_payload(&self, id: u32) -> Option<&[u8]> {
        self.first().bcast_payload(id)
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
    /// returns those ranks (in rank order; the same ranks at the same
    /// ticks, whatever the cut). Ranks in a collective the core runs are
    /// advanced here as far as the order allows ([`super::agent`]); those
    /// returned marked [`super::agent::AGENT_RANK`] are advanced by
    /// [`Ranks::step`] when the driver comes to them.
    pub fn run(&mut self) -> Result<Vec<u32>, MpiError> {
        loop {
            let ready = self.run_parts();
            if let Some(e) = self.eng.parts.iter_mut().find_map(|p| p.model.joins.error.take().or_else(|| p.model.take_failure())) {
                return Err(e);
            }
            let mut ready = ready?;
            advance_agents(self, &mut ready)?;
            if !ready.is_empty() {
                return Ok(ready);
            }
        }
    }

    /// Runs `program` (one copy per partition, from `make`) on these fresh
    /// ranks, on their partitions and threads: the ranks' calls are made in
    /// the core, none is driven from outside (see [`super::parts::run`],
    /// which gives the same result on copies cut any way).
    pub fn run_program(&mut self, make: &dyn Fn() -> Box<dyn super::parts::Program>) -> Result<super::parts::PartsRun, MpiError> {
        if self.eng.transport().is_some() {
            return Err(MpiError::Usage("a program in the core on the processes of an MPI job runs with parts::run_distributed".into()));
        }
        if self.events() > 0 || self.now > 0 {
            return Err(MpiError::Usage("a program in the core runs on fresh ranks (these have run)".into()));
        }
        let threads = self.eng.parts.len();
        self.swap_queues();
        let r = super::parts::run_program(&mut self.eng, threads, make);
        self.swap_queues();
        if let Ok(r) = &r {
            self.now = r.end;
        }
        r
    }

    /// Runs the partitions until some have ranks that may go on: those of
    /// the earliest tick, in rank order. Error: nothing is pending anywhere
    /// (with the blocked ranks, if any).
    fn run_parts(&mut self) -> Result<Vec<u32>, MpiError> {
        if self.eng.transport().is_some() {
            return self.run_remote();
        }
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
                return Ok(self.resume_at(t));
            }
            if !self.close_window() {
                return Err(self.nothing_pending());
            }
        }
    }

    /// [`Ranks::run_parts`] on the processes of an MPI job: this process's
    /// partition runs to its first stop or the window's end; the processes
    /// agree on the earliest stop (a reduction, every round, on every
    /// process); the process that stopped there returns its ranks, the
    /// others go round again (their ranks later), until no process has
    /// stopped in the window: then it closes.
    fn run_remote(&mut self) -> Result<Vec<u32>, MpiError> {
        loop {
            let end = self.end;
            if self.at[0] == At::Running {
                self.at[0] = self.eng.parts[0].model.run_driven(end).map_or(At::End, At::Stopped);
            }
            let mine = match self.at[0] {
                At::Stopped(t) => t,
                _ => Tick::MAX,
            };
            let mut first = [u64::MAX - mine];
            self.eng.transport().expect("a distributed run").reduce(&mut [], &mut first);
            let first = u64::MAX - first[0];
            if first == Tick::MAX {
                if !self.close_window() {
                    return Err(self.nothing_pending());
                }
            } else if first == mine {
                return Ok(self.resume_at(mine));
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
        // One thread (one partition, or partitions held to one thread)
        // has no threads to start.
        let mut threads = 1;
        let halt = loop {
            self.eng.set_threads(threads);
            let start = self.eng.now();
            self.swap_queues();
            let halt = self.eng.run_until_stop(if threads < self.threads { self.on_one } else { u64::MAX });
            self.swap_queues();
            match halt {
                Halt::Limit(_) => threads = self.threads,
                h => {
                    if threads > 1 {
                        let ran = match h {
                            Halt::Stopped(t, _) => {
                                self.on_threads += t - start;
                                (t - start) / lookahead
                            }
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

    /// Hands each partition's queue to the engine (its part's), or back to
    /// the world, whose calls use its own: the engine runs and closes
    /// windows on its parts' queues.
    fn swap_queues(&mut self) {
        for p in self.eng.parts.iter_mut() {
            std::mem::swap(&mut p.q, &mut p.model.q);
        }
    }

    /// The ranks of the partitions stopped at tick `t`, in rank order;
    /// those partitions may run on.
    fn resume_at(&mut self, t: Tick) -> Vec<u32> {
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
        ready
    }

    /// Nothing is pending anywhere: the blocked ranks (none if every rank
    /// is done).
    fn nothing_pending(&self) -> MpiError {
        let mut blocked: Vec<BlockedRank> = self.eng.parts.iter().flat_map(|p| p.model.blocked()).collect();
        if let Some(t) = self.eng.transport() {
            return MpiError::Blocked(super::parts::all_blocked(t, blocked));
        }
        blocked.sort_by_key(|b| b.rank);
        MpiError::Blocked(blocked)
    }

    /// Every partition is at the window's end: the window closes (see
    /// [`Engine::close_window`]) and the next one opens. False if nothing
    /// is pending anywhere.
    fn close_window(&mut self) -> bool {
        let ran: Vec<bool> = self.eng.parts.iter().map(|p| p.model.events() != p.model.part.as_ref().map_or(0, |s| s.opened)).collect();
        // The engine exchanges what the partitions' queues hold.
        self.swap_queues();
        let next = self.eng.close_window(self.end, &ran);
        self.swap_queues();
        let lookahead = self.first().lookahead;
        for p in self.eng.parts.iter_mut() {
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

    /// Runs until nothing is left to do (packets of completed sends still
    /// in flight, coprocessor work); returns the time it ends, that of the
    /// last event. Error: ranks that wait forever (on the processes of an
    /// MPI job, those of other processes: this process's are all done).
    pub fn drain(&mut self) -> Result<Tick, MpiError> {
        // No rank of this process waits any more.
        let blocked = loop {
            match self.run_parts() {
                Ok(_) => continue,
                Err(MpiError::Blocked(b)) => break b,
                Err(e) => return Err(e),
            }
        };
        let mut last = [self.eng.parts.iter().map(|p| p.model.last_event()).max().unwrap_or(0).max(self.now)];
        if let Some(t) = self.eng.transport() {
            t.reduce(&mut [], &mut last);
        }
        self.now = last[0];
        if blocked.is_empty() { Ok(self.now) } else { Err(MpiError::Blocked(blocked)) }
    }

    /// The worlds of this process's partitions, in order.
    pub fn worlds(&self) -> impl Iterator<Item = &World> {
        self.eng.parts.iter().map(|p| &p.model)
    }
    /// The other processes of an MPI job, if the ranks run on them.
    pub fn transport(&self) -> Option<&dyn Transport> {
        self.eng.transport()
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
