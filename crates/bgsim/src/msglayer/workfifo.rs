//! The BG/P DMA engine's work FIFO as the message layer uses it: a rank
//! posts a descriptor per message; with its FIFO full, it asks for an
//! interrupt when room frees and then refills it.

use super::MsgLayer;
use crate::engine::{EventQueue, Tick};
use crate::node::Work;
use crate::packet::Net;


impl MsgLayer {
    /// A descriptor of `rank`'s work FIFO is done. A rank that found its
    /// FIFO full gets the interrupt it asked for and refills the FIFO with
    /// the messages that waited.
    pub(super) fn descriptor_done(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, rank: u32) {
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
}
