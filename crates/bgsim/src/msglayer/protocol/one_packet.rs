//! *One-packet*: the metadata block and the data in one deterministically
//! routed packet; the cheapest protocol, for messages that fit.

use super::Wire;
use crate::engine::{EventQueue, Tick};
use crate::msglayer::wire::pk;
use crate::msglayer::{MsgId, MsgLayer, PacketOut};
use crate::packet::{Net, Routing};

pub(super) struct OnePacket;

impl Wire for OnePacket {
    fn data_packets(_ml: &MsgLayer, _bytes: u32) -> u32 {
        1
    }

    #[inline]
    fn emit_packet(ml: &mut MsgLayer, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) -> bool {
        let m = &mut ml.msgs[id as usize];
        let (src, dst, bytes) = (m.src, m.dst, m.bytes);
        m.queued = bytes;
        ml.send_packet(net, q, now, PacketOut { from: src, to: dst, kind: pk::ONE, msg: ml.wire_id(id), arg: 0, payload: ml.meta + bytes, routing: Routing::Deterministic, coproc: false });
        ml.advance_peer(net, q, now, src, dst);
        false
    }
}
