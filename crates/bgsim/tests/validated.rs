//! The validator and the model agree: every machine the validator accepts
//! runs - traffic drains and MPI messages arrive - and the settings that
//! used to lose every packet are refused by name.

use bgsim::machine::{self, Machine, Mapping};
use bgsim::mpi::driven::Ranks;
use bgsim::mpi::{SendCall, World};
use bgsim::workload::{self, Pattern, Routing, TrafficSpec};
use proptest::prelude::*;

fn load(settings: &[String]) -> Result<Machine, String> {
    let refs: Vec<&str> = settings.iter().map(String::as_str).collect();
    machine::bgl(&refs).map_err(|e| e.to_string())
}

/// Uniform traffic for a while, then until the network is empty.
fn drains(m: &Machine, routing: Routing, variable: bool) {
    let mut s = TrafficSpec::new(Pattern::Uniform);
    s.common.routing = routing;
    s.common.deadlock_ncycles = 20_000;
    s.set("load", 0.7).unwrap();
    s.set("warmup_ncycles", 0).unwrap();
    s.set("measure_ncycles", 3_000).unwrap();
    s.set("drain", true).unwrap();
    if variable {
        s.set("variable_size", true).unwrap();
    }
    let r = workload::run(m, &s, &mut |_| true).unwrap();
    let p = &r.packets;
    assert!(r.completed && !r.deadlock, "{routing:?}: not drained: {p:?}");
    assert!(p.injected > 0 && p.delivered == p.injected + p.deposit_copies && p.in_flight_at_end == 0, "{routing:?}: {p:?}");
}

/// Every rank sends a message of each protocol's size to the next rank
/// (and one to itself); all arrive, byte for byte.
fn messages_arrive(m: &Machine) {
    let n = (m.shape.nodes() - m.faults.nodes.len() as u32) * m.tasks_per_node();
    let mut w = Ranks::new(World::new(m, n, &Mapping::default(), 1, true).unwrap(), 1).unwrap();
    let sizes = [8usize, 200, 900, 5_000];
    let mut recvs = vec![];
    let mut sends = vec![];
    for r in 0..n {
        for (k, &size) in sizes.iter().enumerate() {
            for peer in [(r + 1) % n, r] {
                let data: Vec<u8> = (0..size).map(|i| (i as u32 * 7 + r + k as u32) as u8).collect();
                recvs.push((peer, w.irecv(peer, r as i64, 0, k as i32, size as u32).unwrap(), data.clone()));
                sends.push((r, w.isend(r, SendCall::new(peer as i64, 0, k as i32, data)).unwrap()));
            }
        }
    }
    for r in 0..n {
        let mine: Vec<u32> = recvs.iter().filter(|x| x.0 == r).map(|x| x.1).chain(sends.iter().filter(|x| x.0 == r).map(|x| x.1)).collect();
        let count = mine.len();
        w.block(r, mine, count);
    }
    let mut ready = 0;
    while ready < n {
        ready += w.run().expect("every message arrives").len() as u32;
    }
    for (peer, req, data) in recvs {
        assert_eq!(w.take_data(req).unwrap(), data, "rank {peer}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_machine_the_validator_accepts_runs(
        chunk in prop::sample::select(vec![16u32, 32, 64]),
        chunks in 2u32..=12,
        token in prop::sample::select(vec![8u32, 16]),
        buffer_packets in 1u32..=4,
        dynamic_vcs in 1u32..=4,
        escape in prop::sample::select(vec!["bubble", "dateline_dim", "dateline_dir"]),
        arbitration in prop::sample::select(vec!["random", "jsq", "slq"]),
        injection_fifos in 1u32..=8,
        mode in prop::sample::select(vec!["coprocessor", "vn", "heater"]),
        shape in prop::sample::select(vec!["2x2x2", "4x2x1", "3x2x2"]),
        mesh in prop::sample::select(vec!["", "x", "xyz"]),
        variable in any::<bool>(),
    ) {
        let settings = vec![
            format!("partition.shape=\"{shape}\""),
            format!("partition.mesh=\"{mesh}\""),
            format!("partition.mode=\"{mode}\""),
            format!("torus.chunk_bytes={chunk}"),
            format!("torus.max_packet_chunks={chunks}"),
            format!("torus.token_bytes={token}"),
            format!("torus.vc_buffer_bytes={}", buffer_packets * chunk * chunks),
            format!("torus.dynamic_vcs={dynamic_vcs}"),
            format!("torus.escape=\"{escape}\""),
            format!("torus.arbitration=\"{arbitration}\""),
            format!("torus.injection_fifos={injection_fifos}"),
            // Headers must leave room for a payload and the message layer's metadata.
            "torus.sw_header_bytes=8".to_string(),
            "msglayer.metadata_bytes=8".to_string(),
            format!("mpi.one_packet_max_bytes={}", (chunk * chunks).saturating_sub(40).min(200)),
        ];
        let m = match load(&settings) {
            Ok(m) => m,
            Err(e) => {
                // Refused: with a message naming a key.
                prop_assert!(e.contains("key `"), "{e}");
                return Ok(());
            }
        };
        drains(&m, Routing::Deterministic, variable);
        drains(&m, Routing::Dynamic, variable);
        messages_arrive(&m);
    }
}

#[test]
fn settings_that_lost_every_packet_are_refused_by_name() {
    for (settings, key) in [
        (&["torus.vc_buffer_bytes=256"][..], "torus.vc_buffer_bytes"),
        (&["torus.chunk_bytes=128"][..], "torus.vc_buffer_bytes"),
        (&["torus.max_packet_chunks=24"][..], "torus.vc_buffer_bytes"),
        (&["partition.mode=\"vn\"", "node.cores=8", "partition.shape=\"2x1x1\""][..], "node.cores"),
        (&["partition.mode=\"vn\"", "torus.injection_fifos=1", "partition.shape=\"3x5x7\""][..], "torus.injection_fifos"),
    ] {
        let e = load(&settings.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap_err();
        assert!(e.contains(&format!("key `{key}`")), "{settings:?}: {e}");
    }
}

#[test]
fn dual_mode_delivers_long_messages_to_both_tasks() {
    let m = load(&["node.modes=[\"dual\"]".into(), "partition.mode=\"dual\"".into(), "partition.shape=\"2x2x1\"".into()]).unwrap();
    assert_eq!(m.tasks_per_node(), 2);
    messages_arrive(&m);
}

#[test]
fn link_bit_errors_are_resent_and_nothing_is_lost() {
    let mut resent = vec![];
    for ber in ["0.0", "1e-5", "1e-4"] {
        let m = load(&[format!("torus.link_bit_error_rate={ber}"), "partition.shape=\"4x4x2\"".into()]).unwrap();
        let mut s = TrafficSpec::new(Pattern::Uniform);
        s.set("load", 0.5).unwrap();
        s.set("warmup_ncycles", 0).unwrap();
        s.set("measure_ncycles", 5_000).unwrap();
        s.set("drain", true).unwrap();
        let r = workload::run(&m, &s, &mut |_| true).unwrap();
        let p = &r.packets;
        assert!(r.completed && p.delivered == p.injected && p.in_flight_at_end == 0, "{ber}: {p:?}");
        resent.push((r.links.retransmits, r.latency_ncycles.mean));
    }
    assert_eq!(resent[0].0, 0);
    assert!(resent[2].0 > resent[1].0 && resent[1].0 > 0, "{resent:?}");
    assert!(resent[2].1 > resent[0].1, "{resent:?}");
    assert!(load(&["torus.link_bit_error_rate=0.5".into()]).unwrap_err().contains("torus.link_bit_error_rate"));
}

#[test]
fn packets_route_around_dead_links_and_never_cross_them() {
    let dead = ["0,0,0:x+", "2,1,3:z-", "3,3,0:y+", "1,2,2:x-"];
    let set = format!("torus.dead_links=[{}]", dead.iter().map(|d| format!("\"{d}\"")).collect::<Vec<_>>().join(","));
    let m = load(&[set, "partition.shape=\"4x4x4\"".into()]).unwrap();
    let geo = bgsim::torus::Geometry::new(&m.shape);
    for routing in [Routing::Deterministic, Routing::Dynamic] {
        drains(&m, routing, false);
        let mut s = TrafficSpec::new(Pattern::Uniform);
        s.common.routing = routing;
        s.common.per_link = true;
        s.set("load", 0.6).unwrap();
        s.set("measure_ncycles", 4_000).unwrap();
        let r = workload::run(&m, &s, &mut |_| true).unwrap();
        assert_eq!(r.dead_links, Some(4));
        for d in dead {
            let (at, dir) = d.split_once(':').unwrap();
            let c: Vec<u32> = at.split(',').map(|x| x.parse().unwrap()).collect();
            let a = geo.index([c[0], c[1], c[2]]);
            let dir = bgsim::torus::DIR_NAMES.iter().position(|&n| n == dir).unwrap();
            let b = geo.neighbor(a, dir);
            assert_eq!(r.link_util_pct[(a * 6) as usize + dir], 0.0, "{routing:?}: dead link {d} carried traffic");
            assert_eq!(r.link_util_pct[(b * 6) as usize + (dir ^ 1)], 0.0, "{routing:?}: dead link {d} (other way) carried traffic");
        }
        assert!(r.links.max_util_pct > 10.0);
    }
    messages_arrive(&m);
}

#[test]
fn ranks_go_on_live_nodes_and_unreachable_pairs_are_refused() {
    // A ring with a dead node: the live nodes reach each other the other way round.
    let m = load(&["partition.shape=\"6x1x1\"".into(), "torus.dead_nodes=[\"2,0,0\"]".into()]).unwrap();
    messages_arrive(&m);
    let w = World::new(&m, 5, &Mapping::default(), 1, true).unwrap();
    assert!((0..5).all(|r| w.place(r).0 != 2), "a rank on the dead node");
    // A dead node where routes turn: the pairs that turn there go through
    // an intermediate node, and every message arrives.
    let m = load(&["partition.shape=\"4x4x1\"".into(), "torus.dead_nodes=[\"1,0,0\"]".into()]).unwrap();
    messages_arrive(&m);
    // A live node whose four neighbours are dead cannot be reached.
    let boxed = load(&["partition.shape=\"4x4x1\"".into(), "torus.dead_nodes=[\"0,1,0\",\"2,1,0\",\"1,0,0\",\"1,2,0\"]".into()]).unwrap();
    let e = World::new(&boxed, 12, &Mapping::default(), 1, true).err().expect("refused").to_string();
    assert!(e.contains("no route from node") && e.contains("cannot all reach each other"), "{e}");
    // Ranks that avoid it run.
    let slots: Vec<[u32; 4]> = (0..4).map(|x| [x, 3, 0, 0]).collect();
    assert!(World::new(&boxed, 4, &Mapping::Slots(slots), 1, true).is_ok());
    // Traffic patterns use every node: dead nodes are refused, and so are
    // fills with dead links.
    let uniform = TrafficSpec::new(Pattern::Uniform);
    let e = workload::run(&m, &uniform, &mut |_| true).err().unwrap().to_string();
    assert!(e.contains("dead node"), "{e}");
    let cut = load(&["partition.shape=\"4x4x4\"".into(), "torus.dead_links=[\"0,0,0:x+\"]".into()]).unwrap();
    let e = workload::run(&cut, &TrafficSpec::new(Pattern::LineFill), &mut |_| true).err().unwrap().to_string();
    assert!(e.contains("cannot route around dead links"), "{e}");
    // Two dead links on one ring cut it; the packets across go round by
    // another ring, through an intermediate node. Six dead links cut a
    // node off.
    let two = load(&["partition.shape=\"4x4x4\"".into(), "torus.dead_links=[\"0,0,0:x+\",\"2,0,0:x+\"]".into()]).unwrap();
    let mut spec = TrafficSpec::new(Pattern::Uniform);
    for (k, v) in [("load", serde_json::json!(0.3)), ("warmup_ncycles", serde_json::json!(0)), ("measure_ncycles", serde_json::json!(2000)), ("drain", serde_json::json!(true))] {
        spec.set(k, v).unwrap();
    }
    let r = workload::run(&two, &spec, &mut |_| true).unwrap();
    assert!(r.fault_forwarded_packets.unwrap() > 0 && r.completed);
    let alone: Vec<String> = ["x+", "x-", "y+", "y-", "z+", "z-"].iter().map(|d| format!("\"1,1,1:{d}\"")).collect();
    let cut = load(&["partition.shape=\"4x4x4\"".into(), format!("torus.dead_links=[{}]", alone.join(","))]).unwrap();
    let e = workload::run(&cut, &uniform, &mut |_| true).err().unwrap().to_string();
    assert!(e.contains("no route from node"), "{e}");
}
