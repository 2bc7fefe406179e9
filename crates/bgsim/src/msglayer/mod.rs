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

use crate::engine::{Event, EventQueue, Tick};
use crate::machine::{NodeMode, Protocol, Slot};
use crate::node::Work;
use crate::packet::{Net, Routing, Software};
use crate::torus::{flags, Packet, NRX, RX_GROUP};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

mod matching;
use matching::Queue;

/// Empty per-peer send queues a rank keeps (with their buffers) for the next
/// message to the same peer: a neighbour exchange then allocates nothing per
/// message, while a rank that has sent to thousands of peers holds only this
/// many idle queues.
const PEER_QUEUES_KEPT: usize = 32;

/// Dense ids of messages and requests.
pub type MsgId = u32;
pub type ReqId = u32;
pub const NONE: u32 = u32::MAX;
/// ANY_SOURCE / ANY_TAG in receive criteria.
pub const ANY: i32 = -1;

/// Packet kinds (top bits of the packet tag).
mod pk {
    pub const ONE: u64 = 1;
    pub const EAGER: u64 = 2;
    pub const ADAPT: u64 = 3;
    pub const SCOUT: u64 = 4;
    pub const RACK: u64 = 5;
    pub const RDATA: u64 = 6;
    pub const CONFIRM: u64 = 7;
    pub const SYNCACK: u64 = 8;
    pub const DEPOSIT: u64 = 9;
}

/// Timer kinds (top bits of a timer tag).
mod tk {
    pub const INTRA_ARRIVE: u32 = 1;
    pub const INTRA_FREE: u32 = 2;
    pub const REQ_DONE: u32 = 3;
    pub const RECV_COPIED: u32 = 4;
    pub const START: u32 = 5;
    pub const ENVELOPE: u32 = 6;
    pub const POSTED: u32 = 7;
}

/// A message id with this bit, in a packet from another partition, is not a
/// record here but the message's sequence number at its sender (see
/// [`Envelope`]); real ids stay below 2^28.
const REMOTE: MsgId = 1 << 29;

/// Which sides of a message a record holds: on one partition both; with
/// the sender's and receiver's nodes in two partitions, each has a record
/// of its own side.
const SEND_SIDE: u8 = 1;
const RECV_SIDE: u8 = 2;

/// The kind of the note that hands a message's envelope to the receiver's
/// partition (`engine::Crossing::note`; never an event).
pub const NOTE_ENVELOPE: u8 = crate::engine::event_kind(15, 0);

/// What the receiver's partition needs of a message whose sender is in
/// another partition, sent when the send is posted: it arrives at the end
/// of that window, before any of the message's packets can (they take a
/// hop at least). Its packets to the receiver then carry `seq` (with
/// [`REMOTE`]) instead of an id, and its acks back carry `slot`.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Envelope {
    src: u32,
    dst: u32,
    ctx: u32,
    tag: i32,
    bytes: u32,
    proto: Option<Protocol>,
    sync: bool,
    direct: bool,
    packets: u32,
    /// The sender's record, and the message's number among the messages
    /// its partition sent to other partitions.
    slot: MsgId,
    seq: u32,
    /// Its record in the sender's partition's message log (`NO_RECORD`:
    /// not logged).
    record: u32,
    data: Vec<u8>,
}

fn tag(kind: u64, msg: MsgId, offset: u32) -> u64 {
    (kind << 60) | ((msg as u64) << 30) | offset as u64
}
fn untag(t: u64) -> (u64, MsgId, u32) {
    (t >> 60, ((t >> 30) & ((1 << 30) - 1)) as MsgId, (t & ((1 << 30) - 1)) as u32)
}
fn timer_tag(kind: u32, id: u32) -> u32 {
    debug_assert!(id < 1 << 28);
    (kind << 28) | id
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
}

/// What a request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqKind {
    Send,
    Recv,
    Probe,
    Timer,
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

/// One request (a send, a receive, a probe, a compute timer).
#[derive(Clone, Debug)]
pub struct Req {
    pub kind: ReqKind,
    pub rank: u32,
    pub done: bool,
    pub done_at: Tick,
    pub status: Status,
    pub msg: MsgId,
    /// Receive / probe criteria.
    pub src: i32,
    pub ctx: u32,
    pub tag: i32,
    pub capacity: u32,
    /// The receive buffer is not aligned for network access: the data is
    /// realigned by an extra copy.
    pub unaligned: bool,
    /// Received data, until taken.
    pub data: Option<Vec<u8>>,
    pub live: bool,
    /// A blocked rank waits for this request (kept by the MPI layer).
    pub waited: bool,
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
    data: Vec<u8>,
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

const NO_RECORD: u32 = u32::MAX;

/// One point-to-point message of a run, when the layer logs them
/// (timelines): ranks, size, protocol (`Protocol::index`, 4 = between two
/// tasks of a node), when it was posted, and when each side completed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MsgRecord {
    pub src: u32,
    pub dst: u32,
    pub bytes: u32,
    pub proto: u8,
    pub posted: Tick,
    pub send_done: Tick,
    pub recv_done: Tick,
}

/// The message log: records of the messages whose sender or receiver is
/// watched, up to a limit; the messages past it are counted.
///
/// A record is kept by its sender's partition. Past `limit` records one
/// posted at the same tick as the last kept one is kept too, so that the
/// logs of any cut of the machine, merged (`mpi::timeline`), hold the
/// first `limit` records in (posted, sender) order.
#[derive(Clone, Debug, Default)]
pub struct MsgLog {
    pub watched: Vec<bool>,
    pub limit: usize,
    pub records: Vec<MsgRecord>,
    pub dropped: u64,
    /// Receives completed here of messages whose records another
    /// partition keeps: (sender, its record there, completion time).
    pub remote_done: Vec<(u32, u32, Tick)>,
}

/// A message-layer broadcast with deposit-bit line packets (three colours,
/// each spread along its own dimension order, forwarded per packet).
struct LineBcast {
    root: u32,
    packets: u32,
    /// Per node: packets read; the rank's request once it joined; done.
    got: Vec<u32>,
    waiting: Vec<Vec<ReqId>>,
    done: Vec<bool>,
    /// Line packets the root writes, and how many it has written.
    root_expected: u32,
    root_written: u32,
    root_done: bool,
    started: bool,
    /// Whether `root` and `packets` are known yet (a later id's record can
    /// come first on a machine cut into partitions).
    known: bool,
    /// The root's data, on the processes of an MPI job (it comes with the
    /// root's note; in one process the driver holds it).
    payload: Option<Vec<u8>>,
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

struct RankState {
    node: u32,
    task: u8,
    core: u8,
    /// Posted receives in post order.
    posted: Queue,
    /// Messages whose envelope arrived unmatched, in arrival order.
    unexpected: Queue,
    probes: Vec<ReqId>,
    /// Per destination: messages not yet started (head may be in progress).
    /// (Fx hashing: a rank number needs no protection from crafted keys.)
    peers: FxHashMap<u32, VecDeque<MsgId>>,
    /// Per source whose last envelope is being waited for (see
    /// `Costs::wait`): when it will be taken up. A later envelope from the
    /// same source is not taken up before it, so matching keeps MPI's order.
    envelope_ready: FxHashMap<u32, Tick>,
    /// With a DMA engine: descriptors in the rank's work FIFO (messages
    /// posted whose packets the engine has not all injected yet), and the
    /// messages waiting for room in it.
    dma_posted: u32,
    dma_waiting: VecDeque<MsgId>,
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
    /// Descriptors a work FIFO holds (u32::MAX without a DMA engine), and
    /// the interrupt that tells a rank with a full one that there is room.
    work_fifo: u32,
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
}

/// The message layer (and the matching MPI builds on), as software on the cores.
pub struct MsgLayer {
    ranks: Vec<RankState>,
    msgs: Vec<Msg>,
    free_msgs: Vec<MsgId>,
    pub reqs: Vec<Req>,
    free_reqs: Vec<ReqId>,
    /// Per core (node * cores + core): messages with packets to emit.
    streams: Vec<VecDeque<MsgId>>,
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
        let m = net.machine.clone();
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
                    dma_posted: 0,
                    dma_waiting: VecDeque::new(),
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
            streams: (0..net.core_count()).map(|_| VecDeque::new()).collect(),
            costs: Costs {
                send_msg: ticks(&ml.send_message_cycles),
                recv_msg: ticks(&ml.recv_message_cycles),
                mpi_half,
                packet: ml.packet_handler_cycles as Tick * t,
                adaptive_packet: ml.adaptive_packet_cycles as Tick * t,
                memfifo_packet: m.spec.dma.as_ref().map_or(0, |d| d.memfifo_packet_cycles as Tick * t),
                descriptor: m.spec.dma.as_ref().map_or(0, |d| d.descriptor_cycles as Tick * t),
                work_fifo: m.spec.dma.as_ref().map_or(u32::MAX, |d| d.work_fifo_descriptors),
                interrupt_refill: m.spec.cpu.interrupt_cycles as Tick * t,
                wait,
                workunit: ml.coprocessor_workunit_cycles as Tick * t,
                intranode: ml.intranode_message_cycles as Tick * t,
                interrupt: if ml.interrupts { m.spec.cpu.interrupt_cycles as Tick * t } else { 0 },
                unaligned_fraction: ml.unaligned_copy_fraction,
                tick_cycle: t,
                copy_bytes_per_cycle: m.spec.node.copy_bytes_per_cycle,
            },
            maxp: m.max_payload_bytes(),
            meta: ml.metadata_bytes,
            coproc_rendezvous: ml.coprocessor_rendezvous && m.mode == NodeMode::Coprocessor && cores > 1,
            burst: (m.torus().injection_fifo_bytes / m.max_packet_bytes()).max(1),
            dma: net.dma_slot(),
            tasks_per_node: tpn,
            fifos_per_task,
            completed: Vec::new(),
            messages_done: 0,
            packets_sent: 0,
            out_of_order: 0,
            bcasts: FxHashMap::default(),
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

    /// Makes this the copy of the layer for the partition owning nodes
    /// `lo..hi` of a windowed run: messages to the other nodes go as an
    /// envelope and packets (see [`Envelope`]).
    pub fn set_partition(&mut self, lo: u32, hi: u32) {
        self.own = (lo, hi);
    }

    fn owns(&self, node: u32) -> bool {
        node >= self.own.0 && node < self.own.1
    }

    /// The envelope of the note `i` of this window, for the engine to hand
    /// over (see [`Envelope`]; it hands over every note of a window).
    pub fn take_note(&mut self, i: u32) -> Envelope {
        let e = std::mem::take(&mut self.notes[i as usize]);
        self.notes_taken += 1;
        if self.notes_taken == self.notes.len() {
            self.notes.clear();
            self.notes_taken = 0;
        }
        e
    }

    /// A message from another partition: the receiver's record.
    pub fn take_envelope(&mut self, e: Envelope) {
        let key = (self.place(e.src).0, e.seq);
        let id = self.new_msg(Msg {
            src: e.src,
            dst: e.dst,
            ctx: e.ctx,
            tag: e.tag,
            bytes: e.bytes,
            proto: e.proto,
            sync: e.sync,
            data: e.data,
            send_req: NONE,
            recv_req: NONE,
            packets: e.packets,
            direct: e.direct,
            // The sender's partition's record (see `recv_complete`).
            record: e.record,
            sides: RECV_SIDE,
            seq: e.seq,
            peer: e.slot,
            ..Default::default()
        });
        let old = self.from_away.insert(key, id);
        debug_assert!(old.is_none(), "message {key:?} taken in twice");
    }

    /// The id a packet of message `id` to its receiver carries: its
    /// sequence number if the receiver is in another partition (see
    /// [`Envelope`]).
    #[inline]
    fn wire_id(&self, id: MsgId) -> MsgId {
        let m = &self.msgs[id as usize];
        if m.sides == SEND_SIDE { REMOTE | m.seq } else { id }
    }

    /// The sender's record of a packet it wrote (see [`Self::wire_id`]).
    #[inline]
    fn written_record(&self, id: MsgId) -> MsgId {
        if id & REMOTE == 0 {
            return id;
        }
        self.away_slots[&(id & !REMOTE)]
    }

    /// The record a packet names here (see [`Envelope`]).
    #[inline]
    fn record_of(&self, pkt: &Packet, id: MsgId) -> MsgId {
        if id & REMOTE == 0 {
            return id;
        }
        *self.from_away.get(&(pkt.src, id & !REMOTE)).expect("the envelope comes before the message's packets")
    }

    /// The id the receiver's acks name the message by at its sender.
    fn sender_id(&self, id: MsgId) -> MsgId {
        let m = &self.msgs[id as usize];
        if m.sides & SEND_SIDE != 0 { id } else { m.peer }
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

    // ----- requests -----

    fn new_req(&mut self, kind: ReqKind, rank: u32) -> ReqId {
        let r = Req {
            kind,
            rank,
            done: false,
            done_at: 0,
            status: Status::default(),
            msg: NONE,
            src: ANY,
            ctx: 0,
            tag: ANY,
            capacity: 0,
            unaligned: false,
            data: None,
            live: true,
            waited: false,
        };
        match self.free_reqs.pop() {
            Some(id) => {
                self.reqs[id as usize] = r;
                id
            }
            None => {
                self.reqs.push(r);
                (self.reqs.len() - 1) as ReqId
            }
        }
    }

    /// Frees a completed (or abandoned) request's slot.
    pub fn release(&mut self, id: ReqId) {
        let r = &mut self.reqs[id as usize];
        if r.live {
            r.live = false;
            r.data = None;
            self.free_reqs.push(id);
        }
    }

    fn complete(&mut self, id: ReqId, now: Tick) {
        let r = &mut self.reqs[id as usize];
        if !r.done {
            r.done = true;
            r.done_at = now;
            self.completed.push(id);
        }
    }

    // ----- messages -----

    fn new_msg(&mut self, m: Msg) -> MsgId {
        match self.free_msgs.pop() {
            Some(id) => {
                self.msgs[id as usize] = m;
                id
            }
            None => {
                self.msgs.push(m);
                assert!(self.msgs.len() < (1 << 28), "more than 2^28 messages in flight");
                (self.msgs.len() - 1) as MsgId
            }
        }
    }

    /// A new record in the message log, if messages are logged and one of
    /// the two ranks is watched (else `NO_RECORD`).
    fn log_record(&mut self, src: u32, dst: u32, bytes: u32, proto: u8, now: Tick) -> u32 {
        let Some(log) = self.log.as_mut() else { return NO_RECORD };
        if !(log.watched[src as usize] || log.watched[dst as usize]) {
            return NO_RECORD;
        }
        if log.records.len() >= log.limit && log.records.last().is_none_or(|r| now > r.posted) {
            log.dropped += 1;
            return NO_RECORD;
        }
        log.records.push(MsgRecord { src, dst, bytes, proto, posted: now, send_done: 0, recv_done: 0 });
        (log.records.len() - 1) as u32
    }

    fn maybe_free_msg(&mut self, id: MsgId) {
        let m = &mut self.msgs[id as usize];
        let (send, recv) = (m.sides & SEND_SIDE != 0, m.sides & RECV_SIDE != 0);
        // An adaptive-eager confirmation may still be on its way back.
        let settled = !send || m.proto != Some(Protocol::AdaptiveEager) || m.acked;
        if (m.send_done || !send) && (m.recv_done || !recv) && settled {
            m.data = Vec::new();
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

    /// Data packets a message takes under its protocol.
    fn data_packets(&self, proto: Protocol, bytes: u32) -> u32 {
        match proto {
            Protocol::OnePacket => 1,
            Protocol::Eager | Protocol::AdaptiveEager => {
                let first = self.maxp - self.meta;
                1 + bytes.saturating_sub(first).div_ceil(self.maxp)
            }
            Protocol::Rendezvous => bytes.div_ceil(self.maxp),
        }
    }

    /// Posts a send of `data` from `rank` to `dest` with the MPI envelope
    /// (`ctx`, `tag`). The protocol is chosen by the caller; messages to a
    /// rank on the same node use the intra-node protocol.
    #[allow(clippy::too_many_arguments)]
    pub fn isend(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, rank: u32, dest: u32, ctx: u32, tag: i32, data: Vec<u8>, proto: Protocol, mode: SendMode) -> ReqId {
        let bytes = data.len() as u32;
        self.isend_sized(net, q, now, rank, dest, ctx, tag, data, bytes, proto, mode)
    }

    /// As [`MsgLayer::isend`], for a message of `bytes` whose content is
    /// `data` or, when `data` is empty, not carried at all (communication
    /// skeletons: only the size matters).
    #[allow(clippy::too_many_arguments)]
    pub fn isend_sized(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, rank: u32, dest: u32, ctx: u32, tag: i32, data: Vec<u8>, bytes: u32, proto: Protocol, mode: SendMode) -> ReqId {
        let req = self.new_req(ReqKind::Send, rank);
        debug_assert!(data.is_empty() || data.len() as u32 == bytes);
        assert!(bytes < 1 << 30, "messages are limited to 1 GiB");
        let intranode = self.ranks[rank as usize].node == self.ranks[dest as usize].node;
        let direct = mode == SendMode::Direct;
        let proto = if direct || (proto == Protocol::OnePacket && bytes + self.meta > self.maxp) { Protocol::Eager } else { proto };
        let packets = if intranode { 0 } else { self.data_packets(proto, bytes) };
        let record = self.log_record(rank, dest, bytes, if intranode { 4 } else { proto.index() as u8 }, now);
        let away = !self.owns(self.ranks[dest as usize].node);
        let msg = self.new_msg(Msg {
            src: rank,
            dst: dest,
            ctx,
            tag,
            bytes,
            proto: if intranode { None } else { Some(proto) },
            intranode,
            sync: mode == SendMode::Synchronous,
            data,
            send_req: req,
            recv_req: NONE,
            packets,
            direct: direct && !intranode,
            record,
            sides: if away { SEND_SIDE } else { SEND_SIDE | RECV_SIDE },
            ..Default::default()
        });
        if away {
            self.send_away(q, msg);
        }
        self.reqs[req as usize].msg = msg;
        let st = &mut self.ranks[rank as usize].stats;
        st.sends += 1;
        st.bytes_sent += bytes as u64;
        st.by_protocol[if intranode { 4 } else { proto.index() }] += 1;
        // A standard send to one's own rank of a size that would go eager
        // is buffered as MPI buffers it (MPICH's self path): copied, and
        // complete, before any receive is posted. (Between two tasks of a
        // node the receiver copies from the send buffer, as the machine's
        // VN protocol does.)
        let to_self = rank == dest && mode == SendMode::Standard && proto != Protocol::Rendezvous;
        if mode == SendMode::Buffered || to_self {
            // The data is copied into the attached buffer: the request is
            // complete after the copy, the message goes on by itself.
            let (node, core) = self.place(rank);
            let done = net.charge(q, now, node, core, self.copy_ticks(bytes), Work::Copy);
            self.msgs[msg as usize].send_req = NONE;
            net.timer(q, done, node, core, timer_tag(tk::REQ_DONE, req));
        }
        if self.msgs[msg as usize].direct {
            self.stream(net, q, now, msg);
            return req;
        }
        let queue = self.ranks[rank as usize].peers.entry(dest).or_default();
        queue.push_back(msg);
        if queue.len() == 1 {
            // The rank's calls run one after the other on its core: a send
            // posted while the core still works on earlier calls starts
            // when it is free.
            let (node, core) = self.place(rank);
            let busy = net.core_busy_until(node, core);
            if busy > now {
                net.timer(q, busy, node, core, timer_tag(tk::START, msg));
            } else {
                self.start(net, q, now, msg);
            }
        }
        req
    }

    /// Hands message `id`'s envelope (and data) to its receiver's partition.
    fn send_away(&mut self, q: &mut EventQueue, id: MsgId) {
        let seq = self.sent_away;
        self.sent_away = (seq + 1) & (REMOTE - 1);
        let m = &mut self.msgs[id as usize];
        m.seq = seq;
        self.away_slots.insert(seq, id);
        let e = Envelope {
            src: m.src,
            dst: m.dst,
            ctx: m.ctx,
            tag: m.tag,
            bytes: m.bytes,
            proto: m.proto,
            sync: m.sync,
            direct: m.direct,
            packets: m.packets,
            slot: id,
            seq,
            record: m.record,
            data: std::mem::take(&mut m.data),
        };
        let node = self.ranks[e.dst as usize].node;
        self.notes.push(e);
        let ev = Event { kind: NOTE_ENVELOPE, a: 0, b: 0, c: 0, node, data: (self.notes.len() - 1) as u32 };
        crate::engine::Crossing::note(q, ev);
    }

    /// Starts the head message of a peer queue.
    fn start(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        let m = &self.msgs[id as usize];
        let (node, core) = self.place(m.src);
        if m.intranode {
            let (dnode, dcore) = self.place(m.dst);
            let cost = self.costs.intranode + self.costs.mpi_half[Protocol::Eager.index()];
            let done = net.charge(q, now, node, core, cost, Work::Protocol);
            net.timer(q, done, dnode, dcore, timer_tag(tk::INTRA_ARRIVE, id));
            let (src, dst) = (m.src, m.dst);
            self.advance_peer(net, q, now, src, dst);
            return;
        }
        let p = m.proto.expect("network message").index();
        if self.dma.is_some() {
            // A descriptor goes into the rank's work FIFO; with the FIFO
            // full the message waits for room (see `descriptor_done`).
            let src = m.src as usize;
            if self.ranks[src].dma_posted >= self.costs.work_fifo {
                self.ranks[src].dma_waiting.push_back(id);
                return;
            }
            self.ranks[src].dma_posted += 1;
        }
        let cost = self.costs.send_msg[p] + self.costs.mpi_half[p] + self.costs.descriptor;
        let posted = net.charge(q, now, node, core, cost, Work::Protocol);
        if self.dma.is_some() && posted > now {
            // The DMA engine starts on the message once the core has
            // written its descriptor.
            net.timer(q, posted, node, core, timer_tag(tk::POSTED, id));
        } else {
            self.stream(net, q, now, id);
        }
    }

    /// A descriptor of `rank`'s work FIFO is done. A rank that found its
    /// FIFO full gets the interrupt it asked for and refills the FIFO with
    /// the messages that waited.
    fn descriptor_done(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, rank: u32) {
        let r = &mut self.ranks[rank as usize];
        r.dma_posted -= 1;
        if r.dma_waiting.is_empty() {
            return;
        }
        let (node, core) = (r.node, r.core as usize);
        net.charge(q, now, node, core, self.costs.interrupt_refill, Work::Interrupt);
        while self.ranks[rank as usize].dma_posted < self.costs.work_fifo {
            let Some(id) = self.ranks[rank as usize].dma_waiting.pop_front() else { break };
            self.start(net, q, now, id);
        }
    }

    /// Puts a message on its sender's core's list of streams.
    fn stream(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        let (node, core) = self.injector(self.msgs[id as usize].src);
        let ci = net.core_index(node, core);
        self.streams[ci].push_back(id);
        if net.pending(node, core) == 0 {
            self.emit(net, q, now, node, core);
        }
    }

    /// The next message of a peer queue may start.
    fn advance_peer(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, src: u32, dst: u32) {
        let queue = self.ranks[src as usize].peers.get_mut(&dst).expect("peer queue");
        queue.pop_front();
        if let Some(&next) = queue.front() {
            self.start(net, q, now, next);
        } else if self.ranks[src as usize].peers.len() > PEER_QUEUES_KEPT {
            self.ranks[src as usize].peers.remove(&dst);
        }
    }

    /// The injection FIFO of a packet from a task: FIFOs are pinned to
    /// directions; in VN mode each task has its own share of them.
    fn fifo(&self, net: &Net, node: u32, task: usize, p: &Packet) -> usize {
        let k = self.fifos_per_task;
        let base = if self.tasks_per_node > 1 { task * k } else { 0 };
        let fifo_of = |d: usize| base + d * k / 6;
        let first = if p.hint == 0 { 0 } else { p.hint.trailing_zeros() as usize };
        if !Routing::of(p.flags).adaptive() || p.hint.count_ones() < 2 {
            return fifo_of(first);
        }
        (0..6).filter(|&d| p.hint & (1 << d) != 0).map(fifo_of).min_by_key(|&f| net.inj_used(node, f)).unwrap_or(fifo_of(first))
    }

    fn send_packet(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, from: u32, to: u32, kind: u64, msg: MsgId, offset: u32, payload: u32, routing: Routing, group1: bool) {
        let (node, _) = self.place(from);
        let (dnode, _) = self.place(to);
        let mut p = net.packet(node, dnode, payload, routing, now);
        p.tag = tag(kind, msg, offset);
        if group1 {
            p.flags |= flags::GROUP1;
        }
        let f = self.fifo(net, node, self.ranks[from as usize].task as usize, &p);
        self.packets_sent += 1;
        net.send(q, now, node, p, Some(f));
    }

    /// Emits the next packets of the core's streams, round-robin between
    /// messages: as the advance loop fills an injection FIFO, a message's
    /// data goes out up to a FIFO's worth of packets per turn (so starting
    /// the next messages, which costs the core far more than a packet, does
    /// not leave the link waiting between two packets); a scout ends the
    /// turn.
    fn emit(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize) {
        let ci = net.core_index(node, core);
        let Some(id) = self.streams[ci].pop_front() else { return };
        // The message layer's direct-injection alltoall interleaves its
        // destinations packet by packet: one packet per turn there. A DMA
        // engine serves its injection FIFOs' descriptors in turn, one
        // packet each.
        let burst = if self.msgs[id as usize].direct || self.dma.is_some() { 1 } else { self.burst };
        let mut more = true;
        for _ in 0..burst {
            more = self.emit_packet(net, q, now, id);
            if !more {
                break;
            }
        }
        if more {
            self.streams[ci].push_back(id);
        }
    }

    /// Emits one packet of message `id`; true if more are to come.
    fn emit_packet(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) -> bool {
        let m = &self.msgs[id as usize];
        let proto = m.proto.expect("network message");
        let (src, dst, bytes, queued) = (m.src, m.dst, m.bytes, m.queued);
        let group1 = self.tasks_per_node > 1 && self.ranks[dst as usize].task == 1;
        let more;
        match proto {
            Protocol::Rendezvous if !m.scout_sent => {
                self.msgs[id as usize].scout_sent = true;
                self.send_packet(net, q, now, src, dst, pk::SCOUT, self.wire_id(id), 0, self.meta, Routing::Deterministic, group1);
                self.advance_peer(net, q, now, src, dst);
                more = false;
            }
            Protocol::Rendezvous => {
                let len = (bytes - queued).min(self.maxp);
                let g1 = group1 || m.coproc;
                self.msgs[id as usize].queued += len;
                self.send_packet(net, q, now, src, dst, pk::RDATA, self.wire_id(id), queued, len, Routing::Dynamic, g1);
                more = queued + len < bytes;
            }
            Protocol::OnePacket => {
                self.msgs[id as usize].queued = bytes;
                self.send_packet(net, q, now, src, dst, pk::ONE, self.wire_id(id), 0, self.meta + bytes, Routing::Deterministic, group1);
                more = false;
                self.advance_peer(net, q, now, src, dst);
            }
            Protocol::Eager | Protocol::AdaptiveEager => {
                let (kind, routing) = if m.direct {
                    (pk::EAGER, Routing::Dynamic)
                } else if proto == Protocol::Eager {
                    (pk::EAGER, Routing::Deterministic)
                } else {
                    (pk::ADAPT, Routing::Dynamic)
                };
                let (len, payload) = if queued == 0 {
                    let l = bytes.min(self.maxp - self.meta);
                    (l, l + self.meta)
                } else {
                    let l = (bytes - queued).min(self.maxp);
                    (l, l)
                };
                self.msgs[id as usize].queued += len;
                // A zero-byte message still sends its first packet.
                self.msgs[id as usize].scout_sent = true;
                self.send_packet(net, q, now, src, dst, kind, self.wire_id(id), queued, payload, routing, group1);
                more = queued + len < bytes;
                if !more && !self.msgs[id as usize].direct && (proto == Protocol::Eager || self.msgs[id as usize].acked) {
                    self.advance_peer(net, q, now, src, dst);
                }
            }
        }
        more
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

    // ----- receiving -----

    /// Posts a receive for `rank`: source (or ANY), context, tag (or ANY),
    /// room for `capacity` bytes. Matches the oldest unexpected message first.
    #[allow(clippy::too_many_arguments)]
    pub fn irecv(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, rank: u32, src: i32, ctx: u32, tag: i32, capacity: u32, unaligned: bool) -> ReqId {
        let req = self.new_req(ReqKind::Recv, rank);
        {
            let r = &mut self.reqs[req as usize];
            r.src = src;
            r.ctx = ctx;
            r.tag = tag;
            r.capacity = capacity;
            r.unaligned = unaligned;
        }
        let rs = &mut self.ranks[rank as usize];
        match rs.unexpected.take_message(ctx, src, tag) {
            Some(msg) => self.bind(net, q, now, msg, req),
            None => rs.posted.push(ctx, src, tag, req),
        }
        req
    }

    /// Posts a probe: completes when a matching message is (or becomes)
    /// visible, without receiving it.
    pub fn probe(&mut self, now: Tick, rank: u32, src: i32, ctx: u32, tag: i32) -> ReqId {
        let req = self.new_req(ReqKind::Probe, rank);
        {
            let r = &mut self.reqs[req as usize];
            r.src = src;
            r.ctx = ctx;
            r.tag = tag;
        }
        if let Some(m) = self.ranks[rank as usize].unexpected.peek_message(ctx, src, tag) {
            self.finish_probe(req, m, now);
        } else {
            self.ranks[rank as usize].probes.push(req);
        }
        req
    }

    fn finish_probe(&mut self, req: ReqId, msg: MsgId, now: Tick) {
        let m = &self.msgs[msg as usize];
        self.reqs[req as usize].status = Status { source: m.src as i32, tag: m.tag, count: m.bytes, ..Default::default() };
        self.complete(req, now);
    }

    /// Cancels a pending receive or probe; true if it was still pending.
    pub fn cancel(&mut self, now: Tick, req: ReqId) -> bool {
        let r = &self.reqs[req as usize];
        if r.done {
            return false;
        }
        let (rank, ctx, src) = (r.rank as usize, r.ctx, r.src);
        let found = match r.kind {
            ReqKind::Recv => self.ranks[rank].posted.remove(ctx, src, req),
            ReqKind::Probe => {
                let probes = &mut self.ranks[rank].probes;
                probes.iter().position(|&x| x == req).map(|i| probes.remove(i)).is_some()
            }
            _ => return false,
        };
        if found {
            self.reqs[req as usize].status.cancelled = true;
            self.complete(req, now);
            true
        } else {
            false
        }
    }

    /// A message's first packet (or scout) has been read: its envelope is
    /// taken up now or, when the protocol waits (`Costs::wait`), later - and
    /// never before an earlier envelope from the same source.
    fn arrived_envelope(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId, core: usize) {
        let m = &self.msgs[id as usize];
        let (dst, src) = (m.dst, m.src);
        let wait = match m.proto {
            Some(p) if !m.direct => self.costs.wait[p.index()],
            _ => 0,
        };
        let ready = &mut self.ranks[dst as usize].envelope_ready;
        if wait == 0 && ready.is_empty() {
            // (The usual case: no waiting, none pending from anyone.)
            return self.envelope(net, q, now, id, core);
        }
        let at = (now + wait).max(ready.get(&src).copied().unwrap_or(0));
        if at > now {
            ready.insert(src, at);
            let (node, _) = self.place(dst);
            net.timer(q, at, node, core, timer_tag(tk::ENVELOPE, id));
        } else {
            self.envelope(net, q, now, id, core);
        }
    }

    /// A message's envelope reached its receiver: charge `recvnew`, match.
    fn envelope(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId, core: usize) {
        self.msgs[id as usize].envelope = true;
        let m = &self.msgs[id as usize];
        let (dst, src, ctx, tag) = (m.dst, m.src, m.ctx, m.tag);
        let (node, _) = self.place(dst);
        let cost = match m.proto {
            _ if m.direct => 0,
            Some(p) => self.costs.recv_msg[p.index()] - self.recv_done_ticks(id) + self.costs.mpi_half[p.index()],
            None => self.costs.intranode + self.costs.mpi_half[Protocol::Eager.index()],
        };
        net.charge(q, now, node, core, cost, Work::Protocol);
        if m.proto == Some(Protocol::AdaptiveEager) {
            self.send_packet(net, q, now, dst, src, pk::CONFIRM, self.sender_id(id), 0, 8, Routing::Deterministic, false);
        }
        match self.ranks[dst as usize].posted.take_receive(ctx, src, tag) {
            Some(req) => self.bind(net, q, now, id, req),
            None => {
                self.msgs[id as usize].unexpected = true;
                let rs = &mut self.ranks[dst as usize];
                rs.unexpected.push(ctx, src as i32, tag, id);
                rs.stats.unexpected += 1;
                if let Some(i) = rs.probes.iter().position(|&p| {
                    let r = &self.reqs[p as usize];
                    let m = &self.msgs[id as usize];
                    r.ctx == m.ctx && (r.src == ANY || r.src as u32 == m.src) && (r.tag == ANY || r.tag == m.tag)
                }) {
                    let p = self.ranks[dst as usize].probes.remove(i);
                    self.finish_probe(p, id, now);
                }
            }
        }
    }

    /// A receive request takes a message whose envelope has arrived.
    fn bind(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId, req: ReqId) {
        let m = &mut self.msgs[id as usize];
        m.matched = true;
        m.recv_req = req;
        let (src, dst, proto, sync, bytes, intranode) = (m.src, m.dst, m.proto, m.sync, m.bytes, m.intranode);
        self.reqs[req as usize].msg = id;
        let (node, core) = self.place(dst);
        if intranode {
            // Copy straight from the sender's buffer, then free it: by the
            // receiving core, or by the node's DMA engine at its own rate
            // (both halves, shared with the network's packets).
            let done = match self.dma {
                Some(d) => {
                    let t = net.dma_ticks(bytes);
                    net.charge(q, now, node, d, t, Work::Copy).max(net.charge(q, now, node, d + 1, t, Work::Copy))
                }
                None => net.charge(q, now, node, core, self.copy_ticks(bytes), Work::Copy),
            };
            self.msgs[id as usize].arrived = bytes;
            let (snode, score) = self.place(src);
            net.timer(q, done, node, core, timer_tag(tk::RECV_COPIED, id));
            net.timer(q, done, snode, score, timer_tag(tk::INTRA_FREE, id));
            return;
        }
        match proto {
            Some(Protocol::Rendezvous) => {
                // Ack with the buffer address; the data may now come.
                // The ack tells the sender whether the coprocessor reads the data.
                if self.coproc_rendezvous {
                    self.msgs[id as usize].coproc = true;
                    net.charge(q, now, node, core, self.costs.workunit, Work::Protocol);
                }
                let coproc = self.msgs[id as usize].coproc as u32;
                self.send_packet(net, q, now, dst, src, pk::RACK, self.sender_id(id), coproc, 16, Routing::Deterministic, false);
            }
            _ if sync => {
                self.send_packet(net, q, now, dst, src, pk::SYNCACK, self.sender_id(id), 0, 8, Routing::Deterministic, false);
            }
            _ => {}
        }
        self.check_recv(net, q, now, id);
    }

    /// The receiver's per-message work done when the message is complete
    /// (`recvdone`): half of `recv_message_cycles`, the other half (dispatch,
    /// `recvnew`) being done when its envelope is taken up.
    fn recv_done_ticks(&self, id: MsgId) -> Tick {
        match &self.msgs[id as usize] {
            m if m.direct => 0,
            Msg { proto: Some(p), .. } => self.costs.recv_msg[p.index()] / 2,
            _ => 0,
        }
    }

    /// Completes the receive of a message once matched and all its data is in.
    fn check_recv(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        let m = &self.msgs[id as usize];
        if !m.matched || !m.envelope || m.arrived < m.bytes || m.recv_done || m.finishing {
            return;
        }
        if !m.unexpected && !m.realigned && !m.intranode && self.reqs[m.recv_req as usize].unaligned {
            // Packets are read into an aligned area and copied into place;
            // the part of the copy not overlapped with the reads costs time.
            let (node, core) = self.place(m.dst);
            let ticks = (self.copy_ticks(m.bytes) as f64 * self.costs.unaligned_fraction) as Tick;
            self.msgs[id as usize].realigned = true;
            net.charge(q, now, node, core, ticks, Work::Copy);
        }
        let m = &self.msgs[id as usize];
        let (node, core) = self.place(m.dst);
        net.charge(q, now, node, core, self.recv_done_ticks(id), Work::Protocol);
        let m = &self.msgs[id as usize];
        if m.unexpected {
            // The data waited in a temporary buffer: copy it out (realigning
            // it on the way if need be).
            let done = net.charge(q, now, node, core, self.copy_ticks(m.bytes), Work::Copy);
            self.msgs[id as usize].unexpected = false;
            self.msgs[id as usize].finishing = true;
            net.timer(q, done, node, core, timer_tag(tk::RECV_COPIED, id));
            return;
        }
        // `recvdone` runs when the receiving rank's core has finished the
        // work charged for this message so far.
        let busy = net.core_busy_until(node, core);
        if busy > now {
            self.msgs[id as usize].finishing = true;
            net.timer(q, busy, node, core, timer_tag(tk::RECV_COPIED, id));
        } else {
            self.recv_complete(now, id);
        }
    }

    fn recv_complete(&mut self, now: Tick, id: MsgId) {
        let m = &mut self.msgs[id as usize];
        m.recv_done = true;
        match (self.log.as_mut(), m.record) {
            (None, _) | (_, NO_RECORD) => {}
            // The record is the sender's partition's.
            (Some(log), r) if m.sides == RECV_SIDE => log.remote_done.push((m.src, r, now)),
            (Some(log), r) => log.records[r as usize].recv_done = now,
        }
        let req = m.recv_req;
        let cap = self.reqs[req as usize].capacity;
        let mut data = std::mem::take(&mut m.data);
        let truncated = m.bytes > cap;
        if truncated {
            data.truncate(cap as usize);
        }
        // (A message without content - a skeleton's - arrives as empty data.)
        let status = Status { source: m.src as i32, tag: m.tag, count: m.bytes.min(cap), cancelled: false, truncated };
        let dst = m.dst;
        let st = &mut self.ranks[dst as usize].stats;
        st.recvs += 1;
        st.bytes_received += status.count as u64;
        let r = &mut self.reqs[req as usize];
        r.status = status;
        r.data = Some(data);
        self.complete(req, now);
        // (The sender may still be writing packets: the slot is kept until then.)
        self.maybe_free_msg(id);
    }

    fn send_complete(&mut self, now: Tick, id: MsgId) {
        let m = &mut self.msgs[id as usize];
        if m.send_done {
            return;
        }
        m.send_done = true;
        if let (Some(log), r) = (self.log.as_mut(), m.record) {
            if r != NO_RECORD {
                log.records[r as usize].send_done = now;
            }
        }
        let req = m.send_req;
        if req != NONE {
            self.complete(req, now);
        }
        self.maybe_free_msg(id);
    }

    /// The sender's side is done when every data packet is written (and, for
    /// a synchronous send, the receiver has matched).
    fn check_send(&mut self, now: Tick, id: MsgId) {
        let m = &self.msgs[id as usize];
        let synced = !m.sync || m.acked || m.proto == Some(Protocol::Rendezvous);
        let written = m.written >= m.packets && (m.proto != Some(Protocol::Rendezvous) || m.acked);
        if synced && written {
            self.send_complete(now, id);
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

    /// Joins message-layer broadcast `id` (the same on every rank) of
    /// `bytes` from `root`; one rank per node. The root starts sending when
    /// it joins; every other node forwards each packet into the next
    /// dimensions as soon as it has read it, whether or not its rank has
    /// joined yet. `payload`: the root's data, kept for the other processes
    /// of an MPI job (see [`MsgLayer::bcast_record`]).
    #[allow(clippy::too_many_arguments)]
    pub fn line_bcast(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, rank: u32, id: u32, root: u32, bytes: u64, payload: Option<Vec<u8>>) -> ReqId {
        let req = self.new_req(ReqKind::Timer, rank);
        let packets = bytes.div_ceil(self.maxp as u64) as u32;
        self.bcast_record(net, id, self.place(root).0, packets, payload);
        let node = self.place(rank).0;
        let b = self.bcasts.get_mut(&id).expect("a broadcast's record");
        if node == b.root {
            b.started = true;
            let (rnode, packets) = (b.root, b.packets);
            let mut n = 0;
            for k in 0..packets {
                n += self.spread(net, q, now, id, rnode, k, 0);
            }
            let b = self.bcasts.get_mut(&id).expect("a broadcast's record");
            b.root_expected = n;
            if n == 0 {
                b.root_done = true;
            }
            if b.root_done {
                self.complete(req, now);
            } else {
                b.waiting[node as usize].push(req);
            }
        } else if b.done[node as usize] || b.packets == 0 {
            self.complete(req, now);
        } else {
            b.waiting[node as usize].push(req);
        }
        req
    }

    /// Makes sure broadcast `id` (from node `root`, of `packets` packets) has
    /// its record: from a rank's join, or, on a machine cut into
    /// partitions, from the root's note, before any of its packets comes.
    pub fn bcast_record(&mut self, net: &Net, id: u32, root: u32, packets: u32, payload: Option<Vec<u8>>) {
        let nodes = net.machine.shape.nodes() as usize;
        let b = self.bcasts.entry(id).or_insert_with(|| LineBcast {
            root: 0,
            packets: 0,
            got: vec![0; nodes],
            waiting: vec![Vec::new(); nodes],
            done: vec![false; nodes],
            root_expected: 0,
            root_written: 0,
            root_done: false,
            started: false,
            known: false,
            payload: None,
        });
        if !b.known {
            (b.root, b.packets, b.known) = (root, packets, true);
        }
        if payload.is_some() {
            b.payload = payload;
        }
    }

    /// The root's data of broadcast `id`, where it came with the root's
    /// note (on the processes of an MPI job).
    pub fn bcast_payload(&self, id: u32) -> Option<&[u8]> {
        self.bcasts.get(&id).and_then(|b| b.payload.as_deref())
    }

    /// Broadcast `id`'s root node and packets, and the root's data if kept
    /// (see [`MsgLayer::bcast_record`]).
    pub fn bcast_of(&self, id: u32) -> (u32, u32, Option<Vec<u8>>) {
        let b = &self.bcasts[&id];
        (b.root, b.packets, b.payload.clone())
    }

    /// Forwards packet `k` of broadcast `id` from `node`, which got it at
    /// `stage` (0: the root). Colour c = k mod m (m: dimensions longer than
    /// one) spreads along its own rotation (d0, d1, d2) of them: stage 1 the
    /// root's d0 line, stage 2 d1 lines from it, stage 3 d2 lines from that
    /// plane - every node outside the root's d0 = R plane; stage 4 one hop
    /// into that plane from its neighbour plane. The root sends only along
    /// d0, so each colour leaves the root by its own link and the colours'
    /// line packets use disjoint links (on a torus the lines run + only; on a
    /// mesh both ways from the sender). Returns the packets sent.
    fn spread(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: u32, node: u32, k: u32, stage: usize) -> u32 {
        let dims: Vec<usize> = (0..3).filter(|&d| self.dims[d] > 1).collect();
        let m = dims.len();
        if m == 0 {
            return 0;
        }
        let colour = k as usize % m;
        let order: Vec<usize> = (0..m).map(|i| dims[(colour + i) % m]).collect();
        let b = &self.bcasts[&id];
        let root = net.geometry().coords32(b.root);
        let c = net.geometry().coords32(node);
        let len = (self.maxp as u64).min(b.packets as u64 * self.maxp as u64 - k as u64 * self.maxp as u64) as u32;
        // (direction, hops, stage) of every line packet to send.
        let mut lines: Vec<(usize, u32, usize)> = Vec::new();
        let stages = if stage == 0 { 1..=1 } else { (stage + 1)..=m };
        for st in stages {
            let d = order[st - 1];
            let size = self.dims[d];
            if self.torus[d] {
                lines.push((2 * d, size - 1, st));
            } else {
                lines.push((2 * d, size - 1 - c[d], st));
                lines.push((2 * d + 1, c[d], st));
            }
        }
        // The step into the root's d0 plane.
        let d0 = order[0];
        if m >= 2 && (1..=m).contains(&stage) {
            let size = self.dims[d0];
            let (from, dir) = if self.torus[d0] {
                ((root[d0] + size - 1) % size, 2 * d0)
            } else if root[d0] + 1 < size {
                (root[d0] + 1, 2 * d0 + 1)
            } else {
                (root[d0] - 1, 2 * d0)
            };
            let mut t = c;
            t[d0] = root[d0];
            if c[d0] == from && t != root {
                lines.push((dir, 1, m + 1));
            }
        }
        let mut sent = 0;
        for (dir, hops, st) in lines {
            if hops == 0 {
                continue;
            }
            let d = dir / 2;
            let size = self.dims[d];
            let mut t = c;
            t[d] = if dir % 2 == 0 { (c[d] + hops) % size } else { (c[d] + size - hops) % size };
            let dest = net.geometry().index(t);
            let mut p = net.line_packet(node, dest, dir, len, now);
            p.tag = tag(pk::DEPOSIT, id, ((st as u32) << 26) | k);
            let f = self.fifo(net, node, 0, &p);
            self.packets_sent += 1;
            net.send(q, now, node, p, Some(f));
            sent += 1;
        }
        sent
    }

    fn line_bcast_packet(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize, id: u32, offset: u32) {
        let (stage, k) = ((offset >> 26) as usize, offset & ((1 << 26) - 1));
        net.charge(q, now, node, core, self.costs.packet, Work::Protocol);
        self.spread(net, q, now, id, node, k, stage);
        let b = self.bcasts.get_mut(&id).expect("a broadcast's record");
        b.got[node as usize] += 1;
        if b.got[node as usize] == b.packets {
            b.done[node as usize] = true;
            let busy = net.core_busy_until(node, core).max(now);
            for r in std::mem::take(&mut b.waiting[node as usize]) {
                self.complete_at(net, q, r, busy);
            }
        }
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
            crate::packet::ev::CORE_WAKE | crate::packet::ev::WRITTEN if (e.a as usize) < net.cores_per_node() => {
                match self.streams.get(net.core_index(e.node, e.a as usize)).and_then(|s| s.front()) {
                    Some(&id) => id,
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
        let id = self.record_of(pkt, id);
        let core = match self.dma {
            // The DMA engine received the packet. Rendezvous data goes
            // straight into the receive buffer and a remote get is served
            // by the engine: no core touches them. Everything else lands
            // in a memory FIFO that the rank's core reads.
            Some(_) => {
                let rank = match kind {
                    pk::DEPOSIT => return self.line_bcast_packet(net, q, now, node, 0, id, offset),
                    pk::RACK | pk::CONFIRM | pk::SYNCACK => self.msgs[id as usize].src,
                    _ => self.msgs[id as usize].dst,
                };
                let c = self.ranks[rank as usize].core as usize;
                if kind != pk::RDATA && kind != pk::RACK {
                    net.charge(q, now, node, c, self.costs.memfifo_packet, Work::Protocol);
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
            pk::RACK => {
                let m = &mut self.msgs[id as usize];
                m.acked = true;
                m.coproc = offset != 0;
                if m.bytes == 0 {
                    self.check_send(now, id);
                } else {
                    self.stream(net, q, now, id);
                }
            }
            pk::CONFIRM => {
                let m = &mut self.msgs[id as usize];
                m.acked = true;
                let (src, dst, all_queued) = (m.src, m.dst, m.scout_sent && m.queued >= m.bytes);
                if all_queued {
                    self.advance_peer(net, q, now, src, dst);
                }
                self.maybe_free_msg(id);
            }
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
            let b = self.bcasts.get_mut(&id).expect("a broadcast's record");
            if pkt.src == b.root {
                b.root_written += 1;
                if b.root_written == b.root_expected {
                    b.root_done = true;
                    let root = b.root as usize;
                    for r in std::mem::take(&mut b.waiting[root]) {
                        self.complete(r, now);
                    }
                }
            }
            return;
        }
        if matches!(kind, pk::RACK | pk::CONFIRM | pk::SYNCACK) {
            // A receiver's ack: it names the sender's record, which may be
            // in another partition, and counts for nothing here.
            return;
        }
        let id = self.written_record(id);
        let data = matches!(kind, pk::ONE | pk::EAGER | pk::ADAPT | pk::RDATA);
        if data {
            self.msgs[id as usize].written += 1;
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
            if last && !m.direct {
                self.descriptor_done(net, q, now, m.src);
            }
        }
        if data {
            self.check_send(now, id);
        }
    }

    fn refill(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize) {
        self.emit(net, q, now, node, core);
    }

    fn on_timer(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, _node: u32, core: usize, t: u32) {
        let (kind, id) = (t >> 28, t & ((1 << 28) - 1));
        match kind {
            tk::INTRA_ARRIVE => {
                self.msgs[id as usize].arrived = 0;
                self.envelope(net, q, now, id, core);
            }
            tk::INTRA_FREE => self.send_complete(now, id),
            tk::REQ_DONE => self.complete(id, now),
            tk::RECV_COPIED => self.recv_complete(now, id),
            tk::START => self.start(net, q, now, id),
            tk::POSTED => self.stream(net, q, now, id),
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
