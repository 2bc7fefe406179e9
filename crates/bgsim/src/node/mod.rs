//! Layer 4: the processor cores of a node as resources.
//!
//! Each core is busy or idle. What it is busy with is charged to a category
//! (packet writes, packet reads, polling, application compute), so the run
//! reports per-core time by category. A busy core delays whatever it would
//! do next; a core that cannot drain its reception FIFOs backs up the network.

use crate::engine::Tick;
use crate::machine::Machine;
use crate::torus::List;
use serde::Serialize;

/// Time a core spent per category, ticks.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct CoreCounters {
    pub inject_ticks: u64,
    pub read_ticks: u64,
    pub poll_ticks: u64,
    pub compute_ticks: u64,
    pub packets_written: u64,
    pub packets_read: u64,
}

/// One core.
#[derive(Clone, Copy, Debug, Default)]
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

/// The core (of `comm` communication cores) that reads reception FIFO `f`.
fn reader_core(f: usize, comm: usize) -> usize {
    if f >= 6 {
        0
    } else {
        f % comm
    }
}

/// The cores of all nodes.
pub struct Cores {
    pub per_node: usize,
    /// Cores that run communication work (2 on BG/L except heater mode).
    pub comm: usize,
    /// Per core: the reception FIFOs it reads (see `reader_of`).
    group_masks: Vec<u8>,
    pub cores: Vec<Core>,
}

impl Cores {
    pub fn new(m: &Machine) -> Self {
        let per_node = m.cores() as usize;
        let comm = m.mode.comm_cores(m.cores()) as usize;
        let nodes = m.shape.nodes() as usize;
        let group_masks = (0..per_node).map(|c| (0..7).filter(|&f| reader_core(f, comm) == c).fold(0u8, |m, f| m | (1 << f))).collect();
        Cores {
            per_node,
            comm,
            group_masks,
            cores: vec![Core { idle: true, ..Default::default() }; nodes * per_node],
        }
    }
    #[inline]
    pub fn idx(&self, node: u32, core: usize) -> usize {
        node as usize * self.per_node + core
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
        reader_core(f, self.comm)
    }
    /// Reception FIFO mask read by `core`.
    #[inline]
    pub fn group_mask(&self, core: usize) -> u8 {
        self.group_masks[core]
    }
    /// Sum of all cores' counters.
    pub fn totals(&self) -> CoreCounters {
        let mut t = CoreCounters::default();
        for c in &self.cores {
            t.inject_ticks += c.counters.inject_ticks;
            t.read_ticks += c.counters.read_ticks;
            t.poll_ticks += c.counters.poll_ticks;
            t.compute_ticks += c.counters.compute_ticks;
            t.packets_written += c.counters.packets_written;
            t.packets_read += c.counters.packets_read;
        }
        t
    }
}
