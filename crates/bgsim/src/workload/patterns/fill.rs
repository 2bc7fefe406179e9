//! Deposit-bit broadcasts from node 0: `line_fill` along the X line (the
//! plus colour on the root's core 0, the minus colour on core 1 where the
//! line wraps) and `plane_fill` over the XY plane (four colours: a deposit-bit line along
//! the first direction, corner turns in software along the second, and a
//! one-hop closing of the root's own line).

use super::{Source, TrafficPattern};
use crate::engine::{EventQueue, Tick};
use crate::machine::Machine;
use crate::packet::{Net, Routing};
use crate::torus::{dim_of, Packet};
use crate::workload::bounds::PathLoad;
use crate::workload::spec::{FillSpec, WorkloadError};

/// Plane-fill colours: first direction and corner-turn direction.
pub const PLANE_COLOURS: [(usize, usize); 4] = [(0, 2), (2, 1), (1, 3), (3, 0)];

const ROOT: u32 = 0;

pub struct Fill {
    spec: FillSpec,
    plane: bool,
    /// Per core of the root: the packet indices it injects, and how far it is.
    items: Vec<Vec<u32>>,
    pos: Vec<usize>,
}

impl Fill {
    pub fn line(spec: FillSpec) -> Self {
        Fill { spec, plane: false, items: vec![], pos: vec![] }
    }

    pub fn plane(spec: FillSpec) -> Self {
        Fill { spec, plane: true, items: vec![], pos: vec![] }
    }

    /// The next packet index the root's `core` injects.
    fn next_item(&mut self, core: usize) -> Option<u32> {
        let pos = self.pos.get_mut(core)?;
        let item = *self.items[core].get(*pos)?;
        *pos += 1;
        Some(item)
    }
}

/// The far end of the line from `n` along `d`, and its length in hops.
fn line_end(src: &Source, n: u32, d: usize) -> (u32, u32) {
    let hops = src.geo.dims[dim_of(d)] - 1;
    let mut e = n;
    for _ in 0..hops {
        e = src.geo.neighbor(e, d);
    }
    (e, hops)
}

impl TrafficPattern for Fill {
    fn setup(&mut self, src: &mut Source, net: &Net) -> Result<(), WorkloadError> {
        let geo = &src.geo;
        let shape = &net.machine().shape;
        if !self.plane && geo.dims[0] < 2 {
            return Err(WorkloadError::Unfit { pattern: "line_fill", reason: format!("needs an X dimension of at least 2 (shape {shape})") });
        }
        if self.plane && (geo.dims[0] < 2 || geo.dims[1] < 2 || !geo.torus[0] || !geo.torus[1]) {
            return Err(WorkloadError::Unfit { pattern: "plane_fill", reason: format!("needs X and Y torus dimensions of at least 2 (shape {shape})") });
        }
        let npk = self.spec.message_bytes.div_ceil(net.machine().max_payload_bytes());
        let receivers = if self.plane { geo.dims[0] as u64 * geo.dims[1] as u64 - 1 } else { geo.dims[0] as u64 - 1 };
        src.progress.expected_reads = npk as u64 * receivers;
        // Line: colour + on core 0, colour - on core 1 (both on the one core
        // in heater mode). Plane: colours leaving in + directions on core 0,
        // - directions on core 1.
        let cores = net.comm_cores();
        let colours = if geo.torus[0] { 2 } else { 1 };
        self.items = vec![vec![]; cores];
        self.pos = vec![0; cores];
        for i in 0..npk {
            let core = if self.plane { PLANE_COLOURS[(i % 4) as usize].0 % 2 } else { (i % colours) as usize };
            self.items[core % cores].push(i);
        }
        Ok(())
    }

    fn refill(&mut self, src: &mut Source, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, core: usize) {
        if node != ROOT {
            return;
        }
        let Some(i) = self.next_item(core) else { return };
        let maxp = net.machine().max_payload_bytes();
        if self.plane {
            let colour = (i % 4) as usize;
            let (d1, _) = PLANE_COLOURS[colour];
            let (end, _) = line_end(src, node, d1);
            let mut p = net.line_packet(node, end, d1, maxp, now);
            p.tag = (colour as u64) << 32 | i as u64;
            src.send(net, q, now, node, p);
        } else {
            let colours = if src.geo.torus[0] { 2 } else { 1 };
            let d = if i % colours == 0 { 0 } else { 1 };
            let (end, _) = line_end(src, node, d);
            let mut p = net.line_packet(node, end, d, maxp, now);
            p.tag = i as u64;
            src.send(net, q, now, node, p);
        }
    }

    fn on_packet(&mut self, src: &mut Source, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, _core: usize, pkt: &Packet) {
        src.count_read(now);
        if !self.plane {
            return;
        }
        let colour = (pkt.tag >> 32) as usize & 3;
        let stage = (pkt.tag >> 40) & 3;
        let (d1, d2) = PLANE_COLOURS[colour];
        let maxp = net.machine().max_payload_bytes();
        let root_c = src.geo.coords32(ROOT);
        let c = src.geo.coords32(node);
        match stage {
            0 => {
                // Corner turn: every node of the root's d1 line sends along d2.
                // One core serves the + directions, the other the -
                // directions, so each injection FIFO carries one direction.
                let (end, _) = line_end(src, node, d2);
                let mut p = net.line_packet(node, end, d2, maxp, now);
                p.tag = (pkt.tag & !(3 << 40)) | (1 << 40);
                src.send(net, q, now, node, p);
            }
            1 => {
                // Nodes at the far end of the d1 line close the root's own
                // d2 line with one hop along d1 (over the wrap link).
                let k1 = dim_of(d1);
                let (root_end, _) = line_end(src, ROOT, d1);
                if c[k1] == src.geo.coords32(root_end)[k1] && c[dim_of(d2)] != root_c[dim_of(d2)] {
                    let dest = src.geo.neighbor(node, d1);
                    let mut p = net.packet(node, dest, maxp, Routing::Deterministic, now);
                    net.set_line_route(&mut p, d1);
                    p.tag = (pkt.tag & !(3 << 40)) | (2 << 40);
                    src.send(net, q, now, node, p);
                }
            }
            _ => {}
        }
    }

    /// The busiest link of the broadcast's fixed routes.
    fn bound_ticks(&self, src: &Source, m: &Machine) -> f64 {
        let geo = &src.geo;
        let full = m.max_packet_bytes();
        let mut load = PathLoad::new(geo.nodes());
        let npk = self.spec.message_bytes.div_ceil(m.max_payload_bytes());
        let count = |c: u32, colours: u32| (0..npk).filter(|i| i % colours == c).count() as f64;
        if !self.plane {
            let colours = if geo.torus[0] { 2 } else { 1 };
            for c in 0..colours {
                load.add_line(geo, m, ROOT, c as usize, geo.dims[0] - 1, full, count(c, colours));
            }
        } else {
            for (c, &(d1, d2)) in PLANE_COLOURS.iter().enumerate() {
                let k = count(c as u32, 4);
                let l1 = geo.dims[dim_of(d1)] - 1;
                let l2 = geo.dims[dim_of(d2)] - 1;
                load.add_line(geo, m, ROOT, d1, l1, full, k);
                let mut v = ROOT;
                for _ in 0..l1 {
                    v = geo.neighbor(v, d1);
                    load.add_line(geo, m, v, d2, l2, full, k);
                }
                // The far end's d2 line closes the root's own d2 line.
                let mut w = v;
                for _ in 0..l2 {
                    w = geo.neighbor(w, d2);
                    load.add_line(geo, m, w, d1, 1, full, k);
                }
            }
        }
        load.max() * m.tick_byte as f64
    }
}
