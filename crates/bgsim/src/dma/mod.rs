//! Layer 3: the BG/P DMA engine, one per node, shared by the node's six
//! links and its intra-node traffic.
//!
//! The engine has two units: the *injection* unit writes every packet into
//! the torus's injection FIFOs, the *reception* unit takes every packet out
//! of the reception FIFOs - into a memory FIFO a core then reads, or, for
//! rendezvous data and remote gets, straight into the receive buffer - so
//! the cores never touch torus packets. Each unit moves
//! `dma.bytes_per_cycle` bytes a cycle plus `dma.packet_cycles` a packet
//! ([`Dma::transfer_ticks`]); an intra-node message is copied by both.
//!
//! Processes hand the engine work through their *work FIFOs*, one per
//! process (task slot), of `dma.work_fifo_descriptors` descriptors: a
//! process whose FIFO is full waits for a descriptor to finish, asks for an
//! interrupt, and refills it ([`Dma::post`], [`Dma::retire`]).
//!
//! The packet layer runs the two units in the loop it runs the cores in,
//! as two more agents of each node after the processor cores (they read
//! and write FIFOs as the cores of BG/L do, at the engine's rate and with
//! no polling); this module owns what makes them the engine: which slots
//! they are, their transfer time, the work FIFOs and the counters.

use crate::engine::Tick;
use crate::machine::Machine;

/// What the engine counted over a run, summed over its nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DmaCounters {
    /// Descriptors posted to work FIFOs.
    pub descriptors: u64,
    /// Times a process found its work FIFO full and had to wait for room.
    pub work_fifo_full: u64,
}

/// The DMA engines of a machine's nodes.
#[derive(Clone, Debug)]
pub struct Dma {
    /// The injection unit's agent slot in each node (the reception unit is
    /// the next): the slots after the processor cores.
    first_slot: usize,
    ticks_per_byte: f64,
    packet_ticks: Tick,
    /// Descriptors a work FIFO holds.
    work_fifo: u32,
    tasks_per_node: usize,
    /// Per work FIFO (node x tasks per node + task): descriptors posted
    /// and not yet done.
    posted: Vec<u32>,
    counters: DmaCounters,
}

impl Dma {
    /// The engines of machine `m`, if it has them (a `[dma]` section).
    pub fn new(m: &Machine) -> Option<Self> {
        let d = m.spec.dma.as_ref()?;
        let t = m.tick_cycle;
        let tasks_per_node = m.tasks_per_node() as usize;
        Some(Dma {
            first_slot: m.cores() as usize,
            ticks_per_byte: t as f64 / d.bytes_per_cycle,
            packet_ticks: d.packet_cycles as Tick * t,
            work_fifo: d.work_fifo_descriptors,
            tasks_per_node,
            posted: vec![0; m.shape.nodes() as usize * tasks_per_node],
            counters: DmaCounters::default(),
        })
    }

    /// The injection unit's agent slot in its node.
    #[inline]
    pub fn injection_unit(&self) -> usize {
        self.first_slot
    }

    /// The reception unit's agent slot in its node.
    #[inline]
    pub fn reception_unit(&self) -> usize {
        self.first_slot + 1
    }

    /// Whether agent slot `slot` is one of the engine's units.
    #[inline]
    pub fn is_unit(&self, slot: usize) -> bool {
        slot >= self.first_slot
    }

    /// A unit's time to move `bytes` (one packet, or one intra-node copy).
    #[inline]
    pub fn transfer_ticks(&self, bytes: u32) -> Tick {
        self.packet_ticks + (bytes as f64 * self.ticks_per_byte).ceil() as Tick
    }

    fn fifo(&self, node: u32, task: u32) -> usize {
        node as usize * self.tasks_per_node + task as usize
    }

    /// Posts a descriptor to the work FIFO of `task` on `node`; false (and
    /// nothing posted) when the FIFO is full: the process waits for room.
    pub fn post(&mut self, node: u32, task: u32) -> bool {
        let f = self.fifo(node, task);
        if self.posted[f] >= self.work_fifo {
            self.counters.work_fifo_full += 1;
            return false;
        }
        self.posted[f] += 1;
        self.counters.descriptors += 1;
        true
    }

    /// The engine has done a descriptor of the work FIFO of `task` on
    /// `node`: room for one more.
    pub fn retire(&mut self, node: u32, task: u32) {
        let f = self.fifo(node, task);
        self.posted[f] -= 1;
    }

    /// Whether the work FIFO of `task` on `node` has room for a descriptor.
    pub fn has_room(&self, node: u32, task: u32) -> bool {
        self.posted[self.fifo(node, task)] < self.work_fifo
    }

    /// What the engines counted.
    pub fn counters(&self) -> DmaCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{self, MachineSource};

    fn bgp() -> Machine {
        machine::load(&MachineSource::Preset("bgp".into()), &["partition.shape=\"2x1x1\"".into(), "dma.work_fifo_descriptors=2".into()]).unwrap()
    }

    #[test]
    fn a_full_work_fifo_refuses_until_a_descriptor_retires() {
        let m = bgp();
        let mut d = Dma::new(&m).unwrap();
        assert!(d.post(1, 3) && d.post(1, 3) && !d.has_room(1, 3));
        assert!(!d.post(1, 3), "a third descriptor in a FIFO of two");
        assert!(d.post(1, 2) && d.post(0, 3), "other processes' FIFOs are their own");
        d.retire(1, 3);
        assert!(d.has_room(1, 3) && d.post(1, 3));
        assert_eq!(d.counters(), DmaCounters { descriptors: 5, work_fifo_full: 1 });
    }

    #[test]
    fn units_follow_the_cores_and_move_bytes_at_the_engines_rate() {
        let m = bgp();
        let d = Dma::new(&m).unwrap();
        assert_eq!((d.injection_unit(), d.reception_unit()), (4, 5));
        assert!(d.is_unit(4) && d.is_unit(5) && !d.is_unit(3));
        // 3 bytes a cycle, no per-packet time: a 256-byte packet in 86 cycles.
        assert_eq!(d.transfer_ticks(256), 86 * m.tick_cycle);
        let bgl = machine::load(&MachineSource::Preset("bgl".into()), &[]).unwrap();
        assert!(Dma::new(&bgl).is_none());
    }
}
