//! Layer 4: the processor cores of a node as resources.
//!
//! Each core is busy or idle. What it is busy with is charged to a category
//! (packet writes, packet reads, polling, application compute), so the run
//! reports per-core time by category. A busy core delays whatever it would
//! do next; a core that cannot drain its reception FIFOs backs up the network.

use crate::engine::Tick;
use crate::machine::Machine;
use crate::torus::{List, NRX, RX_GROUP, RX_HP};
use serde::Serialize;

/// Time a core spent per category, ticks.
#[derive(Clone, Copy, Debug, Default, Serialize, serde::Deserialize)]
pub struct CoreCounters {
    pub inject_ticks: u64,
    pub read_ticks: u64,
    pub poll_ticks: u64,
    pub compute_ticks: u64,
    /// Message-layer and MPI protocol work (per message, per handler).
    pub protocol_ticks: u64,
    /// Memory copies (unexpected-message buffers, realignment, intra-node).
    pub copy_ticks: u64,
    /// Interrupt overhead (interrupt-driven progress).
    pub interrupt_ticks: u64,
    pub packets_written: u64,
    pub packets_read: u64,
}

/// One core.
///
/// Two whole cache lines, in the order written: the state the event loop
/// reads first in the first line, the counters after it
/// ([`Cores::prefetch`] brings both).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
#[repr(C, align(64))]
pub struct Core {
    pub busy_until: Tick,
    /// Packets the software has queued for injection.
    pub sendq: List,
    pub sendq_len: u32,
    /// A CORE_WAKE event is pending.
    pub wake_pending: bool,
    /// Idle (polling); the next piece of work pays one poll first.
    pub idle: bool,
    /// Waiting for room in an injection FIFO.
    pub waiting_fifo: bool,
    /// Alternates between draining reception and injecting.
    pub turn: bool,
    /// Round-robin position over reception FIFOs.
    pub rr: u8,
    pub counters: CoreCounters,
}

/// What a core is busy with, for the per-core time counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// Software polling for something that has not happened (an MPI test).
    Poll,
    Protocol,
    Copy,
    Compute,
    Interrupt,
}

/// The default reader of reception FIFO `f` (of `comm` communication cores):
/// with two, one core serves the + directions and the high-priority FIFO of
/// the first group, the other the - directions; the second group belongs to
/// the second core.
fn reader_core(f: usize, comm: usize) -> usize {
    if f >= RX_GROUP {
        usize::from(comm > 1)
    } else if f == RX_HP {
        0
    } else {
        f % comm
    }
}

/// The processor cores of all nodes, as the agents that read and write the
/// torus's FIFOs (on a machine with a DMA engine, `crate::dma`, the engine
/// does that instead and the cores only work).
pub struct Cores {
    /// Cores per node.
    pub per_node: usize,
    /// Cores that run communication work (2 on BG/L except heater mode).
    pub comm: usize,
    /// Per core: the reception FIFOs it reads (see `reader_of`).
    group_masks: Vec<u16>,
    /// Per reception FIFO: the core that reads it.
    readers: [u8; NRX],
    /// Per injection FIFO: the core that writes it (None: the default
    /// split, see `Net::fifo_owner`).
    pub owners: Option<Vec<u8>>,
    pub cores: Vec<Core>,
}

impl Cores {
    /// The cores of machine `m`; `dma`: whether it has a DMA engine (which
    /// reads and writes every FIFO, so no core does).
    pub fn new(m: &Machine, dma: bool) -> Self {
        let per_node = m.cores() as usize;
        let comm = if dma { per_node } else { m.mode.comm_cores(m.cores()) as usize };
        let nodes = m.shape.nodes() as usize;
        let mut readers = [0u8; NRX];
        for (f, r) in readers.iter_mut().enumerate() {
            *r = reader_core(f, comm).min(per_node - 1) as u8;
        }
        let mut c = Cores {
            per_node,
            comm,
            group_masks: Vec::new(),
            readers,
            owners: None,
            cores: crate::engine::huge_vec(nodes * per_node, |_| Core { idle: true, ..Default::default() }),
        };
        c.set_readers(readers, comm);
        if dma {
            c.group_masks.fill(0);
        }
        c
    }

    /// Assigns each reception FIFO to the core that reads it, and sets how
    /// many cores inject (software with its own division of work: one task
    /// per core in virtual node mode, a main core and a helper in
    /// coprocessor mode).
    pub fn set_readers(&mut self, readers: [u8; NRX], comm: usize) {
        self.readers = readers;
        self.comm = comm;
        self.group_masks = (0..self.per_node)
            .map(|c| (0..NRX).filter(|&f| readers[f] as usize == c).fold(0u16, |m, f| m | (1 << f)))
            .collect();
    }
    #[inline]
    pub fn idx(&self, node: u32, core: usize) -> usize {
        node as usize * self.per_node + core
    }
    /// Starts bringing `node`'s `core` into the cache (see
    /// [`crate::engine::prefetch`]); nothing for a core that does not exist.
    #[inline]
    pub fn prefetch(&self, node: u32, core: usize) {
        if let Some(c) = self.cores.get(self.idx(node, core)) {
            crate::engine::prefetch(c);
            crate::engine::prefetch(&c.counters.packets_read);
        }
    }
    #[inline]
    pub fn get(&self, node: u32, core: usize) -> &Core {
        &self.cores[self.idx(node, core)]
    }
    #[inline]
    pub fn get_mut(&mut self, node: u32, core: usize) -> &mut Core {
        let i = self.idx(node, core);
        &mut self.cores[i]
    }
    /// The core that reads reception FIFO `f` (per-direction FIFOs are split in
    /// groups: with two communication cores, one core serves the + directions
    /// and the high-priority FIFO, the other the - directions).
    #[inline]
    pub fn reader_of(&self, f: usize) -> usize {
        self.readers[f] as usize
    }
    /// Reception FIFO mask read by `core`.
    #[inline]
    pub fn group_mask(&self, core: usize) -> u16 {
        self.group_masks[core]
    }
    /// Takes in the cores of nodes `lo..hi` from another partition of the
    /// same windowed run.
    pub fn absorb(&mut self, o: &Cores, lo: u32, hi: u32) {
        let (a, b) = (self.idx(lo, 0), self.idx(hi, 0));
        self.cores[a..b].copy_from_slice(&o.cores[a..b]);
    }
    /// Sum of all cores' counters.
    pub fn totals(&self) -> CoreCounters {
        let mut t = CoreCounters::default();
        for c in &self.cores {
            t.inject_ticks += c.counters.inject_ticks;
            t.read_ticks += c.counters.read_ticks;
            t.poll_ticks += c.counters.poll_ticks;
            t.compute_ticks += c.counters.compute_ticks;
            t.protocol_ticks += c.counters.protocol_ticks;
            t.copy_ticks += c.counters.copy_ticks;
            t.interrupt_ticks += c.counters.interrupt_ticks;
            t.packets_written += c.counters.packets_written;
            t.packets_read += c.counters.packets_read;
        }
        t
    }
}
