//! Layer 9: counters and results as data. Every run's result is one typed
//! report assembled from the components' counters - [`TrafficResult`] for a
//! traffic pattern, [`MpiReport`] for an MPI program - serialized to JSON
//! once; the Python package reads it and turns it into CSV, plots and
//! reports.

mod mpi;

pub use mpi::{mpi_report, ranks_report, MpiCounters, MpiReport, RankReport, TreeLinkReport};

use crate::engine::{EngineStats, Tick};
use crate::node::CoreCounters;
use crate::packet::Net;
use crate::torus::NDIR;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct VcSummary {
    /// VC name: dyn0.., escape, escape1, high_priority.
    pub name: String,
    /// Time-averaged occupancy per receiver, bytes.
    pub mean_occupancy_bytes: f64,
    /// Share of all packet hops that used this VC, %.
    pub share_pct: f64,
    pub packets: u64,
    /// No-token stall events of packets that found this VC without tokens.
    pub stalls: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct LinkSummary {
    /// Mean over links of busy time (packets, trailers, gaps, acks) / span, %.
    pub mean_util_pct: f64,
    pub max_util_pct: f64,
    /// Mean over links of payload byte-times / span, %.
    pub mean_payload_util_pct: f64,
    /// No-token stall events summed over all link directions.
    pub stalls: u64,
    /// Transfers resent after a CRC error, summed over all link directions.
    pub retransmits: u64,
    pub links: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PacketCounts {
    pub created: u64,
    pub throttled: u64,
    pub injected: u64,
    pub delivered: u64,
    pub deposit_copies: u64,
    pub hops: u64,
    pub escape_hops: u64,
    pub dynamic_hops: u64,
    /// Packets in the network (injection FIFOs, VCs, links) when the
    /// counters started and at the end: injected + in_flight_at_start =
    /// delivered - deposit_copies + in_flight_at_end.
    pub in_flight_at_start: u64,
    pub in_flight_at_end: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct EngineSummary {
    pub events: u64,
    pub wall_s: f64,
    pub events_per_s: f64,
    pub hops_per_s: f64,
    pub sim_us_per_wall_s: f64,
    pub arbitrations: u64,
    pub head_evaluations: u64,
    /// Partitions the machine was cut into, and threads that ran them
    /// (the result is the same for every choice).
    pub partitions: usize,
    pub threads: usize,
    /// Packet slots the engine allocated, over its partitions: the most
    /// packets one partition held at once, summed (a memory figure).
    pub packet_slots: u64,
}

/// The result of a traffic run.
#[allow(non_snake_case)]
#[derive(Clone, Debug, Serialize)]
pub struct TrafficResult {
    pub machine: String,
    pub shape: String,
    pub mode: String,
    pub pattern: String,
    pub spec: serde_json::Map<String, serde_json::Value>,
    pub nodes: u32,
    /// Dead links of the partition (`torus.dead_links`; absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_links: Option<usize>,
    /// Packets routed in dimension order round a dead link or node (absent
    /// on a healthy partition; counted from the start of the run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault_routed_packets: Option<u64>,
    /// Of those, packets forwarded through an intermediate node (no clean
    /// dimension-ordered route joined their ends).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault_forwarded_packets: Option<u64>,
    /// Finite patterns: every expected packet was read.
    pub completed: bool,
    pub deadlock: bool,
    /// The run reached `max_ncycles` before the pattern was done.
    pub stopped_at_max_ncycles: bool,
    /// Time of the last movement before a deadlock, network cycles.
    pub ncycles_to_deadlock: Option<f64>,
    /// Measured span (timed: after warm-up; finite: to completion).
    pub span_ncycles: f64,
    pub span_cycles: f64,
    pub span_us: f64,
    /// Lower bound on the completion time (finite patterns), network cycles.
    pub bound_ncycles: f64,
    /// bound / span x 100 (finite patterns).
    pub pct_peak: f64,
    /// Delivered packets per node per network cycle over the span.
    pub throughput_packets_per_node_ncycle: f64,
    /// The pattern's peak injection rate (busiest link or region cut full),
    /// packets per node per network cycle; the offered load is a fraction of it.
    pub peak_packets_per_node_ncycle: f64,
    /// Delivered payload, 10^6 bytes/s over the span.
    #[allow(non_snake_case)]
    pub payload_MBps: f64,
    pub packets: PacketCounts,
    /// Latency from packet creation to arrival in the reception FIFO, network cycles.
    pub latency_ncycles: LatencySummary,
    /// Latency from leaving the injection FIFO to arrival, network cycles.
    pub network_latency_ncycles: LatencySummary,
    /// (lower edge in network cycles, count) per histogram bucket.
    pub latency_histogram: Vec<(f64, u64)>,
    pub window_ncycles: u64,
    pub window_packets: Vec<u64>,
    pub window_payload_bytes: Vec<u64>,
    pub links: LinkSummary,
    /// Per link direction utilization, % (node-major, directions x+ x- y+ y- z+ z-), when asked.
    pub link_util_pct: Vec<f64>,
    /// Per link direction no-token stall events, when asked.
    pub link_stalls: Vec<u64>,
    /// Per node injection / reception FIFO full time (summed over the node's
    /// FIFOs), network cycles, when asked.
    pub node_inj_full_ncycles: Vec<f64>,
    pub node_rx_full_ncycles: Vec<f64>,
    pub vcs: Vec<VcSummary>,
    /// Share of hops on the escape VC(s), %.
    pub escape_pct: f64,
    pub token_returns: u64,
    pub unblocking_returns: u64,
    /// Share of token returns that let a stalled packet move at once.
    pub unblock_prob: f64,
    /// Injection FIFO full time summed over FIFOs and nodes, network cycles.
    pub inj_fifo_full_ncycles: f64,
    pub rx_fifo_full_ncycles: f64,
    /// Per-core time by category summed over cores, processor cycles.
    pub cores: CoreCounters,
    /// Ping-pong one-way latencies, processor cycles.
    pub oneway_cycles: Vec<f64>,
    pub engine: EngineSummary,
}

fn lat(h: &crate::torus::Histogram, tb: f64) -> LatencySummary {
    LatencySummary {
        count: h.count,
        mean: h.mean() / tb,
        min: if h.count == 0 { 0.0 } else { h.min as f64 / tb },
        p50: h.quantile(0.5) as f64 / tb,
        p90: h.quantile(0.9) as f64 / tb,
        p99: h.quantile(0.99) as f64 / tb,
        max: h.max as f64 / tb,
    }
}

/// What a traffic run's driver knows at its end, beside the machine's counters.
pub struct TrafficRun {
    pub pattern: &'static str,
    /// The spec as run (its JSON fields).
    pub spec: serde_json::Map<String, serde_json::Value>,
    pub timed: bool,
    pub per_link: bool,
    pub window_ncycles: u64,
    /// The measured span [from, end), the time the run stopped, its bound
    /// (finite patterns) and peak rate (timed ones).
    pub from: Tick,
    pub end: Tick,
    pub now: Tick,
    pub bound: f64,
    pub peak_rate: f64,
    pub deadlock_at: Option<Tick>,
    /// The run reached `max_ncycles` before it was done.
    pub stopped_at_max: bool,
    pub finished: bool,
    pub created: u64,
    pub throttled: u64,
    pub oneway: Vec<Tick>,
}

/// Builds the result of a finished run from the machine's counters and what
/// the driver knows.
pub fn summarize(net: &Net, run: TrafficRun, stats: &EngineStats, wall_s: f64) -> TrafficResult {
    let TrafficRun { from, end, now, bound, peak_rate, deadlock_at, .. } = run;
    let m = &net.machine();
    let t = &net.torus();
    let tb = m.tick_byte as f64;
    let span = end.saturating_sub(from).max(1) as f64;
    let counters_span = now.saturating_sub(t.counters_since).max(1) as f64;
    let geo = &t.geo;
    let mut util_sum = 0.0;
    let mut util_max = 0.0f64;
    let mut pay_sum = 0.0;
    let mut nlinks = 0u64;
    let mut stalls = 0u64;
    let mut retransmits = 0u64;
    let mut per_link = vec![];
    let mut per_stall = vec![];
    for n in 0..geo.nodes() {
        for d in 0..NDIR {
            let l = t.link(n, d);
            stalls += l.stalls;
            retransmits += l.retransmits;
            let u = (l.bytes + l.ack_bytes) as f64 * tb / counters_span * 100.0;
            if run.per_link {
                per_link.push(u);
                per_stall.push(l.stalls);
            }
            if geo.has_link(n, d) {
                nlinks += 1;
                util_sum += u;
                util_max = util_max.max(u);
                pay_sum += l.payload as f64 * tb / counters_span * 100.0;
            }
        }
    }
    let p = &t.p;
    let g = &t.global;
    let receivers = (geo.nodes() as usize * NDIR) as f64;
    let mut vc_packets = vec![0u64; p.nvc];
    let mut vc_occ = vec![0f64; p.nvc];
    for (v, c) in g.vcs[..p.nvc].iter().enumerate() {
        vc_packets[v] += c.packets;
        vc_occ[v] += c.occ_integral as f64;
    }
    let total_vc: u64 = vc_packets.iter().sum();
    let vcs = (0..p.nvc)
        .map(|v| VcSummary {
            name: if v < p.ndyn {
                format!("dyn{v}")
            } else if v == p.hp {
                "high_priority".into()
            } else if v == p.esc {
                "escape".into()
            } else {
                "escape1".into()
            },
            mean_occupancy_bytes: vc_occ[v] / counters_span / receivers,
            share_pct: if total_vc == 0 { 0.0 } else { vc_packets[v] as f64 * 100.0 / total_vc as f64 },
            packets: vc_packets[v],
            stalls: g.stalls_by_vc[v],
        })
        .collect();
    let cores = net.core_totals();
    let cyc = m.tick_cycle as f64;
    let cores = CoreCounters {
        inject_ticks: (cores.inject_ticks as f64 / cyc) as u64,
        read_ticks: (cores.read_ticks as f64 / cyc) as u64,
        poll_ticks: (cores.poll_ticks as f64 / cyc) as u64,
        compute_ticks: (cores.compute_ticks as f64 / cyc) as u64,
        ..cores
    };
    let sim_us = m.micros(now);
    let completed = !run.stopped_at_max && if run.timed { deadlock_at.is_none() } else { run.finished };
    let inj_full: u64 = t.nodes.iter().map(|c| c.inj_full_ticks).sum();
    let rx_full: u64 = t.nodes.iter().map(|c| c.rx_full_ticks).sum();
    TrafficResult {
        machine: m.name().to_string(),
        shape: format!("{}", m.shape),
        mode: m.mode.name().to_string(),
        pattern: run.pattern.to_string(),
        spec: run.spec,
        nodes: geo.nodes(),
        dead_links: net.faults().map(|f| f.dead_links()),
        fault_routed_packets: net.faults().map(|f| f.rerouted()),
        fault_forwarded_packets: net.faults().map(|f| f.forwarded()),
        completed,
        deadlock: deadlock_at.is_some(),
        stopped_at_max_ncycles: run.stopped_at_max,
        ncycles_to_deadlock: deadlock_at.map(|x| x as f64 / tb),
        span_ncycles: span / tb,
        span_cycles: span / cyc,
        span_us: m.micros(span as Tick),
        bound_ncycles: bound / tb,
        pct_peak: if bound > 0.0 && completed { bound / span * 100.0 } else { 0.0 },
        throughput_packets_per_node_ncycle: g.delivered_packets as f64 / (counters_span / tb) / geo.nodes() as f64,
        peak_packets_per_node_ncycle: peak_rate * tb,
        payload_MBps: g.delivered_payload as f64 / (m.micros(counters_span as Tick).max(1e-12)),
        packets: PacketCounts {
            created: run.created,
            throttled: run.throttled,
            injected: g.injected_packets,
            delivered: g.delivered_packets,
            deposit_copies: g.deposit_copies,
            hops: g.hops,
            escape_hops: g.escape_hops,
            dynamic_hops: g.dynamic_hops,
            in_flight_at_start: t.global.in_network_at_start,
            in_flight_at_end: t.global.in_network,
        },
        latency_ncycles: lat(&g.latency, tb),
        network_latency_ncycles: lat(&g.network_latency, tb),
        latency_histogram: g.latency.buckets().into_iter().map(|(b, c)| (b as f64 / tb, c)).collect(),
        window_ncycles: run.window_ncycles,
        window_packets: g.window_packets.clone(),
        window_payload_bytes: g.window_payload.clone(),
        links: LinkSummary {
            mean_util_pct: util_sum / nlinks.max(1) as f64,
            max_util_pct: util_max,
            mean_payload_util_pct: pay_sum / nlinks.max(1) as f64,
            stalls,
            retransmits,
            links: nlinks,
        },
        link_util_pct: per_link,
        link_stalls: per_stall,
        node_inj_full_ncycles: if run.per_link { t.nodes.iter().map(|c| c.inj_full_ticks as f64 / tb).collect() } else { vec![] },
        node_rx_full_ncycles: if run.per_link { t.nodes.iter().map(|c| c.rx_full_ticks as f64 / tb).collect() } else { vec![] },
        vcs,
        escape_pct: if g.hops == 0 { 0.0 } else { g.escape_hops as f64 * 100.0 / g.hops as f64 },
        token_returns: g.token_returns,
        unblocking_returns: g.unblocking_returns,
        unblock_prob: if g.token_returns == 0 { 0.0 } else { g.unblocking_returns as f64 / g.token_returns as f64 },
        inj_fifo_full_ncycles: inj_full as f64 / tb,
        rx_fifo_full_ncycles: rx_full as f64 / tb,
        cores,
        oneway_cycles: run.oneway.iter().map(|&x| x as f64 / cyc).collect(),
        engine: EngineSummary {
            events: stats.events,
            wall_s,
            events_per_s: stats.events as f64 / wall_s.max(1e-9),
            hops_per_s: g.hops as f64 / wall_s.max(1e-9),
            sim_us_per_wall_s: sim_us / wall_s.max(1e-9),
            arbitrations: g.arbitrations,
            head_evaluations: g.head_evaluations,
            partitions: 1,
            threads: 1,
            packet_slots: t.pool.capacity_used() as u64,
        },
    }
}
