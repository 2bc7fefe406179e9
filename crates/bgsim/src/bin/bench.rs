//! `make bench`: the fixed torus workload of BENCHMARKS.md.
//!
//! Uniform random traffic of 256-byte packets at 90% of saturation load on a
//! 16x16x16 torus with dynamic routing, for a fixed simulated time; then the
//! memory of an idle 64x32x32 machine and a short random-traffic run on it.
//! Prints one JSON object per measurement on stdout.
//!
//! Options: see `USAGE` (`bgsim-bench --help`). A shared machine's speed
//! varies from run to run, so the throughput workload runs several times and
//! the report gives the median and the best; the results are identical.

use bgsim::machine::bgl;
use bgsim::torus::Torus;
use bgsim::workload::{run_with, Pattern, Routing, RunOptions, TrafficSpec};
use serde_json::json;
use std::time::Instant;

fn rss_kb() -> u64 {
    bgsim::engine::process_memory_bytes("VmRSS").unwrap_or(0) / 1024
}

fn peak_rss_kb() -> u64 {
    bgsim::engine::process_memory_bytes("VmHWM").unwrap_or(0) / 1024
}

const USAGE: &str = "usage: bgsim-bench [--torus-only] [--quick] [--shape AxBxC] [--runs N]

The fixed workloads of BENCHMARKS.md; one JSON object per measurement on stdout.

  --torus-only   only the throughput workload (uniform random traffic, 256-byte
                 packets, 90% of saturation load, dynamic routing)
  --quick        5,000 instead of 40,000 network cycles (500 instead of 3,000
                 on 64x32x32)
  --shape AxBxC  the throughput workload on another machine size (default 16x16x16)
  --runs N       how often the throughput workload runs (default 5); the report
                 gives the median and the best wall time
  --threads N    run the traffic workloads on N threads, cut into N partitions
                 (default 1; the results are the same for every N)
  --partitions P cut them into P partitions instead (at least N)
  -h, --help     this text";

/// Stops with the usage and exit status 2 (bad command line).
fn usage_error(msg: &str) -> ! {
    eprintln!("bgsim-bench: {msg}\n\n{USAGE}");
    std::process::exit(2);
}

fn main() {
    // One pass over the options: a value is never read as an option.
    let (mut quick, mut only_torus) = (false, false);
    // `--shape AxBxC` runs the throughput workload on another machine size
    // (to see how the working set affects speed); the report uses 16x16x16.
    let mut shape = String::from("16x16x16");
    let mut runs: usize = 5;
    let mut threads: usize = 1;
    let mut partitions: usize = 0;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            "--quick" => quick = true,
            "--torus-only" => only_torus = true,
            "--shape" | "--runs" | "--threads" | "--partitions" => {
                let Some(value) = args.next() else { usage_error(&format!("{arg} needs a value")) };
                if arg == "--shape" {
                    shape = value;
                } else {
                    let n = match value.parse() {
                        Ok(n) if n >= 1 => n,
                        _ => usage_error(&format!("{arg} takes a whole number, at least 1, not '{value}'")),
                    };
                    match arg.as_str() {
                        "--runs" => runs = n,
                        "--threads" => threads = n,
                        _ => partitions = n,
                    }
                }
            }
            other => usage_error(&format!("unknown option '{other}'")),
        }
    }
    let opts = RunOptions { threads, partitions: partitions.max(threads) };
    // 1. Throughput on 16x16x16.
    let m = bgl(&[&format!("partition.shape={shape}")]).unwrap_or_else(|e| usage_error(&format!("--shape {shape}: {e}")));
    let measure_ncycles: u64 = if quick { 5_000 } else { 40_000 };
    let mut s = TrafficSpec::new(Pattern::Uniform);
    s.common.routing = Routing::Dynamic;
    for (k, v) in [("payload_bytes", json!(240)), ("load", json!(0.9)), ("warmup_ncycles", json!(0)), ("measure_ncycles", json!(measure_ncycles))] {
        s.set(k, v).expect("a uniform option");
    }
    let before = rss_kb();
    let mut walls = Vec::new();
    let mut r = None;
    for _ in 0..runs {
        let res = run_with(&m, &s, opts, &mut |_| true).expect("run");
        walls.push(res.engine.wall_s);
        r = Some(res);
    }
    let r = r.expect("one run");
    walls.sort_by(f64::total_cmp);
    let (median, best) = (walls[walls.len() / 2], walls[0]);
    let sim_us = m.micros(measure_ncycles * m.tick_byte);
    println!(
        "{}",
        serde_json::json!({
            "benchmark": format!("torus_uniform_{shape}_load0.9_dynamic{}", if threads > 1 { format!("_threads{threads}") } else { String::new() }),
            "simulated_ncycles": measure_ncycles,
            "simulated_us": sim_us,
            "runs": walls.len(),
            "threads": threads,
            "partitions": opts.partitions,
            "wall_s": median,
            "wall_s_best": best,
            "packet_hops": r.packets.hops,
            "packet_hops_per_s": r.packets.hops as f64 / median,
            "packet_hops_per_s_best": r.packets.hops as f64 / best,
            "sim_us_per_wall_s": sim_us / median,
            "events": r.engine.events,
            "events_per_s": r.engine.events as f64 / median,
            "arbitrations": r.engine.arbitrations,
            "head_evaluations": r.engine.head_evaluations,
            "mean_link_util_pct": r.links.mean_util_pct,
            "mean_latency_ncycles": r.latency_ncycles.mean,
            "rss_growth_kb": rss_kb().saturating_sub(before),
        })
    );
    if only_torus {
        return;
    }
    // 2. Memory per idle node: a 64x32x32 machine, constructed and idle.
    let big = bgl(&["partition.shape=64x32x32"]).expect("machine");
    let before = rss_kb();
    let t0 = Instant::now();
    let torus = Torus::new(&big, 1);
    let dma = bgsim::dma::Dma::new(&big);
    let cores = bgsim::node::Cores::new(&big, dma.is_some());
    let build_s = t0.elapsed().as_secs_f64();
    let after = rss_kb();
    let nodes = big.shape.nodes() as f64;
    println!(
        "{}",
        serde_json::json!({
            "benchmark": "idle_memory_64x32x32",
            "nodes": nodes,
            "build_s": build_s,
            "bytes_per_idle_node": (after.saturating_sub(before) as f64 * 1024.0) / nodes,
            "router_struct_bytes": Torus::router_bytes_per_node(),
        })
    );
    drop(torus);
    drop(cores);
    drop(dma);
    // 3. A short random-traffic run on 65,536 nodes.
    let measure_ncycles: u64 = if quick { 500 } else { 3_000 };
    let mut s = TrafficSpec::new(Pattern::Uniform);
    for (k, v) in [("load", json!(0.5)), ("warmup_ncycles", json!(0)), ("measure_ncycles", json!(measure_ncycles))] {
        s.set(k, v).expect("a uniform option");
    }
    let r = run_with(&big, &s, opts, &mut |_| true).expect("run");
    println!(
        "{}",
        serde_json::json!({
            "benchmark": "uniform_64x32x32_load0.5",
            "threads": threads,
            "partitions": opts.partitions,
            "simulated_ncycles": measure_ncycles,
            "wall_s": r.engine.wall_s,
            "packets_delivered": r.packets.delivered,
            "packet_hops_per_s": r.engine.hops_per_s,
            "peak_rss_mb": peak_rss_kb() as f64 / 1024.0,
        })
    );
}
