//! *Adaptive eager*: every packet dynamically routed, so they may arrive
//! in any order; the receiver confirms the first packet of each new
//! message, and the sender starts nothing more to that peer before the
//! confirmation is back (at least a round trip between two messages).

use super::eager::{stream_packet, Eager};
use super::Wire;
use crate::engine::{EventQueue, Tick};
use crate::msglayer::wire::pk;
use crate::msglayer::{MsgId, MsgLayer, PacketOut};
use crate::packet::{Net, Routing};

pub(in crate::msglayer) struct AdaptiveEager;

impl Wire for AdaptiveEager {
    fn data_packets(ml: &MsgLayer, bytes: u32) -> u32 {
        Eager::data_packets(ml, bytes)
    }

    #[inline]
    fn emit_packet(ml: &mut MsgLayer, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) -> bool {
        stream_packet(ml, net, q, now, id, pk::ADAPT, Routing::Dynamic)
    }

    /// The receiver confirms the message's first packet.
    fn envelope_taken(ml: &mut MsgLayer, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        let m = &ml.msgs[id as usize];
        let (src, dst) = (m.src, m.dst);
        ml.send_packet(net, q, now, PacketOut { from: dst, to: src, kind: pk::CONFIRM, msg: ml.sender_id(id), arg: 0, payload: 8, routing: Routing::Deterministic, coproc: false });
    }
}

impl AdaptiveEager {
    /// The receiver's confirmation of message `id` reached its sender: the
    /// next message to that peer may start once this one is all queued.
    pub(in crate::msglayer) fn confirmed(ml: &mut MsgLayer, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        let m = &mut ml.msgs[id as usize];
        m.acked = true;
        let (src, dst, all_queued) = (m.src, m.dst, m.scout_sent && m.queued >= m.bytes);
        if all_queued {
            ml.advance_peer(net, q, now, src, dst);
        }
        ml.maybe_free_msg(id);
    }
}
