//! The windowed engine: a traffic run cut into 1, 2 or 4 partitions, on one
//! thread or two, gives the same result, field for field (ROSS-style).

mod common;

use bgsim::machine::{bgl, Machine};
use bgsim::workload::{self, Pattern, Routing, RunOptions, TrafficSpec};

fn machine(shape: &str, extra: &[&str]) -> Machine {
    let s = format!("partition.shape={shape}");
    let mut settings = vec![s.as_str()];
    settings.extend_from_slice(extra);
    bgl(&settings).unwrap()
}

/// The result as JSON without what depends on the run's host: wall-clock
/// figures and how the run was cut.
fn result(m: &Machine, s: &TrafficSpec, opts: RunOptions) -> serde_json::Value {
    let r = workload::run_with(m, s, opts, &mut |_| true).unwrap();
    assert_eq!(r.engine.threads, opts.threads.min(r.engine.partitions));
    let mut v = serde_json::to_value(r).unwrap();
    let e = v.get_mut("engine").unwrap();
    for k in ["wall_s", "events_per_s", "hops_per_s", "sim_us_per_wall_s", "partitions", "threads", "packet_slots"] {
        e[k] = 0.into();
    }
    v
}

/// Runs `s` at 1, 2 and 4 partitions, on one and two threads, and checks
/// every result against the unpartitioned one.
fn same_for_every_cut(m: &Machine, s: &TrafficSpec) {
    let one = result(m, s, RunOptions::default());
    for (threads, partitions) in [(1, 2), (1, 4), (2, 2), (2, 4)] {
        let other = result(m, s, RunOptions { threads, partitions });
        if other != one {
            let (a, b) = (one.as_object().unwrap(), other.as_object().unwrap());
            let diff: Vec<&String> = a.keys().filter(|k| a[*k] != b[*k]).collect();
            panic!("{:?} on {} partitions, {threads} thread(s): differs in {diff:?}", s.kind(), partitions);
        }
    }
}

#[test]
fn timed_patterns_are_the_same_for_every_cut() {
    let m = machine("4x4x4", &[]);
    for (pat, routing) in [(Pattern::Uniform, Routing::Dynamic), (Pattern::Uniform, Routing::Deterministic), (Pattern::HotRegion, Routing::Dynamic)] {
        let mut s = TrafficSpec::new(pat);
        s.set("load", 0.9).unwrap();
        s.set("warmup_ncycles", 1000).unwrap();
        s.set("measure_ncycles", 4000).unwrap();
        s.common.routing = routing;
        s.common.per_link = true;
        same_for_every_cut(&m, &s);
    }
}

#[test]
fn finite_patterns_are_the_same_for_every_cut() {
    for (pat, shape, bytes) in [
        (Pattern::Alltoall, "4x4x2", 480),
        (Pattern::AlltoallStream, "4x4x2", 480),
        (Pattern::LineFill, "8x1x1", 4_000),
        (Pattern::PlaneFill, "4x4x1", 4_000),
        (Pattern::NearestNeighbor, "4x4x4", 240),
        (Pattern::HotSpot, "4x4x4", 240),
    ] {
        let m = machine(shape, &[]);
        let mut s = TrafficSpec::new(pat);
        let _ = (s.set("message_bytes", bytes).is_ok(), s.set("packets", 4).is_ok());
        s.common.per_link = true;
        same_for_every_cut(&m, &s);
    }
}

#[test]
fn drawn_sizes_dead_links_and_bit_errors_are_the_same_for_every_cut() {
    let mut s = TrafficSpec::new(Pattern::NearestNeighbor);
    s.set("packets", 4).unwrap();
    s.set("variable_size", true).unwrap();
    same_for_every_cut(&machine("4x4x4", &[]), &s);
    let mut s = TrafficSpec::new(Pattern::Uniform);
    s.set("load", 0.5).unwrap();
    s.set("warmup_ncycles", 500).unwrap();
    s.set("measure_ncycles", 3000).unwrap();
    s.set("drain", true).unwrap();
    same_for_every_cut(&machine("4x4x4", &["torus.dead_links=[\"1,1,1:x+\"]", "torus.link_bit_error_rate=1e-5"]), &s);
}

#[test]
fn a_pattern_whose_nodes_share_state_runs_as_one_partition() {
    let m = machine("4x4x4", &[]);
    let mut s = TrafficSpec::new(Pattern::Pingpong);
    s.set("hops", 3).unwrap();
    let r = workload::run_with(&m, &s, RunOptions::threads(2), &mut |_| true).unwrap();
    assert_eq!((r.engine.partitions, r.engine.threads), (1, 1));
    assert!(r.completed);
}

#[test]
fn a_deadlock_is_found_at_the_same_time_for_every_cut() {
    // Bubble accounting by a packet's actual size deadlocks this load
    // (see network.rs); the analysis runs on the merged partitions.
    let m = machine("8x8x8", &["torus.bubble_accounting=actual_size", "torus.in_network_priority_fraction=0"]);
    let mut s = TrafficSpec::new(Pattern::Uniform);
    s.common.routing = Routing::Deterministic;
    s.set("variable_size", true).unwrap();
    s.set("load", 3.0).unwrap();
    s.set("warmup_ncycles", 0).unwrap();
    s.set("measure_ncycles", 20_000).unwrap();
    s.common.deadlock_ncycles = 20_000;
    s.set("drain", true).unwrap();
    let r = workload::run_with(&m, &s, RunOptions::threads(2), &mut |_| true).unwrap();
    assert!(r.deadlock && r.packets.in_flight_at_end > 0);
    same_for_every_cut(&m, &s);
    // And on two processes: the analysis runs on the states process 0 gathered.
    assert!(distributed(&m, &s, 2) == result(&m, &s, RunOptions::default()), "the deadlock on 2 processes differs");
}

/// `s` on `n` processes (threads here) of a distributed run: process 0's result.
fn distributed(m: &Machine, s: &TrafficSpec, n: usize) -> serde_json::Value {
    let results: Vec<Option<bgsim::report::TrafficResult>> =
        common::processes(n, |t| workload::run_distributed(m, s, t, &mut |_| true).unwrap());
    assert!(results.iter().skip(1).all(Option::is_none), "only process 0 has the result");
    let r = results.into_iter().next().unwrap().expect("process 0 has the result");
    let mut v = serde_json::to_value(r).unwrap();
    let e = v.get_mut("engine").unwrap();
    for k in ["wall_s", "events_per_s", "hops_per_s", "sim_us_per_wall_s", "partitions", "threads", "packet_slots"] {
        e[k] = 0.into();
    }
    v
}

#[test]
fn a_run_on_several_processes_is_the_same_as_on_one() {
    let m = machine("4x4x4", &[]);
    let mut uniform = TrafficSpec::new(Pattern::Uniform);
    uniform.set("load", 0.9).unwrap();
    uniform.set("warmup_ncycles", 500).unwrap();
    uniform.set("measure_ncycles", 3000).unwrap();
    uniform.common.per_link = true;
    let mut hot = TrafficSpec::new(Pattern::HotSpot);
    hot.set("packets", 4).unwrap();
    let mut ping = TrafficSpec::new(Pattern::Pingpong);
    ping.set("hops", 2).unwrap();
    for s in [&uniform, &hot, &ping] {
        let one = result(&m, s, RunOptions::default());
        for n in [2, 3] {
            assert!(distributed(&m, s, n) == one, "{:?} on {n} processes differs", s.kind());
        }
    }
}
