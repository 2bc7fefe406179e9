//! *Intra-node*, on a machine without a DMA engine: a message between two
//! tasks of one node (VN mode), or from a rank to itself, takes no
//! packets. The sender passes its buffer's address; once a receive
//! matches, the receiving core copies the data straight from the send
//! buffer, and the sender is told its buffer is free. (With a DMA engine
//! such a message takes the network protocols, its packets moved by the
//! engine: `send.rs`.)

use super::wire::{timer_tag, tk};
use super::{MsgId, MsgLayer};
use crate::engine::{EventQueue, Tick};
use crate::machine::Protocol;
use crate::node::Work;
use crate::packet::Net;

impl MsgLayer {
    /// The sender's side: its per-message work, then the envelope is at
    /// the receiver (`tk::INTRA_ARRIVE`); the next message to the peer may
    /// start at once.
    pub(super) fn intra_start(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        let m = &self.msgs[id as usize];
        let (node, core) = self.place(m.src);
        let (dnode, dcore) = self.place(m.dst);
        let cost = self.costs.intranode + self.costs.mpi_half[Protocol::Eager.index()];
        let done = net.charge(q, now, node, core, cost, Work::Protocol);
        net.timer(q, done, dnode, dcore, timer_tag(tk::INTRA_ARRIVE, id));
        let (src, dst) = (m.src, m.dst);
        self.advance_peer(net, q, now, src, dst);
    }

    /// A receive matched: the receiving core copies straight from the
    /// sender's buffer, then frees it.
    pub(super) fn intra_matched(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, id: MsgId) {
        let m = &self.msgs[id as usize];
        let (src, dst, bytes) = (m.src, m.dst, m.bytes);
        let (node, core) = self.place(dst);
        let done = net.charge(q, now, node, core, self.copy_ticks(bytes), Work::Copy);
        self.msgs[id as usize].arrived = bytes;
        let (snode, score) = self.place(src);
        net.timer(q, done, node, core, timer_tag(tk::RECV_COPIED, id));
        net.timer(q, done, snode, score, timer_tag(tk::INTRA_FREE, id));
    }
}
