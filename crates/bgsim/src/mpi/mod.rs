//! Layer 7: MPI point-to-point on the message layer, as a world of ranks
//! driven from outside (the Python rank programs, or Rust tests).
//!
//! The driver posts operations for a rank at the current simulated time
//! ([`World::isend`], [`World::irecv`], [`World::probe`], [`World::compute`]),
//! then blocks the rank on some of its requests ([`World::block`]). When
//! every running rank is blocked, [`driven::Ranks::run`] advances the
//! simulation until some blocked rank's requests are satisfied and returns
//! those ranks, or reports that no rank can ever go on (every blocked rank
//! with what it waits for).
//!
//! A world is one partition of the windowed engine (`engine::parallel`),
//! the whole machine being the case of one: one loop drives every MPI run,
//! its ranks driven from outside ([`driven::Ranks`]) or by a program in the
//! core ([`parts::Program`]), on one partition, on threads or on the
//! processes of an MPI job.
//!
//! Matching (posted order, ANY_SOURCE / ANY_TAG, the unexpected queue) and
//! the protocols live in the message layer; MPI adds the protocol choice by
//! size, its per-message costs, send modes and the blocking discipline.
//! Communicators reach this layer as context ids and world ranks.

pub mod agent;
pub mod coll;
pub mod driven;
mod hw;
pub mod parts;
pub mod skeleton;
pub mod timeline;

use crate::collective::{Tree, TreeCounters};
use crate::engine::{EngineStats, Event, EventQueue, Model, Tick, NO_NODE};
use std::collections::HashMap;
use crate::machine::{Machine, Mapping, Protocol, Slot};
use crate::msglayer::{MsgLayer, MsgLog, RankStats, ReqId, ReqKind, SendMode, SendReq, Status};
use crate::node::{CoreCounters, Work};
use crate::packet::Net;
use thiserror::Error;

/// Errors of the MPI layer.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum MpiError {
    #[error("{0}")]
    Mapping(#[from] crate::machine::MappingError),
    #[error("rank {0} is out of range (the world has {1} ranks)")]
    Rank(i64, u32),
    /// A hardware collective on a machine without its network.
    #[error("{what:?} needs {component}, which this machine does not have")]
    NoComponent { what: HwOp, component: &'static str },
    /// The ranks of one hardware collective called it differently.
    #[error("collective arguments differ between ranks: rank {rank} calls {what:?} with {expected} participants, rank {other} called {other_what:?} with {other_expected}")]
    CollectiveMismatch { rank: u32, what: HwOp, expected: u32, other: u32, other_what: HwOp, other_expected: u32 },
    /// Two nodes holding ranks that no route around the dead nodes and
    /// links joins.
    #[error("{0}: the ranks cannot all reach each other (place them elsewhere with a mapfile, or fewer ranks)")]
    NoRoute(crate::torus::NoRoute),
    /// No rank can make progress.
    #[error("{}", blocked_message(.0))]
    Blocked(Vec<BlockedRank>),
    /// A skeleton that does not fit the world it is given.
    #[error("{0}")]
    Usage(String),
}

impl MpiError {
    /// A message larger than the message layer carries.
    pub fn message_too_large(bytes: u64) -> Self {
        MpiError::Usage(format!(
            "a message of {bytes} bytes: messages are limited to {} bytes (4 GiB - 1); send it in parts",
            crate::msglayer::MAX_MESSAGE_BYTES
        ))
    }
}

/// A rank that waits forever, and for what.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockedRank {
    pub rank: u32,
    pub waiting_for: Vec<String>,
}

fn blocked_message(b: &[BlockedRank]) -> String {
    let mut s = format!("deadlock: {} rank(s) are blocked and no message is in flight that could release them", b.len());
    for r in b.iter().take(64) {
        s.push_str(&format!("\n  rank {}: waits for {}", r.rank, r.waiting_for.join(" and ")));
    }
    if b.len() > 64 {
        s.push_str(&format!("\n  ... and {} more", b.len() - 64));
    }
    s
}

/// A hardware collective: on the tree (with the packets it takes and
/// whether floating point needs two passes) or the global-interrupt barrier.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum HwOp {
    Tree { op: TreeOpRanks, bytes: u64, two_pass: bool },
    Barrier,
}

/// A tree operation in terms of world ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TreeOpRanks {
    Bcast { root: u32 },
    Reduce { root: u32 },
    Allreduce,
}

/// What a blocked rank waits for: `need` of `reqs` complete.
#[derive(Clone, Debug)]
struct Wait {
    reqs: Vec<ReqId>,
    need: usize,
    /// How many of `reqs` are complete.
    done: usize,
}

struct Stack {
    net: Net,
    ml: MsgLayer,
    /// Samples of chosen nodes' counters, for timelines ([`timeline`]).
    sampler: Option<Box<timeline::Sampler>>,
}

impl Model for Stack {
    #[inline]
    fn handle(&mut self, now: Tick, ev: crate::engine::Event, q: &mut EventQueue) {
        if let Some(s) = self.sampler.as_deref_mut() {
            s.see(&self.net, now, ev.node);
        }
        self.net.handle(&mut self.ml, now, ev, q);
    }
    #[inline]
    fn touch(&self, e: &Event, stage: usize) {
        self.net.touch(e, stage);
        if stage == 1 {
            self.ml.touch(&self.net, e);
        }
    }
}

/// An MPI send as a rank posts it ([`World::isend`]): to world rank
/// `dest` in context `ctx` with `tag`, carrying `data` - or, for a message
/// of which only the size matters (a communication skeleton's, a
/// size-only run's), `bytes` with no data - in send mode `mode`, by the
/// protocol `force` names (None: chosen by size, see
/// [`World::protocol_for`]).
#[derive(Clone, Debug)]
pub struct SendCall {
    pub dest: i64,
    pub ctx: u32,
    pub tag: i32,
    pub data: Vec<u8>,
    /// The message's size when it carries no data.
    pub bytes: Option<u32>,
    pub mode: SendMode,
    pub force: Option<Protocol>,
}

impl SendCall {
    /// A standard send of `data`.
    pub fn new(dest: i64, ctx: u32, tag: i32, data: Vec<u8>) -> Self {
        SendCall { dest, ctx, tag, data, bytes: None, mode: SendMode::Standard, force: None }
    }
    /// A standard send of `bytes` without data.
    pub fn sized(dest: i64, ctx: u32, tag: i32, bytes: u32) -> Self {
        SendCall { bytes: Some(bytes), ..SendCall::new(dest, ctx, tag, Vec::new()) }
    }
    /// This send in mode `mode`.
    pub fn mode(self, mode: SendMode) -> Self {
        SendCall { mode, ..self }
    }
    /// This send by protocol `force` (None: chosen by size).
    pub fn protocol(self, force: Option<Protocol>) -> Self {
        SendCall { force, ..self }
    }
}

/// The message tier's longest train, in packets (see [`World::set_trains`]):
/// a message of up to 64 full packets (15 KB on BG/P) books each link of
/// its route once, a longer one once per 64 packets. Trains of 256 ran
/// 1.5 times as fast on a 64 KB all-to-all and erred more (docs/coarse.md).
pub const MESSAGE_TRAIN: u32 = 64;

/// A simulated machine running a set of ranks.
pub struct World {
    stack: Stack,
    /// A windowed queue over every node (see `engine::parallel`): events for
    /// another node are held until their window ends, so a run's order of
    /// events is the one the machine cut into partitions would have.
    q: EventQueue,
    /// Windows' length: the torus hop, the least time in which anything a
    /// node does reaches another node.
    lookahead: Tick,
    stats: EngineStats,
    waits: Vec<Option<Wait>>,
    ready: Vec<u32>,
    nranks: u32,
    eager_max: u32,
    one_packet_max: u32,
    forced: Option<Protocol>,
    /// Hardware collectives' joins ([`hw`]).
    joins: hw::Joins,
    /// Message buffers given back by their last reader, for the next sends,
    /// and their bytes (at most SPARE_BYTES, in buffers of at most
    /// SPARE_BUFFER_BYTES).
    spare: Vec<Vec<u8>>,
    spare_bytes: usize,
    /// Bytes sent per (source rank, destination rank), when recorded
    /// (`record_traffic`).
    traffic: Option<HashMap<(u32, u32), u64>>,
    /// Ranks in a collective the core runs for them (empty until the first).
    agents: Vec<Option<agent::Slot>>,
    /// How the world was built, for copies of it ([`World::fresh_copy`]).
    origin: (Mapping, u64, bool),
    /// A partition of a windowed run ([`parts`]): its nodes, the program
    /// its ranks run, what went wrong, the last event's time.
    part: Option<parts::PartState>,
    /// Sends to post when a request completes, by whom ([`World::isend_after`]).
    chains: HashMap<ReqId, Vec<(u32, SendCall)>>,
    /// Requests nobody waits for, released when they complete.
    unwatched: Vec<bool>,
    /// Contributions to message-layer allreduces on the processes of an MPI
    /// job, (id, data), until every partition has them ([`hw::NOTE_CONTRIB`]).
    contribs: Vec<Option<(u32, Vec<u8>)>>,
}

/// How many bytes of message buffers [`World::recycle`] keeps, and the
/// largest buffer it keeps.
const SPARE_BYTES: usize = 64 << 20;
const SPARE_BUFFER_BYTES: usize = 64 << 10;

impl World {
    /// `nranks` ranks placed by `mapping` on `machine`; `mpi`: charge MPI's
    /// per-message costs (false: the bare message layer).
    pub fn new(machine: &Machine, nranks: u32, mapping: &Mapping, seed: u64, mpi: bool) -> Result<World, MpiError> {
        let slots: Vec<Slot> = mapping.slots(&machine.shape, machine.tasks_per_node(), nranks, &machine.faults.nodes)?;
        let mut net = Net::new(machine, seed);
        if let Some(f) = net.faults() {
            let geo = net.geometry();
            let mut used = vec![false; geo.nodes() as usize];
            for s in &slots {
                used[geo.index([s[0], s[1], s[2]]) as usize] = true;
            }
            if let Some(bad) = f.unreachable(geo, &used) {
                return Err(MpiError::NoRoute(bad));
            }
        }
        let ml = MsgLayer::new(&mut net, &slots, mpi);
        let m = &machine.spec.mpi;
        let lookahead = machine.hop_latency.max(1);
        let mut q = EventQueue::windowed(0, machine.shape.nodes());
        q.window = (0, lookahead);
        Ok(World {
            stack: Stack { net, ml, sampler: None },
            q,
            lookahead,
            stats: EngineStats::default(),
            waits: vec![None; nranks as usize],
            ready: Vec::new(),
            nranks,
            eager_max: m.eager_max_bytes,
            one_packet_max: m.one_packet_max_bytes,
            forced: m.forced(),
            joins: hw::Joins::default(),
            contribs: Vec::new(),
            spare: Vec::new(),
            spare_bytes: 0,
            traffic: None,
            agents: Vec::new(),
            origin: (mapping.clone(), seed, mpi),
            part: None,
            chains: HashMap::new(),
            unwatched: Vec::new(),
        })
    }

    pub fn nranks(&self) -> u32 {
        self.nranks
    }
    /// Runs the torus on the coarse tier (`torus::coarse`): before the
    /// first operation.
    pub fn set_coarse(&mut self) -> Result<(), MpiError> {
        assert_eq!(self.now(), 0, "the tier is chosen before the run");
        self.stack.net.set_coarse_torus().map_err(MpiError::Usage)
    }
    /// Runs the message tier: the coarse torus (see [`World::set_coarse`]),
    /// and messages whose full data packets go as trains of up to
    /// `packets` (`MsgLayer::set_trains`): before the first operation.
    pub fn set_trains(&mut self, packets: u32) -> Result<(), MpiError> {
        if self.machine().spec.dma.is_none() {
            return Err(MpiError::Usage(format!(
                "the message tier needs a machine whose DMA engine moves the packets (such as bgp); on {} the cores write and \
                 read every packet: run on packets or --fidelity coarse",
                self.machine().name()
            )));
        }
        self.set_coarse()?;
        self.stack.net.carry_trains();
        self.stack.ml.set_trains(packets);
        Ok(())
    }
    /// "packet", "coarse" or "message".
    pub fn fidelity(&self) -> &'static str {
        if self.stack.ml.trains() > 1 {
            "message"
        } else if self.stack.net.coarse_torus() {
            "coarse"
        } else {
            "packet"
        }
    }
    /// From now on, counts the bytes every point-to-point send carries, per
    /// (source, destination) rank (collectives' messages included).
    pub fn record_traffic(&mut self) {
        self.traffic.get_or_insert_with(HashMap::new);
    }
    /// From now on, logs the point-to-point messages sent or received by
    /// the ranks `watched` says (up to `limit` of them; the others are
    /// counted): for timelines.
    pub fn record_messages(&mut self, watched: Vec<bool>, limit: usize) {
        assert_eq!(watched.len(), self.nranks as usize);
        self.stack.ml.log = Some(MsgLog { watched, limit, ..Default::default() });
    }
    /// How many records the message log keeps (0: none kept).
    pub fn message_limit(&self) -> usize {
        self.stack.ml.log.as_ref().map_or(0, |l| l.limit)
    }
    /// This world's part of the message log (its own ranks' sends on a
    /// partition; see [`timeline::merge_logs`]).
    pub fn message_log(&self) -> timeline::LogPart {
        let (lo, hi) = self.own_nodes();
        let mut part = timeline::LogPart { lo, hi, ..Default::default() };
        if let Some(l) = &self.stack.ml.log {
            part.records.clone_from(&l.records);
            part.remote_done.clone_from(&l.remote_done);
            part.dropped = l.dropped;
        }
        part
    }
    /// From now on, samples the torus counters of `nodes` every `interval`
    /// ticks, at most `cap` samples each ([`timeline::Sampler`]).
    pub fn sample_nodes(&mut self, nodes: &[u32], interval: Tick, cap: usize) {
        let n = self.machine().shape.nodes();
        self.stack.sampler = Some(Box::new(timeline::Sampler::new(n, nodes, interval, cap)));
    }
    /// The samples of the sampled nodes this world runs, the run ending at
    /// `end` with every event handled.
    pub fn node_samples(&self, end: Tick) -> Vec<(u32, Vec<timeline::Sample>)> {
        let (lo, hi) = self.own_nodes();
        self.stack.sampler.as_ref().map_or_else(Vec::new, |s| s.finish(&self.stack.net, end, |n| n >= lo && n < hi))
    }
    /// The recorded traffic: (source, destination, bytes), sorted.
    pub fn traffic_matrix(&self) -> Vec<(u32, u32, u64)> {
        let mut v: Vec<(u32, u32, u64)> = self.traffic.iter().flatten().map(|(&(s, d), &b)| (s, d, b)).collect();
        v.sort_unstable();
        v
    }
    pub fn machine(&self) -> &Machine {
        self.stack.net.machine()
    }
    /// Current simulated time, ticks.
    pub fn now(&self) -> Tick {
        self.q.now()
    }
    /// The time of `rank`: now, or later if its core is still busy with
    /// work it has been given.
    pub fn rank_time(&self, rank: u32) -> Tick {
        let (node, core) = self.stack.ml.place(rank);
        self.q.now().max(self.stack.net.core_busy_until(node, core))
    }
    /// Node index and task of a rank.
    pub fn place(&self, rank: u32) -> (u32, u32) {
        (self.stack.ml.place(rank).0, self.stack.ml.task(rank))
    }
    pub fn coords(&self, rank: u32) -> [u32; 4] {
        let (node, t) = self.place(rank);
        let c = self.stack.net.geometry().coords32(node);
        [c[0], c[1], c[2], t]
    }
    pub fn rank_stats(&self, rank: u32) -> RankStats {
        self.stack.ml.stats(rank)
    }
    pub fn core_counters(&self, rank: u32) -> CoreCounters {
        let (node, core) = self.stack.ml.place(rank);
        self.stack.net.core_counters(node, core)
    }
    pub fn net(&self) -> &Net {
        &self.stack.net
    }
    pub fn events(&self) -> u64 {
        self.stats.events
    }
    pub fn packets_sent(&self) -> u64 {
        self.stack.ml.packets_sent
    }
    /// Data packets that arrived after a later packet of their message.
    pub fn out_of_order_packets(&self) -> u64 {
        self.stack.ml.out_of_order
    }
    pub fn messages_done(&self) -> u64 {
        self.stack.ml.messages_done
    }

    fn check_rank(&self, r: i64) -> Result<u32, MpiError> {
        if r < 0 || r >= self.nranks as i64 {
            Err(MpiError::Rank(r, self.nranks))
        } else {
            Ok(r as u32)
        }
    }

    /// The protocol MPI uses for `bytes` (forced by the machine or the call).
    pub fn protocol_for(&self, bytes: u32, force: Option<Protocol>) -> Protocol {
        force.or(self.forced).unwrap_or(if bytes <= self.one_packet_max {
            Protocol::OnePacket
        } else if bytes <= self.eager_max {
            Protocol::Eager
        } else {
            Protocol::Rendezvous
        })
    }

    /// Posts `rank`'s send `s`.
    pub fn isend(&mut self, rank: u32, s: SendCall) -> Result<ReqId, MpiError> {
        let r = self.post(rank, s)?;
        self.collect();
        Ok(r)
    }

    /// Posts `rank`'s sends as one group (`msglayer::group`): one request,
    /// complete when every one of them is; they start and go as if posted
    /// one by one.
    pub fn isend_group(&mut self, rank: u32, sends: impl ExactSizeIterator<Item = SendCall>) -> Result<ReqId, MpiError> {
        let group = self.stack.ml.send_group(rank, sends.len() as u32);
        let sends = sends.map(|s| self.send_req(rank, s, group)).collect::<Result<Vec<_>, _>>()?;
        let now = self.q.now();
        self.at_rank(rank, |net, ml, q| ml.post_send_group(net, q, now, rank, group, sends));
        self.collect();
        Ok(group)
    }

    /// Posts `rank`'s receives from each of `srcs` (world ranks, in the
    /// order they would be posted one by one) as one group: one request,
    /// complete when every message is in; None if a source repeats (then
    /// post them one by one). [`World::take_group`] gives what came.
    pub fn irecv_group(&mut self, rank: u32, srcs: &[u32], ctx: u32, tag: i32, capacity: u32) -> Result<Option<ReqId>, MpiError> {
        if let Some(&s) = srcs.iter().find(|&&s| s >= self.nranks) {
            return Err(MpiError::Rank(s as i64, self.nranks));
        }
        let now = self.q.now();
        let r = self.at_rank(rank, |net, ml, q| ml.irecv_group(net, q, now, rank, srcs, ctx, tag, capacity, false));
        self.collect();
        Ok(r)
    }

    /// What a completed receive group took in, in its sources' order:
    /// each message's count and contents (None: it had none).
    pub fn take_group(&mut self, req: ReqId) -> crate::msglayer::Received {
        self.stack.ml.take_group(req)
    }

    /// Posts `rank`'s send `s`, leaving what completed for `collect`.
    fn post(&mut self, rank: u32, s: SendCall) -> Result<ReqId, MpiError> {
        self.post_in(rank, s, crate::msglayer::NONE)
    }

    /// [`World::post`], the send a part of send group `group` (`NONE`: none).
    fn post_in(&mut self, rank: u32, s: SendCall, group: ReqId) -> Result<ReqId, MpiError> {
        let send = self.send_req(rank, s, group)?;
        let now = self.q.now();
        Ok(self.at_rank(rank, |net, ml, q| ml.post_send(net, q, now, send)))
    }

    /// The message layer's send for `rank`'s call `s` (checked, and counted
    /// in the traffic matrix).
    fn send_req(&mut self, rank: u32, s: SendCall, group: ReqId) -> Result<SendReq, MpiError> {
        let bytes = match s.bytes {
            Some(b) => b,
            None => u32::try_from(s.data.len()).map_err(|_| MpiError::message_too_large(s.data.len() as u64))?,
        };
        let dest = self.check_rank(s.dest)?;
        if let Some(t) = &mut self.traffic {
            *t.entry((rank, dest)).or_default() += bytes as u64;
        }
        let proto = self.protocol_for(bytes, s.force);
        Ok(SendReq { rank, dest, ctx: s.ctx, tag: s.tag, data: s.data, bytes, proto, mode: s.mode, group })
    }

    /// Posts `rank`'s send `s` when request `after` completes, at that
    /// time (as one-sided traffic is answered: a get's reply leaves when its
    /// request is in, an ack when the data is); at once if it has. The
    /// send is nobody's to wait for: it is released when done. Several
    /// sends may follow one request; [`World::unwatch`] it once they are
    /// chained (not before: its slot may then be reused).
    pub fn isend_after(&mut self, after: ReqId, rank: u32, s: SendCall) -> Result<(), MpiError> {
        self.check_rank(s.dest)?;
        if self.is_done(after) {
            let r = self.post(rank, s)?;
            self.unwatch(r);
            self.collect();
        } else {
            self.chains.entry(after).or_default().push((rank, s));
        }
        Ok(())
    }

    /// Request `req` is released when it completes (now, if it has).
    pub fn unwatch(&mut self, req: ReqId) {
        if self.is_done(req) {
            return self.release(req);
        }
        self.mark_unwatched(req);
    }

    /// Marks `req` to be released when `collect` sees it complete.
    fn mark_unwatched(&mut self, req: ReqId) {
        let i = req as usize;
        if self.unwatched.len() <= i {
            self.unwatched.resize(i + 1, false);
        }
        self.unwatched[i] = true;
    }

    /// Runs `f`, an operation `rank` posts, as an event of the rank's node:
    /// what it sends to other nodes is held to the window's end as their
    /// events' are (see `engine::parallel`).
    fn at_rank<R>(&mut self, rank: u32, f: impl FnOnce(&mut Net, &mut MsgLayer, &mut EventQueue) -> R) -> R {
        self.q.cur = self.stack.ml.place(rank).0;
        let Stack { net, ml, .. } = &mut self.stack;
        let r = f(net, ml, &mut self.q);
        self.q.cur = NO_NODE;
        r
    }

    /// Posts a receive (`src` < 0: any source; `tag` < 0: any tag).
    pub fn irecv(&mut self, rank: u32, src: i64, ctx: u32, tag: i32, capacity: u32) -> Result<ReqId, MpiError> {
        self.irecv_into(rank, src, ctx, tag, capacity, false)
    }

    /// Posts a receive into a buffer that is (`unaligned` = false) or is not
    /// aligned for network access.
    #[allow(clippy::too_many_arguments)]
    pub fn irecv_into(&mut self, rank: u32, src: i64, ctx: u32, tag: i32, capacity: u32, unaligned: bool) -> Result<ReqId, MpiError> {
        let src = if src < 0 { crate::msglayer::ANY } else { self.check_rank(src)? as i32 };
        let now = self.q.now();
        let r = self.at_rank(rank, |net, ml, q| ml.irecv(net, q, now, rank, src, ctx, tag.max(-1), capacity, unaligned));
        self.collect();
        Ok(r)
    }

    /// Posts a probe request.
    pub fn probe(&mut self, rank: u32, src: i64, ctx: u32, tag: i32) -> Result<ReqId, MpiError> {
        let src = if src < 0 { crate::msglayer::ANY } else { self.check_rank(src)? as i32 };
        let r = self.stack.ml.probe(rank, src, ctx, tag.max(-1));
        self.collect();
        Ok(r)
    }

    /// Charges `ticks` of `work` to the rank's core; the returned request
    /// completes when it is done.
    fn charge_core(&mut self, rank: u32, ticks: Tick, work: Work) -> ReqId {
        let now = self.q.now();
        let Stack { net, ml, .. } = &mut self.stack;
        let (node, core) = ml.place(rank);
        let done = net.charge(&mut self.q, now, node, core, ticks, work);
        ml.timer_req(net, &mut self.q, rank, done)
    }

    /// Charges `ticks` of application compute to the rank's core; the
    /// returned request completes when it is done.
    pub fn compute(&mut self, rank: u32, ticks: Tick) -> ReqId {
        self.charge_core(rank, ticks, Work::Compute)
    }

    /// A reduction's local combine of `bytes` of result (MPI's work inside
    /// a reduce, allreduce, scan ...): the rank's core reads both operands
    /// and writes the result at `node.combine_bytes_per_cycle` (counted as
    /// copying); the returned request completes when it is done.
    pub fn combine(&mut self, rank: u32, bytes: u64) -> ReqId {
        let rate = self.stack.net.machine().spec.node.combine_bytes_per_cycle;
        self.memory_work(rank, bytes, rate)
    }

    /// MPI's pack or unpack of `bytes` of a message whose datatype is not
    /// contiguous (between the program's buffer and a contiguous one): the
    /// rank's core copies them at `node.copy_bytes_per_cycle` (counted as
    /// copying); the returned request completes when it is done.
    pub fn pack(&mut self, rank: u32, bytes: u64) -> ReqId {
        let rate = self.stack.net.machine().spec.node.copy_bytes_per_cycle;
        self.memory_work(rank, bytes, rate)
    }

    fn memory_work(&mut self, rank: u32, bytes: u64, bytes_per_cycle: f64) -> ReqId {
        let m = self.stack.net.machine();
        let ticks = (bytes as f64 / bytes_per_cycle).ceil() as Tick * m.tick_cycle;
        self.charge_core(rank, ticks, Work::Copy)
    }

    /// A poll that found nothing (MPI_Test, MPI_Iprobe ...): the rank's core
    /// spends the machine's poll cost; the request completes when it has,
    /// so a polling loop lets the other ranks and the network go on.
    pub fn poll(&mut self, rank: u32) -> ReqId {
        let m = self.stack.net.machine();
        let ticks = m.spec.cpu.poll_cycles as Tick * m.tick_cycle;
        self.charge_core(rank, ticks.max(1), Work::Poll)
    }

    /// Joins hardware collective `key` (the same for every participant) with
    /// `expected` participants; the returned request completes when this
    /// rank is done. Every participant must pass the same `what`.
    /// `payload`: what the rank contributes, for [`World::hw_payloads`]
    /// (drivers that do not see every rank; else empty).
    pub fn hw_collective(&mut self, rank: u32, key: u64, expected: u32, what: HwOp, payload: Vec<u8>) -> Result<ReqId, MpiError> {
        let net = &self.stack.net;
        let missing = match what {
            HwOp::Barrier => (!net.has_barrier()).then_some("a global-interrupt barrier"),
            HwOp::Tree { .. } => (!net.has_tree()).then_some("a collective network"),
        };
        if let Some(component) = missing {
            return Err(MpiError::NoComponent { what, component });
        }
        let now = self.rank_time(rank);
        let req = self.stack.ml.pending_req(rank);
        let (node, core, tag) = self.stack.ml.completion(req);
        let j = hw::Join { key, expected, what, rank, req, node, core, tag, joined: now, payload };
        if let Err(e) = self.joins.check(&j) {
            self.stack.ml.release(req);
            return Err(e);
        }
        // Every partition takes it in at the window's end (see `hw`).
        let ev = self.joins.write(j);
        crate::engine::Crossing::note_all(&mut self.q, ev, node);
        Ok(req)
    }

    /// Joins message-layer deposit-bit broadcast `id` (the same on every
    /// rank) of `bytes` from `root` (one rank per node). `payload`: the
    /// root's data, for ranks of other processes (see [`World::bcast_payload`]).
    pub fn line_bcast(&mut self, rank: u32, id: u32, root: u32, bytes: u64, payload: Option<Vec<u8>>) -> ReqId {
        let now = self.rank_time(rank);
        let payload = payload.filter(|_| rank == root);
        let r = self.at_rank(rank, |net, ml, q| ml.line_bcast(net, q, now, rank, id, root, bytes, payload));
        if rank == root {
            // Nodes of other partitions forward its packets before their
            // ranks join: the root tells them the broadcast (`hw`).
            let node = self.stack.ml.place(rank).0;
            let ev = Event { kind: hw::NOTE_DEPOSIT, a: 0, b: 0, c: 0, node: 0, data: id };
            crate::engine::Crossing::note_all(&mut self.q, ev, node);
        }
        self.collect();
        r
    }

    /// Joins message-layer allreduce `id` (the same on every rank; ids are
    /// shared with the deposit-bit broadcasts) of `bytes`, reduced to
    /// `root` and spread back from it (one rank on every node; see
    /// `msglayer::rectangle`). `payload`: the rank's contribution, for the
    /// other processes of an MPI job ([`World::reduce_payloads`]).
    pub fn line_allreduce(&mut self, rank: u32, id: u32, root: u32, bytes: u64, payload: Option<Vec<u8>>) -> ReqId {
        let now = self.rank_time(rank);
        let r = self.at_rank(rank, |net, ml, q| ml.line_allreduce(net, q, now, rank, id, root, bytes));
        if let Some(p) = payload {
            let node = self.stack.ml.place(rank).0;
            self.contribs.push(Some((id, p)));
            let ev = Event { kind: hw::NOTE_CONTRIB, a: 0, b: 0, c: 0, node: 0, data: (self.contribs.len() - 1) as u32 };
            crate::engine::Crossing::note_all(&mut self.q, ev, node);
        }
        self.collect();
        r
    }

    /// The contributions to message-layer allreduce `id` that came with
    /// the ranks' notes (on the processes of an MPI job).
    pub fn reduce_payloads(&self, id: u32) -> &[Vec<u8>] {
        self.stack.ml.reduce_payloads(id)
    }

    /// Forgets message-layer collective `id` (a deposit-bit broadcast or a
    /// torus allreduce): every rank of this partition is done with it.
    pub fn line_forget(&mut self, id: u32) {
        self.stack.ml.line_forget(id)
    }

    /// Message-layer collectives kept: (deposit-bit broadcasts, torus allreduces).
    pub fn line_records(&self) -> (usize, usize) {
        self.stack.ml.line_records()
    }

    /// Contribution note `ev`'s load, for the other partitions.
    pub(crate) fn contrib_of(&self, ev: &Event) -> (u32, Vec<u8>) {
        self.contribs[ev.data as usize].clone().expect("a contribution not taken in yet")
    }

    /// Takes in a contribution: this partition's own note (`load` None)
    /// or another's.
    pub(crate) fn take_contrib(&mut self, ev: &Event, load: Option<(u32, Vec<u8>)>) {
        let (id, p) = match load {
            Some(l) => l,
            None => {
                let l = self.contribs[ev.data as usize].take().expect("a contribution taken in once");
                if self.contribs.iter().all(Option::is_none) {
                    self.contribs.clear();
                }
                l
            }
        };
        self.stack.ml.reduce_payload(&self.stack.net, id, p);
    }

    /// The root's data of deposit-bit broadcast `id`, if it came with the
    /// root's note (on the processes of an MPI job).
    pub fn bcast_payload(&self, id: u32) -> Option<&[u8]> {
        self.stack.ml.bcast_payload(id)
    }

    /// Every participant's payload of finished hardware collective `key`,
    /// (rank, payload) in the order they joined, if any carried one.
    pub fn hw_payloads(&self, key: u64) -> Option<&[(u32, Vec<u8>)]> {
        self.joins.payloads.get(&key).map(|v| &v[..])
    }

    /// Drops the payloads of hardware collective `key`.
    pub fn hw_forget(&mut self, key: u64) {
        self.joins.payloads.remove(&key);
    }

    /// The collective network (its per-link counters).
    pub fn tree(&self) -> Option<&Tree> {
        self.stack.net.tree()
    }

    /// Counters of the collective network (zero on a machine without one).
    pub fn tree_counters(&self) -> TreeCounters {
        self.tree().map(Tree::counters).unwrap_or_default()
    }

    /// Cancels a pending receive or probe.
    pub fn cancel(&mut self, req: ReqId) -> bool {
        let r = self.stack.ml.cancel(req);
        self.collect();
        r
    }

    pub fn is_done(&self, req: ReqId) -> bool {
        self.stack.ml.reqs[req as usize].done()
    }
    pub fn kind(&self, req: ReqId) -> ReqKind {
        self.stack.ml.reqs[req as usize].kind
    }
    pub fn status(&self, req: ReqId) -> Status {
        self.stack.ml.reqs[req as usize].status()
    }
    /// Takes the received data of a completed receive.
    pub fn take_data(&mut self, req: ReqId) -> Option<Vec<u8>> {
        self.stack.ml.take_data(req)
    }
    /// A buffer holding a copy of `data`, for [`Self::isend`]: a recycled one
    /// when there is one (a thousand ranks' 1 KB messages otherwise keep the
    /// allocator busy).
    pub fn buffer_from(&mut self, data: &[u8]) -> Vec<u8> {
        let mut v = match self.spare.pop() {
            Some(v) => {
                self.spare_bytes -= v.capacity();
                v
            }
            None => Vec::new(),
        };
        v.clear();
        v.extend_from_slice(data);
        v
    }
    /// Gives a message's buffer back once its data has been read.
    pub fn recycle(&mut self, v: Vec<u8>) {
        let c = v.capacity();
        if c > 0 && c <= SPARE_BUFFER_BYTES && self.spare_bytes + c <= SPARE_BYTES {
            self.spare_bytes += c;
            self.spare.push(v);
        }
    }
    /// Frees a request slot (after completion, or when abandoned).
    pub fn release(&mut self, req: ReqId) {
        self.stack.ml.release(req)
    }

    /// Blocks `rank` until `need` of `reqs` are complete; false if they
    /// already are (the rank goes on at once).
    pub fn block(&mut self, rank: u32, reqs: Vec<ReqId>, need: usize) -> bool {
        // A request named twice counts once.
        let mut reqs = reqs;
        reqs.sort_unstable();
        reqs.dedup();
        let done = reqs.iter().filter(|&&r| self.is_done(r)).count();
        if done >= need.min(reqs.len()) {
            return false;
        }
        // The requests still pending are marked, so that each completion
        // updates the count in constant time.
        for &r in &reqs {
            let q = &mut self.stack.ml.reqs[r as usize];
            let done = q.done();
            q.set_waited(!done);
        }
        self.waits[rank as usize] = Some(Wait { need: need.min(reqs.len()), reqs, done });
        true
    }

    /// Marks newly completed requests; ranks whose wait is satisfied become ready.
    fn collect(&mut self) {
        let mut done = std::mem::take(&mut self.stack.ml.completed);
        if !self.chains.is_empty() || !self.unwatched.is_empty() {
            done = self.follow_chains(done);
        }
        for &req in &done {
            let q = &mut self.stack.ml.reqs[req as usize];
            if !q.waited() {
                continue;
            }
            q.set_waited(false);
            let rank = q.rank as usize;
            let Some(w) = &mut self.waits[rank] else { continue };
            w.done += 1;
            if w.done >= w.need {
                for &r in &w.reqs {
                    self.stack.ml.reqs[r as usize].set_waited(false);
                }
                self.waits[rank] = None;
                self.ready.push(rank as u32);
            }
        }
        let mut v = done;
        v.clear();
        self.stack.ml.completed = v;
    }

    /// Posts the sends chained to requests in `done` (and to those their
    /// posting completes) and releases the unwatched ones: returns the
    /// rest, to be counted for the ranks waiting.
    fn follow_chains(&mut self, mut done: Vec<ReqId>) -> Vec<ReqId> {
        let mut i = 0;
        while i < done.len() {
            let req = done[i];
            i += 1;
            if let Some(sends) = self.chains.remove(&req) {
                for (rank, s) in sends {
                    // (Its destination was checked when it was chained.)
                    let r = self.post(rank, s).expect("a chained send was checked");
                    self.mark_unwatched(r);
                    done.append(&mut self.stack.ml.completed);
                }
            }
        }
        done.retain(|&req| {
            let i = req as usize;
            if i < self.unwatched.len() && self.unwatched[i] {
                self.unwatched[i] = false;
                self.stack.ml.release(req);
                false
            } else {
                true
            }
        });
        done
    }

    /// Every blocked rank and what it waits for.
    pub fn blocked(&self) -> Vec<BlockedRank> {
        self.waits
            .iter()
            .enumerate()
            .filter_map(|(rank, w)| {
                w.as_ref().map(|w| BlockedRank {
                    rank: rank as u32,
                    waiting_for: w.reqs.iter().filter(|&&r| !self.is_done(r)).map(|&r| self.describe(rank as u32, r)).collect(),
                })
            })
            .collect()
    }

    fn describe(&self, rank: u32, req: ReqId) -> String {
        self.joins.describe(rank, req).unwrap_or_else(|| self.stack.ml.describe(req))
    }

    /// Whether a rank is blocked.
    pub fn is_blocked(&self, rank: u32) -> bool {
        self.waits[rank as usize].is_some()
    }

    /// Converts a time to microseconds / cycles.
    pub fn micros(&self, t: Tick) -> f64 {
        self.stack.net.machine().micros(t)
    }
}
