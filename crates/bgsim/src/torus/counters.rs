//! Counters of the torus: per link direction, per virtual channel, per node,
//! packet latencies and throughput over time.

use crate::engine::Tick;
use serde::Serialize;

/// Per link direction (node x 6).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct LinkCounters {
    /// Forward wire bytes: packets plus trailer and gap.
    pub bytes: u64,
    pub packets: u64,
    /// Payload bytes carried (excluding both headers).
    pub payload: u64,
    /// Ack / token-ack bytes sent on this link for traffic of the reverse link.
    pub ack_bytes: u64,
    /// No-token stall events: a packet ready to move this way found no
    /// downstream tokens.
    pub stalls: u64,
    /// Transfers resent after the receiver's CRC caught a bit error (their
    /// bytes are in `bytes`: the link carried them).
    pub retransmits: u64,
}

/// Per virtual channel class (VC index), summed over every receiver of the
/// machine. Kept in one place rather than per receiver: each update then
/// touches data that stays in cache.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct VcCounters {
    /// Integral over time of the bytes held in all VCs of this index, byte-ticks.
    pub occ_integral: u64,
    /// Time `occ_integral` was last brought up to date.
    pub last_change: Tick,
    /// Packets that entered a VC of this index.
    pub packets: u64,
    /// Tokens held right now in all VCs of this index (state, not a counter).
    pub used: u64,
}

impl VcCounters {
    /// The tokens held in VCs of this class change by `delta` at `now`.
    #[inline]
    pub fn change(&mut self, now: Tick, token_bytes: u64, delta: i64) {
        self.advance(now, token_bytes);
        self.used = (self.used as i64 + delta) as u64;
    }
    /// Brings the integral up to `now`.
    #[inline]
    pub fn advance(&mut self, now: Tick, token_bytes: u64) {
        self.occ_integral += self.used * token_bytes * now.saturating_sub(self.last_change);
        self.last_change = self.last_change.max(now);
    }
}

/// Per node.
#[derive(Clone, Copy, Debug, Default, Serialize, serde::Deserialize)]
pub struct NodeCounters {
    /// Sum over injection FIFOs of the time each could not take a full packet, ticks.
    pub inj_full_ticks: u64,
    /// Sum over reception FIFOs of the time each was full, ticks.
    pub rx_full_ticks: u64,
}

/// A log-linear histogram of latencies in ticks (8 sub-buckets per power of two).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Histogram {
    counts: Vec<u64>,
    pub count: u64,
    pub sum: u128,
    pub min: u64,
    pub max: u64,
}

const SUB: u32 = 8;

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; 64 * SUB as usize], count: 0, sum: 0, min: u64::MAX, max: 0 }
    }
}

impl Histogram {
    fn bucket(v: u64) -> usize {
        if v < SUB as u64 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros(); // >= 3
        let sub = (v >> (e - 3)) & (SUB as u64 - 1);
        ((e - 2) * SUB) as usize + sub as usize
    }
    fn bucket_low(b: usize) -> u64 {
        if b < SUB as usize {
            return b as u64;
        }
        let e = (b / SUB as usize) as u32 + 2;
        let sub = (b % SUB as usize) as u64;
        (SUB as u64 + sub) << (e - 3)
    }
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[Self::bucket(v)] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
    /// Approximate quantile (lower edge of the bucket, within 1/8 of the value).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let target = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut acc = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= target {
                return Self::bucket_low(b).max(self.min).min(self.max);
            }
        }
        self.max
    }
    /// Adds the values `o` recorded.
    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.count += o.count;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }
    /// (bucket lower edge, count) for non-empty buckets.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(b, &c)| (Self::bucket_low(b), c)).collect()
    }
}

/// Run-wide counters of the torus.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct GlobalCounters {
    pub injected_packets: u64,
    /// Packets in the network now: in injection FIFOs, VCs or on links, not
    /// yet in their destination's reception FIFO (kept across restarts).
    pub in_network: u64,
    /// `in_network` when the counters last restarted.
    pub in_network_at_start: u64,
    /// Link transfers resent after a CRC error (bit errors on the links).
    pub retransmissions: u64,
    /// The same per link direction (node * 6 + direction), where any.
    pub link_retransmits: Vec<u64>,
    pub delivered_packets: u64,
    /// Packets delivered by the deposit bit at intermediate nodes.
    pub deposit_copies: u64,
    pub delivered_payload: u64,
    pub delivered_wire_bytes: u64,
    /// Latency from creation to arrival in the reception FIFO, ticks.
    pub latency: Histogram,
    /// Latency from leaving the injection FIFO to arrival, ticks.
    pub network_latency: Histogram,
    /// Delivered packets per throughput window.
    pub window_packets: Vec<u64>,
    /// Delivered payload bytes per throughput window.
    pub window_payload: Vec<u64>,
    /// Token returns.
    pub token_returns: u64,
    /// Token returns that let a packet that had been stalled for lack of tokens move at once.
    pub unblocking_returns: u64,
    /// Packet hops (link traversals).
    pub hops: u64,
    /// Hops made on an escape VC.
    pub escape_hops: u64,
    /// Hops made on a dynamic VC.
    pub dynamic_hops: u64,
    /// No-token stall events by the VC whose tokens were missing.
    pub stalls_by_vc: [u64; 8],
    /// Traffic and occupancy by VC index.
    pub vcs: [VcCounters; 8],
    /// Arbitration passes run (engine cost counter).
    pub arbitrations: u64,
    /// VC heads fully evaluated in arbitration (engine cost counter).
    pub head_evaluations: u64,
    /// Time of the last packet movement (for deadlock detection).
    pub last_progress: Tick,
}

impl GlobalCounters {
    /// Adds another partition's counters of the same windowed run (the
    /// machine-wide figures are sums over nodes, or latest times).
    pub fn merge(&mut self, o: &GlobalCounters) {
        fn add_each(a: &mut Vec<u64>, b: &[u64]) {
            if a.len() < b.len() {
                a.resize(b.len(), 0);
            }
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        self.injected_packets += o.injected_packets;
        // A partition's own count may have wrapped below zero (packets
        // injected elsewhere arrived there): the sum is right.
        self.in_network = self.in_network.wrapping_add(o.in_network);
        self.in_network_at_start = self.in_network_at_start.wrapping_add(o.in_network_at_start);
        self.retransmissions += o.retransmissions;
        add_each(&mut self.link_retransmits, &o.link_retransmits);
        self.delivered_packets += o.delivered_packets;
        self.deposit_copies += o.deposit_copies;
        self.delivered_payload += o.delivered_payload;
        self.delivered_wire_bytes += o.delivered_wire_bytes;
        self.latency.merge(&o.latency);
        self.network_latency.merge(&o.network_latency);
        add_each(&mut self.window_packets, &o.window_packets);
        add_each(&mut self.window_payload, &o.window_payload);
        self.token_returns += o.token_returns;
        self.unblocking_returns += o.unblocking_returns;
        self.hops += o.hops;
        self.escape_hops += o.escape_hops;
        self.dynamic_hops += o.dynamic_hops;
        for (a, b) in self.stalls_by_vc.iter_mut().zip(&o.stalls_by_vc) {
            *a += b;
        }
        for (a, b) in self.vcs.iter_mut().zip(&o.vcs) {
            a.occ_integral += b.occ_integral;
            a.last_change = a.last_change.max(b.last_change);
            a.packets += b.packets;
            a.used += b.used;
        }
        self.arbitrations += o.arbitrations;
        self.head_evaluations += o.head_evaluations;
        self.last_progress = self.last_progress.max(o.last_progress);
    }
}

use super::{LinkHigh, Torus, NDIR};

impl Torus {

    /// Restarts every counter at `now` (measurement after a warm-up).
    pub fn reset_counters(&mut self, now: Tick) {
        // Close open integrals so that they restart at now.
        for r in self.routers.iter_mut() {
            for f in r.inj.iter_mut().chain(r.rx.iter_mut()) {
                if f.full_since != Tick::MAX {
                    f.full_since = now;
                }
            }
            r.link_high = [LinkHigh::default(); NDIR];
            for s in r.send.iter_mut() {
                // A transfer under way was counted before the restart.
                (s.packets, s.chunks, s.payload, s.acks, s.owed) = (0, 0, 0, 0, false);
            }
        }
        if let Some(c) = self.coarse.as_deref_mut() {
            c.reset_counts();
        }
        for c in self.nodes.iter_mut() {
            *c = NodeCounters::default();
        }
        let last = self.global.last_progress;
        let mut vcs = self.global.vcs;
        for c in vcs.iter_mut() {
            *c = VcCounters { used: c.used, last_change: now, ..Default::default() };
        }
        let in_network = self.global.in_network;
        self.global = GlobalCounters { last_progress: last, vcs, in_network, in_network_at_start: in_network, ..Default::default() };
        self.counters_since = now;
    }

    /// Brings time integrals up to `now` (call before reading counters).
    pub fn close_counters(&mut self, now: Tick) {
        let token_bytes = self.p.token_bytes as u64;
        for c in self.global.vcs.iter_mut() {
            c.advance(now, token_bytes);
        }
        for n in 0..self.routers.len() {
            let r = &mut self.routers[n];
            for f in r.inj.iter_mut() {
                if f.full_since != Tick::MAX {
                    self.nodes[n].inj_full_ticks += now - f.full_since.max(self.counters_since);
                    f.full_since = now;
                }
            }
            for f in r.rx.iter_mut() {
                if f.full_since != Tick::MAX {
                    self.nodes[n].rx_full_ticks += now - f.full_since.max(self.counters_since);
                    f.full_since = now;
                }
            }
        }
    }

    /// Counters of the link leaving node `n` in direction `d`.
    pub fn link(&self, n: u32, d: usize) -> LinkCounters {
        let r = &self.routers[n as usize];
        let (s, h) = (&r.send[d], &r.link_high[d]);
        // On the coarse tier the low parts are the coarse links'.
        let (cp, cc, cb) = self.coarse.as_deref().map_or((0, 0, 0), |c| c.counts(n as usize * NDIR + d));
        let (packets, chunks) = (h.packets + s.packets as u64 + cp, h.chunks + s.chunks as u64 + cc);
        let retransmits = self.global.link_retransmits.get(n as usize * NDIR + d).copied().unwrap_or(0);
        LinkCounters {
            bytes: chunks * self.p.chunk_bytes as u64 + (packets + retransmits) * self.p.trailer_gap as u64,
            packets,
            payload: h.payload + s.payload as u64 + cb + if s.owed { self.pool.get(s.xfer).payload as u64 } else { 0 },
            ack_bytes: (h.acks + s.acks as u64) * self.p.ack_bytes as u64,
            stalls: h.stalls,
            retransmits,
        }
    }

    /// Counters of every link direction, node by node, in direction order.
    pub fn links(&self) -> impl Iterator<Item = LinkCounters> + '_ {
        (0..self.routers.len() as u32).flat_map(move |n| (0..NDIR).map(move |d| self.link(n, d)))
    }

    /// Bytes in all the injection FIFOs of node `n` (reserved or held).
    pub fn inj_used_total(&self, n: u32) -> u64 {
        self.routers[n as usize].inj.iter().map(|f| f.used as u64).sum()
    }

    /// Bytes in the injection FIFO `f` of node `n` (reserved or held).
    pub fn inj_used(&self, n: u32, f: usize) -> u32 {
        self.routers[n as usize].inj[f].used
    }
}
