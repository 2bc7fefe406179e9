//! The point-to-point protocols over the torus, one file each, behind one
//! trait ([`Wire`]): what a protocol decides is how many packets a message
//! takes, how its sender writes the next one, and what the receiver does
//! when it takes up the envelope and when a receive matches. Everything
//! the protocols share (peer queues, FIFOs, matching, completion) is in
//! `send.rs` and `recv.rs`; messages between two tasks of one node, which
//! take no packets, are in `intranode.rs`.
//!
//! The dispatch is static: `MsgLayer`'s methods below pick the protocol's
//! implementation by a `match`, which the compiler inlines.

mod adaptive;
mod eager;
mod one_packet;
mod rendezvous;

pub(super) use adaptive::AdaptiveEager;
use eager::Eager;
use one_packet::OnePacket;
pub(super) use rendezvous::Rendezvous;

use super::wire::pk;
use super::{MsgId, MsgLayer, PacketOut};
use crate::engine::{EventQueue, Tick};
use crate::machine::Protocol;
use crate::packet::{Net, Routing};

/// One point-to-point protocol of the message layer.
pub(super) trait Wire {
    /// The data packets a message of `bytes` takes (a rendezvous scout is
    /// not one of them).
    fn data_packets(ml: &MsgLayer, bytes: u32) -> u32;

    /// Writes the next packet of message `id` from its sender; true if
    /// more are to come.
    fn emit_packet(ml: &mut MsgLayer, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) -> bool;

    /// The receiver has taken up the message's envelope (its `recvnew`
    /// work charged), before matching it.
    fn envelope_taken(_ml: &mut MsgLayer, _net: &mut Net, _q: &mut EventQueue, _now: Tick, _id: MsgId) {}

    /// A receive has matched the message: the receiver's answer to the
    /// sender. By default a synchronous send's ack (the sender completes
    /// once the receiver matched).
    fn matched(ml: &mut MsgLayer, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        let m = &ml.msgs[id as usize];
        if m.sync {
            let (src, dst) = (m.src, m.dst);
            ml.send_packet(net, q, now, PacketOut { from: dst, to: src, kind: pk::SYNCACK, msg: ml.sender_id(id), arg: 0, payload: 8, routing: Routing::Deterministic, coproc: false });
        }
    }
}

impl MsgLayer {
    /// [`Wire::data_packets`] of `proto`.
    #[inline]
    pub(super) fn data_packets(&self, proto: Protocol, bytes: u32) -> u32 {
        match proto {
            Protocol::OnePacket => OnePacket::data_packets(self, bytes),
            Protocol::Eager => Eager::data_packets(self, bytes),
            Protocol::AdaptiveEager => AdaptiveEager::data_packets(self, bytes),
            Protocol::Rendezvous => Rendezvous::data_packets(self, bytes),
        }
    }

    /// [`Wire::emit_packet`] of message `id`'s protocol.
    #[inline]
    pub(super) fn emit_packet(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) -> bool {
        match self.msgs[id as usize].proto.expect("network message") {
            Protocol::OnePacket => OnePacket::emit_packet(self, net, q, now, id),
            Protocol::Eager => Eager::emit_packet(self, net, q, now, id),
            Protocol::AdaptiveEager => AdaptiveEager::emit_packet(self, net, q, now, id),
            Protocol::Rendezvous => Rendezvous::emit_packet(self, net, q, now, id),
        }
    }

    /// [`Wire::envelope_taken`] of message `id`'s protocol.
    #[inline]
    pub(super) fn envelope_taken(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        match self.msgs[id as usize].proto {
            Some(Protocol::OnePacket) => OnePacket::envelope_taken(self, net, q, now, id),
            Some(Protocol::Eager) => Eager::envelope_taken(self, net, q, now, id),
            Some(Protocol::AdaptiveEager) => AdaptiveEager::envelope_taken(self, net, q, now, id),
            Some(Protocol::Rendezvous) => Rendezvous::envelope_taken(self, net, q, now, id),
            None => {}
        }
    }

    /// [`Wire::matched`] of message `id`'s protocol.
    #[inline]
    pub(super) fn protocol_matched(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        match self.msgs[id as usize].proto.expect("network message") {
            Protocol::OnePacket => OnePacket::matched(self, net, q, now, id),
            Protocol::Eager => Eager::matched(self, net, q, now, id),
            Protocol::AdaptiveEager => AdaptiveEager::matched(self, net, q, now, id),
            Protocol::Rendezvous => Rendezvous::matched(self, net, q, now, id),
        }
    }

    /// Whether packets from `rank`'s node to `dst` go to the receiving
    /// node's second reception group (the second task's, in VN and DUAL
    /// modes).
    #[inline]
    pub(super) fn to_group1(&self, dst: u32) -> bool {
        self.tasks_per_node > 1 && self.ranks[dst as usize].task == 1
    }
}
