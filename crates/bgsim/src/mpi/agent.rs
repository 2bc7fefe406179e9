//! Collective algorithms the core runs for a rank, so that a collective
//! costs its driver (a Python rank, a skeleton, a trace) one call instead
//! of one per message. An [`Agent`] posts a step's receives and sends
//! through the same point-to-point calls a rank program makes, waits for
//! them, and posts the next step when they are done, at the same simulated
//! times and in the same order as the program would: the results are the
//! same as the algorithm's Python implementation's.
//!
//! [`World::start`] hands a rank to an agent; [`super::driven::Ranks::run`] advances the
//! agents of ready ranks itself (ranks a driver must resume come back to
//! it in the order they became ready, see [`AGENT_RANK`]); once the agent
//! is done, [`World::take_result`] gives the driver what was received.

use super::{MpiError, SendCall, World};
use crate::machine::Protocol;
use crate::msglayer::{ReqId, SendMode};
use std::sync::Arc;

/// A message's content: bytes, or a size without content (a skeleton's
/// message, or a size-only buffer's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    Bytes(Vec<u8>),
    Size(u32),
}

impl Payload {
    fn size(&self) -> u64 {
        match self {
            Payload::Bytes(b) => b.len() as u64,
            Payload::Size(n) => *n as u64,
        }
    }

    /// A send of this payload to world rank `dest`, the way `x` says.
    fn send(self, dest: i64, x: How) -> SendCall {
        let s = match self {
            Payload::Bytes(b) => SendCall::new(dest, x.ctx, x.tag, b),
            Payload::Size(n) => SendCall::sized(dest, x.ctx, x.tag, n),
        };
        s.mode(x.mode).protocol(x.protocol)
    }
}

/// Largest message a collective's receive accepts (as the Python
/// algorithms' receives).
const RECV_CAPACITY: u32 = crate::msglayer::MAX_MESSAGE_BYTES as u32;

/// An exchange of parts between the ranks of a communicator, in steps:
/// every step posts its receives, then its sends, then waits for all of
/// them. The all-to-all algorithms, the dissemination barrier and the
/// binomial broadcast are exchanges.
#[derive(Debug)]
pub struct Exchange {
    /// World rank of each communicator rank.
    pub peers: Arc<[u32]>,
    /// Context id and tag of the collective's messages.
    pub ctx: u32,
    pub tag: i32,
    pub mode: SendMode,
    /// The protocol of every send (None: MPI's choice by size).
    pub protocol: Option<Protocol>,
    /// Communicator ranks to send to, in the order sends are posted.
    pub dests: Vec<u32>,
    /// What each send carries.
    pub parts: Parts,
    /// Communicator ranks to receive from, in the order receives are posted.
    pub recvs: Vec<u32>,
    pub steps: Steps,
    /// Bytes of result the rank's core combines after step k, before the
    /// next is posted (a reduction's local combine, [`World::combine`]);
    /// steps past its end combine nothing.
    pub combine: Vec<u64>,
}

/// How an exchange's messages go: what its sends share.
#[derive(Clone, Copy)]
struct How {
    ctx: u32,
    tag: i32,
    mode: SendMode,
    protocol: Option<Protocol>,
}

impl Exchange {
    fn how(&self) -> How {
        How { ctx: self.ctx, tag: self.tag, mode: self.mode, protocol: self.protocol }
    }
}

/// What an exchange's sends carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parts {
    /// One payload per send, in the order of `dests`; None: what this rank
    /// received last (a broadcast's relay).
    Each(Vec<Option<Payload>>),
    /// Every send a message of this many bytes without content (a
    /// skeleton's all-to-all: no memory per destination).
    Same(u32),
    /// Every send a message without content of this many bytes and as
    /// many as the rank has received so far (recursive doubling's
    /// allgather of sizes: a rank passes on all it holds).
    Grow(u32),
}

impl Parts {
    /// The payload of send `k` (taken: each is sent once).
    fn take(&mut self, k: usize) -> Option<Payload> {
        match self {
            Parts::Each(v) => v[k].take(),
            Parts::Same(n) => Some(Payload::Size(*n)),
            Parts::Grow(_) => None,
        }
    }

    /// The largest part, in bytes (as held: a part may be larger than a
    /// message can be, which the exchange refuses).
    fn largest(&self) -> u64 {
        match self {
            Parts::Each(v) => v.iter().flatten().map(Payload::size).max().unwrap_or(0),
            Parts::Same(n) | Parts::Grow(n) => *n as u64,
        }
    }
}

/// How an exchange's receives and sends fall into steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Steps {
    /// One step: every receive, then every send.
    All,
    /// Step k: the k-th receive and the k-th send (while there are any).
    Pairwise,
    /// Step k: the next `.0` receives and `.1` sends.
    Counts(Vec<(u32, u32)>),
}

/// What an exchange received: sizes alone while nothing had content (4
/// bytes each: a skeleton's all-to-all on n ranks keeps n of them per
/// rank), else payloads, or (an exchange whose driver takes its result
/// whole, [`Agent::packed`]) their bytes in one buffer, `ends[k]` where
/// the k-th ends: one allocation per rank, not one per message, which the
/// allocator gives back whole.
#[derive(Debug)]
enum Got {
    Sizes(Vec<u32>),
    Payloads(Vec<Payload>),
    Packed { bytes: Vec<u8>, ends: Vec<usize> },
}

impl Got {
    /// Takes `p` in, of `expect` messages in all; returns the buffer it
    /// came in if its bytes were copied (for reuse).
    fn push(&mut self, p: Payload, pack: bool, expect: usize) -> Option<Vec<u8>> {
        match (&mut *self, p) {
            (Got::Sizes(v), Payload::Size(n)) => v.push(n),
            (Got::Payloads(v), p) => v.push(p),
            (Got::Packed { bytes, ends }, Payload::Bytes(b)) => {
                bytes.extend_from_slice(&b);
                ends.push(bytes.len());
                return Some(b);
            }
            (Got::Sizes(v), Payload::Bytes(b)) if pack && v.is_empty() => {
                // Room for as many more of this size (up to 64 MiB at
                // first: the others may be smaller).
                let mut bytes = Vec::with_capacity(b.len().saturating_mul(expect).min(64 << 20));
                bytes.extend_from_slice(&b);
                *self = Got::Packed { ends: vec![b.len()], bytes };
                return Some(b);
            }
            (Got::Packed { .. }, p) => {
                let mut all = std::mem::replace(self, Got::Sizes(Vec::new())).into_payloads();
                all.push(p);
                *self = Got::Payloads(all);
            }
            (Got::Sizes(v), p) => {
                let mut all: Vec<Payload> = v.drain(..).map(Payload::Size).collect();
                all.push(p);
                *self = Got::Payloads(all);
            }
        }
        None
    }

    /// Bytes received so far.
    fn total(&self) -> u64 {
        match self {
            Got::Sizes(v) => v.iter().map(|&n| n as u64).sum(),
            Got::Payloads(v) => v.iter().map(Payload::size).sum(),
            Got::Packed { bytes, .. } => bytes.len() as u64,
        }
    }

    /// A copy of the last message, in one of `w`'s spare buffers.
    fn last(&self, w: &mut World) -> Option<Payload> {
        match self {
            Got::Sizes(v) => v.last().map(|&n| Payload::Size(n)),
            Got::Payloads(v) => v.last().map(|p| match p {
                Payload::Bytes(b) => Payload::Bytes(w.buffer_from(b)),
                Payload::Size(n) => Payload::Size(*n),
            }),
            Got::Packed { bytes, ends } => {
                let k = ends.len().checked_sub(1)?;
                let from = if k == 0 { 0 } else { ends[k - 1] };
                Some(Payload::Bytes(w.buffer_from(&bytes[from..ends[k]])))
            }
        }
    }

    fn into_payloads(self) -> Vec<Payload> {
        match self {
            Got::Sizes(v) => v.into_iter().map(Payload::Size).collect(),
            Got::Payloads(v) => v,
            Got::Packed { bytes, ends } => {
                let mut from = 0;
                ends.iter()
                    .map(|&e| {
                        let p = Payload::Bytes(bytes[from..e].to_vec());
                        from = e;
                        p
                    })
                    .collect()
            }
        }
    }
}

/// A rank's exchange in progress.
#[derive(Debug)]
struct Running {
    x: Exchange,
    /// Next step, and how many there are.
    step: usize,
    steps: usize,
    /// Requests of the step in progress: its receives first.
    reqs: Vec<ReqId>,
    nrecv: usize,
    /// Receives posted before the step in progress.
    recvs_before: usize,
    /// What arrived, in the order of `recvs`.
    got: Got,
    /// Keep what arrives packed ([`Agent::packed`]).
    pack: bool,
    /// Sends posted so far.
    sent: usize,
    /// The step in progress posted its receives as one group (its first
    /// request) and its sends as another (`msglayer::group`).
    grouped: bool,
    /// The combine after the step just done, while the core works on it.
    charge: Option<ReqId>,
}

/// A collective the core runs for one rank.
#[derive(Debug)]
pub struct Agent(Running);

/// The rank of a ready rank whose agent is not done, as [`super::driven::Ranks::run`]
/// returns it: `rank | AGENT_RANK`. Its driver advances it with
/// [`World::step`] when its turn in the list comes.
pub const AGENT_RANK: u32 = 1 << 31;

impl Agent {
    pub fn new(x: Exchange) -> Agent {
        let steps = match &x.steps {
            Steps::All => 1,
            Steps::Pairwise => x.recvs.len().max(x.dests.len()),
            Steps::Counts(c) => c.len(),
        };
        Agent(Running { got: Got::Sizes(Vec::with_capacity(x.recvs.len())), x, step: 0, steps, reqs: Vec::new(), nrecv: 0, recvs_before: 0, sent: 0, pack: false, grouped: false, charge: None })
    }

    /// An agent whose driver takes what arrived whole
    /// ([`Agent::into_packed`]): the contents are kept in one buffer.
    pub fn packed(x: Exchange) -> Agent {
        let mut a = Agent::new(x);
        a.0.pack = true;
        a
    }

    /// Collects the step just done, then posts the next ones until one
    /// must wait (true) or the exchange is done (false).
    fn advance(&mut self, w: &mut World, rank: u32) -> Result<bool, MpiError> {
        loop {
            if let Some(req) = self.0.charge.take() {
                w.release(req);
            } else {
                self.finish_step(w);
                let done = self.0.step;
                let bytes = done.checked_sub(1).and_then(|k| self.0.x.combine.get(k)).copied().unwrap_or(0);
                if bytes > 0 {
                    let req = w.combine(rank, bytes);
                    self.0.charge = Some(req);
                    if w.block(rank, vec![req], 1) {
                        return Ok(true);
                    }
                    continue;
                }
            }
            if self.0.step >= self.0.steps {
                return Ok(false);
            }
            self.post_step(w, rank)?;
            let need = self.0.reqs.len();
            if need > 0 && w.block(rank, self.0.reqs.clone(), need) {
                return Ok(true);
            }
        }
    }

    fn finish_step(&mut self, w: &mut World) {
        let r = &mut self.0;
        if r.grouped && r.nrecv > 0 {
            let expect = r.x.recvs.len();
            for (count, data) in w.take_group(r.reqs[0]) {
                let p = match data {
                    Some(d) => Payload::Bytes(d),
                    None if count > 0 => Payload::Size(count),
                    None => Payload::Bytes(Vec::new()),
                };
                if let Some(b) = r.got.push(p, r.pack, expect) {
                    w.recycle(b);
                }
            }
        }
        for (k, &req) in r.reqs.iter().enumerate() {
            if k < r.nrecv && !r.grouped {
                let count = w.status(req).count;
                let p = match w.take_data(req) {
                    Some(d) if !d.is_empty() => Payload::Bytes(d),
                    Some(d) => {
                        w.recycle(d);
                        if count > 0 { Payload::Size(count) } else { Payload::Bytes(Vec::new()) }
                    }
                    None if count > 0 => Payload::Size(count),
                    None => Payload::Bytes(Vec::new()),
                };
                if let Some(b) = r.got.push(p, r.pack, r.x.recvs.len()) {
                    w.recycle(b);
                }
            }
            w.release(req);
        }
        r.reqs.clear();
        r.recvs_before += r.nrecv;
        r.nrecv = 0;
        r.grouped = false;
    }

    fn post_step(&mut self, w: &mut World, rank: u32) -> Result<(), MpiError> {
        let r = &mut self.0;
        if r.x.steps == Steps::All && Self::post_grouped(r, w, rank)?.is_some() {
            r.step += 1;
            return Ok(());
        }
        let x = &r.x;
        let (nrecv, nsend) = match &x.steps {
            Steps::All => (x.recvs.len(), x.dests.len()),
            Steps::Pairwise => (usize::from(r.step < x.recvs.len()), usize::from(r.sent < x.dests.len())),
            Steps::Counts(c) => (c[r.step].0 as usize, c[r.step].1 as usize),
        };
        let how = x.how();
        let first = r.recvs_before;
        for &src in x.recvs.iter().skip(first).take(nrecv) {
            let src = x.peers[src as usize];
            r.reqs.push(w.irecv_into(rank, src as i64, how.ctx, how.tag, RECV_CAPACITY, false)?);
        }
        r.nrecv = r.reqs.len();
        for k in r.sent..r.sent + nsend {
            let d = r.x.peers[r.x.dests[k] as usize] as i64;
            let p = match (r.x.parts.take(k), &r.x.parts) {
                (Some(p), _) => p,
                (None, &Parts::Grow(first)) => {
                    let n = first as u64 + r.got.total();
                    Payload::Size(u32::try_from(n).map_err(|_| MpiError::message_too_large(n))?)
                }
                (None, _) => match r.got.last(w) {
                    Some(p) => p,
                    None => return Err(MpiError::Usage("a collective relays a message before it has received one".into())),
                },
            };
            r.reqs.push(w.isend(rank, p.send(d, how))?);
        }
        r.sent += nsend;
        r.step += 1;
        Ok(())
    }

    /// Posts a one-step exchange's receives as one group and its sends as
    /// another (`msglayer::group`): a few bytes a message where requests
    /// of their own cost a hundred; the same messages at the same times.
    /// None (nothing posted) if a source repeats.
    fn post_grouped(r: &mut Running, w: &mut World, rank: u32) -> Result<Option<()>, MpiError> {
        let x = &mut r.x;
        match &x.parts {
            Parts::Each(v) if v.iter().any(Option::is_none) => {
                return Err(MpiError::Usage("a collective relays a message before it has received one".into()));
            }
            // What a send carries depends on what arrived before it.
            Parts::Grow(_) => return Ok(None),
            _ => {}
        }
        if !x.recvs.is_empty() {
            let srcs: Vec<u32> = x.recvs.iter().map(|&s| x.peers[s as usize]).collect();
            match w.irecv_group(rank, &srcs, x.ctx, x.tag, RECV_CAPACITY)? {
                Some(req) => r.reqs.push(req),
                None => return Ok(None),
            }
        }
        r.nrecv = r.reqs.len();
        if !x.dests.is_empty() {
            let how = x.how();
            let (peers, dests, parts) = (&x.peers, &x.dests, &mut x.parts);
            let sends = (0..dests.len()).map(|k| parts.take(k).expect("checked above").send(peers[dests[k] as usize] as i64, how));
            r.reqs.push(w.isend_group(rank, sends)?);
        }
        r.sent = x.dests.len();
        // (The message layer holds what it needs of them now.)
        x.dests = Vec::new();
        if let Parts::Each(v) = &mut x.parts {
            *v = Vec::new();
        }
        r.grouped = true;
        Ok(Some(()))
    }

    /// What arrived, in the order the receives were posted: (source
    /// communicator rank, payload).
    pub fn into_received(self) -> Vec<(u32, Payload)> {
        self.0.x.recvs.into_iter().zip(self.0.got.into_payloads()).collect()
    }

    /// What arrived, in the order the receives were posted, as one buffer
    /// and where each message ends in it; None if a message had no content
    /// (a size alone).
    pub fn into_packed(self) -> Option<(Vec<u8>, Vec<usize>)> {
        match self.0.got {
            Got::Packed { bytes, ends } => Some((bytes, ends)),
            got => {
                let (mut bytes, mut ends) = (Vec::new(), Vec::new());
                for p in got.into_payloads() {
                    let Payload::Bytes(b) = p else { return None };
                    bytes.extend_from_slice(&b);
                    ends.push(bytes.len());
                }
                Some((bytes, ends))
            }
        }
    }
}

/// Where a rank's agent stands.
#[derive(Debug)]
pub(super) enum Slot {
    Running(Agent),
    Done(Agent),
}

impl World {
    /// Hands `rank` to `agent`, which posts its first steps now. Returns
    /// true if the rank now waits: the driver resumes it once
    /// [`super::driven::Ranks::run`] returns it (then, as when false, the result is ready
    /// for [`World::take_result`]).
    pub fn start(&mut self, rank: u32, agent: Agent) -> Result<bool, MpiError> {
        if self.agents.is_empty() {
            self.agents.resize_with(self.nranks as usize, || None);
        }
        assert!(self.agents[rank as usize].is_none(), "rank {rank} is already in a collective run by the core");
        let mut agent = agent;
        self.check_sizes(&agent)?;
        let blocked = agent.advance(self, rank)?;
        self.agents[rank as usize] = Some(if blocked { Slot::Running(agent) } else { Slot::Done(agent) });
        Ok(blocked)
    }

    fn check_sizes(&self, agent: &Agent) -> Result<(), MpiError> {
        let x = &agent.0.x;
        let n = x.peers.len();
        if let Some(d) = x.dests.iter().chain(&x.recvs).find(|&&d| d as usize >= n) {
            return Err(MpiError::Usage(format!("a collective's peer {d} in a communicator of {n}")));
        }
        if let Parts::Each(v) = &x.parts {
            if v.len() != x.dests.len() {
                return Err(MpiError::Usage(format!("a collective's {} parts for {} sends", v.len(), x.dests.len())));
            }
        }
        if x.parts.largest() > crate::msglayer::MAX_MESSAGE_BYTES {
            return Err(MpiError::message_too_large(x.parts.largest()));
        }
        if let Steps::Counts(c) = &x.steps {
            let (r, s) = c.iter().fold((0usize, 0usize), |(r, s), &(a, b)| (r + a as usize, s + b as usize));
            if r != x.recvs.len() || s != x.dests.len() {
                return Err(MpiError::Usage(format!(
                    "a collective's steps hold {r} receives and {s} sends, for {} and {}",
                    x.recvs.len(),
                    x.dests.len()
                )));
            }
        }
        Ok(())
    }

    /// Advances a ready rank whose agent is not done (one that
    /// [`super::driven::Ranks::run`] returned with [`AGENT_RANK`]); true if it waits again.
    pub fn step(&mut self, rank: u32) -> Result<bool, MpiError> {
        let Some(Slot::Running(mut agent)) = self.agents.get_mut(rank as usize).and_then(Option::take) else {
            return Ok(false);
        };
        let blocked = agent.advance(self, rank)?;
        self.agents[rank as usize] = Some(if blocked { Slot::Running(agent) } else { Slot::Done(agent) });
        Ok(blocked)
    }

    /// Whether `rank` is in a collective its agent has not finished.
    pub fn in_agent(&self, rank: u32) -> bool {
        matches!(self.agents.get(rank as usize), Some(Some(Slot::Running(_))))
    }

    /// The finished agent of `rank` (None if it has none, or it is not done).
    pub fn take_result(&mut self, rank: u32) -> Option<Agent> {
        let slot = self.agents.get_mut(rank as usize)?;
        match slot.take() {
            Some(Slot::Done(a)) => Some(a),
            other => {
                *slot = other;
                None
            }
        }
    }

    /// Advances the agents of the ranks at the head of `ready` that have
    /// one, until a rank its driver must resume (a rank without an agent,
    /// or whose agent is done); removes the ranks whose agents wait again.
    /// The ranks left, in order, are what the driver resumes (those with a
    /// running agent marked [`AGENT_RANK`]), so that every rank acts in the
    /// order it would if its driver ran the algorithm.
    pub(super) fn advance_agents(&mut self, ready: &mut Vec<u32>) -> Result<(), MpiError> {
        if self.agents.is_empty() {
            return Ok(());
        }
        advance_agents(self, ready)
    }
}

/// What [`advance_agents`] needs of the ranks: a world, or one cut into
/// partitions (`mpi::driven`).
pub(super) trait Agents {
    fn in_agent(&self, rank: u32) -> bool;
    fn step(&mut self, rank: u32) -> Result<bool, MpiError>;
}

impl Agents for World {
    fn in_agent(&self, rank: u32) -> bool {
        World::in_agent(self, rank)
    }
    fn step(&mut self, rank: u32) -> Result<bool, MpiError> {
        World::step(self, rank)
    }
}

/// See [`World::advance_agents`].
pub(super) fn advance_agents(a: &mut impl Agents, ready: &mut Vec<u32>) -> Result<(), MpiError> {
    let mut head = 0;
    while head < ready.len() {
        let r = ready[head];
        if !a.in_agent(r) {
            break;
        }
        if !a.step(r)? {
            break;
        }
        head += 1;
    }
    ready.drain(..head);
    for r in ready.iter_mut().skip(1) {
        if a.in_agent(*r) {
            *r |= AGENT_RANK;
        }
    }
    Ok(())
}
