//! The message layer and MPI point-to-point, driven from Rust: protocol
//! choice, matching order, out-of-order rendezvous reassembly, eager
//! ordering, data integrity, the blocked-rank report.

use bgsim::machine::{self, Machine, Mapping, Protocol};
use bgsim::mpi::driven::Ranks;
use bgsim::mpi::{MpiError, World};
use bgsim::mpi::SendCall;
use bgsim::msglayer::SendMode;

fn machine(shape: &str, extra: &[&str]) -> Machine {
    let mut s = vec![format!("partition.shape={shape}")];
    s.extend(extra.iter().map(|x| x.to_string()));
    let refs: Vec<&str> = s.iter().map(|x| x.as_str()).collect();
    machine::bgl(&refs).unwrap()
}

/// The ranks of a world on one partition.
fn world(shape: &str, n: u32, extra: &[&str]) -> Ranks {
    Ranks::new(World::new(&machine(shape, extra), n, &Mapping::default(), 1, true).unwrap(), 1).unwrap()
}

/// Runs until `rank` is ready (others may become ready too; they stay
/// blocked from the driver's point of view and are returned).
fn wait(w: &mut Ranks, rank: u32, reqs: Vec<u32>) {
    if !w.block(rank, reqs, usize::MAX) {
        return;
    }
    loop {
        let ready = w.run().unwrap();
        if ready.contains(&rank) {
            return;
        }
    }
}

/// Half round trip of a ping-pong between ranks 0 and `peer`, ticks (last of `iters`).
fn pingpong(w: &mut Ranks, peer: u32, bytes: usize, proto: Option<Protocol>, iters: usize) -> u64 {
    let mut half = 0;
    for _ in 0..iters {
        let t0 = w.now();
        let s = w.isend(0, SendCall::new(peer as i64, 0, 1, vec![7u8; bytes]).protocol(proto)).unwrap();
        let r0 = w.irecv(0, peer as i64, 0, 2, bytes as u32).unwrap();
        let r1 = w.irecv(peer, 0, 0, 1, bytes as u32).unwrap();
        // Rank 0 blocks on both; the peer on its receive, then answers.
        w.block(0, vec![s, r0], 2);
        wait(w, peer, vec![r1]);
        let echo = w.take_data(r1).unwrap();
        let s1 = w.isend(peer, SendCall::new(0, 0, 2, echo).protocol(proto)).unwrap();
        w.block(peer, vec![s1], 1);
        let mut done0 = false;
        while !done0 {
            let ready = w.run().unwrap();
            done0 = ready.contains(&0);
        }
        half = (w.now() - t0) / 2;
        assert_eq!(w.take_data(r0).unwrap(), vec![7u8; bytes]);
        for r in [s, r0, r1, s1] {
            w.release(r);
        }
        w.drain().unwrap();
    }
    half
}

#[test]
fn protocol_choice_by_size_and_forced() {
    let w = world("2x1x1", 2, &[]);
    assert_eq!(w.protocol_for(1, None), Protocol::OnePacket);
    assert_eq!(w.protocol_for(224, None), Protocol::OnePacket);
    assert_eq!(w.protocol_for(225, None), Protocol::Eager);
    assert_eq!(w.protocol_for(1000, None), Protocol::Eager);
    assert_eq!(w.protocol_for(1001, None), Protocol::Rendezvous);
    assert_eq!(w.protocol_for(1, Some(Protocol::Rendezvous)), Protocol::Rendezvous);
    let w = world("2x1x1", 2, &["mpi.protocol=\"adaptive_eager\""]);
    assert_eq!(w.protocol_for(5000, None), Protocol::AdaptiveEager);
}

#[test]
fn every_protocol_delivers_the_data() {
    for proto in Protocol::ALL {
        for bytes in [0usize, 1, 223, 224, 225, 1000, 4097, 100_000] {
            if proto == Protocol::OnePacket && bytes > 224 {
                continue;
            }
            let mut w = world("4x2x2", 16, &[]);
            let data: Vec<u8> = (0..bytes).map(|i| (i * 31 % 251) as u8).collect();
            let s = w.isend(0, SendCall::new(13, 0, 5, data.clone()).protocol(Some(proto))).unwrap();
            let r = w.irecv(13, 0, 0, 5, bytes as u32).unwrap();
            w.block(0, vec![s], 1);
            wait(&mut w, 13, vec![r]);
            let st = w.status(r);
            assert_eq!((st.source, st.tag, st.count as usize), (0, 5, bytes), "{proto:?} {bytes}");
            assert_eq!(w.take_data(r).unwrap(), data, "{proto:?} {bytes}");
            w.drain().unwrap();
            assert!(w.is_done(s));
            assert_eq!(w.first().net().torus().live_packets(), 0);
        }
    }
}

#[test]
fn matching_follows_posted_order_and_wildcards() {
    let mut w = world("2x2x1", 4, &[]);
    // Two receives posted: ANY_SOURCE first, then a specific one; the first
    // message matches the oldest receive that fits.
    let ra = w.irecv(0, -1, 0, -1, 16).unwrap();
    let rb = w.irecv(0, 2, 0, 9, 16).unwrap();
    let s1 = w.isend(2, SendCall::new(0, 0, 9, b"first".to_vec())).unwrap();
    wait(&mut w, 0, vec![ra]);
    assert_eq!(w.take_data(ra).unwrap(), b"first");
    assert!(!w.is_done(rb));
    let s2 = w.isend(2, SendCall::new(0, 0, 9, b"second".to_vec())).unwrap();
    wait(&mut w, 0, vec![rb]);
    assert_eq!(w.take_data(rb).unwrap(), b"second");
    // Unexpected messages are matched in arrival order, by tag and context.
    let a = w.isend(1, SendCall::new(3, 0, 1, b"t1".to_vec())).unwrap();
    let b = w.isend(1, SendCall::new(3, 0, 2, b"t2".to_vec())).unwrap();
    let c = w.isend(1, SendCall::new(3, 7, 1, b"ctx7".to_vec())).unwrap();
    wait(&mut w, 1, vec![a, b, c]);
    w.drain().unwrap();
    let r2 = w.irecv(3, 1, 0, 2, 16).unwrap();
    let rc = w.irecv(3, 1, 7, -1, 16).unwrap();
    let r1 = w.irecv(3, -1, 0, -1, 16).unwrap();
    wait(&mut w, 3, vec![r2, rc, r1]);
    assert_eq!(w.take_data(r2).unwrap(), b"t2");
    assert_eq!(w.take_data(rc).unwrap(), b"ctx7");
    assert_eq!(w.take_data(r1).unwrap(), b"t1");
    for s in [s1, s2] {
        assert!(w.is_done(s));
    }
}

#[test]
fn eager_messages_between_a_pair_arrive_in_order() {
    for proto in [Protocol::Eager, Protocol::AdaptiveEager, Protocol::OnePacket, Protocol::Rendezvous] {
        let mut w = world("4x4x4", 64, &[]);
        let n = 40;
        let sends: Vec<u32> = (0..n).map(|i| w.isend(0, SendCall::new(42, 0, 3, vec![i as u8; 200 + i * 13]).protocol(Some(proto))).unwrap()).collect();
        let recvs: Vec<u32> = (0..n).map(|_| w.irecv(42, 0, 0, 3, 4096).unwrap()).collect();
        w.block(0, sends, usize::MAX);
        wait(&mut w, 42, recvs.clone());
        for (i, r) in recvs.iter().enumerate() {
            let d = w.take_data(*r).unwrap();
            assert_eq!(d.len(), 200 + i * 13, "{proto:?}: message {i} overtaken");
            assert!(d.iter().all(|&b| b == i as u8));
        }
    }
}

#[test]
fn rendezvous_data_arrives_out_of_order_and_is_reassembled() {
    // Dynamic routing over a 4x4x4 torus with many paths: packets of one
    // large message overtake each other; the receiver counts bytes.
    let mut w = world("4x4x4", 64, &[]);
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    // Background traffic to disturb the paths.
    let mut bg = Vec::new();
    for r in 1..64u32 {
        if r != 21 {
            bg.push(w.isend(r, SendCall::new(((r * 7) % 64) as i64, 1, 0, vec![0; 20_000])).unwrap());
            bg.push(w.irecv((r * 7) % 64, -1, 1, -1, 20_000).unwrap());
        }
    }
    let s = w.isend(0, SendCall::new(21, 0, 0, data.clone()).protocol(Some(Protocol::Rendezvous))).unwrap();
    let r = w.irecv(21, 0, 0, 0, data.len() as u32).unwrap();
    wait(&mut w, 21, vec![r]);
    assert_eq!(w.take_data(r).unwrap(), data);
    w.drain().unwrap();
    assert!(w.is_done(s));
    let ooo = w.first().out_of_order_packets();
    assert!(ooo > 0, "expected dynamic packets to arrive out of order");
}

#[test]
fn synchronous_send_waits_for_the_receive() {
    let mut w = world("2x1x1", 2, &[]);
    let s = w.isend(0, SendCall::new(1, 0, 0, vec![1; 10]).mode(SendMode::Synchronous)).unwrap();
    w.block(0, vec![s], 1);
    // Only the sender is blocked and no receive exists: deadlock report.
    let err = w.run().unwrap_err();
    let MpiError::Blocked(b) = &err else { panic!("{err}") };
    assert_eq!(b[0].rank, 0);
    assert!(b[0].waiting_for[0].contains("synchronous"), "{err}");
    assert!(err.to_string().contains("rank 0: waits for a send of 10 bytes to rank 1"), "{err}");
    // Standard-mode small sends complete locally.
    let mut w = world("2x1x1", 2, &[]);
    let s = w.isend(0, SendCall::new(1, 0, 0, vec![1; 10])).unwrap();
    wait(&mut w, 0, vec![s]);
}

#[test]
fn blocked_receive_is_reported() {
    let mut w = world("2x1x1", 2, &[]);
    let r = w.irecv(1, 0, 0, 4, 8).unwrap();
    w.block(1, vec![r], 1);
    let err = w.run().unwrap_err().to_string();
    assert!(err.contains("rank 1: waits for a message from rank 0 with tag 4"), "{err}");
}

#[test]
fn truncation_and_cancel_and_probe() {
    let mut w = world("2x1x1", 2, &[]);
    let s = w.isend(0, SendCall::new(1, 0, 0, vec![1; 100])).unwrap();
    let p = w.probe(1, -1, 0, -1).unwrap();
    wait(&mut w, 1, vec![p]);
    assert_eq!(w.status(p).count, 100);
    let r = w.irecv(1, 0, 0, 0, 10).unwrap();
    wait(&mut w, 1, vec![r, s]);
    assert!(w.status(r).truncated);
    let r2 = w.irecv(1, 0, 0, 0, 10).unwrap();
    assert!(w.cancel(r2));
    assert!(w.is_done(r2) && w.status(r2).cancelled);
}

#[test]
fn vn_mode_intranode_and_network() {
    let mut w = world("2x1x1", 4, &["partition.mode=\"vn\""]);
    // XYZT: ranks 0,1 are task 0 of nodes 0,1; ranks 2,3 task 1.
    assert_eq!(w.place(2), (0, 1));
    for (a, b) in [(0u32, 2u32), (2, 3), (3, 0)] {
        let data: Vec<u8> = (0..5000).map(|i| (i % 7) as u8 + a as u8).collect();
        let s = w.isend(a, SendCall::new(b as i64, 0, 0, data.clone())).unwrap();
        let r = w.irecv(b, a as i64, 0, 0, 5000).unwrap();
        w.block(a, vec![s], 1);
        wait(&mut w, b, vec![r]);
        assert_eq!(w.take_data(r).unwrap(), data);
        w.drain().unwrap();
    }
    assert_eq!(w.first().rank_stats(0).by_protocol[4], 1, "0 -> 2 is intra-node");
}

#[test]
fn latency_grows_with_protocol_and_hops() {
    let mut w = world("8x8x8", 512, &[]);
    let one = pingpong(&mut w, 1, 1, Some(Protocol::OnePacket), 3);
    let eager = pingpong(&mut w, 1, 1, Some(Protocol::Eager), 3);
    let rdv = pingpong(&mut w, 1, 1, Some(Protocol::Rendezvous), 3);
    assert!(one <= eager && eager < rdv, "{one} {eager} {rdv}");
    let far = pingpong(&mut w, 2, 1, None, 3);
    let near = pingpong(&mut w, 1, 1, None, 3);
    assert!(far > near);
}

/// The coarse torus under a hot spot: every rank sends 20 KB to rank 0,
/// so packets wait in line on the links into it (each link's event finds
/// the next packet's start from the gap the one ahead keeps, checked
/// against the packet's own record in debug builds). The data arrives
/// whole, two runs give the same time, and the waiting makes the
/// exchange far longer than one message alone.
#[test]
fn coarse_torus_queues_packets_on_busy_links() {
    let bytes = 20_000usize;
    let data = |r: u32| -> Vec<u8> { (0..bytes as u32).map(|i| ((i + r) % 251) as u8).collect() };
    let run = |senders: u32| {
        let mut c = World::new(&machine("4x4x4", &[]), 64, &Mapping::default(), 1, true).unwrap();
        c.set_coarse().unwrap();
        let mut w = Ranks::new(c, 1).unwrap();
        let mut recvs = Vec::new();
        for r in 1..=senders {
            w.isend(r, SendCall::new(0, 0, r as i32, data(r))).unwrap();
            recvs.push((r, w.irecv(0, r as i64, 0, r as i32, bytes as u32).unwrap()));
        }
        let reqs: Vec<u32> = recvs.iter().map(|&(_, q)| q).collect();
        if w.block(0, reqs, recvs.len()) {
            while !w.run().unwrap().contains(&0) {}
        }
        for &(r, q) in &recvs {
            assert_eq!(w.take_data(q).unwrap(), data(r), "message from rank {r}");
        }
        w.now()
    };
    let (alone, all) = (run(1), run(63));
    assert_eq!(all, run(63));
    assert!(all > 10 * alone, "63 senders into one node: {all} ticks, one sender alone {alone}");
}

#[test]
fn same_seed_same_times() {
    let run = || {
        let mut w = world("4x4x2", 32, &[]);
        let mut v = Vec::new();
        for p in [1u32, 5, 31] {
            v.push(pingpong(&mut w, p, 3000, None, 2));
        }
        v
    };
    assert_eq!(run(), run());
}


/// A collective the core runs (`mpi::agent`) posts the same messages at
/// the same times as a driver posting them itself: an all-to-all with
/// content (postall) and with sizes alone (pairwise) on 12 ranks, compared
/// with the same messages posted and waited for rank by rank.
#[test]
fn an_agent_exchange_is_its_messages_posted_by_the_driver() {
    use bgsim::mpi::agent::{Agent, Exchange, Parts, Payload, Steps, AGENT_RANK};
    use std::sync::Arc;
    let n = 12u32;
    let part = |s: u32, d: u32, sized: bool| if sized { Payload::Size(300 + 10 * d) } else { Payload::Bytes(vec![(s * 16 + d) as u8; 600]) };
    for (steps, sized) in [(Steps::All, false), (Steps::Pairwise, true)] {
        let pairwise = steps == Steps::Pairwise;
        // By the core.
        let mut a = world("2x2x3", n, &[]);
        let peers: Arc<[u32]> = (0..n).collect::<Vec<_>>().into();
        let mut running = 0;
        for r in 0..n {
            let dests: Vec<u32> = (1..n).map(|k| (r + k) % n).collect();
            let srcs: Vec<u32> = if pairwise { (1..n).map(|k| (r + n - k) % n).collect() } else { (0..n).filter(|&i| i != r).collect() };
            let parts = Parts::Each(dests.iter().map(|&d| Some(part(r, d, sized))).collect());
            let x = Exchange { peers: peers.clone(), ctx: 1, tag: 0, mode: SendMode::Standard, protocol: None, dests, parts, recvs: srcs, steps: steps.clone(), combine: Vec::new() };
            if a.start(r, Agent::new(x)).unwrap() {
                running += 1;
            }
        }
        let mut finished_at = vec![0u64; n as usize];
        let mut got = vec![Vec::new(); n as usize];
        while running > 0 {
            for r in a.run().unwrap() {
                let r = if r >= AGENT_RANK && a.step(r ^ AGENT_RANK).unwrap() { continue } else { r & !AGENT_RANK };
                finished_at[r as usize] = a.now();
                got[r as usize] = a.take_result(r).unwrap().into_received();
                running -= 1;
            }
        }
        for r in 0..n {
            let mut g = got[r as usize].clone();
            g.sort_by_key(|x| x.0);
            let want: Vec<(u32, Payload)> = (0..n).filter(|&s| s != r).map(|s| (s, part(s, r, sized))).collect();
            assert_eq!(g, want, "rank {r} received");
        }
        // By the driver: the same posts, a step at a time.
        let mut b = world("2x2x3", n, &[]);
        let mut step = vec![0u32; n as usize];
        let mut reqs: Vec<Vec<u32>> = vec![Vec::new(); n as usize];
        let post = |b: &mut Ranks, r: u32, k: u32| -> Vec<u32> {
            let mut q = Vec::new();
            let (lo, hi) = if pairwise { (k + 1, k + 2) } else { (1, n) };
            for j in lo..hi {
                let src = if pairwise { (r + n - j) % n } else { (0..n).filter(|&i| i != r).nth(j as usize - 1).unwrap() };
                q.push(b.irecv(r, src as i64, 1, 0, (1 << 30) - 1).unwrap());
            }
            for j in lo..hi {
                let d = (r + j) % n;
                q.push(match part(r, d, sized) {
                    Payload::Bytes(v) => b.isend(r, SendCall::new(d as i64, 1, 0, v)).unwrap(),
                    Payload::Size(s) => b.isend(r, SendCall::sized(d as i64, 1, 0, s)).unwrap(),
                });
            }
            q
        };
        let steps_n = if pairwise { n - 1 } else { 1 };
        let mut running = 0;
        let mut ends = vec![0u64; n as usize];
        let go = |b: &mut Ranks, r: u32, step: &mut [u32], reqs: &mut [Vec<u32>], ends: &mut [u64]| -> bool {
            loop {
                for &q in &reqs[r as usize] {
                    b.release(q);
                }
                if step[r as usize] == steps_n {
                    ends[r as usize] = b.now();
                    return false;
                }
                reqs[r as usize] = post(b, r, step[r as usize]);
                step[r as usize] += 1;
                if b.block(r, reqs[r as usize].clone(), usize::MAX) {
                    return true;
                }
            }
        };
        for r in 0..n {
            if go(&mut b, r, &mut step, &mut reqs, &mut ends) {
                running += 1;
            }
        }
        while running > 0 {
            for r in b.run().unwrap() {
                if !go(&mut b, r, &mut step, &mut reqs, &mut ends) {
                    running -= 1;
                }
            }
        }
        assert_eq!(finished_at, ends, "{steps:?}: when each rank is done");
        assert_eq!(a.events(), b.events());
    }
}
