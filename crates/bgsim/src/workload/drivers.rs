//! Built-in traffic drivers: software on the simulated cores that uses the
//! packet layer to produce each pattern.

use super::spec::{Pattern, TrafficSpec, WorkloadError};
use crate::engine::{EventQueue, Draws, Rng, Tick};
use crate::packet::{Net, Routing, Software};
use crate::torus::{dim_of, Geometry, Packet};

/// Where a run stands, as the drivers report it.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// Packets the pattern must read in total (finite patterns).
    pub expected_reads: u64,
    pub reads: u64,
    /// Time the last expected packet was read.
    pub finished_at: Option<Tick>,
    /// One-way latencies measured by ping-pong, ticks.
    pub oneway: Vec<Tick>,
    /// Packets sources did not create because their software backlog was full.
    pub throttled: u64,
    /// Packets created by sources.
    pub created: u64,
}

const RNG_STREAM_BASE: u64 = 1 << 40;

/// The driver for every built-in pattern.
pub struct Driver {
    pub spec: TrafficSpec,
    pub geo: Geometry,
    pub progress: Progress,
    rngs: Vec<Rng>,
    /// Per node: next item index of a finite source.
    next: Vec<u32>,
    /// Per node: where its walk over the destinations starts (all-to-all).
    start: Vec<u32>,
    /// Mean interarrival, ticks (timed patterns).
    interarrival: f64,
    /// Stop generating at this time (timed patterns).
    pub gen_until: Tick,
    /// Region membership (hot patterns).
    hot: Vec<u32>,
    in_hot: Vec<bool>,
    /// Ping-pong state.
    pp: PingPong,
    /// Line / plane fill: root and per-colour directions.
    root: u32,
    per_node_expected: u32,
    items_per_node: u32,
    /// Line / plane fill: packet indices each root core injects, and progress.
    root_items: Vec<Vec<u32>>,
    root_pos: Vec<usize>,
}

#[derive(Clone, Debug, Default)]
struct PingPong {
    a: u32,
    b: u32,
    npk: u32,
    started: Tick,
    got: u32,
    legs: u32,
}

impl Driver {
    pub fn new(spec: &TrafficSpec, net: &Net) -> Result<Self, WorkloadError> {
        let geo = net.torus.geo.clone();
        let n = geo.nodes();
        let m = &net.machine;
        let mut d = Driver {
            spec: spec.clone(),
            progress: Progress::default(),
            rngs: (0..n).map(|i| Rng::new(spec.seed, RNG_STREAM_BASE + i as u64)).collect(),
            next: vec![0; n as usize],
            start: vec![],
            interarrival: f64::INFINITY,
            gen_until: Tick::MAX,
            hot: vec![],
            in_hot: vec![],
            pp: PingPong::default(),
            root: 0,
            per_node_expected: 0,
            items_per_node: 0,
            root_items: vec![],
            root_pos: vec![],
            geo: geo.clone(),
        };
        let max_payload = m.max_payload_bytes();
        let npk = spec.message_bytes.div_ceil(max_payload);
        let unfit = |reason: String| Err(WorkloadError::Unfit { pattern: spec.pattern.name(), reason });
        match spec.pattern {
            Pattern::Pingpong => {
                let b = node_at_hops(&geo, spec.hops).ok_or_else(|| WorkloadError::Invalid {
                    key: "hops",
                    value: spec.hops.to_string(),
                    allowed: format!("the partition {} has no node that far from node 0", net.machine.shape),
                })?;
                d.pp = PingPong { a: 0, b, npk, ..Default::default() };
                d.progress.expected_reads = npk as u64 * 2 * spec.iters as u64;
            }
            Pattern::Uniform | Pattern::HotRegion | Pattern::AlltoallStream => {
                if n < 2 {
                    return unfit("needs at least 2 nodes".into());
                }
                if spec.pattern == Pattern::HotRegion {
                    d.set_region(spec)?;
                }
                if spec.pattern == Pattern::AlltoallStream {
                    d.set_starts(spec.random_start);
                }
            }
            Pattern::HotSpot => {
                d.set_region(spec)?;
                let outside = n as u64 - d.hot.len() as u64;
                d.progress.expected_reads = outside * d.hot.len() as u64 * spec.packets as u64;
                if d.progress.expected_reads == 0 {
                    return unfit("the region covers the whole partition".into());
                }
            }
            Pattern::Alltoall => {
                if n < 2 {
                    return unfit("needs at least 2 nodes".into());
                }
                d.set_starts(spec.random_start);
                let per_pair = spec.message_bytes.div_ceil(max_payload);
                d.items_per_node = per_pair * (n - 1);
                d.progress.expected_reads = n as u64 * d.items_per_node as u64;
            }
            Pattern::LineFill => {
                if geo.dims[0] < 2 {
                    return unfit(format!("needs an X dimension of at least 2 (shape {})", net.machine.shape));
                }
                d.per_node_expected = npk;
                d.progress.expected_reads = npk as u64 * (geo.dims[0] as u64 - 1);
                // Colour + on core 0, colour - on core 1 (both on the one core in heater mode).
                let colours = if geo.torus[0] { 2 } else { 1 };
                d.split_root_items(npk, net.cores.comm, |i| (i % colours) as usize);
            }
            Pattern::PlaneFill => {
                if geo.dims[0] < 2 || geo.dims[1] < 2 || !geo.torus[0] || !geo.torus[1] {
                    return unfit(format!("needs X and Y torus dimensions of at least 2 (shape {})", net.machine.shape));
                }
                d.per_node_expected = npk;
                d.progress.expected_reads = npk as u64 * (geo.dims[0] as u64 * geo.dims[1] as u64 - 1);
                // Colours leaving in + directions on core 0, - directions on core 1.
                d.split_root_items(npk, net.cores.comm, |i| PLANE_COLOURS[(i % 4) as usize].0 % 2);
            }
            Pattern::NearestNeighbor => {
                let mut total = 0u64;
                for v in 0..n {
                    for dir in 0..6 {
                        if geo.has_link(v, dir) && geo.neighbor(v, dir) != v {
                            total += spec.packets as u64;
                        }
                    }
                }
                if total == 0 {
                    return unfit("the partition has no links".into());
                }
                d.progress.expected_reads = total;
            }
        }
        Ok(d)
    }

    fn set_starts(&mut self, random: bool) {
        let n = self.geo.nodes();
        self.start = (0..n)
            .map(|v| if random && n > 1 { self.rngs[v as usize].below(n - 1) } else { v % (n - 1).max(1) })
            .collect();
    }

    fn split_root_items(&mut self, npk: u32, cores: usize, core_of: impl Fn(u32) -> usize) {
        self.root_items = vec![vec![]; cores];
        self.root_pos = vec![0; cores];
        for i in 0..npk {
            self.root_items[core_of(i) % cores].push(i);
        }
    }

    /// The next packet index the root's `core` injects.
    fn next_root_item(&mut self, core: usize) -> Option<u32> {
        let pos = self.root_pos.get_mut(core)?;
        let item = *self.root_items[core].get(*pos)?;
        *pos += 1;
        Some(item)
    }

    fn set_region(&mut self, spec: &TrafficSpec) -> Result<(), WorkloadError> {
        let g = &self.geo;
        for k in 0..3 {
            if spec.region_size[k] == 0 || spec.region_size[k] > g.dims[k] || spec.region_lo[k] >= g.dims[k] {
                return Err(WorkloadError::Region { size: spec.region_size, lo: spec.region_lo, dims: g.dims });
            }
        }
        self.in_hot = vec![false; g.nodes() as usize];
        for z in 0..spec.region_size[2] {
            for y in 0..spec.region_size[1] {
                for x in 0..spec.region_size[0] {
                    let c = [
                        (spec.region_lo[0] + x) % g.dims[0],
                        (spec.region_lo[1] + y) % g.dims[1],
                        (spec.region_lo[2] + z) % g.dims[2],
                    ];
                    let n = g.index(c);
                    self.hot.push(n);
                    self.in_hot[n as usize] = true;
                }
            }
        }
        Ok(())
    }

    /// Sets the generation rate of timed patterns: `rate` packets per tick per node.
    pub fn set_rate(&mut self, rate: f64, until: Tick) {
        self.interarrival = if rate > 0.0 { 1.0 / rate } else { f64::INFINITY };
        self.gen_until = until;
    }

    pub fn hot_nodes(&self) -> &[u32] {
        &self.hot
    }

    fn routing(&self) -> Routing {
        self.spec.routing
    }

    fn payload(&mut self, node: u32, net: &Net) -> u32 {
        if self.spec.variable_size {
            let m = &net.machine;
            let chunks = 1 + self.rngs[node as usize].below(m.torus().max_packet_chunks);
            (chunks * m.torus().chunk_bytes).saturating_sub(m.torus().hw_header_bytes + m.torus().sw_header_bytes)
        } else {
            self.spec.packet_payload(&net.machine)
        }
    }

    fn random_dest(&mut self, node: u32) -> u32 {
        let n = self.geo.nodes();
        let rng = &mut self.rngs[node as usize];
        if self.spec.pattern == Pattern::HotRegion && rng.chance(self.spec.hot_fraction) {
            loop {
                let d = self.hot[rng.below(self.hot.len() as u32) as usize];
                if d != node {
                    return d;
                }
                if self.hot.len() == 1 {
                    // The region is this node alone: a uniform destination instead.
                    break;
                }
            }
        }
        let d = rng.below(n - 1);
        if d >= node {
            d + 1
        } else {
            d
        }
    }

    fn send_message(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, from: u32, to: u32) {
        let maxp = net.machine.max_payload_bytes();
        let mut left = self.spec.message_bytes;
        let routing = self.routing();
        for i in 0..self.pp.npk {
            let pl = left.min(maxp);
            left -= pl;
            let mut p = net.packet(from, to, pl, routing, now);
            p.tag = i as u64;
            net.send(q, now, from, p, None);
        }
    }

    /// Line-fill / plane-fill: the far end of the line from `n` along `d`.
    fn line_end(&self, n: u32, d: usize) -> (u32, u32) {
        let hops = self.geo.dims[dim_of(d)] - 1;
        let mut e = n;
        for _ in 0..hops {
            e = self.geo.neighbor(e, d);
        }
        (e, hops)
    }

    fn count_read(&mut self, now: Tick) {
        self.progress.reads += 1;
        if self.progress.expected_reads > 0 && self.progress.reads == self.progress.expected_reads {
            self.progress.finished_at = Some(now);
        }
    }
}

/// The node `hops` hops from node 0, filling X, then Y, then Z.
pub fn node_at_hops(g: &Geometry, hops: u32) -> Option<u32> {
    let mut left = hops;
    let mut c = [0u32; 3];
    for k in 0..3 {
        let reach = if g.torus[k] { g.dims[k] / 2 } else { g.dims[k] - 1 };
        let t = left.min(reach);
        c[k] = t;
        left -= t;
    }
    (left == 0).then(|| g.index(c))
}

/// Plane-fill colours: first direction and corner-turn direction.
pub const PLANE_COLOURS: [(usize, usize); 4] = [(0, 2), (2, 1), (1, 3), (3, 0)];

impl Software for Driver {
    fn start(&mut self, net: &mut Net, q: &mut EventQueue) {
        let n = self.geo.nodes();
        match self.spec.pattern {
            Pattern::Pingpong => {
                let (a, b) = (self.pp.a, self.pp.b);
                self.pp.started = 0;
                self.send_message(net, q, 0, a, b);
            }
            Pattern::Uniform | Pattern::HotRegion => {
                for v in 0..n {
                    let t = self.rngs[v as usize].exp(self.interarrival);
                    if t.is_finite() && (t as Tick) < self.gen_until {
                        net.timer(q, t as Tick, v, 0, 0);
                    }
                }
            }
            _ => {
                // Sources that inject as fast as they can: wake every
                // communication core once; they pull work in `refill`.
                for v in 0..n {
                    for c in 0..net.cores.comm {
                        net.compute(q, 0, v, c, 0);
                    }
                }
            }
        }
    }

    fn on_timer(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, _core: usize, _tag: u32) {
        // Timed random sources: create one packet, schedule the next.
        let pending: u32 = (0..net.cores.comm).map(|c| net.pending(node, c)).sum();
        if pending < self.spec.backlog_packets {
            let dest = self.random_dest(node);
            let pl = self.payload(node, net);
            let p = net.packet(node, dest, pl, self.routing(), now);
            net.send(q, now, node, p, None);
            self.progress.created += 1;
        } else {
            self.progress.throttled += 1;
        }
        let dt = self.rngs[node as usize].exp(self.interarrival).max(1.0);
        let t = now + dt as Tick;
        if t < self.gen_until {
            net.timer(q, t, node, 0, 0);
        }
    }

    fn refill(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize) {
        let n = self.geo.nodes();
        match self.spec.pattern {
            Pattern::HotSpot => {
                if self.in_hot[node as usize] {
                    return;
                }
                let total = self.hot.len() as u32 * self.spec.packets;
                let i = self.next[node as usize];
                if i >= total {
                    return;
                }
                self.next[node as usize] += 1;
                let dest = self.hot[(i as usize + node as usize) % self.hot.len()];
                let pl = self.payload(node, net);
                let p = net.packet(node, dest, pl, self.routing(), now);
                net.send(q, now, node, p, None);
            }
            Pattern::Alltoall | Pattern::AlltoallStream => {
                let i = self.next[node as usize];
                let finite = self.spec.pattern == Pattern::Alltoall;
                if finite && i >= self.items_per_node {
                    return;
                }
                if !finite && now >= self.gen_until {
                    return;
                }
                self.next[node as usize] += 1;
                // Walk the other nodes in index order from an offset: this
                // node's own index (the next node first), or a random one
                // with `random_start`.
                let j = i % (n - 1);
                let k = (self.start[node as usize] + j) % (n - 1);
                let dest = if k < node { k } else { k + 1 };
                let pl = if finite {
                    // Packet r of the pair's message.
                    let r = i / (n - 1);
                    let maxp = net.machine.max_payload_bytes();
                    (self.spec.message_bytes - r * maxp).min(maxp)
                } else {
                    self.payload(node, net)
                };
                let p = net.packet(node, dest, pl, self.routing(), now);
                net.send(q, now, node, p, None);
                self.progress.created += 1;
            }
            Pattern::NearestNeighbor => {
                // Item i: direction i % 6, round i / 6; skip missing links.
                loop {
                    let i = self.next[node as usize];
                    if i >= 6 * self.spec.packets {
                        return;
                    }
                    self.next[node as usize] += 1;
                    let dir = (i % 6) as usize;
                    if !self.geo.has_link(node, dir) || self.geo.neighbor(node, dir) == node {
                        continue;
                    }
                    let dest = self.geo.neighbor(node, dir);
                    let pl = self.payload(node, net);
                    let mut p = net.packet(node, dest, pl, self.routing(), now);
                    if dest != node {
                        net.torus.set_line_route(&mut p, dir);
                    }
                    net.send(q, now, node, p, None);
                    return;
                }
            }
            Pattern::LineFill => {
                // The root's core 0 injects colour + and core 1 colour -.
                if node != self.root {
                    return;
                }
                let Some(i) = self.next_root_item(core) else { return };
                let colours = if self.geo.torus[0] { 2 } else { 1 };
                let d = if i % colours == 0 { 0 } else { 1 };
                let (end, _) = self.line_end(node, d);
                let maxp = net.machine.max_payload_bytes();
                let mut p = net.line_packet(node, end, d, maxp, now);
                p.tag = i as u64;
                net.send(q, now, node, p, None);
            }
            Pattern::PlaneFill => {
                if node != self.root {
                    return;
                }
                let Some(i) = self.next_root_item(core) else { return };
                let colour = (i % 4) as usize;
                let (d1, _) = PLANE_COLOURS[colour];
                let (end, _) = self.line_end(node, d1);
                let maxp = net.machine.max_payload_bytes();
                let mut p = net.line_packet(node, end, d1, maxp, now);
                p.tag = (colour as u64) << 32 | i as u64;
                net.send(q, now, node, p, None);
            }
            _ => {}
        }
    }

    fn on_packet(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, _core: usize, pkt: &Packet) {
        match self.spec.pattern {
            Pattern::Pingpong => {
                self.pp.got += 1;
                self.count_read(now);
                if self.pp.got == self.pp.npk {
                    self.progress.oneway.push(now - self.pp.started);
                    self.pp.got = 0;
                    self.pp.legs += 1;
                    if self.pp.legs < 2 * self.spec.iters {
                        let other = if node == self.pp.a { self.pp.b } else { self.pp.a };
                        self.pp.started = now;
                        self.send_message(net, q, now, node, other);
                    }
                }
            }
            Pattern::PlaneFill => {
                self.count_read(now);
                let colour = (pkt.tag >> 32) as usize & 3;
                let stage = (pkt.tag >> 40) & 3;
                let (d1, d2) = PLANE_COLOURS[colour];
                let maxp = net.machine.max_payload_bytes();
                let root_c = self.geo.coords32(self.root);
                let c = self.geo.coords32(node);
                match stage {
                    0 => {
                        // Corner turn: every node of the root's d1 line sends along d2.
                        let (end, _) = self.line_end(node, d2);
                        let mut p = net.line_packet(node, end, d2, maxp, now);
                        p.tag = (pkt.tag & !(3 << 40)) | (1 << 40);
                        // One core serves the + directions, the other the -
                        // directions, so each injection FIFO carries one direction.
                        net.send(q, now, node, p, None);
                    }
                    1 => {
                        // Nodes at the far end of the d1 line close the root's own
                        // d2 line with one hop along d1 (over the wrap link).
                        let k1 = dim_of(d1);
                        let (root_end, _) = self.line_end(self.root, d1);
                        if c[k1] == self.geo.coords32(root_end)[k1] && c[dim_of(d2)] != root_c[dim_of(d2)] {
                            let dest = self.geo.neighbor(node, d1);
                            let mut p = net.packet(node, dest, maxp, Routing::Deterministic, now);
                            net.torus.set_line_route(&mut p, d1);
                            p.tag = (pkt.tag & !(3 << 40)) | (2 << 40);
                            net.send(q, now, node, p, None);
                        }
                    }
                    _ => {}
                }
            }
            _ => self.count_read(now),
        }
    }
}
