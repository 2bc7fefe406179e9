//! Seeded random streams. Every random decision of the model draws from a
//! stream owned by one node (or one driver), seeded from the run seed and the
//! stream's index, so results do not depend on how nodes are split over
//! partitions or threads.

use rand::{RngCore, SeedableRng};
use rand_pcg::Pcg32;

/// A small (16-byte) fast generator; one per node.
#[derive(Clone, Debug)]
pub struct Rng(Pcg32);

/// Mixes a run seed and a stream index into a 64-bit seed (SplitMix64 finaliser).
pub fn stream_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0x632B_E59B_D9B4_E019);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64, stream: u64) -> Self {
        Rng(Pcg32::new(stream_seed(seed, stream), stream.wrapping_mul(2).wrapping_add(1)))
    }
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    /// Uniform integer in `0..n` (n > 0), Lemire's multiply-shift.
    #[inline]
    pub fn below(&mut self, n: u32) -> u32 {
        ((self.0.next_u32() as u64 * n as u64) >> 32) as u32
    }
    /// Uniform float in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u32() as f64) * (1.0 / 4_294_967_296.0)
    }
    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        p >= 1.0 || (p > 0.0 && self.unit() < p)
    }
    /// Exponentially distributed value with the given mean.
    #[inline]
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }
}

impl SeedableRng for Rng {
    type Seed = [u8; 8];
    fn from_seed(seed: Self::Seed) -> Self {
        Rng::new(u64::from_le_bytes(seed), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u32> = { let mut r = Rng::new(7, 3); (0..8).map(|_| r.next_u32()).collect() };
        let b: Vec<u32> = { let mut r = Rng::new(7, 3); (0..8).map(|_| r.next_u32()).collect() };
        let c: Vec<u32> = { let mut r = Rng::new(7, 4); (0..8).map(|_| r.next_u32()).collect() };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
    #[test]
    fn below_is_in_range_and_covers() {
        let mut r = Rng::new(1, 1);
        let mut seen = [0u32; 5];
        for _ in 0..5000 { seen[r.below(5) as usize] += 1; }
        assert!(seen.iter().all(|&s| s > 800 && s < 1200), "{seen:?}");
    }
}
