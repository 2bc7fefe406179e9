//! What a timeline (`bgsim.timeline`) reads of a run, the same for every
//! cut of the machine into partitions: samples of chosen nodes' torus
//! counters ([`Sampler`]) and the message log (`msglayer::MsgLog`, merged
//! by [`merge_logs`]).
//!
//! **Samples.** A node is sampled at multiples of an interval: the sample
//! at tick s is its counters after every event of that node before s. It
//! is taken when the node's first event at or after s is handled, so only
//! the node's own events decide it, never where the machine is cut or how
//! far other partitions have run. After a quiet stretch the node gets two
//! samples: at the first multiple past its last activity and at the last
//! one before it is busy again (the counters stand still in between). A
//! node keeps at most `cap` samples: past that its interval doubles and
//! the samples off the new grid go.

use crate::engine::Tick;
use crate::msglayer::MsgRecord;
use crate::packet::Net;

/// One node's counters at a tick: bytes sent on each of its six outgoing
/// torus links so far, bytes in its injection FIFOs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    pub tick: Tick,
    pub links: [u64; 6],
    pub fifo: u64,
}

impl Sample {
    /// Node `n`'s counters in `net` now, stamped `tick`.
    pub fn of(net: &Net, n: u32, tick: Tick) -> Sample {
        let t = &net.torus();
        let mut links = [0u64; 6];
        for (d, l) in links.iter_mut().enumerate() {
            *l = t.link(n, d).bytes;
        }
        Sample { tick, links, fifo: t.inj_used_total(n) }
    }
}

/// The sampled nodes of a world (see the module's doc).
#[derive(Clone, Debug)]
pub struct Sampler {
    /// Index into `nodes` of each node of the machine (`NONE`: not sampled).
    slot: Vec<u32>,
    nodes: Vec<Node>,
    cap: usize,
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Node {
    id: u32,
    interval: Tick,
    /// The next multiple of `interval` not sampled yet.
    next: Tick,
    samples: Vec<Sample>,
}

impl Sampler {
    /// Samples `nodes` (of a machine of `machine_nodes`) every `interval`
    /// ticks, at most `cap` samples each (at least 2).
    pub fn new(machine_nodes: u32, nodes: &[u32], interval: Tick, cap: usize) -> Sampler {
        assert!(interval > 0 && cap >= 2);
        let mut slot = vec![NONE; machine_nodes as usize];
        let mut v = Vec::new();
        for &n in nodes {
            if slot[n as usize] == NONE {
                slot[n as usize] = v.len() as u32;
                v.push(Node { id: n, interval, next: 0, samples: Vec::new() });
            }
        }
        Sampler { slot, nodes: v, cap }
    }

    /// An event of node `n` at `now` is about to be handled.
    #[inline]
    pub fn see(&mut self, net: &Net, now: Tick, n: u32) {
        let Some(&i) = self.slot.get(n as usize) else { return };
        if i != NONE && now >= self.nodes[i as usize].next {
            self.nodes[i as usize].catch_up(net, now, self.cap);
        }
    }

    /// The samples of the nodes this world runs (all of them if `owns`
    /// says so for each), once every event is handled and the run ends at
    /// `end`: those due up to `end`, and one at `end` itself.
    pub fn finish(&self, net: &Net, end: Tick, owns: impl Fn(u32) -> bool) -> Vec<(u32, Vec<Sample>)> {
        let mut out = Vec::new();
        for node in self.nodes.iter().filter(|s| owns(s.id)) {
            let mut node = node.clone();
            node.catch_up(net, end, self.cap);
            if node.samples.last().is_some_and(|x| x.tick < end) {
                node.samples.push(Sample::of(net, node.id, end));
            }
            out.push((node.id, node.samples));
        }
        out
    }
}

impl Node {
    /// The samples due up to `now` (the node has no event between its
    /// last one and `now`), from its counters now; at most `cap` kept.
    fn catch_up(&mut self, net: &Net, now: Tick, cap: usize) {
        if now < self.next {
            return;
        }
        let last = now / self.interval * self.interval;
        let here = Sample::of(net, self.id, self.next);
        self.samples.push(here);
        if last > self.next {
            self.samples.push(Sample { tick: last, ..here });
        }
        self.next = last + self.interval;
        while self.samples.len() > cap {
            self.interval *= 2;
            let grid = self.interval;
            self.samples.retain(|x| x.tick % grid == 0);
            self.next = self.next.div_ceil(grid) * grid;
        }
    }
}

/// One partition's message log (see `msglayer::MsgLog`): its nodes, the
/// records it keeps, how many it left out, and the receives it completed
/// of other partitions' records.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct LogPart {
    pub lo: u32,
    pub hi: u32,
    pub records: Vec<MsgRecord>,
    pub dropped: u64,
    pub remote_done: Vec<(u32, u32, Tick)>,
}

/// The message log of a run from its partitions' (`node_of` gives a
/// rank's node): every receive time in its record, the records in (posted,
/// sender) order - a sender's own in the order it posted them - and at
/// most `limit` of them; returns them and how many were left out.
pub fn merge_logs(mut parts: Vec<LogPart>, limit: usize, node_of: impl Fn(u32) -> u32) -> (Vec<MsgRecord>, u64) {
    let done: Vec<(u32, u32, Tick)> = parts.iter_mut().flat_map(|p| std::mem::take(&mut p.remote_done)).collect();
    for (src, r, t) in done {
        let n = node_of(src);
        let p = parts.iter_mut().find(|p| n >= p.lo && n < p.hi).expect("a sender's partition");
        p.records[r as usize].recv_done = t;
    }
    let mut dropped: u64 = parts.iter().map(|p| p.dropped).sum();
    let mut all: Vec<MsgRecord> = parts.into_iter().flat_map(|p| p.records).collect();
    // Stable: a sender's records are all in its partition's log, in order.
    all.sort_by_key(|r| (r.posted, r.src));
    if all.len() > limit {
        dropped += (all.len() - limit) as u64;
        all.truncate(limit);
    }
    (all, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(src: u32, posted: Tick) -> MsgRecord {
        MsgRecord { src, dst: 0, bytes: 8, proto: 0, posted, send_done: posted + 1, recv_done: 0 }
    }

    #[test]
    fn merged_logs_take_receive_times_order_by_post_and_sender_and_keep_the_limit() {
        // Partition 0 has nodes 0..2 (ranks 0, 1), partition 1 nodes 2..4 (ranks 2, 3).
        let a = LogPart { lo: 0, hi: 2, records: vec![rec(1, 5), rec(0, 5), rec(1, 7)], dropped: 1, remote_done: vec![(2, 0, 40)] };
        let b = LogPart { lo: 2, hi: 4, records: vec![rec(2, 5), rec(3, 6)], dropped: 0, remote_done: vec![(1, 2, 30), (0, 1, 20)] };
        let (v, dropped) = merge_logs(vec![a, b], 4, |r| r);
        let got: Vec<(u32, Tick, Tick)> = v.iter().map(|r| (r.src, r.posted, r.recv_done)).collect();
        assert_eq!(got, [(0, 5, 20), (1, 5, 0), (2, 5, 40), (3, 6, 0)]);
        // One left out by partition 0, one past the limit here.
        assert_eq!(dropped, 2);
    }
}
