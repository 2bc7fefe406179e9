//! The validator and the model agree: every machine the validator accepts
//! runs - traffic drains and MPI messages arrive - and the settings that
//! used to lose every packet are refused by name.

use bgsim::machine::{self, Machine, Mapping};
use bgsim::mpi::World;
use bgsim::msglayer::SendMode;
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
    let n = m.shape.nodes() * m.tasks_per_node();
    let mut w = World::new(m, n, &Mapping::default(), 1, true).unwrap();
    let sizes = [8usize, 200, 900, 5_000];
    let mut recvs = vec![];
    let mut sends = vec![];
    for r in 0..n {
        for (k, &size) in sizes.iter().enumerate() {
            for peer in [(r + 1) % n, r] {
                let data: Vec<u8> = (0..size).map(|i| (i as u32 * 7 + r + k as u32) as u8).collect();
                recvs.push((peer, w.irecv(peer, r as i64, 0, k as i32, size as u32).unwrap(), data.clone()));
                sends.push((r, w.isend(r, peer as i64, 0, k as i32, data, SendMode::Standard, None).unwrap()));
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
