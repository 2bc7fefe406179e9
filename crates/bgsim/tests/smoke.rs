use bgsim::machine::bgl;
use bgsim::workload::{run, Pattern, RoutingMode, TrafficSpec};

#[test]
fn smoke() {
    for (pat, shape, mesh) in [
        (Pattern::Pingpong, "2x2x2", "xyz"),
        (Pattern::Uniform, "8x8x8", ""),
        (Pattern::HotSpot, "8x8x8", ""),
        (Pattern::Alltoall, "4x4x2", ""),
        (Pattern::LineFill, "8x1x1", ""),
        (Pattern::PlaneFill, "8x8x1", ""),
        (Pattern::NearestNeighbor, "4x4x4", ""),
        (Pattern::AlltoallStream, "8x8x8", ""),
    ] {
        let m = bgl(&[&format!("partition.shape={shape}"), &format!("partition.mesh=\"{mesh}\"")]).unwrap();
        let mut s = TrafficSpec::new(pat);
        s.message_bytes = 24000;
        if pat == Pattern::Pingpong { s.message_bytes = 1024; s.hops = 3; s.routing = RoutingMode::Deterministic; }
        if pat == Pattern::Alltoall { s.message_bytes = 240; }
        let r = run(&m, &s, &mut |_| true).unwrap();
        eprintln!("{pat:?}: completed {} span {:.0} bound {:.0} pct {:.1} util {:.1} lat {:.1} hops {} ev {} wall {:.3} hops/s {:.2e} oneway {:?}",
            r.completed, r.span_ncycles, r.bound_ncycles, r.pct_peak, r.links.mean_util_pct, r.latency_ncycles.mean, r.packets.hops, r.engine.events, r.engine.wall_s, r.engine.hops_per_s, r.oneway_cycles);
    }
}
