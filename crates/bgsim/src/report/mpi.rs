//! The result of an MPI program's run, assembled from the components'
//! counters (torus, cores, collective network) and the message layer's per
//! rank statistics; the Python side adds what only it knows (each rank's
//! return value, the collective choices, host wall time).

use crate::engine::{Partitioning, Tick};
use crate::mpi::driven::Ranks;
use crate::mpi::World;
use serde::{Deserialize, Serialize};

/// One rank: where it ran, when it ended, what it sent, where its core's
/// time went (processor cycles).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RankReport {
    pub rank: u32,
    pub x: u32,
    pub y: u32,
    pub z: u32,
    pub t: u32,
    pub end_s: f64,
    pub sends: u64,
    pub recvs: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub unexpected: u64,
    pub msgs_one_packet: u64,
    pub msgs_eager: u64,
    pub msgs_adaptive_eager: u64,
    pub msgs_rendezvous: u64,
    pub msgs_intranode: u64,
    pub core_inject_cycles: f64,
    pub core_read_cycles: f64,
    pub core_poll_cycles: f64,
    pub core_protocol_cycles: f64,
    pub core_copy_cycles: f64,
    pub core_compute_cycles: f64,
    pub core_interrupt_cycles: f64,
    pub packets_written: u64,
    pub packets_read: u64,
}

/// Network-wide counters.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MpiCounters {
    pub events: u64,
    pub packets_sent: u64,
    pub packets_delivered: u64,
    pub payload_bytes_delivered: u64,
    pub wire_bytes_delivered: u64,
    pub packet_hops: u64,
    pub messages_completed: u64,
    pub out_of_order_packets: u64,
    pub packets_in_network: u32,
    pub tree_operations: u64,
    pub tree_link_packets: u64,
    /// Torus link transfers resent after a CRC error.
    pub link_retransmissions: u64,
    /// No-token events summed over nodes and directions: a packet ready to
    /// go with no downstream tokens (BG/P's hardware counters; see
    /// `MpiReport::link_stalls`).
    pub no_token_stalls: u64,
    /// On a machine with a DMA engine (`crate::dma`): descriptors posted
    /// to work FIFOs, and times a process found its work FIFO full (0
    /// without an engine).
    pub dma_descriptors: u64,
    pub dma_work_fifo_full: u64,
    /// On a partition with dead nodes or links: packets routed in
    /// dimension order round them, and packets of those forwarded through
    /// an intermediate node (`torus::faults`); 0 on a healthy one.
    pub fault_routed_packets: u64,
    pub fault_forwarded_packets: u64,
}

impl MpiCounters {
    /// Adds another partition's counters (`no_token_stalls` is summed from
    /// the merged links instead; the collective network's are every
    /// partition's alike, and kept).
    pub fn absorb(&mut self, o: &MpiCounters) {
        self.events += o.events;
        self.packets_sent += o.packets_sent;
        self.packets_delivered += o.packets_delivered;
        self.payload_bytes_delivered += o.payload_bytes_delivered;
        self.wire_bytes_delivered += o.wire_bytes_delivered;
        self.packet_hops += o.packet_hops;
        self.messages_completed += o.messages_completed;
        self.out_of_order_packets += o.out_of_order_packets;
        self.packets_in_network += o.packets_in_network;
        self.link_retransmissions += o.link_retransmissions;
        self.dma_descriptors += o.dma_descriptors;
        self.dma_work_fifo_full += o.dma_work_fifo_full;
        self.fault_routed_packets += o.fault_routed_packets;
        self.fault_forwarded_packets += o.fault_forwarded_packets;
    }
}

/// A collective-network link that carried packets.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TreeLinkReport {
    pub node: u32,
    pub parent: u32,
    pub packets_up: u64,
    pub packets_down: u64,
    pub busy_up_s: f64,
    pub busy_down_s: f64,
    /// Busy share of the run, %.
    pub util_up_pct: f64,
    pub util_down_pct: f64,
}

/// An MPI run's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MpiReport {
    pub nranks: u32,
    pub shape: [u32; 3],
    pub mode: String,
    /// From the start to the last rank's end.
    pub time_s: f64,
    pub ranks: Vec<RankReport>,
    pub counters: MpiCounters,
    pub tree_links: Vec<TreeLinkReport>,
    /// Per torus link direction (node * 6 + direction, x+ x- y+ y- z+ z-):
    /// packets sent, utilization % of the run (bytes on the wire and
    /// acks), no-token events.
    pub link_packets: Vec<u64>,
    pub link_util_pct: Vec<f64>,
    pub link_stalls: Vec<u64>,
    pub machine_toml: String,
}

/// The report of `world` after its run; `finished[r]`: when rank r's
/// program ended (None: it did not).
pub fn mpi_report(world: &World, finished: &[Option<Tick>]) -> MpiReport {
    let m = world.machine();
    let tps = m.ticks_per_second();
    let secs = |t: Tick| t as f64 / tps;
    let cyc = m.tick_cycle as f64;
    let end = finished.iter().map(|f| f.unwrap_or(0)).max().unwrap_or(0);
    let ranks = (0..world.nranks())
        .map(|r| {
            let [x, y, z, t] = world.coords(r);
            let s = world.rank_stats(r);
            let c = world.core_counters(r);
            let p = s.by_protocol;
            RankReport {
                rank: r,
                x,
                y,
                z,
                t,
                end_s: secs(finished.get(r as usize).copied().flatten().unwrap_or(0)),
                sends: s.sends,
                recvs: s.recvs,
                bytes_sent: s.bytes_sent,
                bytes_received: s.bytes_received,
                unexpected: s.unexpected,
                msgs_one_packet: p[0],
                msgs_eager: p[1],
                msgs_adaptive_eager: p[2],
                msgs_rendezvous: p[3],
                msgs_intranode: p[4],
                core_inject_cycles: c.inject_ticks as f64 / cyc,
                core_read_cycles: c.read_ticks as f64 / cyc,
                core_poll_cycles: c.poll_ticks as f64 / cyc,
                core_protocol_cycles: c.protocol_ticks as f64 / cyc,
                core_copy_cycles: c.copy_ticks as f64 / cyc,
                core_compute_cycles: c.compute_ticks as f64 / cyc,
                core_interrupt_cycles: c.interrupt_ticks as f64 / cyc,
                packets_written: c.packets_written,
                packets_read: c.packets_read,
            }
        })
        .collect();
    let net = world.net();
    let g = &net.torus().global;
    let tree = world.tree_counters();
    let counters = MpiCounters {
        events: world.events(),
        packets_sent: world.packets_sent(),
        packets_delivered: g.delivered_packets,
        payload_bytes_delivered: g.delivered_payload,
        wire_bytes_delivered: g.delivered_wire_bytes,
        packet_hops: g.hops,
        messages_completed: world.messages_done(),
        out_of_order_packets: world.out_of_order_packets(),
        packets_in_network: net.torus().live_packets(),
        tree_operations: tree.operations,
        tree_link_packets: tree.link_packets,
        link_retransmissions: g.retransmissions,
        no_token_stalls: 0,
        dma_descriptors: net.dma().map_or(0, |d| d.counters().descriptors),
        dma_work_fifo_full: net.dma().map_or(0, |d| d.counters().work_fifo_full),
        fault_routed_packets: net.faults().map_or(0, |f| f.rerouted()),
        fault_forwarded_packets: net.faults().map_or(0, |f| f.forwarded()),
    };
    let byte_s = secs(m.tick_byte);
    let (mut link_packets, mut link_util_pct, mut link_stalls) = (vec![], vec![], vec![]);
    for l in net.torus().links() {
        link_packets.push(l.packets);
        link_util_pct.push(if end > 0 { 100.0 * (l.bytes + l.ack_bytes) as f64 * byte_s / secs(end) } else { 0.0 });
        link_stalls.push(l.stalls);
    }
    let counters = MpiCounters { no_token_stalls: link_stalls.iter().sum(), ..counters };
    let run_s = secs(end);
    let util = |busy: f64| if end > 0 { 100.0 * busy / run_s } else { 0.0 };
    let tree_links = match world.tree() {
        None => vec![],
        Some(t) => {
            let pkt = secs(t.packet_ticks());
            (0..m.shape.nodes())
                .filter(|&n| t.up_packets[n as usize] + t.down_packets[n as usize] > 0)
                .map(|n| {
                    let (u, d) = (t.up_packets[n as usize], t.down_packets[n as usize]);
                    let (bu, bd) = (u as f64 * pkt, d as f64 * pkt);
                    TreeLinkReport {
                        node: n,
                        parent: t.parent(n),
                        packets_up: u,
                        packets_down: d,
                        busy_up_s: bu,
                        busy_down_s: bd,
                        util_up_pct: util(bu),
                        util_down_pct: util(bd),
                    }
                })
                .collect()
        }
    };
    MpiReport {
        nranks: world.nranks(),
        shape: m.shape.dims,
        mode: m.mode.name().to_string(),
        time_s: run_s,
        ranks,
        counters,
        tree_links,
        link_packets,
        link_util_pct,
        link_stalls,
        machine_toml: m.to_toml(),
    }
}

/// The report of a run of `ranks` (see [`mpi_report`]): each rank's
/// figures from its partition, each link's from its node's, the network's
/// counters summed. On the processes of an MPI job every process calls it
/// with its own ranks' ends (the others' None) and gets the whole report.
pub fn ranks_report(ranks: &Ranks, finished: &[Option<Tick>]) -> MpiReport {
    let reports: Vec<MpiReport> = match ranks.transport() {
        None => ranks.worlds().map(|w| mpi_report(w, finished)).collect(),
        Some(t) => {
            // Every rank's end, from the process that runs it.
            let mut ends: Vec<u64> = finished.iter().map(|f| f.map_or(0, |t| t + 1)).collect();
            t.reduce(&mut [], &mut ends);
            let finished: Vec<Option<Tick>> = ends.iter().map(|&e| e.checked_sub(1)).collect();
            let mine = bincode::serialize(&mpi_report(ranks.first(), &finished)).expect("a report serializes");
            ranks.share(mine).iter().map(|b| bincode::deserialize(b).expect("a report from a process of this job")).collect()
        }
    };
    let nodes = ranks.machine().shape.nodes();
    let split = Partitioning { nodes, parts: reports.len() as u32 };
    let mut reports = reports.into_iter();
    let mut out = reports.next().expect("a partition");
    for (k, o) in reports.enumerate() {
        let k = k as u32 + 1;
        for (r, rr) in o.ranks.into_iter().enumerate() {
            if split.part_of(ranks.place(r as u32).0) == k {
                out.ranks[r] = rr;
            }
        }
        for i in 0..out.link_packets.len() {
            if split.part_of(i as u32 / 6) == k {
                out.link_packets[i] = o.link_packets[i];
                out.link_util_pct[i] = o.link_util_pct[i];
                out.link_stalls[i] = o.link_stalls[i];
            }
        }
        // The collective network's state is every partition's alike
        // (`mpi::hw`): its figures are the first's.
        out.counters.absorb(&o.counters);
        out.time_s = out.time_s.max(o.time_s);
    }
    out.counters.no_token_stalls = out.link_stalls.iter().sum();
    out
}
