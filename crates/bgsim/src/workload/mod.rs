//! Layer 8: what drives a run. Built-in traffic patterns on the packet layer
//! (`spec`, `drivers`), the bounds behind "% of peak" (`bounds`), and the run
//! loop that ties engine, machine and software together.

pub mod bounds;
pub mod drivers;
pub mod spec;

pub use drivers::{node_at_hops, Driver, PLANE_COLOURS};
pub use crate::torus::Routing;
pub use spec::{Pattern, TrafficSpec, WorkloadError};

use crate::engine::{run_until, EngineStats, Event, EventQueue, Model, Tick};
use crate::machine::Machine;
use crate::packet::{Net, Software};
use crate::report::TrafficResult;
use crate::torus::{dim_of, NDIR};
use bounds::PathLoad;
use std::time::Instant;

/// A run: the machine below, the driver above.
pub struct Sim {
    pub net: Net,
    pub driver: Driver,
}

impl Model for Sim {
    #[inline]
    fn handle(&mut self, now: Tick, ev: Event, q: &mut EventQueue) {
        self.net.handle(&mut self.driver, now, ev, q);
    }
    #[inline]
    fn touch(&self, ev: &Event, stage: usize) {
        self.net.touch(ev, stage);
    }
}

/// Builds the simulation of `spec` on `machine`.
pub fn build(machine: &Machine, spec: &TrafficSpec) -> Result<Sim, WorkloadError> {
    spec.validate()?;
    spec.validate_for(machine)?;
    let net = Net::new(machine, spec.seed);
    let driver = Driver::new(spec, &net)?;
    Ok(Sim { net, driver })
}

/// Peak packet rate per node of a timed pattern (packets per tick), and the
/// payload bytes per packet it assumes.
pub fn peak_rate(machine: &Machine, spec: &TrafficSpec, hot: &[u32]) -> f64 {
    let geo = crate::torus::Geometry::new(&machine.shape);
    let bytes = if spec.variable_size {
        // Mean of 1..=max chunks.
        (machine.torus().max_packet_chunks + 1) * machine.torus().chunk_bytes / 2
    } else {
        machine.packet_bytes_for_payload(spec.packet_payload(machine))
    };
    let uni = bounds::uniform_peak_rate(&geo, machine, bytes);
    match spec.pattern {
        spec::Pattern::HotRegion => {
            let n = geo.nodes() as f64;
            let h = hot.len() as f64;
            let links = bounds::links_into_region(&geo, spec.region_lo, spec.region_size) as f64;
            // Packets entering the region per packet injected per node (sources outside).
            let inflow = (n - h) * (spec.hot_fraction + (1.0 - spec.hot_fraction) * h / (n - 1.0));
            let cut = if inflow > 0.0 && links > 0.0 {
                links / (inflow * machine.wire_bytes(bytes) as f64 * machine.tick_byte as f64)
            } else {
                f64::INFINITY
            };
            uni.min(cut)
        }
        _ => uni,
    }
}

/// The lower bound on the completion time of a finite pattern, ticks.
pub fn bound_ticks(machine: &Machine, spec: &TrafficSpec, driver: &Driver) -> f64 {
    let geo = &driver.geo;
    let full = machine.max_packet_bytes();
    let maxp = machine.max_payload_bytes();
    let tb = machine.tick_byte as f64;
    match spec.pattern {
        Pattern::Pingpong => {
            let b = node_at_hops(geo, spec.hops).unwrap_or(0);
            let hops = geo.distance(0, b) as f64;
            let mut left = spec.message_bytes;
            let mut bytes = 0.0;
            let mut count = 0;
            while left > 0 {
                let pl = left.min(maxp);
                left -= pl;
                bytes += machine.packet_bytes_for_payload(pl) as f64;
                count += 1;
            }
            let gaps = (count - 1) as f64 * (machine.torus().trailer_bytes + machine.torus().gap_bytes) as f64;
            hops * machine.hop_latency as f64 + (bytes + gaps) * tb
        }
        Pattern::HotSpot => {
            let links = bounds::links_into_region(geo, spec.region_lo, spec.region_size) as f64;
            let bytes = machine.packet_bytes_for_payload(spec.packet_payload(machine));
            let n = driver.progress.expected_reads as f64;
            n * machine.wire_bytes(bytes) as f64 * tb / links.max(1.0)
        }
        Pattern::Alltoall => {
            // Uniform traffic: every node sends the same to every other node.
            let per_pair = spec.message_bytes.div_ceil(maxp);
            let mut t = 0.0;
            let mut left = spec.message_bytes;
            for _ in 0..per_pair {
                let pl = left.min(maxp);
                left -= pl;
                let bytes = machine.packet_bytes_for_payload(pl);
                let rate = bounds::uniform_peak_rate(geo, machine, bytes);
                t += (geo.nodes() - 1) as f64 / rate;
            }
            t
        }
        Pattern::LineFill | Pattern::PlaneFill => {
            let mut load = PathLoad::new(geo.nodes());
            let npk = spec.message_bytes.div_ceil(maxp);
            let count = |c: u32, colours: u32| (0..npk).filter(|i| i % colours == c).count() as f64;
            if spec.pattern == Pattern::LineFill {
                let colours = if geo.torus[0] { 2 } else { 1 };
                for c in 0..colours {
                    load.add_line(geo, machine, 0, c as usize, geo.dims[0] - 1, full, count(c, colours));
                }
            } else {
                for (c, &(d1, d2)) in PLANE_COLOURS.iter().enumerate() {
                    let k = count(c as u32, 4);
                    let l1 = geo.dims[dim_of(d1)] - 1;
                    let l2 = geo.dims[dim_of(d2)] - 1;
                    load.add_line(geo, machine, 0, d1, l1, full, k);
                    let mut v = 0;
                    for _ in 0..l1 {
                        v = geo.neighbor(v, d1);
                        load.add_line(geo, machine, v, d2, l2, full, k);
                    }
                    // The far end's d2 line closes the root's own d2 line.
                    let mut w = v;
                    for _ in 0..l2 {
                        w = geo.neighbor(w, d2);
                        load.add_line(geo, machine, w, d1, 1, full, k);
                    }
                }
            }
            load.max() * tb
        }
        Pattern::NearestNeighbor => {
            let bytes = machine.packet_bytes_for_payload(spec.packet_payload(machine));
            let mut load = PathLoad::new(geo.nodes());
            for v in 0..geo.nodes() {
                for d in 0..NDIR {
                    if geo.has_link(v, d) && geo.neighbor(v, d) != v {
                        load.add_line(geo, machine, v, d, 1, bytes, spec.packets as f64);
                    }
                }
            }
            load.max() * tb
        }
        _ => 0.0,
    }
}

/// Runs a traffic pattern. `progress` is called now and then with the
/// fraction of the run done (of simulated time for timed patterns, of packets
/// read for finite ones).
/// Returning false from `progress` stops the run with an error.
pub fn run(machine: &Machine, spec: &TrafficSpec, progress: &mut dyn FnMut(f64) -> bool) -> Result<TrafficResult, WorkloadError> {
    let wall = Instant::now();
    let mut sim = build(machine, spec)?;
    let tb = machine.tick_byte;
    let timed = spec.pattern.is_timed();
    let warm = spec.warmup_ncycles * tb;
    let end_gen = warm + spec.measure_ncycles * tb;
    sim.net.torus.p.window = spec.window_ncycles * tb;
    let peak = peak_rate(machine, spec, sim.driver.hot_nodes());
    if timed {
        let rate = if spec.pattern == Pattern::AlltoallStream { f64::INFINITY } else { peak * spec.load };
        sim.driver.set_rate(rate, end_gen);
    }
    let mut q = EventQueue::new();
    let mut stats = EngineStats::default();
    sim.driver.start(&mut sim.net, &mut q);
    let max_t = spec.max_ncycles * tb;
    let step = (2_000 * tb).max(1);
    let dl = spec.deadlock_ncycles * tb;
    let mut t: Tick = 0;
    let mut deadlock_at: Option<Tick> = None;
    let mut measured_from = 0;
    let mut last_report = Instant::now();
    let mut draining = false;
    loop {
        let target = if timed && t < warm { warm.min(t + step) } else { t + step };
        let target = if timed && !draining { target.min(end_gen) } else { target.min(max_t) };
        t = run_until(&mut sim, &mut q, target, &mut stats);
        if timed && t == warm && measured_from == 0 && warm > 0 {
            sim.net.torus.reset_counters(t);
            measured_from = t;
        }
        if timed && t >= end_gen && !draining {
            if !spec.drain {
                break;
            }
            draining = true;
        }
        if draining && sim.net.torus.live_packets() == 0 {
            break;
        }
        if !timed && (sim.driver.progress.finished_at.is_some() || q.is_empty()) {
            break;
        }
        if t >= max_t {
            break;
        }
        // Deadlock: packets are in the network and none has moved for `dl`.
        let last = sim.net.torus.global.last_progress;
        if t > last + dl && sim.net.torus.packets_in_vcs() > 0 {
            let t = &sim.net.torus;
            deadlock_at = Some(t.deadlock_cycle().map(|(formed, _)| formed).unwrap_or(last));
            break;
        }
        if last_report.elapsed().as_secs_f64() > 0.5 {
            last_report = Instant::now();
            let f = if timed {
                t as f64 / end_gen as f64
            } else {
                sim.driver.progress.reads as f64 / sim.driver.progress.expected_reads.max(1) as f64
            };
            if !progress(f.min(1.0)) {
                return Err(WorkloadError::Interrupted);
            }
        }
    }
    let end = if timed { t.min(end_gen) } else { sim.driver.progress.finished_at.unwrap_or(t) };
    sim.net.torus.close_counters(t);
    let bound = bound_ticks(machine, spec, &sim.driver);
    let result = crate::report::summarize(&sim, spec, measured_from, end, t, bound, peak, deadlock_at, &stats, wall.elapsed().as_secs_f64());
    progress(1.0);
    Ok(result)
}
