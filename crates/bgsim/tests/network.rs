//! Integration tests: small machines end to end - conservation, minimal
//! routes, VC bounds, ordering, deposit bit, deadlock, determinism.

use bgsim::engine::{run_until, EngineStats, EventQueue, Tick};
use bgsim::machine::{bgl, Machine};
use bgsim::packet::{Net, Routing, Software};
use bgsim::torus::{flags, Packet};
use bgsim::workload::{self, build, Pattern, TrafficSpec, WorkloadError};
use std::collections::HashMap;

/// Test software: every node sends `per_pair` packets to every other node
/// (or a given list of sends), and records what arrives.
struct Recorder {
    sends: Vec<(u32, u32, Routing, u32)>, // (src, dst, routing, payload)
    next: Vec<usize>,
    by_src: Vec<Vec<usize>>,
    got: Vec<Packet>,
    at: Vec<Tick>,
}

impl Recorder {
    fn new(nodes: u32, sends: Vec<(u32, u32, Routing, u32)>) -> Self {
        let mut by_src = vec![vec![]; nodes as usize];
        for (i, s) in sends.iter().enumerate() {
            by_src[s.0 as usize].push(i);
        }
        Recorder { sends, next: vec![0; nodes as usize], by_src, got: vec![], at: vec![] }
    }
}

impl Software for Recorder {
    fn start(&mut self, net: &mut Net, q: &mut EventQueue) {
        for n in 0..net.torus().node_count() {
            net.compute(q, 0, n, 0, 0);
        }
    }
    fn refill(&mut self, net: &mut Net, q: &mut EventQueue, now: Tick, node: u32, _core: usize) {
        let k = self.next[node as usize];
        if let Some(&i) = self.by_src[node as usize].get(k) {
            self.next[node as usize] += 1;
            let (s, d, r, pl) = self.sends[i];
            let mut p = net.packet(s, d, pl, r, now);
            p.tag = i as u64;
            net.send(q, now, node, p, None);
        }
    }
    fn on_packet(&mut self, _net: &mut Net, _q: &mut EventQueue, now: Tick, _node: u32, _core: usize, pkt: &Packet) {
        self.got.push(*pkt);
        self.at.push(now);
    }
}

struct Harness<S: Software> {
    net: Net,
    sw: S,
}

impl<S: Software> bgsim::engine::Model for Harness<S> {
    fn handle(&mut self, now: Tick, ev: bgsim::engine::Event, q: &mut EventQueue) {
        self.net.handle(&mut self.sw, now, ev, q);
    }
}

fn run_all<S: Software>(m: &Machine, sw: S) -> Harness<S> {
    let mut h = Harness { net: Net::new(m, 7), sw };
    let mut q = EventQueue::new();
    let mut st = EngineStats::default();
    h.sw.start(&mut h.net, &mut q);
    let mut t = 0;
    while !q.is_empty() {
        t = run_until(&mut h, &mut q, t + 50_000, &mut st);
        assert!(h.net.torus().max_vc_used() <= m.vc_tokens as u16, "VC holds more than its size");
        assert!(t < 1_000_000_000, "run did not finish");
    }
    h
}

fn all_pairs(m: &Machine, per_pair: u32, routing: Routing, payload: u32) -> Vec<(u32, u32, Routing, u32)> {
    let n = m.shape.nodes();
    let mut v = vec![];
    for r in 0..per_pair {
        for s in 0..n {
            for j in 1..n {
                let _ = r;
                v.push((s, (s + j) % n, routing, payload));
            }
        }
    }
    v
}

fn machine(shape: &str, extra: &[&str]) -> Machine {
    let mut s = vec![format!("partition.shape={shape}")];
    s.extend(extra.iter().map(|x| x.to_string()));
    let refs: Vec<&str> = s.iter().map(|x| x.as_str()).collect();
    bgl(&refs).unwrap()
}

fn check_conservation(m: &Machine, routing: Routing, payload: u32) {
    let sends = all_pairs(m, 2, routing, payload);
    let total = sends.len();
    let h = run_all(m, Recorder::new(m.shape.nodes(), sends.clone()));
    // Every packet injected is delivered exactly once, to its destination.
    assert_eq!(h.sw.got.len(), total);
    let mut seen = vec![false; total];
    for p in &h.sw.got {
        let i = p.tag as usize;
        assert!(!seen[i], "packet {i} delivered twice");
        seen[i] = true;
        assert_eq!((p.src, p.dest), (sends[i].0, sends[i].1));
        // Minimal routes.
        assert_eq!(p.hops as u32, h.net.torus().geo.distance(p.src, p.dest), "non-minimal route {} -> {}", p.src, p.dest);
    }
    // Every token came back, nothing is left anywhere.
    h.net.torus().check_tokens_quiescent().unwrap();
    assert_eq!(h.net.torus().live_packets(), 0);
    assert_eq!(h.net.torus().global.injected_packets, total as u64);
    assert_eq!(h.net.torus().global.delivered_packets, total as u64);
}

/// A link counts a packet's payload from the moment its transfer starts,
/// whether the payload is added then or when the transfer ends (a hop
/// latency longer than the trailer and gap, as on BG/L): at any time, with
/// transfers under way, and at the end, when it adds up to every packet's
/// payload times its hops.
fn check_link_payload(m: &Machine) {
    const PAYLOAD: u32 = 200;
    let sends = all_pairs(m, 1, Routing::Dynamic, PAYLOAD);
    let mut h = Harness { net: Net::new(m, 7), sw: Recorder::new(m.shape.nodes(), sends.clone()) };
    let mut q = EventQueue::new();
    let mut st = EngineStats::default();
    h.sw.start(&mut h.net, &mut q);
    let (mut t, mut under_way) = (0, 0);
    while !q.is_empty() {
        t = run_until(&mut h, &mut q, t + 300, &mut st);
        let (packets, payload) = h.net.torus().links().fold((0, 0), |(a, b), l| (a + l.packets, b + l.payload));
        assert_eq!(payload, packets * PAYLOAD as u64, "at tick {t}");
        under_way += (packets > h.sw.got.iter().map(|p| p.hops as u64).sum::<u64>()) as u32;
    }
    assert!(under_way > 10, "too few looks with packets on their way: {under_way}");
    let hops: u64 = h.sw.got.iter().map(|p| p.hops as u64).sum();
    assert_eq!(h.sw.got.len(), sends.len());
    assert_eq!(h.net.torus().links().map(|l| l.packets).sum::<u64>(), hops);
    assert_eq!(h.net.torus().links().map(|l| l.payload).sum::<u64>(), hops * PAYLOAD as u64);
}

#[test]
fn links_count_payload_from_the_start_of_each_transfer() {
    // BG/L: the payload is added when the transfer ends.
    check_link_payload(&machine("4x4x2", &[]));
    // A hop shorter than the trailer and gap: added when it starts.
    check_link_payload(&machine("4x4x2", &["torus.hop_latency_cycles=1"]));
}

#[test]
fn conservation_dynamic_torus() {
    check_conservation(&machine("4x4x2", &[]), Routing::Dynamic, 240);
}

#[test]
fn conservation_deterministic_mesh_with_small_packets() {
    check_conservation(&machine("3x4x2", &["partition.mesh=xyz"]), Routing::Deterministic, 16);
}

#[test]
fn conservation_under_every_escape_scheme_and_vc_count() {
    for extra in [
        &["torus.escape=dateline_dim"][..],
        &["torus.escape=dateline_dir", "torus.dynamic_vcs=1"][..],
        &["torus.dynamic_vcs=4", "torus.paths_per_receiver=4"][..],
        &["torus.arbitration=random", "torus.vc_buffer_bytes=512"][..],
        &["torus.arbitration=jsq", "torus.in_network_priority_fraction=0"][..],
    ] {
        check_conservation(&machine("4x4x4", extra), Routing::Dynamic, 240);
    }
}

#[test]
fn dimension_of_size_one_and_odd_rings() {
    check_conservation(&machine("5x1x3", &[]), Routing::Dynamic, 100);
    check_conservation(&machine("1x1x6", &[]), Routing::Deterministic, 240);
}

#[test]
fn deterministic_packets_between_a_pair_arrive_in_order() {
    let m = machine("4x4x4", &[]);
    // Many packets from several sources to one destination, plus background.
    let mut sends = vec![];
    for k in 0..40u32 {
        for s in [0u32, 5, 21, 63] {
            sends.push((s, 42, Routing::Deterministic, 16 + (k * 37) % 224));
        }
        sends.push((42, (k * 7) % 64, Routing::Dynamic, 240));
    }
    sends.retain(|s| s.0 != s.1);
    let h = run_all(&m, Recorder::new(64, sends.clone()));
    let mut last: HashMap<u32, u64> = HashMap::new();
    for p in h.sw.got.iter().filter(|p| !p.is(flags::DYNAMIC)) {
        if let Some(&prev) = last.get(&p.src) {
            assert!(p.tag > prev, "deterministic packets from {} overtook each other", p.src);
        }
        last.insert(p.src, p.tag);
    }
    assert_eq!(last.len(), 4);
}

/// Deposit bit: one line packet is delivered to every node it passes.
struct LineCast {
    from: u32,
    to: u32,
    dir: usize,
    got: Vec<u32>,
}

impl Software for LineCast {
    fn start(&mut self, net: &mut Net, q: &mut EventQueue) {
        let p = net.line_packet(self.from, self.to, self.dir, 240, 0);
        net.send(q, 0, self.from, p, None);
    }
    fn on_packet(&mut self, _net: &mut Net, _q: &mut EventQueue, _now: Tick, node: u32, _core: usize, _pkt: &Packet) {
        self.got.push(node);
    }
}

#[test]
fn deposit_bit_reaches_every_node_of_the_line() {
    let m = machine("8x2x2", &[]);
    // From x=2 along x- the long way round to x=3: passes 1, 0, 7, 6, 5, 4, 3.
    let h = run_all(&m, LineCast { from: 2, to: 3, dir: 1, got: vec![] });
    let mut got = h.sw.got.clone();
    got.sort();
    assert_eq!(got, vec![0, 1, 3, 4, 5, 6, 7]);
    h.net.torus().check_tokens_quiescent().unwrap();
    assert_eq!(h.net.torus().live_packets(), 0);
    // Along y in the y=0..1 ring of x=0: only the one other node.
    let h = run_all(&m, LineCast { from: 0, to: 8, dir: 2, got: vec![] });
    assert_eq!(h.sw.got, vec![8]);
}

fn deadlock_spec(seed: u64) -> TrafficSpec {
    let mut s = TrafficSpec::new(Pattern::Uniform);
    s.common.routing = Routing::Deterministic;
    s.set("variable_size", true).unwrap();
    s.set("load", 3.0).unwrap();
    s.set("warmup_ncycles", 0).unwrap();
    s.set("measure_ncycles", 20_000).unwrap();
    s.common.deadlock_ncycles = 20_000;
    s.set("drain", true).unwrap();
    s.common.seed = seed;
    s
}

#[test]
fn naive_bubble_accounting_deadlocks_and_full_size_does_not() {
    let naive = machine("8x8x8", &["torus.bubble_accounting=actual_size", "torus.in_network_priority_fraction=0"]);
    let full = machine("8x8x8", &["torus.bubble_accounting=full_size", "torus.in_network_priority_fraction=0"]);
    let r = workload::run(&naive, &deadlock_spec(1), &mut |_| true).unwrap();
    assert!(r.deadlock, "actual-size accounting should deadlock");
    assert!(r.packets.in_flight_at_end > 0);
    let t = r.ncycles_to_deadlock.unwrap();
    assert!(t > 0.0 && t < 20_000.0, "deadlock formed at {t}");
    for seed in [1, 2] {
        let r = workload::run(&full, &deadlock_spec(seed), &mut |_| true).unwrap();
        assert!(!r.deadlock, "full-size accounting deadlocked (seed {seed})");
        assert_eq!(r.packets.in_flight_at_end, 0);
        assert_eq!(r.packets.injected, r.packets.delivered);
    }
}

fn strip_wall(v: &mut serde_json::Value) {
    if let Some(e) = v.get_mut("engine") {
        e["wall_s"] = 0.into();
        e["events_per_s"] = 0.into();
        e["hops_per_s"] = 0.into();
        e["sim_us_per_wall_s"] = 0.into();
    }
}

#[test]
fn same_seed_same_results_and_counters() {
    let m = machine("4x4x4", &[]);
    let mut s = TrafficSpec::new(Pattern::HotRegion);
    s.set("region_lo", [1, 1, 1]).unwrap();
    s.set("region_size", [2, 2, 2]).unwrap();
    s.set("load", 0.9).unwrap();
    s.set("warmup_ncycles", 1000).unwrap();
    s.set("measure_ncycles", 5000).unwrap();
    s.common.per_link = true;
    let run = |s: &TrafficSpec| {
        let mut v = serde_json::to_value(workload::run(&m, s, &mut |_| true).unwrap()).unwrap();
        strip_wall(&mut v);
        v
    };
    let a = run(&s);
    let b = run(&s);
    assert_eq!(a, b);
    s.common.seed = 2;
    let c = run(&s);
    assert_ne!(a["latency_histogram"], c["latency_histogram"]);
}

#[test]
fn finite_patterns_complete_and_stay_within_their_bound() {
    for (pat, shape, bytes) in [
        (Pattern::Alltoall, "4x4x2", 480),
        (Pattern::LineFill, "8x1x1", 24_000),
        (Pattern::PlaneFill, "8x8x1", 24_000),
        (Pattern::NearestNeighbor, "4x4x4", 240),
        (Pattern::HotSpot, "4x4x4", 240),
    ] {
        let m = machine(shape, &[]);
        let mut s = TrafficSpec::new(pat);
        // Each pattern reads one of the two.
        let (m_ok, p_ok) = (s.set("message_bytes", bytes).is_ok(), s.set("packets", 4).is_ok());
        assert!(m_ok != p_ok, "{pat:?} reads message_bytes: {m_ok}, packets: {p_ok}");
        let r = workload::run(&m, &s, &mut |_| true).unwrap();
        assert!(r.completed, "{pat:?} did not complete");
        assert!(r.pct_peak > 10.0 && r.pct_peak <= 100.0, "{pat:?}: {}% of peak", r.pct_peak);
    }
}

#[test]
fn pingpong_latency_is_above_its_bound_and_grows_per_hop() {
    let m = machine("2x2x2", &["partition.mesh=xyz"]);
    let mut prev = 0.0;
    for hops in 1..=3 {
        let mut s = TrafficSpec::new(Pattern::Pingpong);
        s.set("hops", hops).unwrap();
        s.set("message_bytes", 32).unwrap();
        s.common.routing = Routing::Deterministic;
        let r = workload::run(&m, &s, &mut |_| true).unwrap();
        let one_way = r.oneway_cycles.iter().sum::<f64>() / r.oneway_cycles.len() as f64;
        // Legs differ at most by one poll of an idle core, and lie above the network-only bound.
        assert!(r.oneway_cycles.iter().all(|&x| (x - one_way).abs() <= 30.0));
        assert!(one_way > r.bound_ncycles * 4.0);
        if hops > 1 {
            // One more hop costs the hop latency (63 cycles).
            assert!((one_way - prev - 63.0).abs() < 2.0, "hop {hops}: {one_way} after {prev}");
        }
        prev = one_way;
    }
}

#[test]
fn traffic_spec_errors_name_the_value() {
    let m = machine("2x2x2", &[]);
    let mut s = TrafficSpec::new(Pattern::Pingpong);
    s.set("hops", 9).unwrap();
    let e = build(&m, &s).err().unwrap();
    assert!(matches!(e, WorkloadError::Invalid { key: "hops", ref value, .. } if value == "9"), "{e}");
    assert!(e.to_string().contains("hops") && e.to_string().contains('9'), "{e}");
    let mut s = TrafficSpec::new(Pattern::HotSpot);
    s.set("region_size", [3, 1, 1]).unwrap();
    let e = build(&m, &s).err().unwrap();
    assert_eq!(e, WorkloadError::Region { size: [3, 1, 1], lo: [0, 0, 0], dims: [2, 2, 2] });
    assert!(e.to_string().contains("region"), "{e}");
    let mut s = TrafficSpec::new(Pattern::Uniform);
    s.set("load", -1.0).unwrap();
    assert!(matches!(build(&m, &s).err().unwrap(), WorkloadError::Invalid { key: "load", .. }));
    let e = serde_json::from_str::<TrafficSpec>(r#"{"pattern":"uniform","lod":0.5}"#).unwrap_err().to_string();
    assert!(e.contains("lod"), "{e}");
    let e = serde_json::from_str::<TrafficSpec>(r#"{"pattern":"tornado"}"#).unwrap_err().to_string();
    assert!(e.contains("tornado"), "{e}");
}

#[test]
fn running_in_lookahead_windows_gives_the_same_result() {
    // The conservative window protocol advances every partition in windows
    // of the minimum link latency; the serial engine stepped that way must
    // give exactly what one long run gives.
    let m = machine("4x4x4", &[]);
    let mut s = TrafficSpec::new(Pattern::Uniform);
    s.set("load", 0.8).unwrap();
    let plan = bgsim::engine::WindowPlan::new(m.hop_latency);
    let end: Tick = 20_000 * m.tick_byte;
    let run = |windowed: bool| {
        let mut sim = build(&m, &s).unwrap();
        let rate = sim.driver.offered_rate(sim.driver.peak_rate(&m));
        sim.driver.set_rate(rate, end);
        let mut q = EventQueue::new();
        let mut st = EngineStats::default();
        sim.driver.start(&mut sim.net, &mut q);
        if windowed {
            let mut t = 0;
            while t < end {
                t = run_until(&mut sim, &mut q, plan.window_end(t).min(end), &mut st);
            }
        } else {
            run_until(&mut sim, &mut q, end, &mut st);
        }
        let g = &sim.net.torus().global;
        (st.events, g.hops, g.delivered_packets, g.latency.sum, sim.net.torus().links().map(|l| l.bytes).collect::<Vec<_>>())
    };
    let a = run(false);
    let b = run(true);
    assert!(a.1 > 10_000);
    assert_eq!(a, b);
}

/// Runs `sim` to `end`, checking after every event that arbitration at the
/// event's node left no head that could start (see `Torus::movable_head`).
struct Conserving {
    sim: workload::Sim,
    checked: u64,
}

impl bgsim::engine::Model for Conserving {
    fn handle(&mut self, now: Tick, ev: bgsim::engine::Event, q: &mut EventQueue) {
        let node = ev.node;
        self.sim.handle(now, ev, q);
        if let Some(head) = self.sim.net.torus().movable_head(node) {
            panic!("at tick {now}, after event kind {}: {head}", ev.kind);
        }
        self.checked += 1;
    }
}

#[test]
fn arbitration_leaves_no_head_that_could_move() {
    let cases: &[(&str, &[&str], Pattern, Routing, bool)] = &[
        ("4x4x4", &[], Pattern::Uniform, Routing::Dynamic, false),
        ("4x4x4", &["torus.dynamic_vcs=1", "torus.paths_per_receiver=1"], Pattern::Uniform, Routing::Dynamic, false),
        ("4x4x4", &["torus.dynamic_vcs=4", "torus.paths_per_receiver=4", "torus.arbitration=slq"], Pattern::Uniform, Routing::Dynamic, true),
        ("4x4x4", &["torus.arbitration=random"], Pattern::HotRegion, Routing::Dynamic, false),
        ("4x4x4", &[], Pattern::Uniform, Routing::Deterministic, true),
        ("8x4x2", &["torus.escape=dateline_dir"], Pattern::Uniform, Routing::Dynamic, false),
        ("4x4x4", &["torus.escape=dateline_dim", "torus.vc_buffer_bytes=512"], Pattern::HotRegion, Routing::Dynamic, true),
        ("8x8x2", &[], Pattern::LineFill, Routing::Dynamic, false),
        ("8x8x2", &[], Pattern::PlaneFill, Routing::Dynamic, false),
        ("4x4x4", &["partition.mesh=xz", "partition.mode=vn"], Pattern::Uniform, Routing::Dynamic, true),
    ];
    for &(shape, settings, pattern, routing, variable_size) in cases {
        let m = machine(shape, settings);
        let mut s = TrafficSpec::new(pattern);
        s.common.routing = routing;
        if variable_size {
            s.set("variable_size", true).unwrap();
        }
        if pattern.options().contains_key("load") {
            s.set("load", 0.95).unwrap();
        }
        if pattern == Pattern::HotRegion {
            s.set("region_lo", [1, 1, 1]).unwrap();
            s.set("region_size", [2, 2, 2]).unwrap();
        }
        if matches!(pattern, Pattern::LineFill | Pattern::PlaneFill) {
            s.set("message_bytes", 40_000).unwrap();
        }
        let end: Tick = 8_000 * m.tick_byte;
        let mut sim = build(&m, &s).unwrap();
        if pattern.is_timed() {
            let rate = sim.driver.offered_rate(sim.driver.peak_rate(&m));
            sim.driver.set_rate(rate, end);
        }
        let mut q = EventQueue::new();
        let mut st = EngineStats::default();
        sim.driver.start(&mut sim.net, &mut q);
        let mut c = Conserving { sim, checked: 0 };
        run_until(&mut c, &mut q, end, &mut st);
        let hops = c.sim.net.torus().global.hops;
        assert!(hops > 300 && c.checked > 3 * hops, "{shape} {settings:?}: {hops} hops, {} events checked", c.checked);
    }
}
