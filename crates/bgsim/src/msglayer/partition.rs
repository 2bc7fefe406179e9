//! The message layer on a machine cut into partitions (threads, or the
//! processes of an MPI job): a message whose receiver is in another
//! partition goes there as an envelope, and its packets name it by a
//! sequence number instead of a record.

use super::{Msg, MsgId, MsgLayer, NONE};
use crate::engine::{Event, EventQueue};
use crate::machine::Protocol;
use crate::torus::Packet;

/// A message id with this bit, in a packet from another partition, is not a
/// record here but the message's sequence number at its sender (see
/// [`Envelope`]); real ids stay below 2^28.
pub(super) const REMOTE: MsgId = 1 << 29;

/// Which sides of a message a record holds: on one partition both; with
/// the sender's and receiver's nodes in two partitions, each has a record
/// of its own side.
pub(super) const SEND_SIDE: u8 = 1;
pub(super) const RECV_SIDE: u8 = 2;

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
    rma: u8,
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

impl MsgLayer {
    /// Makes this the copy of the layer for the partition owning nodes
    /// `lo..hi` of a windowed run: messages to the other nodes go as an
    /// envelope and packets (see [`Envelope`]).
    pub fn set_partition(&mut self, lo: u32, hi: u32) {
        self.own = (lo, hi);
    }

    pub(super) fn owns(&self, node: u32) -> bool {
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
            send_req: NONE,
            recv_req: NONE,
            packets: e.packets,
            direct: e.direct,
            rma: e.rma,
            // The sender's partition's record (see `recv_complete`).
            record: e.record,
            sides: RECV_SIDE,
            seq: e.seq,
            peer: e.slot,
            ..Default::default()
        });
        if !e.data.is_empty() {
            self.msg_data.insert(id, e.data);
        }
        let old = self.from_away.insert(key, id);
        debug_assert!(old.is_none(), "message {key:?} taken in twice");
    }

    /// The id a packet of message `id` to its receiver carries: its
    /// sequence number if the receiver is in another partition (see
    /// [`Envelope`]).
    #[inline]
    pub(super) fn wire_id(&self, id: MsgId) -> MsgId {
        let m = &self.msgs[id as usize];
        if m.sides == SEND_SIDE { REMOTE | m.seq } else { id }
    }

    /// The sender's record of a packet it wrote (see [`Self::wire_id`]).
    #[inline]
    pub(super) fn written_record(&self, id: MsgId) -> MsgId {
        if id & REMOTE == 0 {
            return id;
        }
        self.away_slots[&(id & !REMOTE)]
    }

    /// The record a packet names here (see [`Envelope`]).
    #[inline]
    pub(super) fn record_of(&self, pkt: &Packet, id: MsgId) -> MsgId {
        if id & REMOTE == 0 {
            return id;
        }
        *self.from_away.get(&(pkt.src, id & !REMOTE)).expect("the envelope comes before the message's packets")
    }

    /// The id the receiver's acks name the message by at its sender.
    pub(super) fn sender_id(&self, id: MsgId) -> MsgId {
        let m = &self.msgs[id as usize];
        if m.sides & SEND_SIDE != 0 { id } else { m.peer }
    }

    /// Hands message `id`'s envelope (and data) to its receiver's partition.
    pub(super) fn send_away(&mut self, q: &mut EventQueue, id: MsgId) {
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
            rma: m.rma,
            packets: m.packets,
            slot: id,
            seq,
            record: m.record,
            data: self.msg_data.remove(&id).unwrap_or_default(),
        };
        let node = self.ranks[e.dst as usize].node;
        self.notes.push(e);
        let ev = Event { kind: NOTE_ENVELOPE, a: 0, b: 0, c: 0, node, data: (self.notes.len() - 1) as u32 };
        crate::engine::Crossing::note(q, ev);
    }
}
