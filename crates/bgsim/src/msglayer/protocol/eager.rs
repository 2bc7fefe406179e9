//! *Eager*: the sender streams deterministically routed packets, kept in
//! order by FIFO pinning (every packet to one peer through the same
//! injection FIFO) and dimension-ordered routes; the first carries the
//! metadata block, the receiver unpacks with a running offset. Also the
//! message layer's direct injection (`SendMode::Direct`), whose packets
//! go dynamically routed in any order.

use super::Wire;
use crate::engine::{EventQueue, Tick};
use crate::msglayer::wire::pk;
use crate::msglayer::{MsgId, MsgLayer, PacketOut};
use crate::packet::{Net, Routing};

pub(super) struct Eager;

impl Wire for Eager {
    fn data_packets(ml: &MsgLayer, bytes: u32) -> u32 {
        let first = ml.maxp - ml.meta;
        1 + bytes.saturating_sub(first).div_ceil(ml.maxp)
    }

    #[inline]
    fn emit_packet(ml: &mut MsgLayer, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) -> bool {
        let routing = if ml.msgs[id as usize].direct { Routing::Dynamic } else { Routing::Deterministic };
        stream_packet(ml, net, q, now, id, pk::EAGER, routing)
    }
}

/// Writes the next packet of an eager or adaptive-eager message (`kind`):
/// the first has the metadata block, the others are full of data. After
/// the last, the next message to the peer may start - for adaptive eager
/// only once the receiver's confirmation is back (`AdaptiveEager`).
#[inline]
pub(super) fn stream_packet(ml: &mut MsgLayer, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId, kind: u64, routing: Routing) -> bool {
    let m = &ml.msgs[id as usize];
    let (src, dst, bytes, queued) = (m.src, m.dst, m.bytes, m.queued);
    // The first packet carries the metadata block; on the message tier
    // the full packets after it go as trains.
    let (len, payload, count) = if queued == 0 {
        let l = bytes.min(ml.maxp - ml.meta);
        (l, l + ml.meta, 1)
    } else {
        let (k, l) = ml.next_data(src, dst, bytes - queued);
        (l, l, k)
    };
    let m = &mut ml.msgs[id as usize];
    m.queued += len;
    // A zero-byte message still sends its first packet.
    m.scout_sent = true;
    let number = ml.packet_number(kind, queued);
    ml.send_train(net, q, now, PacketOut { from: src, to: dst, kind, msg: ml.wire_id(id), arg: number, payload, routing, coproc: false }, count);
    let more = queued + len < bytes;
    let m = &ml.msgs[id as usize];
    if !more && !m.direct && (kind == pk::EAGER || m.acked) {
        ml.advance_peer(net, q, now, src, dst);
    }
    more
}
