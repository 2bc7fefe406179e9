//! MPI programs on a machine cut into partitions (`mpi::parts`): a halo
//! exchange of skeleton ranks gives the same simulated time, messages and
//! events at 1, 2, 3 and 4 partitions, on one and two threads and on 2 and
//! 3 processes (threads standing in for them), as on the world itself - on
//! BG/L and on BG/P (DMA engine, VN mode), with messages of every protocol.

mod common;

use bgsim::machine::{self, Machine, MachineSource, Mapping};
use bgsim::mpi::skeleton::{Halo, SkeletonRun};
use bgsim::mpi::{MpiError, World};

fn machine(preset: &str, settings: &[&str]) -> Machine {
    let s: Vec<String> = settings.iter().map(|x| x.to_string()).collect();
    machine::load(&MachineSource::Preset(preset.into()), &s).unwrap()
}

fn same(a: &SkeletonRun, b: &SkeletonRun) -> bool {
    a.ranks == b.ranks && a.messages == b.messages && a.events == b.events && a.simulated_s.to_bits() == b.simulated_s.to_bits()
}

/// The halo on `w` (one partition), then on copies of it cut 2, 3 and 4
/// ways on one and two threads: every run must give the first one's result.
fn check(m: &Machine, nranks: u32, mapping: &str, halo: &Halo) -> SkeletonRun {
    let map = Mapping::order(mapping).unwrap();
    let mut w = World::new(m, nranks, &map, 7, true).unwrap();
    let fresh = w.fresh_copy().unwrap();
    let one = halo.run(&mut w).unwrap();
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
