//! Partitions and the conservative time-window protocol (YAWNS).
//!
//! The machine can be cut into partitions (for instance one per midplane).
//! Every interaction between two partitions is a packet or a token crossing a
//! link, and it takes at least the link's minimum transit time `w` (the
//! lookahead). So each partition may simulate the window `[t, t + w)` without
//! hearing from the others, then all partitions exchange the events that
//! crossed a boundary and start the next window. Partitions own their nodes'
//! random streams, so the result does not depend on the number of partitions.
//!
//! The windowed engine that runs them, on one thread or several, is
//! [`super::parallel`].

use super::Tick;

/// How the nodes of a machine are split into partitions: contiguous blocks of
/// the node index (node index = x + X*(y + Y*z)), so a block of whole
/// Z-planes is a partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partitioning {
    pub nodes: u32,
    pub parts: u32,
}

impl Partitioning {
    pub fn single(nodes: u32) -> Self {
        Partitioning { nodes, parts: 1 }
    }
    /// Splits `nodes` into `parts` contiguous blocks of whole planes of `plane` nodes.
    pub fn planes(nodes: u32, plane: u32, parts: u32) -> Self {
        let planes = nodes / plane.max(1);
        Partitioning { nodes, parts: parts.clamp(1, planes.max(1)) }
    }
    /// The partition a node belongs to.
    #[inline]
    pub fn part_of(&self, node: u32) -> u32 {
        ((node as u64 * self.parts as u64) / self.nodes.max(1) as u64) as u32
    }
}

/// The window sequence: windows of length `lookahead` ticks.
#[derive(Clone, Copy, Debug)]
pub struct WindowPlan {
    pub lookahead: Tick,
}

impl WindowPlan {
    pub fn new(lookahead: Tick) -> Self {
        WindowPlan { lookahead: lookahead.max(1) }
    }
    /// End of the window that starts at `t`.
    pub fn window_end(&self, t: Tick) -> Tick {
        t + self.lookahead
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn partition_blocks_are_contiguous_and_cover() {
        let p = Partitioning::planes(512, 64, 4);
        let parts: Vec<u32> = (0..512).map(|n| p.part_of(n)).collect();
        assert_eq!(parts[0], 0);
        assert_eq!(parts[511], 3);
        assert!(parts.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1));
        assert_eq!(parts.iter().filter(|&&x| x == 2).count(), 128);
    }
}
