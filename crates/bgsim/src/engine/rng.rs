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

/// Uniform draws from a source of 32-bit random numbers.
pub trait Draws {
    fn next_u32(&mut self) -> u32;
    /// Uniform integer in `0..n` (n > 0), Lemire's multiply-shift.
    #[inline]
    fn below(&mut self, n: u32) -> u32 {
        ((self.next_u32() as u64 * n as u64) >> 32) as u32
    }
    /// Uniform float in [0, 1).
    #[inline]
    fn unit(&mut self) -> f64 {
        (self.next_u32() as f64) * (1.0 / 4_294_967_296.0)
    }
    /// True with probability `p`.
    #[inline]
    fn chance(&mut self, p: f64) -> bool {
        p >= 1.0 || (p > 0.0 && self.unit() < p)
    }
    /// Exponentially distributed value with the given mean.
    #[inline]
    fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }
}

impl Rng {
    pub fn new(seed: u64, stream: u64) -> Self {
        Rng(Pcg32::new(stream_seed(seed, stream), stream.wrapping_mul(2).wrapping_add(1)))
    }
}

impl Draws for Rng {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
}

const PCG_MULTIPLIER: u64 = 6_364_136_223_846_793_005;

/// PCG32's increment for stream `stream` as [`Rng::new`] sets it.
#[inline]
fn pcg_increment(stream: u64) -> u64 {
    (stream.wrapping_mul(2).wrapping_add(1) << 1) | 1
}

/// The state of stream `stream` of a run without the stream's increment:
/// 8 bytes instead of [`Rng`]'s 16, for the streams of large arrays of
/// nodes, whose owner names the stream at each draw ([`Self::draw`]). It
/// draws exactly the numbers of `Rng::new(seed, stream)`.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct StreamState(u64);

impl StreamState {
    pub fn new(seed: u64, stream: u64) -> Self {
        let inc = pcg_increment(stream);
        StreamState(stream_seed(seed, stream).wrapping_add(inc).wrapping_mul(PCG_MULTIPLIER).wrapping_add(inc))
    }
    /// The next number of the stream, which advances only if `advance`:
    /// without a branch, for decisions the branch predictor cannot foresee.
    #[inline]
    pub fn draw_if(&mut self, stream: u64, advance: bool) -> u32 {
        let old = self.0;
        let mut next = *self;
        let x = next.draw(stream).next_u32();
        let keep = (advance as u64).wrapping_neg();
        self.0 = (next.0 & keep) | (old & !keep);
        x
    }
    /// Draws from this state as stream `stream` (the one it was made for).
    #[inline]
    pub fn draw(&mut self, stream: u64) -> StreamDraw<'_> {
        StreamDraw { state: &mut self.0, inc: pcg_increment(stream) }
    }
}

/// A [`StreamState`] with its stream named: a source of draws.
pub struct StreamDraw<'a> {
    state: &'a mut u64,
    inc: u64,
}

impl Draws for StreamDraw<'_> {
    /// PCG32 (XSH RR), as `rand_pcg::Pcg32`.
    #[inline]
    fn next_u32(&mut self) -> u32 {
        let old = *self.state;
        *self.state = old.wrapping_mul(PCG_MULTIPLIER).wrapping_add(self.inc);
        let xsh = (((old >> 18) ^ old) >> 27) as u32;
        xsh.rotate_right((old >> 59) as u32)
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
    fn stream_states_draw_what_their_rng_draws() {
        for (seed, stream) in [(1u64, 0u64), (7, 3), (u64::MAX, 65_535), (42, u64::MAX / 3), (0, 1 << 40)] {
            let mut a = Rng::new(seed, stream);
            let mut b = StreamState::new(seed, stream);
            for _ in 0..1000 {
                assert_eq!(a.next_u32(), b.draw(stream).next_u32(), "seed {seed} stream {stream}");
            }
        }
    }
    #[test]
    fn draw_if_advances_only_when_asked() {
        let stream = 9;
        let mut a = Rng::new(5, stream);
        let mut b = StreamState::new(5, stream);
        for i in 0..1000u32 {
            let advance = i % 3 != 0;
            let x = b.draw_if(stream, advance);
            // The number is the stream's next one either way; it stays
            // the next one until a draw advances the stream.
            let mut peek = b;
            if advance {
                assert_eq!(x, a.next_u32());
            } else {
                assert_eq!(x, peek.draw(stream).next_u32());
            }
        }
        assert_eq!(b.draw(stream).next_u32(), a.next_u32());
    }
    #[test]
    fn below_is_in_range_and_covers() {
        let mut r = Rng::new(1, 1);
        let mut seen = [0u32; 5];
        for _ in 0..5000 { seen[r.below(5) as usize] += 1; }
        assert!(seen.iter().all(|&s| s > 800 && s < 1200), "{seen:?}");
    }
}
