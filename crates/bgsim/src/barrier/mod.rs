//! Layer 3: the global-interrupt barrier network. A component with its own
//! event kind: software hands it a barrier (who enters when, whom to tell)
//! and it tells every participant's core with a [`ev::RELEASE`] event a
//! fixed latency after the last has entered.

pub use crate::collective::Participant;
use crate::engine::{Event, EventQueue, Tick};
use crate::machine::Machine;

/// Event kinds of the barrier network.
pub mod ev {
    use crate::machine::Component;
    /// The barrier released: core `a` of the node is told with tag `data`.
    pub const RELEASE: u8 = Component::Barrier.kind(0);
}

/// The global-interrupt network: a partition-wide AND with a fixed latency.
#[derive(Clone, Copy, Debug)]
pub struct Barrier {
    pub latency: Tick,
    pub entry: Tick,
    pub exit: Tick,
    /// Barriers completed.
    pub operations: u64,
}

impl Barrier {
    pub fn new(m: &Machine) -> Self {
        let b = m.spec.barrier.as_ref().expect("a machine with a global-interrupt barrier");
        let t = m.tick_cycle as f64;
        Barrier {
            latency: (b.latency_ns * 1e-3 * m.spec.clock.cpu_mhz * t).round() as Tick,
            entry: (b.entry_cycles as f64 * t) as Tick,
            exit: (b.exit_cycles as f64 * t) as Tick,
            operations: 0,
        }
    }

    /// A barrier of `who`: every participant's core is told (a
    /// [`ev::RELEASE`]) when the wires release them all, at `floor` at the
    /// earliest.
    pub fn operate(&mut self, q: &mut EventQueue, who: &[Participant], floor: Tick) {
        self.operations += 1;
        let t = self.release(who.iter().map(|p| p.joined));
        for p in who {
            q.push_at(t.max(p.joined).max(floor), Event { kind: ev::RELEASE, a: p.core as u8, b: 0, c: 0, node: p.node, data: p.tag });
        }
    }
    /// When every participant leaves, given when each entered.
    pub fn release(&self, entered: impl Iterator<Item = Tick>) -> Tick {
        entered.map(|t| t + self.entry).max().unwrap_or(0) + self.latency + self.exit
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::bgl;

    #[test]
    fn a_barrier_tells_every_participant_once_after_the_last_entry() {
        let m = bgl(&["partition.shape=\"2x2x1\""]).unwrap();
        let mut b = Barrier::new(&m);
        let mut q = EventQueue::new();
        let who: Vec<Participant> = (0..4).map(|n| Participant { node: n, core: 0, tag: 100 + n, joined: 10 * n as Tick }).collect();
        b.operate(&mut q, &who, 0);
        let release = 30 + b.entry + b.latency + b.exit;
        let mut seen = vec![];
        while let Some((t, e)) = q.pop_before(Tick::MAX) {
            assert_eq!((t, e.kind, e.a), (release, ev::RELEASE, 0));
            seen.push((e.node, e.data));
        }
        assert_eq!(seen, vec![(0, 100), (1, 101), (2, 102), (3, 103)]);
        assert_eq!(b.operations, 1);
    }
}
