//! Look-ahead: what an upcoming event will read, brought into the cache
//! before it runs. Changes nothing in the model (see docs/performance.md).

use super::*;
use crate::engine::prefetch;

impl Torus {

    /// Prefetches what an upcoming event will read (see
    /// [`crate::engine::Model::touch`]). Stage 0: the router lines every
    /// arbitration reads and what the event needs first - the packet and
    /// receiver of an arrival, the sender and packet of a finished transfer
    /// and the VC or FIFO it leaves, the packet of a finished delivery.
    /// Stage 1, from the lines stage 0 brought: what the event's
    /// arbitration will read, and an arrival at its destination's reception
    /// FIFO.
    #[inline]
    pub fn touch(&self, e: &Event, stage: usize) {
        if e.owner() != crate::machine::Component::Torus as u8 {
            return;
        }
        if let Some(c) = self.coarse.as_deref() {
            self.touch_coarse(c, e, stage);
            return;
        }
        let Some(r) = self.routers.get(e.node as usize) else { return };
        let d = (e.a as usize).min(NDIR - 1);
        match stage {
            0 => {
                // The two lines every arbitration reads.
                prefetch(&r.ready);
                prefetch(&r.tokens_lo);
                match e.kind {
                    ev::ARRIVE => {
                        if let Some(p) = self.pool.try_get(e.data) {
                            prefetch(p);
                        }
                        // The packet's VC is in the packet: the receiver's lines.
                        prefetch(&r.recv[d].vc[0]);
                        if self.p.nvc > 4 {
                            prefetch(&r.recv[d].vc[4]);
                        }
                    }
                    ev::XFER_DONE => {
                        prefetch(&r.send[d]);
                        // Its packet, whose payload the link counts now.
                        if self.p.payload_at_end {
                            if let Some(p) = self.pool.try_get(e.data) {
                                prefetch(p);
                            }
                        }
                        // The VC or injection FIFO the transfer leaves.
                        let src = e.b as usize;
                        if src < NDIR {
                            prefetch(&r.recv[src].vc[e.c as usize % 8]);
                        } else {
                            prefetch(&r.inj[(src - NDIR).min(MAXF - 1)]);
                        }
                    }
                    ev::RX_DONE => {
                        if let Some(p) = self.pool.try_get(e.data) {
                            prefetch(p);
                        }
                        prefetch(&r.recv[d].vc[e.b as usize % 8]);
                    }
                    _ => {}
                }
            }
            _ => {
                if e.kind == ev::TOKEN && r.xfer_mask & (1 << d) != 0 {
                    // Its sender is busy: the token return will not arbitrate.
                    return;
                }
                // An arrival arbitrates for its own head only (its VC and
                // packet came in at stage 0): at its destination, the
                // reception FIFO whose room it checks, else the senders it
                // may start on.
                if e.kind == ev::ARRIVE {
                    if let Some(pk) = self.pool.try_get(e.data) {
                        if prod_at(r.coords, pk) == 0 {
                            prefetch(&r.rx[rx_index(pk.flags, d)]);
                            return;
                        }
                    }
                    prefetch(&r.send[0]);
                    prefetch(&r.send[2]);
                    prefetch(&r.send[4]);
                    return;
                }
                // What the event will read as things stand: the third line
                // when injection FIFOs hold packets or VCs 4.. exist, the
                // first VC line of every receiver with a head that may move,
                // the senders' three lines (a grant starts a transfer on one,
                // a token-ack goes out on another). Without a branch per
                // line: a line not needed is replaced by one already on its
                // way.
                let third = r.inj_ready != 0 || self.p.nvc > 4;
                prefetch(if third { &r.inj_hprod[0] } else { &r.hprod[0] });
                // The first injection FIFO whose head may move (its queue
                // is read right after, for the head packet).
                if r.inj_ready != 0 {
                    prefetch(&r.inj[(r.inj_ready.trailing_zeros() as usize).min(MAXF - 1)]);
                }
                let ready = nonzero_bytes(r.ready);
                let first = (ready | 1 << (NDIR - 1)).trailing_zeros() as usize;
                for port in 0..NDIR {
                    prefetch(&r.recv[if ready & (1 << port) != 0 { port } else { first }].vc[0]);
                }
                prefetch(&r.send[0]);
                prefetch(&r.send[2]);
                prefetch(&r.send[4]);
            }
        }
    }

    /// [`Self::touch`] on the coarse tier: what its events read. A head at
    /// a node: its packet, at stage 1 the node's links (their bookings
    /// and counters). A link's event: at stage 0 its line. An arrival:
    /// its packet.
    #[inline]
    fn touch_coarse(&self, c: &coarse::Coarse, e: &Event, stage: usize) {
        let link = e.node as usize * NDIR + (e.a as usize).min(NDIR - 1);
        match (e.kind, stage) {
            (ev::COARSE_HOP | ev::COARSE_ARRIVE, 0) => {
                if let Some(p) = self.pool.try_get(e.data) {
                    prefetch(p);
                }
            }
            (ev::COARSE_HOP, _) => {
                c.touch_links(e.node);
            }
            (ev::COARSE_LINK, 0) => c.touch_line(link),
            _ => {}
        }
    }

    /// Starts bringing node `n`'s normal injection FIFOs into the cache
    /// (software about to send reads how full they are): one FIFO per line.
    #[inline]
    pub fn touch_injection(&self, n: u32) {
        if let Some(r) = self.routers.get(n as usize) {
            for f in (0..self.p.ninj.min(MAXF)).step_by(64 / std::mem::size_of::<Fifo>()) {
                prefetch(&r.inj[f]);
            }
        }
    }

    /// Starts bringing reception FIFO `f` of node `n` into the cache (a
    /// packet is about to join it).
    #[inline]
    pub fn touch_rx_fifo(&self, n: u32, f: usize) {
        if let Some(r) = self.routers.get(n as usize) {
            prefetch(&r.rx[f.min(NRX - 1)]);
        }
    }

    /// Brings the state arbitration is about to read at router `ni` into the
    /// cache in parallel rather than one miss after another: the queues of
    /// the heads it will evaluate, then their head packets. Changes nothing.
    #[inline]
    pub(super) fn prefetch_heads(&self, ni: usize, cand: u64, inj: u32) {
        let r = &self.routers[ni];
        let (mut c, mut f) = (cand, inj);
        while c != 0 {
            let i = c.trailing_zeros() as usize;
            c &= c - 1;
            prefetch(&r.recv[i / 8].vc[i % 8]);
        }
        while f != 0 {
            let i = f.trailing_zeros() as usize;
            f &= f - 1;
            prefetch(&r.inj[i.min(MAXF - 1)]);
        }
        let (mut c, mut f) = (cand, inj);
        while c != 0 {
            let i = c.trailing_zeros() as usize;
            c &= c - 1;
            if let Some(p) = self.pool.try_get(r.recv[i / 8].vc[i % 8].q.head) {
                prefetch(p);
            }
        }
        while f != 0 {
            let i = f.trailing_zeros() as usize;
            f &= f - 1;
            if let Some(p) = self.pool.try_get(r.inj[i.min(MAXF - 1)].q.head) {
                prefetch(p);
            }
        }
    }
}
