//! The hardware components a machine is built of. Each owns its state, its
//! event kinds (declared with [`Component::kind`]) and a counters snapshot;
//! a preset declares the components it has by the sections of its TOML
//! (`[collective]`, `[barrier]` ...; the torus and the nodes every machine
//! has). Adding a component: a variant here, its section in
//! `MachineSpec` (an `Option` so that machines without it leave it out),
//! its module beside `torus` with its state, events and counters, its
//! dispatch in `packet::Net::handle`, and a line in docs/architecture.md.

use crate::engine::event_kind;

/// Reception FIFOs per node of the torus: one per arrival direction plus
/// a high-priority one, in each of its groups.
pub const NRX: usize = 14;
/// Reception FIFOs per group (6 directions + high priority).
pub const RX_GROUP: usize = 7;
/// Groups of reception FIFOs per node (one per task that reads its own):
/// a fixed property of the torus hardware, which a machine's node modes
/// must respect (validated when it is loaded).
pub const RX_GROUPS: usize = NRX / RX_GROUP;

/// A hardware component of the simulated machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Component {
    /// The 3D torus network: routers, links, FIFOs.
    Torus = 0,
    /// The node's cores as resources, and the packet layer's timers.
    Node = 1,
    /// The collective (tree) network with its combining ALU.
    Collective = 2,
    /// The global-interrupt barrier network.
    Barrier = 3,
    /// The BG/P DMA engine: its injection and reception units.
    Dma = 4,
}

impl Component {
    pub const ALL: [Component; 5] = [Component::Torus, Component::Node, Component::Collective, Component::Barrier, Component::Dma];

    /// Event kind `local` (0..16) of this component.
    pub const fn kind(self, local: u8) -> u8 {
        event_kind(self as u8, local)
    }

    /// The component that owns an event kind.
    pub fn of(kind: u8) -> Option<Component> {
        Component::ALL.get((kind >> 4) as usize).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            Component::Torus => "torus",
            Component::Node => "node",
            Component::Collective => "collective",
            Component::Barrier => "barrier",
            Component::Dma => "dma",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_names_its_component() {
        for c in Component::ALL {
            for local in 0..16 {
                assert_eq!(Component::of(c.kind(local)), Some(c));
            }
        }
        assert_eq!(Component::of(Component::Dma.kind(15) + 1), None);
    }
}
