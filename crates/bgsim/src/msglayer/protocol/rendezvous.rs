//! *Rendezvous*: a deterministically routed scout asks the receiver for
//! permission; once a receive matches, the receiver acks with its buffer's
//! address, and the data packets then go dynamically routed, each
//! addressed to its final offset, counted by the receiver. In coprocessor
//! mode the second core may receive the data (`msglayer.coprocessor_rendezvous`);
//! on BG/P the data is a remote get the DMA engine serves.

use super::Wire;
use crate::engine::{EventQueue, Tick};
use crate::msglayer::wire::pk;
use crate::msglayer::{MsgId, MsgLayer, PacketOut};
use crate::node::Work;
use crate::packet::{Net, Routing};

pub(in crate::msglayer) struct Rendezvous;

impl Wire for Rendezvous {
    fn data_packets(ml: &MsgLayer, bytes: u32) -> u32 {
        bytes.div_ceil(ml.maxp)
    }

    /// The scout first (it ends the sender's turn and lets the next message
    /// to the peer start); after the ack, the data.
    #[inline]
    fn emit_packet(ml: &mut MsgLayer, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) -> bool {
        let m = &ml.msgs[id as usize];
        let (src, dst, bytes, queued, coproc) = (m.src, m.dst, m.bytes, m.queued, m.coproc);
        if !m.scout_sent {
            ml.msgs[id as usize].scout_sent = true;
            ml.send_packet(net, q, now, PacketOut { from: src, to: dst, kind: pk::SCOUT, msg: ml.wire_id(id), arg: 0, payload: ml.meta, routing: Routing::Deterministic, coproc: false });
            ml.advance_peer(net, q, now, src, dst);
            return false;
        }
        let (count, len) = ml.next_data(src, dst, bytes - queued);
        ml.msgs[id as usize].queued += len;
        let number = ml.packet_number(pk::RDATA, queued);
        ml.send_train(net, q, now, PacketOut { from: src, to: dst, kind: pk::RDATA, msg: ml.wire_id(id), arg: number, payload: len, routing: Routing::Dynamic, coproc }, count);
        let more = queued + len < bytes;
        if !more {
            Rendezvous::data_queued(ml, net, q, now, src, dst);
        }
        more
    }

    /// Ack with the buffer's address (and whether the coprocessor reads
    /// the data): the data may now come.
    fn matched(ml: &mut MsgLayer, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        let m = &ml.msgs[id as usize];
        let (src, dst) = (m.src, m.dst);
        if ml.coproc_rendezvous {
            let (node, core) = ml.place(dst);
            ml.msgs[id as usize].coproc = true;
            net.charge(q, now, node, core, ml.costs.workunit, Work::Protocol);
        }
        let coproc = ml.msgs[id as usize].coproc as u32;
        ml.send_packet(net, q, now, PacketOut { from: dst, to: src, kind: pk::RACK, msg: ml.sender_id(id), arg: coproc, payload: 16, routing: Routing::Deterministic, coproc: false });
    }
}

impl Rendezvous {
    /// The receiver's ack reached the sender: stream the data (a message
    /// of no bytes is done).
    pub(in crate::msglayer) fn acked(ml: &mut MsgLayer, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId, coproc: bool) {
        let m = &mut ml.msgs[id as usize];
        m.acked = true;
        m.coproc = coproc;
        if m.bytes == 0 {
            return ml.check_send(now, id);
        }
        let (src, dst) = (m.src, m.dst);
        let turn = ml.ranks[src as usize].rdata.entry(dst).or_default();
        turn.push_back(id);
        if turn.len() == 1 {
            ml.stream(net, q, now, id);
        }
    }

    /// The last data packet of the head of a peer's acked messages is
    /// queued: the next one's data may go.
    fn data_queued(ml: &mut MsgLayer, net: &mut Net, q: &mut EventQueue, now: Tick, src: u32, dst: u32) {
        let rs = &mut ml.ranks[src as usize];
        let turn = rs.rdata.get_mut(&dst).expect("acked rendezvous messages of a peer");
        turn.pop_front();
        match turn.front() {
            Some(&next) => ml.stream(net, q, now, next),
            None => {
                rs.rdata.remove(&dst);
            }
        }
    }
}
