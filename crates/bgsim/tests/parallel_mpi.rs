//! MPI programs on a machine cut into partitions (`mpi::parts`): a halo
//! exchange of skeleton ranks gives the same simulated time, messages and
//! events at 1, 2, 3 and 4 partitions, on one and two threads and on 2 and
//! 3 processes (threads standing in for them), as on the world itself - on
//! BG/L and on BG/P (DMA engine, VN mode), with messages of every protocol.

mod common;

use bgsim::machine::{self, Machine, MachineSource, Mapping};
use bgsim::mpi::skeleton::{Halo, SkeletonRun};
use bgsim::mpi::driven::Ranks;
use bgsim::mpi::{MpiError, SendCall, World};

fn machine(preset: &str, settings: &[&str]) -> Machine {
    let s: Vec<String> = settings.iter().map(|x| x.to_string()).collect();
    machine::load(&MachineSource::Preset(preset.into()), &s).unwrap()
}

fn same(a: &SkeletonRun, b: &SkeletonRun) -> bool {
    a.ranks == b.ranks && a.messages == b.messages && a.events == b.events && a.simulated_s.to_bits() == b.simulated_s.to_bits()
}

/// The halo on the ranks of a world (one partition), then on copies of it
/// cut 2, 3 and 4 ways on one and two threads: every run must give the
/// first one's result.
fn check(m: &Machine, nranks: u32, mapping: &str, halo: &Halo) -> SkeletonRun {
    let map = Mapping::order(mapping).unwrap();
    let w = World::new(m, nranks, &map, 7, true).unwrap();
    let fresh = w.fresh_copy().unwrap();
    let mut ranks = Ranks::new(w, 1).unwrap();
    let one = halo.run(&mut ranks).unwrap();
    assert!(matches!(halo.run(&mut ranks), Err(MpiError::Usage(_))), "a second run on ranks that have run is refused");
    assert_eq!(one.messages, nranks as u64 * 2 * halo.grid.len() as u64 * halo.iters as u64);
    for (parts, threads) in [(1, 1), (2, 1), (2, 2), (3, 2), (4, 2)] {
        let r = halo.run_parts(&fresh, parts, threads).unwrap();
        assert!(same(&one, &r), "{parts} partitions on {threads} threads: {r:?}, one partition: {one:?}");
    }
    for n in [2, 3] {
        for r in common::processes(n, |t| halo.run_distributed(&fresh, t).unwrap()) {
            assert!(same(&one, &r), "{n} processes: {r:?}, one partition: {one:?}");
        }
    }
    one
}

#[test]
fn a_halo_on_bgl_is_the_same_on_every_cut() {
    let m = machine("bgl", &["partition.shape=\"4x4x4\""]);
    // One-packet, eager and rendezvous messages.
    for bytes in [8, 900, 5_000] {
        let halo = Halo { grid: vec![4, 4, 4], bytes, iters: 3 };
        let r = check(&m, 64, "XYZT", &halo);
        assert!(r.simulated_s > 0.0);
    }
}

#[test]
fn a_halo_on_bgp_in_vn_mode_is_the_same_on_every_cut() {
    // Four ranks a node, placed so that most neighbours are on other nodes
    // and some on the same one (intra-node copies by the DMA engine).
    let m = machine("bgp", &["partition.shape=\"4x2x2\"", "partition.mode=\"vn\""]);
    for bytes in [64, 3_000, 20_000] {
        let halo = Halo { grid: vec![8, 8], bytes, iters: 2 };
        check(&m, 64, "TXYZ", &halo);
    }
}

#[test]
fn a_grid_that_is_not_the_worlds_is_refused() {
    // The world has 64 ranks: a 63-rank grid is refused before it runs.
    let m = machine("bgl", &["partition.shape=\"4x4x4\""]);
    let w = World::new(&m, 64, &Mapping::default(), 1, true).unwrap();
    let halo = Halo { grid: vec![63], bytes: 8, iters: 1 };
    assert!(matches!(halo.run_parts(&w, 2, 1), Err(MpiError::Usage(_))));
}

/// Every rank waits for a message its neighbour never sends.
struct WaitForever;

impl bgsim::mpi::parts::Program for WaitForever {
    fn start(&mut self, w: &mut World, r: u32) -> Result<(), MpiError> {
        let from = (r + 1) % w.nranks();
        let req = w.irecv(r, from as i64, 0, 7, 8)?;
        w.block(r, vec![req], 1);
        Ok(())
    }
    fn step(&mut self, _w: &mut World, r: u32) -> Result<(), MpiError> {
        panic!("rank {r} cannot go on");
    }
}

#[test]
fn a_deadlock_on_partitions_names_every_blocked_rank() {
    let m = machine("bgl", &["partition.shape=\"4x2x2\""]);
    let w = World::new(&m, 16, &Mapping::default(), 1, true).unwrap();
    let make = || -> Box<dyn bgsim::mpi::parts::Program> { Box::new(WaitForever) };
    let ranks = |e: MpiError| match e {
        MpiError::Blocked(b) => {
            assert!(b.iter().all(|r| r.waiting_for.len() == 1 && r.waiting_for[0].contains("tag 7")), "{b:?}");
            b.into_iter().map(|r| r.rank).collect::<Vec<_>>()
        }
        e => panic!("not a deadlock: {e}"),
    };
    let all: Vec<u32> = (0..16).collect();
    for parts in [1, 2, 4] {
        assert_eq!(ranks(bgsim::mpi::parts::run(&w, parts, 2, &make).unwrap_err()), all, "{parts} partitions");
    }
    // Every process of a distributed run reports every blocked rank.
    for r in common::processes(2, |t| bgsim::mpi::parts::run_distributed(&w, t, &make)) {
        assert_eq!(ranks(r.unwrap_err()), all);
    }
}

/// Ranks driven from outside (as the Python runtime drives them,
/// `mpi::driven::Ranks`), on threads or processes: each rank of this process sends to a rank `k`
/// away and receives from any source, every protocol, a few rounds;
/// returns every rank's (rank, tick) at each resume (sorted), the report
/// and the end.
fn drive(mut ranks: Ranks) -> (Vec<(u32, u64)>, String, u64) {
    let n = ranks.nranks();
    let sizes = [16u32, 700, 9000, 120_000];
    let mut round = vec![0usize; n as usize];
    let mut trail = Vec::new();
    let mut finished = vec![None; n as usize];
    let post = |ranks: &mut Ranks, r: u32, i: usize| -> bool {
        let bytes = sizes[i % sizes.len()];
        let dest = (r + 1 + 5 * i as u32) % n;
        let s = ranks.isend(r, SendCall::sized(dest as i64, 0, i as i32, bytes)).unwrap();
        let q = ranks.irecv_into(r, -1, 0, i as i32, bytes, false).unwrap();
        ranks.block(r, vec![s, q], 2)
    };
    let mine: Vec<u32> = (0..n).filter(|&r| ranks.is_local(r)).collect();
    let mut ready = mine.clone();
    loop {
        let mut again = Vec::new();
        for r in std::mem::take(&mut ready) {
            let i = round[r as usize];
            trail.push((r, ranks.rank_time(r)));
            if i == 6 {
                finished[r as usize] = Some(ranks.rank_time(r));
                continue;
            }
            round[r as usize] += 1;
            if !post(&mut ranks, r, i) {
                again.push(r);
            }
        }
        if !again.is_empty() {
            ready = again;
            continue;
        }
        if mine.iter().all(|&r| finished[r as usize].is_some()) {
            break;
        }
        ready = ranks.run().unwrap();
    }
    let end = ranks.drain().unwrap();
    let mut report = serde_json::to_value(bgsim::report::ranks_report(&ranks, &finished)).unwrap();
    report.as_object_mut().unwrap().remove("machine_toml");
    trail.sort_unstable();
    (trail, report.to_string(), end)
}

#[test]
fn ranks_driven_from_outside_are_the_same_on_every_cut() {
    for (m, nranks, procs) in [(machine("bgl", &["partition.shape=\"4x4x4\""]), 64, 2), (machine("bgp", &["partition.shape=\"4x4x2\"", "partition.mode=\"vn\""]), 128, 3)] {
        let w = World::new(&m, nranks, &Mapping::order("XYZT").unwrap(), 3, true).unwrap();
        let fresh = w.fresh_copy().unwrap();
        let one = drive(Ranks::new(w, 1).unwrap());
        assert!(one.2 > 0 && one.0.len() == nranks as usize * 7);
        for threads in [2, 3, 4] {
            let cut = drive(Ranks::new(fresh.fresh_copy().unwrap(), threads).unwrap());
            assert!(cut == one, "{threads} partitions: a different run");
        }
        // Partitions held to fewer threads than they are.
        for (parts, threads) in [(2, 1), (4, 2)] {
            let ranks = Ranks::cut(fresh.fresh_copy().unwrap(), parts, threads).unwrap();
            assert_eq!((ranks.partitions(), ranks.threads()), (parts, threads));
            assert!(drive(ranks) == one, "{parts} partitions on {threads} threads: a different run");
        }
        {
            let runs = common::processes(procs, |t| drive(Ranks::distributed(fresh.fresh_copy().unwrap(), t).unwrap()));
            let mut trail: Vec<(u32, u64)> = runs.iter().flat_map(|r| r.0.iter().copied()).collect();
            trail.sort_unstable();
            assert_eq!(trail, one.0, "{procs} processes: different resumes");
            for r in &runs {
                assert!(r.1 == one.1 && r.2 == one.2, "{procs} processes: a different report or end");
            }
        }
    }
}

#[test]
fn the_coarse_tier_is_the_same_on_every_cut() {
    // Packets wait in line on busy links (120 KB messages from every rank
    // at once) and their heads cross to other partitions' nodes, whose
    // links they book there.
    let m = machine("bgl", &["partition.shape=\"4x4x4\""]);
    let mut w = World::new(&m, 64, &Mapping::order("XYZT").unwrap(), 3, true).unwrap();
    w.set_coarse().unwrap();
    let fresh = w.fresh_copy().unwrap();
    assert_eq!(fresh.fidelity(), "coarse");
    let one = drive(Ranks::new(w, 1).unwrap());
    for threads in [2, 4] {
        let cut = drive(Ranks::new(fresh.fresh_copy().unwrap(), threads).unwrap());
        assert!(cut == one, "{threads} partitions: a different run");
    }
    for r in common::processes(2, |t| drive(Ranks::distributed(fresh.fresh_copy().unwrap(), t).unwrap())) {
        assert!(r.1 == one.1 && r.2 == one.2, "2 processes: a different report or end");
    }
}
