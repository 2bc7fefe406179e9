//! Directions, coordinates, neighbours and minimal-route hint bits.

use crate::machine::Shape;

/// Link directions: 0 x+, 1 x-, 2 y+, 3 y-, 4 z+, 5 z-.
pub const NDIR: usize = 6;
pub const DIR_NAMES: [&str; NDIR] = ["x+", "x-", "y+", "y-", "z+", "z-"];

#[inline]
pub fn dim_of(d: usize) -> usize {
    d >> 1
}
#[inline]
pub fn is_minus(d: usize) -> bool {
    d & 1 == 1
}
#[inline]
pub fn opposite(d: usize) -> usize {
    d ^ 1
}

/// Geometry of a partition: coordinates and neighbours of dense node indices
/// (index = x + X * (y + Y * z)).
#[derive(Clone, Debug)]
pub struct Geometry {
    pub dims: [u32; 3],
    pub torus: [bool; 3],
    stride: [u32; 3],
}

impl Geometry {
    pub fn new(shape: &Shape) -> Self {
        let d = shape.dims;
        Geometry { dims: d, torus: shape.torus, stride: [1, d[0], d[0] * d[1]] }
    }
    pub fn nodes(&self) -> u32 {
        self.dims[0] * self.dims[1] * self.dims[2]
    }
    #[inline]
    pub fn coords(&self, n: u32) -> [u8; 3] {
        let x = n % self.dims[0];
        let r = n / self.dims[0];
        [x as u8, (r % self.dims[1]) as u8, (r / self.dims[1]) as u8]
    }
    /// Coordinates as u32 (also valid for dimensions of 256).
    #[inline]
    pub fn coords32(&self, n: u32) -> [u32; 3] {
        let x = n % self.dims[0];
        let r = n / self.dims[0];
        [x, r % self.dims[1], r / self.dims[1]]
    }
    #[inline]
    pub fn index(&self, c: [u32; 3]) -> u32 {
        c[0] + self.stride[1] * c[1] + self.stride[2] * c[2]
    }
    /// Whether node `n` has a link in direction `d` (always in a torus
    /// dimension; not at the boundary of a mesh dimension; never in a
    /// dimension of size 1).
    #[inline]
    pub fn has_link(&self, n: u32, d: usize) -> bool {
        let k = dim_of(d);
        let size = self.dims[k];
        if size == 1 {
            return false;
        }
        if self.torus[k] {
            return true;
        }
        let c = self.coords32(n)[k];
        if is_minus(d) {
            c > 0
        } else {
            c + 1 < size
        }
    }
    /// The neighbour of `n` in direction `d` (wrapping in a torus dimension).
    #[inline]
    pub fn neighbor(&self, n: u32, d: usize) -> u32 {
        let k = dim_of(d);
        let size = self.dims[k];
        let c = (n / self.stride[k]) % size;
        let nc = if is_minus(d) { if c == 0 { size - 1 } else { c - 1 } } else if c + 1 == size { 0 } else { c + 1 };
        n - c * self.stride[k] + nc * self.stride[k]
    }
    /// [`Self::neighbor`] of `n` whose coordinates `c` are known (no division:
    /// the router keeps its node's coordinates).
    #[inline]
    pub fn neighbor_at(&self, n: u32, c: [u8; 3], d: usize) -> u32 {
        // Without branches (the direction is as good as random): a step of
        // one stride, or of size - 1 strides back across the wrap-around
        // link; forward when the direction is - exactly at the wrap.
        let k = dim_of(d);
        let (size, s, c) = (self.dims[k], self.stride[k], c[k] as u32);
        let wrap = self.at_dateline(d, c);
        let step = if wrap { (size - 1) * s } else { s };
        let back = (is_minus(d) != wrap) as u32;
        n.wrapping_add((step ^ 0u32.wrapping_sub(back)).wrapping_add(back))
    }
    /// Whether the hop from `n` in direction `d` crosses the dateline of its
    /// dimension (the wrap-around link between the maximum coordinate and 0).
    #[inline]
    pub fn crosses_dateline(&self, n: u32, d: usize) -> bool {
        let k = dim_of(d);
        self.at_dateline(d, (n / self.stride[k]) % self.dims[k])
    }
    /// [`Self::crosses_dateline`] for a node with coordinates `c`.
    #[inline]
    pub fn crosses_dateline_at(&self, c: [u8; 3], d: usize) -> bool {
        self.at_dateline(d, c[dim_of(d)] as u32)
    }
    /// Whether coordinate `c` is the dateline end of a hop in direction `d`.
    #[inline]
    fn at_dateline(&self, d: usize, c: u32) -> bool {
        // 0 going -, size - 1 going +.
        c == (self.dims[dim_of(d)] - 1) * (1 - (d & 1) as u32)
    }
    /// Signed minimal offset from `a` to `b` along dimension `k`: positive means
    /// the + direction. In a torus the shorter way round; a tie (exactly half
    /// way round an even ring) is broken by a fixed rule that keeps the two
    /// directions equally loaded: + from an even source coordinate, - from an
    /// odd one.
    #[inline]
    pub fn offset(&self, k: usize, a: u32, b: u32) -> i32 {
        let size = self.dims[k] as i32;
        let mut o = b as i32 - a as i32;
        if self.torus[k] && size > 1 {
            if o > size / 2 || (o == size / 2 && size % 2 == 0 && a % 2 == 1) {
                o -= size;
            } else if o < -(size / 2) || (o == -(size / 2) && size % 2 == 0 && a % 2 == 0) {
                o += size;
            }
        }
        o
    }
    /// Hops from node `src` to `dst`'s coordinate in the dimension of
    /// direction `d`, going in direction `d` (the long way round if that
    /// is where `d` goes).
    #[inline]
    pub fn hops_along(&self, src: u32, dst: u32, d: usize) -> u32 {
        let k = dim_of(d);
        let (a, b, size) = (self.coords32(src)[k], self.coords32(dst)[k], self.dims[k]);
        if is_minus(d) { (a + size - b) % size } else { (b + size - a) % size }
    }
    /// Hint bits of a minimal route from `src` to `dst`: bit d set when the
    /// packet must travel in direction d; at most one per dimension.
    pub fn hint_bits(&self, src: u32, dst: u32) -> u8 {
        let a = self.coords32(src);
        let b = self.coords32(dst);
        let mut h = 0u8;
        for k in 0..3 {
            let o = self.offset(k, a[k], b[k]);
            if o > 0 {
                h |= 1 << (2 * k);
            } else if o < 0 {
                h |= 1 << (2 * k + 1);
            }
        }
        h
    }
    /// Minimal hop count (Manhattan distance on the torus/mesh).
    pub fn distance(&self, src: u32, dst: u32) -> u32 {
        let a = self.coords32(src);
        let b = self.coords32(dst);
        (0..3).map(|k| self.offset(k, a[k], b[k]).unsigned_abs()).sum()
    }
    /// Links per direction count, for bounds: number of node-direction pairs
    /// that have a link.
    pub fn link_count(&self) -> u64 {
        let mut c = 0u64;
        for n in 0..self.nodes() {
            for d in 0..NDIR {
                if self.has_link(n, d) {
                    c += 1;
                }
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn torus_neighbors_wrap_and_mesh_edges_have_no_link() {
        let g = Geometry::new(&Shape::torus(4, 4, 2));
        assert_eq!(g.neighbor(3, 0), 0);
        assert_eq!(g.neighbor(0, 1), 3);
        assert_eq!(g.coords(g.neighbor(0, 5)), [0, 0, 1]);
        let m = Geometry::new(&Shape::mesh(2, 2, 2));
        assert!(!m.has_link(0, 1));
        assert!(m.has_link(0, 0));
        assert!(!m.has_link(1, 0));
    }

    #[test]
    fn neighbor_and_dateline_from_coordinates_match_the_index_forms() {
        for shape in [Shape::torus(4, 3, 2), Shape::mesh(5, 1, 3), Shape::torus(1, 7, 8)] {
            let g = Geometry::new(&shape);
            for n in 0..g.nodes() {
                for d in 0..NDIR {
                    assert_eq!(g.neighbor_at(n, g.coords(n), d), g.neighbor(n, d), "{shape:?} node {n} dir {d}");
                    assert_eq!(g.crosses_dateline_at(g.coords(n), d), g.crosses_dateline(n, d));
                }
            }
        }
    }

    #[test]
    fn ties_split_by_source_parity_and_mesh_never_wraps() {
        let g = Geometry::new(&Shape::torus(8, 8, 8));
        assert_eq!(g.offset(0, 0, 4), 4);
        assert_eq!(g.offset(0, 4, 0), 4);
        assert_eq!(g.offset(0, 1, 5), -4);
        assert_eq!(g.offset(0, 5, 1), -4);
        assert_eq!(g.offset(0, 0, 5), -3);
        let m = Geometry::new(&Shape::mesh(8, 8, 8));
        assert_eq!(m.offset(0, 0, 7), 7);
        assert_eq!(m.offset(0, 7, 0), -7);
    }

    proptest! {
        #[test]
        fn following_hints_reaches_destination_in_distance_hops(
            x in 1u32..9, y in 1u32..9, z in 1u32..9, tx: bool, ty: bool, tz: bool,
            s in 0u32..10_000, t in 0u32..10_000)
        {
            let shape = Shape { dims: [x, y, z], torus: [tx, ty, tz] };
            let g = Geometry::new(&shape);
            let (s, t) = (s % g.nodes(), t % g.nodes());
            let hint = g.hint_bits(s, t);
            let dist = g.distance(s, t);
            let mut n = s;
            let mut hops = 0;
            let tc = g.coords32(t);
            while n != t {
                let c = g.coords32(n);
                let k = (0..3).find(|&k| c[k] != tc[k]).unwrap();
                let d = if hint & (1 << (2 * k)) != 0 { 2 * k } else { 2 * k + 1 };
                prop_assert!(hint & (1 << d) != 0, "no hint bit for a dimension still to travel");
                prop_assert!(g.has_link(n, d));
                n = g.neighbor(n, d);
                hops += 1;
                prop_assert!(hops <= dist);
            }
            prop_assert_eq!(hops, dist);
            // Minimal: no dimension is longer than half the ring in a torus.
            for k in 0..3 {
                let o = g.offset(k, g.coords32(s)[k], tc[k]).unsigned_abs();
                if shape.torus[k] { prop_assert!(o <= shape.dims[k] / 2); }
            }
        }
    }
}
