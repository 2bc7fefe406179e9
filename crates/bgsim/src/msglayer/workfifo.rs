//! The BG/P DMA engine's work FIFO as the message layer uses it: a rank
//! posts a descriptor per message (`Net::dma_post`; the FIFO is the
//! engine's, `crate::dma`); with its FIFO full, the message waits in the
//! rank's list, and the rank asks for an interrupt when room frees and
//! then refills the FIFO.

use super::MsgLayer;
use crate::engine::{EventQueue, Tick};
use crate::node::Work;
use crate::packet::Net;

impl MsgLayer {
    /// A descriptor of `rank`'s work FIFO is done. A rank that found its
    /// FIFO full gets the interrupt it asked for and refills the FIFO with
    /// the messages that waited.
    pub(super) fn descriptor_done(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, rank: u32) {
        let r = &self.ranks[rank as usize];
        let (node, task, core) = (r.node, r.task as u32, r.core as usize);
        net.dma_retire(node, task);
        if r.dma_waiting.is_empty() {
            return;
        }
        net.charge(q, now, node, core, self.costs.interrupt_refill, Work::Interrupt);
        while net.dma_has_room(node, task) {
            let Some(id) = self.ranks[rank as usize].dma_waiting.pop_front() else { break };
            if self.pending[id as usize].bits & super::pend::LAZY != 0 {
                self.start_held(net, q, now, id, true);
            } else {
                self.start(net, q, now, id);
            }
        }
    }
}
