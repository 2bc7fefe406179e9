//! Layer 6: the active-message layer.
//!
//! Ranks are COMM_WORLD ranks placed on task slots. Per rank the layer keeps
//! a send queue per peer, posted receives and unexpected messages (the
//! `recvnew` decision: which receive buffer a new message lands in), and
//! drives the point-to-point protocols over the packet layer:
//!
//! - *one-packet*: metadata and data in one deterministic packet;
//! - *eager*: deterministic packets, in order thanks to FIFO pinning; the
//!   first carries the metadata block;
//! - *adaptive eager*: dynamic packets in any order; the receiver confirms
//!   the first packet, and nothing more goes to that peer before the
//!   confirmation is back;
//! - *rendezvous*: a deterministic scout, an ack carrying the buffer
//!   address once a receive matches, then dynamic data packets addressed by
//!   offset, counted by the receiver (in coprocessor mode optionally read by
//!   the second core);
//! - *intra-node* (VN mode, or a rank sending to itself): the receiver
//!   copies from the sender's buffer, then tells it the buffer is free.
//!
//! Every step costs time on the core that does it (`machine.msglayer`), and
//! the per-message MPI cost (`machine.mpi`) when the layer runs under MPI.
//! Completion (`senddone`, `recvdone`) is recorded on requests, which the
//! MPI layer above hands out and waits on.
//!
//! Where things are: this file holds the layer's state, requests, and the
//! dispatch of packets and timers (`Software`); `send.rs` and `recv.rs` the
//! two sides every protocol shares; `protocol/` one file per torus protocol
//! behind the `Wire` trait; `intranode.rs` messages within a node;
//! `deposit.rs` the deposit-bit broadcast; `workfifo.rs` the DMA engine's
//! work FIFO as the layer fills it; `partition.rs` messages that cross to
//! another partition; `log.rs` the message log of timelines; `wire.rs` the
//! packet and timer tags; `matching.rs` the posted and unexpected queues.

use crate::engine::{Event, EventQueue, Tick};
use crate::machine::{NodeMode, Protocol, Slot};
use crate::node::Work;
use crate::packet::{Net, Software};
use crate::torus::{Packet, NRX, RX_GROUP};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

mod deposit;
mod group;
mod intranode;
mod log;
mod matching;
mod partition;
mod protocol;
mod recv;
mod rectangle;
mod send;
mod wire;
mod workfifo;

use deposit::LineBcast;
pub use group::Received;
use group::RecvGroup;
pub use log::{MsgLog, MsgRecord};
use matching::Queue;
pub use partition::{Envelope, NOTE_ENVELOPE};
use partition::{RECV_SIDE, SEND_SIDE};
use protocol::{AdaptiveEager, Rendezvous};
use wire::{pk, tk, timer_tag, untag};

/// Idle peer queues a rank keeps (`RankState::peers`, marked `IDLE`) for
/// the next message to the same peer: a neighbour exchange then only
/// updates its map's entries, while a rank that has sent to thousands of
/// peers keeps this many.
const PEER_QUEUES_KEPT: usize = 32;
/// A peer queue kept with no message in progress.
const IDLE: u32 = u32::MAX - 1;

/// Dense ids of messages and requests.
pub type MsgId = u32;
pub type ReqId = u32;
pub const NONE: u32 = u32::MAX;
/// One packet the layer sends: from rank `from` to rank `to`, of `kind`
/// (`wire::pk`), naming message `msg` as the receiving side knows it,
/// with `arg` (a data packet's number in its message, or a control
/// packet's argument), `payload` bytes after the headers, `routing`, and
/// whether it is rendezvous data for the receiving node's coprocessor. It
/// goes to the reception group of the task it is for (the second group for
/// the second task in VN and DUAL modes), or of the coprocessor.
struct PacketOut {
    from: u32,
    to: u32,
    kind: u64,
    msg: MsgId,
    arg: u32,
    payload: u32,
    routing: crate::packet::Routing,
    coproc: bool,
}

/// Most packets in a train: its count after the first is a byte
/// (`Packet::more`), and its payload a u16.
const MAX_TRAIN: u32 = 256;

/// The largest message, in bytes (a message's size is a u32).
pub const MAX_MESSAGE_BYTES: u64 = u32::MAX as u64;

/// ANY_SOURCE / ANY_TAG in receive criteria.
pub const ANY: i32 = -1;

/// One send as the layer posts it (`MsgLayer::post_send`): from `rank` to
/// `dest` with the MPI envelope (`ctx`, `tag`), `bytes` long, its content
/// `data` or, when `data` is empty, none at all (communication skeletons:
/// only the size matters), by protocol `proto` in send mode `mode`.
#[derive(Clone, Debug)]
pub struct SendReq {
    pub rank: u32,
    pub dest: u32,
    pub ctx: u32,
    pub tag: i32,
    pub data: Vec<u8>,
    pub bytes: u32,
    pub proto: Protocol,
    pub mode: SendMode,
    /// The send group ([`MsgLayer::send_group`]) whose request this send
    /// completes a part of; `NONE`: a request of its own.
    pub group: ReqId,
}

/// Send modes of MPI point-to-point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    Standard,
    Synchronous,
    Ready,
    Buffered,
    /// Message-layer collective traffic: packets injected directly, dynamically
    /// routed in any order, no per-message protocol or MPI work, no ordering
    /// with other messages to the same peer.
    Direct,
    /// A one-sided put (or a get's request, an ack): on a machine with a
    /// DMA engine the receiving node's engine writes the data into memory
    /// and no core there works on it; the sender's core posts it as any
    /// send. Without an engine, a standard send.
    Remote,
    /// A one-sided get's reply: on a machine with a DMA engine it is the
    /// engine's answer to a remote get, with no core work on either side.
    /// Without an engine, a standard send (the target core answers).
    Served,
}

/// What a message is to the cores at its ends (see `SendMode::Remote`,
/// `SendMode::Served`): a `u8` in `Msg::rma`.
pub(crate) mod rma {
    /// An MPI message: software on both sides.
    pub const NONE: u8 = 0;
    /// No core work on the receiving side.
    pub const REMOTE: u8 = 1;
    /// No core work on either side.
    pub const SERVED: u8 = 2;
}

/// What a request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqKind {
    Send,
    Recv,
    Probe,
    Timer,
    /// Receives of a post-all exchange held as one (`group.rs`): `count` is
    /// how many are still to complete, `msg` the group.
    RecvGroup,
    /// Sends that name this request as theirs: `count` is how many are
    /// still to complete.
    SendGroup,
}

/// Completion status of a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub source: i32,
    pub tag: i32,
    pub count: u32,
    pub cancelled: bool,
    /// The message was longer than the receive buffer (MPI_ERR_TRUNCATE).
    pub truncated: bool,
}

/// One request (a send, a receive, a probe, a compute timer): 32 bytes, as
/// a post-all exchange holds two per message. A receive's or probe's
/// criteria become its status's source and tag when it completes; its
/// data, when it has any, waits in `MsgLayer::req_data`.
#[derive(Clone, Debug)]
pub struct Req {
    pub kind: ReqKind,
    /// `req_flag` bits.
    flags: u8,
    pub rank: u32,
    pub msg: MsgId,
    /// Receive / probe criteria until complete, then the status's source
    /// and tag (`Req::status`).
    pub src: i32,
    pub ctx: u32,
    pub tag: i32,
    pub capacity: u32,
    /// The status's count.
    count: u32,
}

/// Bits of `Req::flags`.
mod req_flag {
    pub const DONE: u8 = 1;
    /// The slot is in use (not on the free list).
    pub const LIVE: u8 = 2;
    /// A blocked rank waits for this request (kept by the MPI layer).
    pub const WAITED: u8 = 4;
    /// The receive buffer is not aligned for network access: the data is
    /// realigned by an extra copy.
    pub const UNALIGNED: u8 = 8;
    pub const CANCELLED: u8 = 16;
    /// The message was longer than the receive buffer (MPI_ERR_TRUNCATE).
    pub const TRUNCATED: u8 = 32;
    /// Received data (possibly none: a skeleton's) not taken yet.
    pub const DATA: u8 = 64;
    /// A send not started yet: `msg` names its `Pending`.
    pub const PENDING: u8 = 128;
}

impl Req {
    fn flag(&self, f: u8) -> bool {
        self.flags & f != 0
    }
    fn set_flag(&mut self, f: u8, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }
    pub fn done(&self) -> bool {
        self.flag(req_flag::DONE)
    }
    pub fn live(&self) -> bool {
        self.flag(req_flag::LIVE)
    }
    pub fn waited(&self) -> bool {
        self.flag(req_flag::WAITED)
    }
    pub fn set_waited(&mut self, on: bool) {
        self.set_flag(req_flag::WAITED, on)
    }
    pub fn unaligned(&self) -> bool {
        self.flag(req_flag::UNALIGNED)
    }
    pub fn status(&self) -> Status {
        // (Set by a receive's or probe's completion; zero otherwise, as is
        // a cancelled one's.)
        let set = self.flags & (req_flag::DONE | req_flag::CANCELLED) == req_flag::DONE
            && matches!(self.kind, ReqKind::Recv | ReqKind::Probe);
        Status {
            source: if set { self.src } else { 0 },
            tag: if set { self.tag } else { 0 },
            count: self.count,
            cancelled: self.flag(req_flag::CANCELLED),
            truncated: self.flag(req_flag::TRUNCATED),
        }
    }
    fn set_status(&mut self, s: Status) {
        (self.src, self.tag, self.count) = (s.source, s.tag, s.count);
        self.set_flag(req_flag::CANCELLED, s.cancelled);
        self.set_flag(req_flag::TRUNCATED, s.truncated);
    }
}

/// One message in flight.
#[derive(Clone, Debug, Default)]
struct Msg {
    src: u32,
    dst: u32,
    ctx: u32,
    tag: i32,
    bytes: u32,
    proto: Option<Protocol>,
    intranode: bool,
    sync: bool,
    send_req: ReqId,
    recv_req: ReqId,
    /// Sender: data bytes put into packets; scout sent.
    queued: u32,
    scout_sent: bool,
    /// Sender: data packets written into FIFOs, of `packets`.
    written: u32,
    packets: u32,
    /// Sender: confirmation / rendezvous ack / sync ack received.
    acked: bool,
    /// Receiver: envelope seen, receive matched, data bytes counted.
    envelope: bool,
    matched: bool,
    unexpected: bool,
    /// Receiver: realignment copy done (or not needed).
    realigned: bool,
    arrived: u32,
    /// Receiver: offset the next in-order packet would have.
    rx_next: u32,
    send_done: bool,
    recv_done: bool,
    /// Receiver: completion scheduled for when the core's work is done.
    finishing: bool,
    /// Data goes to the second core (coprocessor mode rendezvous).
    coproc: bool,
    /// Message-layer collective traffic (see `SendMode::Direct`).
    direct: bool,
    /// One-sided traffic moved by the DMA engines (`rma::*`).
    rma: u8,
    /// Index of its record in the message log (`NO_RECORD`: not logged).
    record: u32,
    /// The sides this record holds (`SEND_SIDE`, `RECV_SIDE`).
    sides: u8,
    /// With one side only: the sequence number the message's packets to
    /// the receiver carry (see [`Envelope`]) and, on the receiver's side,
    /// the sender's record, which its acks name.
    seq: u32,
    peer: MsgId,
}

/// A send posted and not started yet: it waits for its peer queue's turn,
/// its core or room in its rank's work FIFO, and its `Msg` (76 bytes) is
/// made when it starts (`MsgLayer::start`). A post-all exchange posts every
/// message at once: each waits in 36 bytes.
#[derive(Clone, Copy, Debug)]
struct Pending {
    src: u32,
    dst: u32,
    ctx: u32,
    tag: i32,
    bytes: u32,
    /// `NONE` once complete at posting (a buffered send).
    req: ReqId,
    record: u32,
    /// The next send of its peer queue (`RankState::peers`).
    next: u32,
    /// `pend` bits: protocol, intra-node, synchronous, `rma` kind.
    bits: u8,
}

/// Bits of `Pending::bits`.
mod pend {
    /// The protocol's index in `Protocol::ALL`.
    pub const PROTO: u8 = 3;
    pub const INTRANODE: u8 = 4;
    pub const SYNC: u8 = 8;
    /// The `rma` kind from this bit on (two bits).
    pub const RMA_SHIFT: u8 = 4;
    pub const RMA: u8 = 3 << RMA_SHIFT;
    /// Not a send: the sends of a send group not posted yet, held whole
    /// (`group.rs`); `dst` names them in `MsgLayer::lazy`.
    pub const LAZY: u8 = 128;
}

/// Puts `x` into a free slot of `v` (or a new one) and returns its index;
/// ids travel in 28-bit timer tags.
fn slot<T>(v: &mut Vec<T>, free: &mut Vec<u32>, x: T, what: &str) -> u32 {
    match free.pop() {
        Some(id) => {
            v[id as usize] = x;
            id
        }
        None => {
            v.push(x);
            assert!(v.len() < (1 << 28), "more than 2^28 {what}");
            (v.len() - 1) as u32
        }
    }
}

/// Per-rank counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct RankStats {
    pub sends: u64,
    pub recvs: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub unexpected: u64,
    pub by_protocol: [u64; 5],
}

/// An agent's messages with packets to emit, as its advance loop takes
/// them: rendezvous messages whose scout is still to go, and messages with
/// data to go, served in turn (a turn each, so data of earlier messages
/// does not hold back the handshakes of later ones, and the other way
/// round), each list round-robin.
#[derive(Default)]
pub(super) struct Lane {
    pub(super) scouts: VecDeque<MsgId>,
    pub(super) data: VecDeque<MsgId>,
    /// The next turn goes to a scout (if one waits).
    pub(super) scout_next: bool,
}

impl Lane {
    fn is_empty(&self) -> bool {
        self.scouts.is_empty() && self.data.is_empty()
    }
}

/// An agent's streams. A core has one lane. A DMA engine's injection unit
/// has a lane per torus injection FIFO and one for local transfers, as
/// the engine has an injection FIFO in memory per direction a process
/// sends in: it serves them in turn, passing over those whose torus FIFO
/// is full, so a full FIFO holds back only the messages pinned to it.
#[derive(Default)]
pub(super) struct Streams {
    pub(super) lanes: Vec<Lane>,
    /// The lane whose turn is next.
    pub(super) next: usize,
}

impl Streams {
    pub(super) fn lane_mut(&mut self, i: usize) -> &mut Lane {
        if self.lanes.len() <= i {
            self.lanes.resize_with(i + 1, Lane::default);
        }
        &mut self.lanes[i]
    }

    pub(super) fn is_empty(&self) -> bool {
        self.lanes.iter().all(Lane::is_empty)
    }

    /// A message of the lane whose turn is next, if any.
    fn front(&self) -> Option<MsgId> {
        let l = self.lanes.get(self.next).or(self.lanes.first())?;
        l.data.front().or(l.scouts.front()).copied()
    }
}

struct RankState {
    node: u32,
    task: u8,
    core: u8,
    /// Posted receives in post order.
    posted: Queue,
    /// Messages whose envelope arrived unmatched, in arrival order.
    unexpected: Queue,
    probes: Vec<ReqId>,
    /// Per destination with a message in progress (or about to start):
    /// the first and last of the sends waiting behind it (`NONE` for
    /// none), linked by `Pending::next`: no allocation per queue, 12 bytes
    /// per peer; `IDLE` for a queue kept with none in progress. (Fx
    /// hashing: a rank number needs no protection from crafted keys.)
    peers: FxHashMap<u32, (u32, u32)>,
    /// Per source whose last envelope is being waited for (see
    /// `Costs::wait`): when it will be taken up. A later envelope from the
    /// same source is not taken up before it, so matching keeps MPI's order.
    envelope_ready: FxHashMap<u32, Tick>,
    /// Per destination: acked rendezvous messages whose data goes out in
    /// turn (the head streams; a peer's send queue sends one message's
    /// packets at a time).
    rdata: FxHashMap<u32, VecDeque<MsgId>>,
    /// The rank's receive groups not complete (`group.rs`).
    groups: Vec<u32>,
    /// The rank's held sends of a send group (a `Pending` with
    /// `pend::LAZY`), or `NONE`.
    lazy: u32,
    /// With a DMA engine: the sends (`Pending`) waiting for room in the
    /// rank's work FIFO (the FIFO itself is the engine's, `crate::dma`).
    dma_waiting: VecDeque<u32>,
    /// Sends posted while the core was busy, to start when it is free
    /// (`MsgLayer::start_chain`): the first (whose timer is set) and last,
    /// linked by `Pending::next` (a send that heads its peer queue links
    /// nothing else), when they start, and the event queue's count of
    /// pushes after the first's timer. A send posted right behind (same
    /// time, nothing pushed in between) joins the chain instead of setting
    /// a timer of its own: a post-all exchange sets one, not one per
    /// message, and the events come in the same order.
    chain: (u32, u32),
    chain_at: Tick,
    chain_mark: u64,
    stats: RankStats,
}

/// Costs in ticks.
#[derive(Clone, Copy, Debug)]
struct Costs {
    send_msg: [Tick; 4],
    recv_msg: [Tick; 4],
    mpi_half: [Tick; 4],
    packet: Tick,
    adaptive_packet: Tick,
    /// With a DMA engine: a core's work per packet read from a memory FIFO,
    /// and per descriptor posted.
    memfifo_packet: Tick,
    descriptor: Tick,
    /// The interrupt that tells a rank whose work FIFO was full that there
    /// is room.
    interrupt_refill: Tick,
    /// Waiting between a message's first packet (or scout) arriving and its
    /// envelope being taken up, by protocol: the rendezvous handshake's and
    /// MPI's. The cores are free meanwhile.
    wait: [Tick; 4],
    workunit: Tick,
    intranode: Tick,
    interrupt: Tick,
    /// Share of a realignment copy not hidden behind the packet reads.
    unaligned_fraction: f64,
    tick_cycle: Tick,
    copy_bytes_per_cycle: f64,
    combine_bytes_per_cycle: f64,
}

/// The message layer (and the matching MPI builds on), as software on the cores.
pub struct MsgLayer {
    ranks: Vec<RankState>,
    msgs: Vec<Msg>,
    free_msgs: Vec<MsgId>,
    pub reqs: Vec<Req>,
    free_reqs: Vec<ReqId>,
    /// The contents of messages that carry any (a skeleton's, or a run
    /// with size-only buffers, carry none and cost nothing here), by
    /// message while in flight and by receive once delivered.
    msg_data: FxHashMap<MsgId, Vec<u8>>,
    req_data: FxHashMap<ReqId, Vec<u8>>,
    /// Sends not started yet, and their contents.
    pending: Vec<Pending>,
    free_pending: Vec<u32>,
    pending_data: FxHashMap<u32, Vec<u8>>,
    /// Receive groups (`group.rs`), and the requests of their messages
    /// matched and not complete: (group, place).
    groups: Vec<Option<RecvGroup>>,
    free_groups: Vec<u32>,
    members: FxHashMap<ReqId, (u32, u32)>,
    /// Sends of send groups held until they start (`group.rs`).
    lazy: Vec<Option<group::Held>>,
    free_lazy: Vec<u32>,
    /// Per core (node * cores + core): messages with packets to emit.
    streams: Vec<Streams>,
    costs: Costs,
    maxp: u32,
    meta: u32,
    coproc_rendezvous: bool,
    /// The node's DMA engine slots (injection; reception is the next), on a
    /// machine with one: the engine moves every packet, the cores post
    /// descriptors and read memory FIFOs.
    dma: Option<usize>,
    /// Packets of one message the advance loop writes per turn: an
    /// injection FIFO's worth of full packets.
    burst: u32,
    /// The message tier: most full data packets a message sends as one
    /// train (see [`MsgLayer::set_trains`]); 1 on the packet and coarse tiers.
    train: u32,
    /// Tasks per node (VN and DUAL modes run several, each with its own
    /// share of the injection FIFOs and its own reception FIFO group).
    tasks_per_node: usize,
    /// Injection FIFOs per task, and the first normal FIFO index beyond them.
    fifos_per_task: usize,
    /// Requests that completed since the owner last looked.
    pub completed: Vec<ReqId>,
    /// Packets and messages handled, for reports.
    pub messages_done: u64,
    pub packets_sent: u64,
    /// Data packets that arrived before a packet sent earlier in the same message.
    pub out_of_order: u64,
    bcasts: FxHashMap<u32, LineBcast>,
    /// Message-layer allreduces (`rectangle.rs`) by id, and per node the
    /// packets its core has combined, to send when it is done.
    reduces: FxHashMap<u32, rectangle::LineReduce>,
    reduce_out: FxHashMap<(u32, u8), VecDeque<(u32, u32)>>,
    /// Per node: combined sums for its injection agent.
    reduce_ready: FxHashMap<u32, rectangle::ReadySums>,
    dims: [u32; 3],
    torus: [bool; 3],
    /// Point-to-point messages logged for timelines (off: None).
    pub log: Option<MsgLog>,
    /// The nodes this copy of the layer runs (a partition of a windowed
    /// run; all of them otherwise).
    own: (u32, u32),
    /// Messages sent to other partitions so far, and the envelopes of
    /// this window's, until the engine hands them over.
    sent_away: u32,
    notes: Vec<Envelope>,
    notes_taken: usize,
    /// Receiver's records of messages from other partitions, by (sending
    /// node, sequence number).
    from_away: FxHashMap<(u32, u32), MsgId>,
    /// Sender's records of messages to other partitions, by sequence number.
    away_slots: FxHashMap<u32, MsgId>,
}

impl MsgLayer {
    /// The layer on `net` for ranks placed on `slots`; `mpi` adds MPI's own
    /// per-message costs.
    pub fn new(net: &mut Net, slots: &[Slot], mpi: bool) -> Self {
        let m = net.machine().clone();
        let geo = net.geometry().clone();
        let tpn = m.tasks_per_node() as usize;
        let cores = m.cores() as usize;
        let t = m.tick_cycle;
        let ml = &m.spec.msglayer;
        let ticks = |v: &[u32; 4]| v.map(|c| c as Tick * t);
        let mpi_half = if mpi { m.spec.mpi.message_cycles.map(|c| c as Tick * t / 2) } else { [0; 4] };
        let mut wait = if mpi { ticks(&m.spec.mpi.wait_cycles) } else { [0; 4] };
        wait[Protocol::Rendezvous.index()] += ml.rendezvous_wait_cycles as Tick * t;
        // Division of work between the cores: in VN mode each task owns a
        // core, half the injection FIFOs and a reception group; otherwise the
        // main core does everything, the second reception group belonging to
        // the coprocessor (only rendezvous data with coprocessor help goes there).
        let nf = m.torus().injection_fifos as usize;
        let nhp = m.torus().hp_injection_fifos as usize;
        let fifos_per_task = (nf / tpn).max(1);
        let mut owners = vec![0u8; nf + nhp];
        for (f, o) in owners.iter_mut().enumerate() {
            *o = if f < nf { (f / fifos_per_task).min(tpn - 1) as u8 } else { ((f - nf) % tpn) as u8 };
        }
        let mut readers = [0u8; NRX];
        for (f, r) in readers.iter_mut().enumerate() {
            *r = if f >= RX_GROUP && cores > 1 && m.mode != NodeMode::Heater { 1 } else { 0 };
        }
        net.assign_fifos(readers, tpn.min(cores), Some(owners));
        // The message layer's per-packet work on the sending side comes
        // with each write (none where a DMA engine writes the packets).
        net.set_write_overhead(ml.packet_handler_cycles as Tick * t);
        let ranks = slots
            .iter()
            .map(|s| {
                let node = geo.index([s[0], s[1], s[2]]);
                RankState {
                    node,
                    task: s[3] as u8,
                    core: if tpn > 1 { s[3] as u8 } else { 0 },
                    posted: Queue::default(),
                    unexpected: Queue::default(),
                    probes: Vec::new(),
                    peers: FxHashMap::default(),
                    envelope_ready: FxHashMap::default(),
                    rdata: FxHashMap::default(),
                    dma_waiting: VecDeque::new(),
                    groups: Vec::new(),
                    lazy: NONE,
                    chain: (NONE, NONE),
                    chain_at: 0,
                    chain_mark: 0,
                    stats: RankStats::default(),
                }
            })
            .collect();
        MsgLayer {
            ranks,
            msgs: Vec::new(),
            free_msgs: Vec::new(),
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            msg_data: FxHashMap::default(),
            req_data: FxHashMap::default(),
            pending: Vec::new(),
            free_pending: Vec::new(),
            pending_data: FxHashMap::default(),
            groups: Vec::new(),
            free_groups: Vec::new(),
            members: FxHashMap::default(),
            lazy: Vec::new(),
            free_lazy: Vec::new(),
            streams: (0..net.agent_count()).map(|_| Streams::default()).collect(),
            costs: Costs {
                send_msg: ticks(&ml.send_message_cycles),
                recv_msg: ticks(&ml.recv_message_cycles),
                mpi_half,
                packet: ml.packet_handler_cycles as Tick * t,
                adaptive_packet: ml.adaptive_packet_cycles as Tick * t,
                memfifo_packet: m.spec.dma.as_ref().map_or(0, |d| d.memfifo_packet_cycles as Tick * t),
                descriptor: m.spec.dma.as_ref().map_or(0, |d| d.descriptor_cycles as Tick * t),
                interrupt_refill: m.spec.cpu.interrupt_cycles as Tick * t,
                wait,
                workunit: ml.coprocessor_workunit_cycles as Tick * t,
                intranode: ml.intranode_message_cycles as Tick * t,
                interrupt: if ml.interrupts { m.spec.cpu.interrupt_cycles as Tick * t } else { 0 },
                unaligned_fraction: ml.unaligned_copy_fraction,
                tick_cycle: t,
                copy_bytes_per_cycle: m.spec.node.copy_bytes_per_cycle,
                combine_bytes_per_cycle: m.spec.node.combine_bytes_per_cycle,
            },
            maxp: m.max_payload_bytes(),
            meta: ml.metadata_bytes,
            coproc_rendezvous: ml.coprocessor_rendezvous && m.mode == NodeMode::Coprocessor && cores > 1,
            burst: (m.torus().injection_fifo_bytes / m.max_packet_bytes()).max(1),
            train: 1,
            dma: net.dma_slot(),
            tasks_per_node: tpn,
            fifos_per_task,
            completed: Vec::new(),
            messages_done: 0,
            packets_sent: 0,
            out_of_order: 0,
            bcasts: FxHashMap::default(),
            reduces: FxHashMap::default(),
            reduce_out: FxHashMap::default(),
            reduce_ready: FxHashMap::default(),
            log: None,
            dims: m.shape.dims,
            torus: m.shape.torus,
            own: (0, u32::MAX),
            sent_away: 0,
            notes: Vec::new(),
            notes_taken: 0,
            from_away: FxHashMap::default(),
            away_slots: FxHashMap::default(),
        }
    }

    /// Runs the message tier: a message's full data packets go as trains
    /// of up to `packets` (at most 256), each one packet in the pool and
    /// the queues that moves and costs as its packets do (see
    /// `Packet::more`). Needs the coarse torus; 1 sends packets.
    pub fn set_trains(&mut self, packets: u32) {
        self.train = packets.clamp(1, MAX_TRAIN.min(u16::MAX as u32 / self.maxp));
    }

    /// Most packets in a train (1: packets).
    pub fn trains(&self) -> u32 {
        self.train
    }

    /// The next data a message from `from` to `to` with `left` bytes still
    /// to send puts on the wire: (packets, bytes). A train of up to
    /// `train` full packets on the message tier; one packet of at most
    /// `maxp` on the packet tier, between two tasks of one node (a local
    /// transfer), or when fewer than two full packets are left.
    #[inline]
    pub(super) fn next_data(&self, from: u32, to: u32, left: u32) -> (u32, u32) {
        if self.train > 1 {
            let k = (left / self.maxp).min(self.train);
            if k >= 2 && self.ranks[from as usize].node != self.ranks[to as usize].node {
                return (k, k * self.maxp);
            }
        }
        (1, left.min(self.maxp))
    }

    pub fn nranks(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// Node and core a rank runs on.
    pub fn place(&self, rank: u32) -> (u32, usize) {
        let r = &self.ranks[rank as usize];
        (r.node, r.core as usize)
    }

    /// Where `rank`'s packets are written from: its core, or its node's DMA
    /// engine.
    fn injector(&self, rank: u32) -> (u32, usize) {
        let r = &self.ranks[rank as usize];
        (r.node, self.dma.unwrap_or(r.core as usize))
    }

    pub fn task(&self, rank: u32) -> u32 {
        self.ranks[rank as usize].task as u32
    }

    pub fn stats(&self, rank: u32) -> RankStats {
        self.ranks[rank as usize].stats
    }

    fn copy_ticks(&self, bytes: u32) -> Tick {
        ((bytes as f64 / self.costs.copy_bytes_per_cycle).ceil() as Tick) * self.costs.tick_cycle
    }

    fn new_req(&mut self, kind: ReqKind, rank: u32) -> ReqId {
        let r = Req {
            kind,
            flags: req_flag::LIVE,
            rank,
            msg: NONE,
            src: ANY,
            ctx: 0,
            tag: ANY,
            capacity: 0,
            count: 0,
        };
        slot(&mut self.reqs, &mut self.free_reqs, r, "requests")
    }

    /// Takes a completed receive's data (empty for a message without
    /// content), once.
    pub fn take_data(&mut self, id: ReqId) -> Option<Vec<u8>> {
        let r = &mut self.reqs[id as usize];
        if !r.flag(req_flag::DATA) {
            return None;
        }
        r.set_flag(req_flag::DATA, false);
        Some(self.req_data.remove(&id).unwrap_or_default())
    }

    /// Frees a completed (or abandoned) request's slot.
    pub fn release(&mut self, id: ReqId) {
        let r = &mut self.reqs[id as usize];
        if r.live() {
            r.flags = 0;
            if !self.req_data.is_empty() {
                self.req_data.remove(&id);
            }
            self.free_reqs.push(id);
        }
    }

    fn complete(&mut self, id: ReqId) {
        if (!self.members.is_empty() || self.reqs[id as usize].kind == ReqKind::SendGroup) && self.group_done(id) {
            return;
        }
        self.finish(id);
    }

    /// Marks a request done, for the MPI layer to collect.
    fn finish(&mut self, id: ReqId) {
        let r = &mut self.reqs[id as usize];
        if !r.done() {
            r.flags |= req_flag::DONE;
            self.completed.push(id);
        }
    }

    fn new_msg(&mut self, m: Msg) -> MsgId {
        slot(&mut self.msgs, &mut self.free_msgs, m, "messages in flight")
    }

    fn maybe_free_msg(&mut self, id: MsgId) {
        let m = &mut self.msgs[id as usize];
        let (send, recv) = (m.sides & SEND_SIDE != 0, m.sides & RECV_SIDE != 0);
        // An adaptive-eager confirmation may still be on its way back.
        let settled = !send || m.proto != Some(Protocol::AdaptiveEager) || m.acked;
        if (m.send_done || !send) && (m.recv_done || !recv) && settled {
            if !self.msg_data.is_empty() {
                self.msg_data.remove(&id);
            }
            m.send_done = false;
            m.sides = 0;
            self.free_msgs.push(id);
            if recv {
                self.messages_done += 1;
                if !send {
                    let key = (self.ranks[m.src as usize].node, m.seq);
                    self.from_away.remove(&key);
                }
            } else {
                self.away_slots.remove(&m.seq);
            }
        }
    }

    /// Data bytes in a packet of `kind` with `payload` at `offset`.
    fn data_len(&self, kind: u64, offset: u32, payload: u32) -> u32 {
        match kind {
            pk::ONE => payload - self.meta,
            pk::EAGER | pk::ADAPT if offset == 0 => payload - self.meta,
            pk::EAGER | pk::ADAPT | pk::RDATA => payload,
            _ => 0,
        }
    }

    /// Pending requests of a rank, for the blocked-rank report.
    pub fn describe(&self, req: ReqId) -> String {
        let r = &self.reqs[req as usize];
        let who = |s: i32| if s == ANY { "any source".to_string() } else { format!("rank {s}") };
        let tagname = |t: i32| if t == ANY { "any tag".to_string() } else { format!("tag {t}") };
        match r.kind {
            ReqKind::Recv => format!("a message from {} with {} (context {})", who(r.src), tagname(r.tag), r.ctx),
            ReqKind::Probe => format!("a probe for {} with {} (context {})", who(r.src), tagname(r.tag), r.ctx),
            ReqKind::Timer => "compute".to_string(),
            ReqKind::RecvGroup => self.describe_group(req),
            ReqKind::SendGroup => format!("{} sends of an exchange", self.group_left(req)),
            ReqKind::Send if r.flag(req_flag::PENDING) => {
                let p = &self.pending[r.msg as usize];
                format!("a send of {} bytes to rank {} with tag {} (context {}); not started", p.bytes, p.dst, p.tag, p.ctx)
            }
            ReqKind::Send => {
                let m = &self.msgs[r.msg as usize];
                // (Whether the receiver matched: known here when it is in
                // this partition; else from its ack.)
                let matched = m.acked || (m.sides & RECV_SIDE != 0 && m.matched);
                let what = match (m.proto, matched) {
                    (Some(Protocol::Rendezvous), false) => "; rendezvous: no matching receive has been posted",
                    (None, false) => "; intra-node: no matching receive has been posted",
                    (_, false) if m.sync => "; synchronous: no matching receive has been posted",
                    _ => "",
                };
                format!("a send of {} bytes to rank {} with tag {} (context {}){what}", m.bytes, m.dst, m.tag, m.ctx)
            }
        }
    }

    /// A request completed later by [`MsgLayer::complete_at`] (collective
    /// network operations, barriers).
    pub fn pending_req(&mut self, rank: u32) -> ReqId {
        self.new_req(ReqKind::Timer, rank)
    }

    /// Completes `req` at time `at`.
    /// Where and how a request is told it is done by hardware (the node and
    /// core of its rank, and the timer tag that completes it).
    pub fn completion(&self, req: ReqId) -> (u32, usize, u32) {
        let (node, core) = self.place(self.reqs[req as usize].rank);
        (node, core, timer_tag(tk::REQ_DONE, req))
    }

    pub fn complete_at(&mut self, net: &mut Net, q: &mut EventQueue, req: ReqId, at: Tick) {
        let (node, core) = self.place(self.reqs[req as usize].rank);
        net.timer(q, at, node, core, timer_tag(tk::REQ_DONE, req));
    }

    /// A timer request (compute) completing at `at`.
    pub fn timer_req(&mut self, net: &mut Net, q: &mut EventQueue, rank: u32, at: Tick) -> ReqId {
        let req = self.new_req(ReqKind::Timer, rank);
        let (node, core) = self.place(rank);
        net.timer(q, at, node, core, timer_tag(tk::REQ_DONE, req));
        req
    }
}

impl MsgLayer {
    /// Prefetches the message an upcoming event will work on (see
    /// [`crate::engine::Model::touch`]; stage 1, when stage 0 has prefetched
    /// the event's packet): the message of a packet entering a reception
    /// FIFO, which a core reads soon after, and the next message a waking
    /// core emits packets of. Changes nothing.
    #[inline]
    pub fn touch(&self, net: &Net, e: &Event) {
        let id = match e.kind {
            crate::torus::ev::RX_DONE => match net.live_packet(e.data) {
                Some(p) => untag(p.tag).1,
                None => return,
            },
            crate::packet::ev::CORE_WAKE | crate::packet::ev::WRITTEN | crate::dma::ev::WAKE | crate::dma::ev::MOVED => {
                match self.streams.get(net.agent_index(e.node, net.agent_of(e))).and_then(Streams::front) {
                    Some(id) => id,
                    None => return,
                }
            }
            _ => return,
        };
        if let Some(m) = self.msgs.get(id as usize) {
            crate::engine::prefetch(m);
        }
    }
}

impl Software for MsgLayer {
    fn start(&mut self, _net: &mut Net, _q: &mut EventQueue) {}

    fn on_packet(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize, pkt: &Packet) {
        let (kind, id, offset) = untag(pkt.tag);
        if kind == pk::REDUCE {
            // Charged on the core of the node's rank, once it joined.
            return self.reduce_packet(net, q, now, node, id, offset);
        }
        let id = if kind == pk::DEPOSIT { id } else { self.record_of(pkt, id) };
        let core = match self.dma {
            // The DMA engine received the packet. Rendezvous data goes
            // straight into the receive buffer and a remote get is served
            // by the engine: no core touches them. Everything else lands
            // in a memory FIFO that the rank's core reads.
            Some(_) => {
                let rank = match kind {
                    pk::DEPOSIT => {
                        let core = self.deposit_core(id, node);
                        return self.line_bcast_packet(net, q, now, node, core, id, offset);
                    }
                    pk::RACK | pk::CONFIRM | pk::SYNCACK => self.msgs[id as usize].src,
                    _ => self.msgs[id as usize].dst,
                };
                let c = self.ranks[rank as usize].core as usize;
                let engine_only = match kind {
                    pk::RDATA | pk::RACK => true,
                    pk::ONE | pk::EAGER | pk::ADAPT => self.msgs[id as usize].rma != rma::NONE,
                    _ => false,
                };
                if !engine_only {
                    net.charge_train(q, now, node, c, pkt, self.costs.memfifo_packet, Work::Protocol);
                }
                c
            }
            None => {
                if self.costs.interrupt > 0 {
                    net.charge(q, now, node, core, self.costs.interrupt, Work::Interrupt);
                }
                // The message layer's per-packet work (a deposit packet's is
                // charged where it is forwarded).
                if kind != pk::DEPOSIT {
                    let extra = if kind == pk::ADAPT { self.costs.adaptive_packet } else { 0 };
                    net.charge(q, now, node, core, self.costs.packet + extra, Work::Protocol);
                }
                core
            }
        };
        match kind {
            pk::ONE | pk::EAGER | pk::ADAPT | pk::RDATA => {
                let offset = self.packet_offset(kind, offset);
                let len = self.data_len(kind, offset, pkt.payload as u32);
                let first = kind != pk::RDATA && offset == 0;
                let m = &mut self.msgs[id as usize];
                m.arrived += len;
                if offset < m.rx_next {
                    self.out_of_order += 1;
                }
                m.rx_next = m.rx_next.max(offset + len);
                if first {
                    self.arrived_envelope(net, q, now, id, core);
                }
                self.check_recv(net, q, now, id);
            }
            pk::SCOUT => self.arrived_envelope(net, q, now, id, core),
            pk::RACK => Rendezvous::acked(self, net, q, now, id, offset != 0),
            pk::CONFIRM => AdaptiveEager::confirmed(self, net, q, now, id),
            pk::DEPOSIT => self.line_bcast_packet(net, q, now, node, core, id, offset),
            pk::SYNCACK => {
                self.msgs[id as usize].acked = true;
                self.check_send(now, id);
            }
            k => unreachable!("unknown message-layer packet kind {k}"),
        }
    }

    fn on_written(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, _node: u32, _core: usize, pkt: &Packet) {
        let (kind, id, _) = untag(pkt.tag);
        if kind == pk::DEPOSIT {
            return self.line_bcast_written(id, pkt.src);
        }
        if kind == pk::REDUCE {
            // The agent took a sum: it asks for the next one waiting.
            return self.reduce_written(net, q, now, pkt.src);
        }
        if matches!(kind, pk::RACK | pk::CONFIRM | pk::SYNCACK) {
            // A receiver's ack: it names the sender's record, which may be
            // in another partition, and counts for nothing here.
            return;
        }
        let id = self.written_record(id);
        let data = matches!(kind, pk::ONE | pk::EAGER | pk::ADAPT | pk::RDATA);
        if data {
            self.msgs[id as usize].written += pkt.count();
        }
        if self.dma.is_some() {
            // The engine has injected what the sender's descriptor names
            // (a rendezvous message's scout; its data is a remote get).
            let m = &self.msgs[id as usize];
            let last = match kind {
                pk::SCOUT => true,
                pk::ONE | pk::EAGER | pk::ADAPT => m.written == m.packets,
                _ => false,
            };
            if last && !m.direct && m.rma != rma::SERVED {
                self.descriptor_done(net, q, now, m.src);
            }
        }
        if data {
            self.check_send(now, id);
        }
    }

    fn refill(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize) {
        // A message-layer allreduce's sums and the node's messages take turns.
        if let Some(r) = self.reduce_ready.get_mut(&node) {
            let st = &self.streams[net.agent_index(node, core)];
            let messages = !st.is_empty();
            r.turn = !r.turn;
            if (!messages || r.turn) && self.reduce_emit(net, q, now, node, core) {
                return;
            }
        }
        self.emit(net, q, now, node, core);
    }

    fn on_timer(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize, t: u32) {
        let (kind, id) = (t >> 28, t & ((1 << 28) - 1));
        match kind {
            tk::INTRA_ARRIVE => {
                self.msgs[id as usize].arrived = 0;
                self.envelope(net, q, now, id, core);
            }
            tk::INTRA_FREE => self.send_complete(now, id),
            tk::REQ_DONE => self.complete(id),
            tk::RECV_COPIED => self.recv_complete(now, id),
            tk::START => self.start_chain(net, q, now, id),
            tk::POSTED => self.stream(net, q, now, id),
            tk::REDUCE => self.reduce_send(net, q, now, node, core),
            tk::ENVELOPE => {
                let (dst, src) = (self.msgs[id as usize].dst, self.msgs[id as usize].src);
                let ready = &mut self.ranks[dst as usize].envelope_ready;
                if ready.get(&src) == Some(&now) {
                    ready.remove(&src);
                }
                self.envelope(net, q, now, id, core);
            }
            k => unreachable!("unknown message-layer timer kind {k}"),
        }
    }
}

#[cfg(test)]
mod tests {
    /// What a posted message holds in the core, per structure: a send or
    /// receive posted by itself keeps a request, a waiting send a
    /// `Pending`, and a `Msg` only the messages under way; a post-all
    /// exchange's held send keeps 4 bytes (12 where sizes differ) and its
    /// receive 8 in the group (`group.rs`, `docs/performance.md`).
    #[test]
    fn a_posted_message_stays_lean() {
        assert!(std::mem::size_of::<super::group::HeldSend>() <= 12, "HeldSend is {} bytes", std::mem::size_of::<super::group::HeldSend>());
        assert!(std::mem::size_of::<super::Req>() <= 32, "Req is {} bytes", std::mem::size_of::<super::Req>());
        assert!(std::mem::size_of::<super::Pending>() <= 36, "Pending is {} bytes", std::mem::size_of::<super::Pending>());
        assert!(std::mem::size_of::<super::Msg>() <= 76, "Msg is {} bytes", std::mem::size_of::<super::Msg>());
    }
}
