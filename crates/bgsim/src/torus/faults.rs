//! Routing around dead nodes and links: the fault-aware route choice.
//!
//! The hardware routes minimally, adaptively or in dimension order (x, y,
//! z) from hint bits the sender writes into the packet. Software that knows
//! where the faults are chooses those bits and the routing mode:
//!
//! - a packet whose minimal routes (the box between source and destination)
//!   touch no fault goes as asked, adaptively or not;
//! - otherwise it goes in dimension order, and in each dimension it travels
//!   the minimal way round the ring if that arc is clean, else the other way
//!   (a torus dimension; a mesh has one way). Dimension-ordered routes on
//!   the escape VCs keep the network free of deadlock, whichever way round
//!   each ring they go;
//! - a pair with no clean dimension-ordered route (a dead node where the
//!   route turns, say) goes through an intermediate node, as the system
//!   software forwarded packets: a clean dimension-ordered route takes it
//!   there, the packet layer of that node reads it and sends it on by
//!   another clean route ([`FaultMap::via`]). The intermediate is a corner
//!   of the box the pair spans where one is fit (the same length as a
//!   minimal route, in another dimension order), else the live node with
//!   the shortest way through it;
//! - a pair no such route joins cannot be reached: runs check their pairs
//!   before they start ([`FaultMap::unreachable`]) and refuse, naming one.
//!
//! A route's three segments are independent (x on the source's line, y on
//! the line through the x-turn, z on the destination's line), so a pair is
//! reachable when each segment has a clean way round its ring.

use super::geometry::{dim_of, is_minus, Geometry};
use crate::machine::Faults;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The faults of a partition, indexed for the route choice.
#[derive(Debug)]
pub struct FaultMap {
    dead_node: Vec<bool>,
    /// Dead links, one bit per direction of each node (both ends set).
    dead_link: Vec<u8>,
    /// Coordinates of the dead nodes.
    nodes: Vec<[u32; 3]>,
    /// Dead links from each end: node coordinates and direction.
    links: Vec<([u32; 3], usize)>,
    /// Per dimension, per line along it (indexed by the node where the
    /// coordinate of that dimension is 0): whether a fault lies on it.
    line_fault: [Vec<bool>; 3],
    /// Packets given a dimension-ordered route because a fault lay among
    /// their minimal routes (counted by [`FaultMap::route`]).
    rerouted: AtomicU64,
    /// Packets forwarded through an intermediate node.
    forwarded: AtomicU64,
    /// Per pair with no clean dimension-ordered route: the node it is
    /// forwarded through, if any (found once per pair).
    vias: Mutex<HashMap<(u32, u32), Option<u32>>>,
}

/// A pair of nodes no clean dimension-ordered route joins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoRoute {
    pub src: [u32; 3],
    pub dst: [u32; 3],
}

impl std::fmt::Display for NoRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = |c: [u32; 3]| format!("({},{},{})", c[0], c[1], c[2]);
        write!(f, "no route from node {} to node {} avoids the dead nodes and links (packets route in dimension order x, y, z, either way round each ring, directly or through one intermediate node)", c(self.src), c(self.dst))
    }
}

impl FaultMap {
    /// The map of `faults` on `geo`; None when there are none.
    pub fn new(geo: &Geometry, faults: &Faults) -> Option<FaultMap> {
        if faults.is_empty() {
            return None;
        }
        let n = geo.nodes() as usize;
        let mut m = FaultMap {
            dead_node: vec![false; n],
            dead_link: vec![0; n],
            nodes: faults.nodes.clone(),
            links: Vec::new(),
            line_fault: [vec![false; n], vec![false; n], vec![false; n]],
            rerouted: 0.into(),
            forwarded: 0.into(),
            vias: Mutex::new(HashMap::new()),
        };
        for &c in &faults.nodes {
            let i = geo.index(c) as usize;
            m.dead_node[i] = true;
            for k in 0..3 {
                m.line_fault[k][line_of(geo, c, k)] = true;
            }
        }
        for &(c, d) in &faults.links {
            let a = geo.index(c);
            let b = geo.neighbor(a, d);
            m.dead_link[a as usize] |= 1 << d;
            m.dead_link[b as usize] |= 1 << (d ^ 1);
            m.links.push((c, d));
            m.links.push((geo.coords32(b), d ^ 1));
            m.line_fault[dim_of(d)][line_of(geo, c, dim_of(d))] = true;
        }
        Some(m)
    }

    pub fn node_dead(&self, n: u32) -> bool {
        self.dead_node[n as usize]
    }
    pub fn link_dead(&self, n: u32, d: usize) -> bool {
        self.dead_link[n as usize] & (1 << d) != 0
    }
    pub fn dead_nodes(&self) -> usize {
        self.nodes.len()
    }
    pub fn dead_links(&self) -> usize {
        self.links.len() / 2
    }
    /// Packets routed in dimension order because of a fault so far.
    pub fn rerouted(&self) -> u64 {
        self.rerouted.load(Ordering::Relaxed)
    }

    /// Packets forwarded through an intermediate node so far.
    pub fn forwarded(&self) -> u64 {
        self.forwarded.load(Ordering::Relaxed)
    }

    /// Adds another partition's rerouted and forwarded packets (windowed
    /// runs).
    pub fn add_counts(&self, rerouted: u64, forwarded: u64) {
        self.rerouted.fetch_add(rerouted, Ordering::Relaxed);
        self.forwarded.fetch_add(forwarded, Ordering::Relaxed);
    }

    /// Whether the way from `c` along direction `d` to coordinate `to` of
    /// that dimension crosses only live links and nodes (the start is not
    /// checked).
    pub fn arc_clean(&self, geo: &Geometry, c: [u32; 3], d: usize, to: u32) -> bool {
        let k = dim_of(d);
        if !self.line_fault[k][line_of(geo, c, k)] {
            return true;
        }
        let mut n = geo.index(c);
        let mut x = c[k];
        while x != to {
            if !geo.has_link(n, d) || self.link_dead(n, d) {
                return false;
            }
            n = geo.neighbor(n, d);
            if self.dead_node[n as usize] {
                return false;
            }
            let size = geo.dims[k];
            x = if is_minus(d) { (x + size - 1) % size } else { (x + 1) % size };
        }
        true
    }

    /// The route of a packet from `src` to `dst` whose minimal hint bits are
    /// `hint`: its hint bits and whether it may route adaptively (only when
    /// no fault lies among its minimal routes); None when no clean route
    /// exists.
    pub fn route(&self, geo: &Geometry, src: u32, dst: u32, hint: u8) -> Option<(u8, bool)> {
        let a = geo.coords32(src);
        let b = geo.coords32(dst);
        if self.box_clean(geo, a, b, hint) {
            return Some((hint, true));
        }
        self.rerouted.fetch_add(1, Ordering::Relaxed);
        self.ordered(geo, a, b, hint).map(|h| (h, false))
    }

    /// The hint bits of a clean dimension-ordered route from `a` to `b`
    /// (minimal hint bits `hint`), each dimension the minimal way round
    /// where that is clean, else the other way; None when there is none.
    fn ordered(&self, geo: &Geometry, a: [u32; 3], b: [u32; 3], hint: u8) -> Option<u8> {
        let mut cur = a;
        let mut h = 0u8;
        for k in 0..3 {
            if a[k] == b[k] {
                continue;
            }
            let minimal = if hint & (1 << (2 * k)) != 0 { 2 * k } else { 2 * k + 1 };
            let d = [minimal, minimal ^ 1].into_iter().find(|&d| self.arc_clean(geo, cur, d, b[k]))?;
            h |= 1 << d;
            cur[k] = b[k];
        }
        Some(h)
    }

    /// The hint bits of a clean dimension-ordered route from node `s` to
    /// node `t`, if one exists.
    pub fn leg(&self, geo: &Geometry, s: u32, t: u32) -> Option<u8> {
        self.ordered(geo, geo.coords32(s), geo.coords32(t), geo.hint_bits(s, t))
    }

    /// The node a packet from `s` to `t` that has no clean
    /// dimension-ordered route is forwarded through (see the module's
    /// text); None when none joins them.
    pub fn via(&self, geo: &Geometry, s: u32, t: u32) -> Option<u32> {
        if let Some(v) = self.vias.lock().expect("the forwarding cache").get(&(s, t)) {
            return *v;
        }
        let v = self.find_via(geo, s, t);
        self.vias.lock().expect("the forwarding cache").insert((s, t), v);
        v
    }

    fn find_via(&self, geo: &Geometry, s: u32, t: u32) -> Option<u32> {
        let fit = |i: u32| i != s && i != t && !self.dead_node[i as usize] && self.leg(geo, s, i).is_some() && self.leg(geo, i, t).is_some();
        let (a, b) = (geo.coords32(s), geo.coords32(t));
        let corners = (1..7u32).map(|m| geo.index([0, 1, 2].map(|k| if m & (1 << k) != 0 { b[k] } else { a[k] })));
        corners.into_iter().find(|&i| fit(i)).or_else(|| {
            (0..geo.nodes()).filter(|&i| fit(i)).min_by_key(|&i| (geo.distance(s, i) + geo.distance(i, t), i))
        })
    }

    /// Counts a packet forwarded through an intermediate node.
    pub fn count_forwarded(&self) {
        self.forwarded.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether no fault lies on any minimal route from `a` to `b` (hint bits
    /// `hint`): no dead node in the box they span, no dead link inside it
    /// along a direction of travel.
    fn box_clean(&self, geo: &Geometry, a: [u32; 3], b: [u32; 3], hint: u8) -> bool {
        // Position of coordinate x along dimension k's way from a to b, if
        // on it.
        let along = |k: usize, x: u32| -> Option<u32> {
            let size = geo.dims[k];
            let (from, to) = if hint & (2 << (2 * k)) != 0 { (b[k], a[k]) } else { (a[k], b[k]) };
            let len = (to + size - from) % size;
            let off = (x + size - from) % size;
            (off <= len).then_some(off)
        };
        let inside = |c: [u32; 3]| (0..3).all(|k| along(k, c[k]).is_some());
        if self.nodes.iter().any(|&c| inside(c)) {
            return false;
        }
        !self.links.iter().any(|&(c, d)| {
            let k = dim_of(d);
            hint & (1 << d) != 0 && inside(c) && {
                let mut o = c;
                o[k] = geo.coords32(geo.neighbor(geo.index(c), d))[k];
                inside(o)
            }
        })
    }

    /// A pair of nodes, both used (`used[node]`), that no clean route joins,
    /// directly or through an intermediate node; None when every used pair
    /// is reachable.
    pub fn unreachable(&self, geo: &Geometry, used: &[bool]) -> Option<NoRoute> {
        let dims = geo.dims;
        let idx = |c: [u32; 3]| geo.index(c) as usize;
        // A used node with a given coordinate, or pair of coordinates.
        let mut by_x = vec![None; dims[0] as usize];
        let mut by_z = vec![None; dims[2] as usize];
        let mut by_xy = vec![None; (dims[0] * dims[1]) as usize];
        let mut by_yz = vec![None; (dims[1] * dims[2]) as usize];
        for n in 0..geo.nodes() {
            if used[n as usize] {
                let c = geo.coords32(n);
                by_x[c[0] as usize].get_or_insert(c);
                by_z[c[2] as usize].get_or_insert(c);
                by_xy[(c[0] + dims[0] * c[1]) as usize].get_or_insert(c);
                by_yz[(c[1] + dims[1] * c[2]) as usize].get_or_insert(c);
            }
        }
        for k in 0..3 {
            for n in 0..geo.nodes() {
                let start = geo.coords32(n);
                if start[k] != 0 || !self.line_fault[k][n as usize] {
                    continue;
                }
                for i in 0..dims[k] {
                    for j in 0..dims[k] {
                        if i == j {
                            continue;
                        }
                        let mut from = start;
                        from[k] = i;
                        if (2 * k..2 * k + 2).any(|d| self.arc_clean(geo, from, d, j)) {
                            continue;
                        }
                        // This segment is blocked: is it on a used pair's route?
                        let (s, t) = match k {
                            0 => (used[idx(from)].then_some(from), by_x[j as usize]),
                            1 => (by_yz[(i + dims[1] * from[2]) as usize], by_xy[(from[0] + dims[0] * j) as usize]),
                            _ => {
                                let mut to = from;
                                to[2] = j;
                                (by_z[i as usize], used[idx(to)].then_some(to))
                            }
                        };
                        if s.is_none() || t.is_none() {
                            continue;
                        }
                        // Every used pair whose route takes this segment
                        // must go through an intermediate node.
                        let line = |fix: &[(usize, u32)]| -> Vec<u32> {
                            (0..geo.nodes())
                                .filter(|&n| used[n as usize] && fix.iter().all(|&(d, v)| geo.coords32(n)[d] == v))
                                .collect()
                        };
                        let (srcs, dsts) = match k {
                            0 => (vec![idx(from) as u32], line(&[(0, j)])),
                            1 => (line(&[(1, i), (2, from[2])]), line(&[(0, from[0]), (1, j)])),
                            _ => {
                                let mut to = from;
                                to[2] = j;
                                (line(&[(2, i)]), vec![idx(to) as u32])
                            }
                        };
                        for &a in &srcs {
                            if let Some(&b) = dsts.iter().find(|&&b| a != b && self.via(geo, a, b).is_none()) {
                                return Some(NoRoute { src: geo.coords32(a), dst: geo.coords32(b) });
                            }
                        }
                    }
                }
            }
        }
        None
    }

    /// Whether a line route from `src` along `d` for `hops` hops crosses
    /// only live links and nodes.
    pub fn line_clean(&self, geo: &Geometry, src: u32, d: usize, hops: u32) -> bool {
        let mut n = src;
        for _ in 0..hops {
            if !geo.has_link(n, d) || self.link_dead(n, d) {
                return false;
            }
            n = geo.neighbor(n, d);
            if self.dead_node[n as usize] {
                return false;
            }
        }
        true
    }
}

/// The node where line `k` through `c` has coordinate 0 in dimension k.
fn line_of(geo: &Geometry, c: [u32; 3], k: usize) -> usize {
    let mut s = c;
    s[k] = 0;
    geo.index(s) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::torus::geometry::NDIR;
    use crate::machine::Shape;
    use proptest::prelude::*;

    fn faults(nodes: &[[u32; 3]], links: &[([u32; 3], usize)]) -> Faults {
        Faults { nodes: nodes.to_vec(), links: links.to_vec() }
    }

    /// Follows hint bits in dimension order from `src`; the nodes and links
    /// (node, direction) it crosses.
    fn walk(geo: &Geometry, src: u32, dst: u32, hint: u8) -> (Vec<u32>, Vec<(u32, usize)>) {
        let b = geo.coords32(dst);
        let mut n = src;
        let (mut nodes, mut links) = (vec![], vec![]);
        for d in 0..NDIR {
            if hint & (1 << d) == 0 {
                continue;
            }
            while geo.coords32(n)[dim_of(d)] != b[dim_of(d)] {
                links.push((n, d));
                n = geo.neighbor(n, d);
                nodes.push(n);
                assert!(links.len() < 1000, "walk does not arrive");
            }
        }
        assert_eq!(n, dst);
        (nodes, links)
    }

    #[test]
    fn a_dead_link_on_the_minimal_way_sends_the_packet_round_the_other_way() {
        let geo = Geometry::new(&Shape::torus(8, 1, 1));
        let m = FaultMap::new(&geo, &faults(&[], &[([1, 0, 0], 0)])).unwrap();
        // 0 -> 3 minimally goes x+ through the dead link 1 -> 2.
        let (h, adaptive) = m.route(&geo, 0, 3, geo.hint_bits(0, 3)).unwrap();
        assert_eq!((h, adaptive), (0b10, false));
        // 4 -> 6 does not go near it.
        assert_eq!(m.route(&geo, 4, 6, geo.hint_bits(4, 6)), Some((0b01, true)));
        // The dead link named from the other end is the same link.
        assert!(m.link_dead(2, 1) && m.link_dead(1, 0) && !m.link_dead(1, 1));
    }

    #[test]
    fn a_dead_turn_node_is_passed_through_an_intermediate_node() {
        // (1,0,0) dead: from (0,0,0) to (1,1,0) every dimension-ordered
        // route turns there; the other corner (0,1,0) joins the two.
        let geo = Geometry::new(&Shape::torus(4, 4, 1));
        let m = FaultMap::new(&geo, &faults(&[[1, 0, 0]], &[])).unwrap();
        let dst = geo.index([1, 1, 0]);
        assert_eq!(m.route(&geo, 0, dst, geo.hint_bits(0, dst)), None);
        let via = m.via(&geo, 0, dst).expect("an intermediate node");
        assert_eq!(geo.coords32(via), [0, 1, 0]);
        for (a, b) in [(0, via), (via, dst)] {
            let (nodes, _) = walk(&geo, a, b, m.leg(&geo, a, b).unwrap());
            assert!(nodes.iter().all(|&v| !m.node_dead(v)));
        }
        let mut used = vec![true; 16];
        used[1] = false;
        assert_eq!(m.unreachable(&geo, &used), None, "every live pair is joined, directly or through a node");
    }

    #[test]
    fn a_cut_line_with_no_other_way_is_found() {
        // Two dead links cut a ring of a 1-D torus, one cuts a mesh line:
        // no other line to go round by.
        for (shape, links) in [(Shape::torus(6, 1, 1), vec![([0, 0, 0], 0), ([3, 0, 0], 0)]), (Shape::mesh(4, 1, 1), vec![([1, 0, 0], 0)])] {
            let geo = Geometry::new(&shape);
            let m = FaultMap::new(&geo, &faults(&[], &links)).unwrap();
            let bad = m.unreachable(&geo, &vec![true; geo.nodes() as usize]).expect("an unreachable pair");
            let (s, t) = (geo.index(bad.src), geo.index(bad.dst));
            assert_eq!((m.route(&geo, s, t, geo.hint_bits(s, t)), m.via(&geo, s, t)), (None, None));
            assert!(bad.to_string().contains("through one intermediate node"));
        }
        // On a 6x2 torus the same cut ring is passed by the other ring.
        let geo = Geometry::new(&Shape::torus(6, 2, 1));
        let m = FaultMap::new(&geo, &faults(&[], &[([0, 0, 0], 0), ([3, 0, 0], 0)])).unwrap();
        assert_eq!(m.unreachable(&geo, &[true; 12]), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// With random faults, every route the choice gives arrives, crosses
        /// no dead link or node, is minimal when adaptive; a pair with no
        /// direct route goes through a live node by two such routes; and a
        /// pair with neither is exactly what `unreachable` finds among all
        /// nodes.
        #[test]
        fn routes_avoid_every_fault(x in 1u32..6, y in 1u32..5, z in 1u32..4, mesh in any::<bool>(),
                                     picks in proptest::collection::vec((0u32..1000, 0usize..7), 1..4)) {
            let shape = if mesh { Shape::mesh(x, y, z) } else { Shape::torus(x, y, z) };
            let geo = Geometry::new(&shape);
            let n = geo.nodes();
            let mut f = Faults::default();
            for (p, d) in picks {
                let node = p % n;
                if d == 6 {
                    f.nodes.push(geo.coords32(node));
                } else if geo.has_link(node, d) {
                    f.links.push((geo.coords32(node), d));
                }
            }
            prop_assume!(!f.is_empty() && (f.nodes.len() as u32) < n);
            let m = FaultMap::new(&geo, &f).unwrap();
            let used: Vec<bool> = (0..n).map(|i| !m.node_dead(i)).collect();
            let mut any_unreachable = false;
            for s in (0..n).filter(|&i| used[i as usize]) {
                for t in (0..n).filter(|&i| used[i as usize] && i != s) {
                    let minimal = geo.hint_bits(s, t);
                    match m.route(&geo, s, t, minimal) {
                        None => match m.via(&geo, s, t) {
                            None => any_unreachable = true,
                            Some(v) => {
                                prop_assert!(v != s && v != t && used[v as usize]);
                                for (a, b) in [(s, v), (v, t)] {
                                    let (nodes, links) = walk(&geo, a, b, m.leg(&geo, a, b).unwrap());
                                    prop_assert!(nodes.iter().all(|&v| !m.node_dead(v)), "{a}->{b} crosses a dead node");
                                    prop_assert!(links.iter().all(|&(v, d)| !m.link_dead(v, d)), "{a}->{b} crosses a dead link");
                                }
                            }
                        },
                        Some((h, adaptive)) => {
                            let (nodes, links) = walk(&geo, s, t, h);
                            prop_assert!(nodes.iter().all(|&v| !m.node_dead(v)), "{s}->{t} crosses a dead node");
                            prop_assert!(links.iter().all(|&(v, d)| !m.link_dead(v, d)), "{s}->{t} crosses a dead link");
                            if adaptive {
                                prop_assert_eq!(h, minimal);
                            }
                        }
                    }
                }
            }
            prop_assert_eq!(any_unreachable, m.unreachable(&geo, &used).is_some());
        }
    }
}
