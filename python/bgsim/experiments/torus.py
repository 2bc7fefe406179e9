"""The BG/L torus studies, driven through the packet layer (no MPI):
every experiment whose name starts with `torus-`."""

from __future__ import annotations

import json
import random

import numpy as np
import statistics
from typing import Dict, List, Sequence

from ..api import Machine, TrafficResult, coords, run_traffic
from ..errors import ModelError
from .base import Context, Curve, Outcome, register, sweep
from .base import size_label as _size_label

BGL = Machine("bgl")
#: Processor cycles per network cycle (byte-time) on the machine.
CYCLES_PER_NCYCLE = BGL.info["ticks_per_link_byte"] / BGL.info["ticks_per_cpu_cycle"]


def _run(ctx: Context, pattern: str, shape: str, *, mesh: str = "", settings: Sequence[str] = (), **spec) -> TrafficResult:
    spec.setdefault("seed", ctx.seed)
    return run_traffic(pattern, BGL, shape=shape, mesh=mesh, settings=settings, threads=ctx.threads,
                       partitions=ctx.partitions, **spec)


def _steady(series: List[float]) -> List[float]:
    """The windows after warm-up: all but the first quarter."""
    k = len(series) // 4
    return series[k:] if len(series) > k else series


# ---------------------------------------------------------------- pingpong

@register("torus-pingpong", "bgl", "Packet-layer ping-pong on a 2x2x2 mesh, 1-3 hops, 32B-16KB",
          published={"per-hop latency, ns (published, calibration of torus.hop_latency_cycles)": (90.0, "hop_latency_ns")})
def pingpong(ctx: Context) -> Outcome:
    out = Outcome()
    out.key_metrics = ["total_cycles_h1_32B", "total_cycles_h3_32B", "total_cycles_h1_16KB", "bound_cycles_h1_16KB", "hop_latency_ns"]
    sizes = [32, 256, 1024, 4096, 16384]
    iters = 2 if ctx.quick else 8
    out.setup.append(f"2x2x2 mesh; node 0 and a node 1, 2, 3 hops away; {iters} round trips per size; "
                     "deterministic routing; each message cut into 240-byte-payload packets; cores write "
                     "(50 cycles) and read (204 cycles) every packet.")
    first = {}  # hops -> the 32-byte message's latency
    for h in (1, 2, 3):
        def point(b: int, h: int = h) -> Dict[str, float]:
            r = _run(ctx, "pingpong", "2x2x2", mesh="xyz", hops=h, message_bytes=b, iters=iters, routing="deterministic")
            return {f"total_h{h}": statistics.mean(r.oneway_cycles), f"bound_h{h}": r.bound_ncycles * CYCLES_PER_NCYCLE}
        curves = [Curve(f"{k}_h{h}", "one-way latency (cycles)", lambda b, k=k, h=h: f"{k}_cycles_h{h}_{_size_label(b)}",
                        digits=1, group="latency") for k in ("total", "bound")]
        ys = sweep(ctx, out, sizes, point, curves, x_label="message bytes",
                   log=lambda b, h=h: f"{h} hops, {_size_label(b)}")
        first[h] = ys[f"total_h{h}"][sizes.index(32)]
    slope_cycles = (first[3] - first[1]) / 2
    out.metrics["hop_latency_ns"] = round(slope_cycles / BGL.info["cpu_mhz"] * 1000, 1)
    out.notes.append(f"A further hop adds {slope_cycles:.0f} cycles to a 32-byte message "
                     f"({out.metrics['hop_latency_ns']} ns). The gap between total and bound is the software: "
                     "one packet write and one packet read per packet, plus the first poll.")
    return out


# ---------------------------------------------------------------- alltoall

@register("torus-alltoall", "bgl", "All-to-all through the packet layer on 4x4x2 and 8x8x8 tori")
def alltoall(ctx: Context) -> Outcome:
    out = Outcome()
    payloads = [16, 240, 2400, 24000]
    plan = {"4x4x2": payloads, "8x8x8": payloads[:2] if ctx.quick else payloads}
    out.setup.append("Every node sends P payload bytes to every other node (16 bytes of headers per packet, "
                     "so P = 16 is one 32-byte packet per pair), one packet to each destination in turn; each node "
                     "starts its walk over the destinations at a random offset, as the message layer's all-to-all "
                     "spreads its injection order (the published description), so the nodes do not send in lock-step shifts; "
                     "dynamic routing; time to the last packet read; % of peak = busiest-link bound / time.")
    if ctx.quick:
        out.setup.append("quick scale: 8x8x8 only with P = 16 and 240.")
    for shape, ps in plan.items():
        def point(p: int, shape: str = shape) -> Dict[str, float]:
            r = _run(ctx, "alltoall", shape, message_bytes=p, routing="dynamic", random_start=True)
            if not r.completed:
                raise ModelError(f"torus-alltoall {shape} P={p} did not complete")
            return {f"pct_peak_{shape}": r.pct_peak}
        sweep(ctx, out, ps, point, [Curve(f"pct_peak_{shape}", "% of peak", f"pct_peak_{shape}_{{x}}B", 2, "pct_peak")],
              x_label="payload bytes per pair", log=lambda p, shape=shape: f"{shape} P={p}")
    return out


# ---------------------------------------------------------------- hot region

@register("torus-hot-region", "bgl", "Hot region: every node outside a cube sends to every node in it (8x8x8)")
def hot_region(ctx: Context) -> Outcome:
    out = Outcome()
    per_pair = {1: 8, 2: 2, 4: 1} if ctx.quick else {1: 64, 2: 16, 4: 4}
    out.setup.append("8x8x8 torus; a centred cube of 1x1x1, 2x2x2 or 4x4x4 receivers; every node outside sends "
                     f"{per_pair} (cube edge: packets per receiver) 256-byte packets to every receiver, dynamic "
                     "routing; % of peak = (bytes into the cube / links into the cube) / time.")
    def point(c: int) -> Dict[str, float]:
        lo = (8 - c) // 2
        r = _run(ctx, "hot_spot", "8x8x8", region_lo=[lo] * 3, region_size=[c] * 3, packets=per_pair[c], routing="dynamic")
        return {"pct_peak": r.pct_peak}
    sweep(ctx, out, per_pair, point, [Curve("pct_peak", "% of peak", "pct_peak_{x}", 2)], x_label="cube edge (nodes)",
          log="cube {x}x{x}x{x}")
    return out


# ---------------------------------------------------------------- line / plane fill

def _bcast_bytes(ctx: Context) -> int:
    return (64 << 10) if ctx.quick else (1 << 20)


def _broadcast(ctx: Context, out: Outcome, pattern: str, shape: str, m: int) -> TrafficResult:
    """Runs a broadcast pattern and records % of peak, bandwidth and throughput over time."""
    ctx.log(f"{_size_label(m)}")
    r = _run(ctx, pattern, shape, message_bytes=m)
    if not r.completed:
        raise ModelError(f"{pattern} of {_size_label(m)} on {shape} did not complete")
    out.metrics["pct_peak"] = round(r.pct_peak, 2)
    out.metrics["payload_MBps"] = round(m / r.span_us, 2)
    out.add_series("throughput", [i * r.window_ncycles for i in range(len(r.window_packets))],
                   r.window_payload_bytes, "time (network cycles)", "payload bytes delivered per window")
    return r


@register("torus-line-fill", "bgl", "Deposit-bit broadcast along an 8-node torus line, colours both ways")
def line_fill(ctx: Context) -> Outcome:
    out = Outcome()
    m = _bcast_bytes(ctx)
    out.setup.append(f"8-node torus line (8x1x1); the root sends {_size_label(m)} as full deposit-bit packets, "
                     "alternating two colours: x+ (root's core 0) and x- (core 1), each along 7 hops; every "
                     "node's cores read every packet; % of peak = busiest-link bound / time to the last read.")
    _broadcast(ctx, out, "line_fill", "8x1x1", m)
    return out


@register("torus-plane-fill", "bgl", "Broadcast over an 8x8 torus plane: 4 colours, software corner turns")
def plane_fill(ctx: Context) -> Outcome:
    out = Outcome()
    m = _bcast_bytes(ctx)
    out.setup.append(f"8x8 torus plane (8x8x1); the root sends {_size_label(m)} in 4 colours, each leaving on one "
                     "of its 4 links with the deposit bit; every node of that line turns the colour's packets "
                     "into the perpendicular direction in software (read, then re-inject); the far line closes "
                     "the root's own column/row with one hop over the wrap link. One core serves the + "
                     "directions, the other the - directions. The 4 colours use edge-disjoint links.")
    r = _broadcast(ctx, out, "plane_fill", "8x8x1", m)
    out.notes.append(f"Each link carries at most a quarter of the message: the bound is {r.bound_ncycles:.0f} "
                     f"network cycles; the broadcast took {r.span_ncycles:.0f}.")
    return out


# ---------------------------------------------------------------- random latency

RANDOM_CONFIGS: Dict[str, dict] = {
    "det": {"routing": "deterministic", "settings": []},
    "dyn1vc1p": {"routing": "dynamic", "settings": ["torus.dynamic_vcs=1", "torus.paths_per_receiver=1"]},
    "dyn2vc2p": {"routing": "dynamic", "settings": ["torus.dynamic_vcs=2", "torus.paths_per_receiver=2"]},
    "dyn4vc4p": {"routing": "dynamic", "settings": ["torus.dynamic_vcs=4", "torus.paths_per_receiver=4"]},
    "random": {"routing": "dynamic", "settings": ['torus.arbitration="random"']},
    "jsq": {"routing": "dynamic", "settings": ['torus.arbitration="jsq"']},
    "slq": {"routing": "dynamic", "settings": ['torus.arbitration="slq"']},
}


@register("torus-random-latency", "bgl", "Latency vs load, uniform random traffic: routing, VCs, paths, arbitration")
def random_latency(ctx: Context) -> Outcome:
    out = Outcome()
    out.key_metrics = [f"latency_ncycles_{c}_u80" for c in RANDOM_CONFIGS]
    shape = "8x8x8" if ctx.quick else "32x32x32"
    loads = [0.2, 0.5, 0.8, 0.95] if ctx.quick else [0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    warm, meas = (3000, 6000) if ctx.quick else (5000, 15000)
    out.setup.append(f"{shape} torus; uniformly random destinations, 256-byte packets, offered load as a fraction "
                     f"of the busiest-link peak: {loads}; {warm} network cycles of warm-up, {meas} measured; "
                     "latency from packet creation (including the source queue) to arrival. Configurations: "
                     "det (deterministic), dynN vcN p (dynamic with N dynamic VCs and N paths), and dynamic with "
                     "random / jsq / slq arbitration (2 VCs, 2 paths).")
    cache: Dict[tuple, TrafficResult] = {}
    for cfg, c in RANDOM_CONFIGS.items():
        xs, ys = [], []
        for load in loads:
            key = (c["routing"], tuple(sorted(c["settings"])) or ("default",), load)
            eff = key if c["settings"] not in ([], ['torus.arbitration="slq"'],
                                               ["torus.dynamic_vcs=2", "torus.paths_per_receiver=2"]) \
                else (c["routing"], ("default",), load)
            if eff not in cache:
                ctx.log(f"{cfg} load {load}")
                cache[eff] = _run(ctx, "uniform", shape, settings=c["settings"], routing=c["routing"], load=load,
                                  payload_bytes=240, warmup_ncycles=warm, measure_ncycles=meas)
            r = cache[eff]
            xs.append(r.links["mean_util_pct"])
            ys.append(r.latency_ncycles["mean"])
            pct = int(round(load * 100))
            if pct in (50, 80, 95):
                out.metrics[f"latency_ncycles_{cfg}_u{pct}"] = round(r.latency_ncycles["mean"], 1)
        out.add_series(cfg, xs, ys, "link utilization (%)", "mean latency (network cycles)", group="latency_vs_load")
    return out


# ---------------------------------------------------------------- hot region over time

def _hot_setup(ctx: Context):
    if ctx.quick:
        return "8x8x8", [2, 2, 2], [4, 4, 4], 40000, 4000
    return "16x16x16", [4, 4, 4], [8, 8, 8], 200000, 10000


def _inside(c, lo, size, dims):
    return all(((c[k] - lo[k]) % dims[k]) < size[k] for k in range(3))


def _hot_link_util(r: TrafficResult, dims, lo, size) -> float:
    """Mean utilization of the links entering the hot region."""
    steps = {0: (1, 0, 0), 1: (-1, 0, 0), 2: (0, 1, 0), 3: (0, -1, 0), 4: (0, 0, 1), 5: (0, 0, -1)}
    vals = []
    for i, u in enumerate(r.link_util_pct):
        n, d = divmod(i, 6)
        c = coords(n, dims)
        s = steps[d]
        nb = tuple((c[k] + s[k]) % dims[k] for k in range(3))
        if not _inside(c, lo, size, dims) and _inside(nb, lo, size, dims):
            vals.append(u)
    return statistics.mean(vals) if vals else 0.0


def _heatmap(r: TrafficResult, z: int, title: str):
    def draw(path: str) -> None:
        from .. import plots
        plots.heatmap(r.plane_link_util(z), path, title=title, label="mean outgoing link utilization (%)")
    return draw


HOT_CONFIGS: Dict[str, List[str]] = {
    "buf2048": ["torus.vc_buffer_bytes=2048"],
    "buf1024": ["torus.vc_buffer_bytes=1024"],
    "buf512": ["torus.vc_buffer_bytes=512"],
    "random": ['torus.arbitration="random"'],
    "jsq": ['torus.arbitration="jsq"'],
    "slq": ['torus.arbitration="slq"', "torus.slq_fraction=0.75"],
}


@register("torus-hot-region-time", "bgl", "Throughput over time with a hot region: VC buffer sizes and arbitration")
def hot_region_time(ctx: Context) -> Outcome:
    out = Outcome()
    shape, lo, size, meas, win = _hot_setup(ctx)
    dims = [int(v) for v in shape.split("x")]
    out.setup.append(f"{shape} torus; 25% of packets go to the contiguous {size[0]}x{size[1]}x{size[2]} hot submesh "
                     f"(12.5% of the nodes), the rest uniformly; 256-byte packets, dynamic routing; offered load "
                     f"1.0 x the peak (the region cut); throughput per {win} network cycles over {meas}; steady = "
                     "mean of the windows after the first quarter, as % of the peak. VC buffers 2 KB / 1 KB / "
                     "512 B (SLQ), arbitration random / JSQ / SLQ (75% SLQ decisions) with 1 KB.")
    base = None
    for cfg, settings in HOT_CONFIGS.items():
        ctx.log(cfg)
        r = _run(ctx, "hot_region", shape, settings=settings, routing="dynamic", load=1.0, hot_fraction=0.25,
                 region_lo=lo, region_size=size, payload_bytes=240, warmup_ncycles=0, measure_ncycles=meas,
                 window_ncycles=win, per_link=True)
        thr = r.throughput_series()
        peak = r.peak_packets_per_node_ncycle
        pct = [100.0 * t / peak for t in thr]
        out.add_series(cfg, [i * win for i in range(len(pct))], pct, "time (network cycles)", "throughput (% of peak)",
                       group="buffers" if cfg.startswith("buf") else "arbitration")
        out.metrics[f"steady_pct_peak_{cfg}"] = round(statistics.mean(_steady(pct)), 2)
        if cfg == "buf1024":
            base = r
    out.metrics["hot_link_util_pct"] = round(_hot_link_util(base, dims, lo, size), 2)
    out.figures["heatmap_buf1024"] = _heatmap(base, lo[2] + size[2] // 2,
                                              f"{shape}, plane z={lo[2] + size[2] // 2}: link utilization (1 KB VCs)")
    return out


# ---------------------------------------------------------------- alltoall simulation

@register("torus-alltoall-sim", "bgl", "Continuous all-to-all: link utilization, deterministic vs 1 vs 2 dynamic VCs")
def alltoall_sim(ctx: Context) -> Outcome:
    out = Outcome()
    out.key_metrics = [k for sh in (["8x8x8", "16x8x8"] if ctx.quick else ["16x16x16", "32x16x16", "32x32x32"]) for k in (f"link_util_pct_{sh}_det", f"link_util_pct_{sh}_dyn2", f"link_util_pct_{sh}_dyn2_random_start", f"escape_pct_{sh}")]
    shapes = ["8x8x8", "16x8x8"] if ctx.quick else ["16x16x16", "32x16x16", "32x32x32"]
    warm, meas = (3000, 10000) if ctx.quick else (20000, 100000)
    out.setup.append(f"Shapes {shapes}; every node walks through every destination from its own offset, full "
                     f"packets as fast as its cores and FIFOs allow; utilization measured over {meas} network "
                     f"cycles after {warm} of warm-up. Configurations: det (deterministic), dyn1 / dyn2 (dynamic "
                     "with 1 / 2 dynamic VCs). escape_pct is the share of hops on the escape VC with 2 dynamic VCs. "
                     "Also dyn2 with every node starting its walk at a random offset (`_random_start`).")
    configs = {"det": ("deterministic", []), "dyn1": ("dynamic", ["torus.dynamic_vcs=1"]),
               "dyn2": ("dynamic", ["torus.dynamic_vcs=2"])}
    for shape in shapes:
        util, pay = [], []
        for cfg, (routing, settings) in configs.items():
            ctx.log(f"{shape} {cfg}")
            r = _run(ctx, "alltoall_stream", shape, settings=settings, routing=routing, payload_bytes=240,
                     warmup_ncycles=warm, measure_ncycles=meas)
            out.metrics[f"link_util_pct_{shape}_{cfg}"] = round(r.links["mean_util_pct"], 2)
            out.metrics[f"payload_util_pct_{shape}_{cfg}"] = round(r.links["mean_payload_util_pct"], 2)
            util.append(r.links["mean_util_pct"])
            pay.append(r.links["mean_payload_util_pct"])
            if cfg == "dyn2":
                out.metrics[f"escape_pct_{shape}"] = round(r.escape_pct, 2)
                ctx.log(f"{shape} dyn2, random starting offsets")
                rr = _run(ctx, "alltoall_stream", shape, settings=settings, routing=routing, payload_bytes=240,
                          warmup_ncycles=warm, measure_ncycles=meas, random_start=True)
                out.metrics[f"link_util_pct_{shape}_dyn2_random_start"] = round(rr.links["mean_util_pct"], 2)
                out.notes.append(
                    f"{shape}: with every node starting at its own index, all nodes send to the same offset at "
                    "once: each phase is a shift permutation, and within the measured window the offsets stay in "
                    f"the XY plane, so z links idle. Starting at random offsets instead gives "
                    f"{rr.links['mean_util_pct']:.1f}% link utilization (dyn2) against {r.links['mean_util_pct']:.1f}%.")
            if cfg == "dyn1":
                out.notes.append(f"{shape}: with 1 dynamic VC, {r.escape_pct:.1f}% of hops used the escape VC.")
        out.add_series(f"link_util_{shape}", [0, 1, 2], util, "configuration (0 det, 1 dyn1, 2 dyn2)",
                       "link utilization (%)", group="utilization")
        out.add_series(f"payload_util_{shape}", [0, 1, 2], pay, "configuration (0 det, 1 dyn1, 2 dyn2)",
                       "payload utilization (%)", group="utilization")
    return out


# ---------------------------------------------------------------- escape VC schemes

@register("torus-escape-vc", "bgl", "Hot-region traffic under three escape schemes: bubble, dateline pairs")
def escape_vc(ctx: Context) -> Outcome:
    out = Outcome()
    shape, lo, size, meas, win = _hot_setup(ctx)
    # Long enough at paper scale to see whether the throughput settles or
    # keeps rising and falling (a wave takes about 150,000 network cycles).
    meas = meas if ctx.quick else 500000
    out.setup.append(f"{shape} torus, hot-region traffic as in torus-hot-region-time (25% to the "
                     f"{size[0]}x{size[1]}x{size[2]} submesh, but a heavy offered load of 1.5 x the peak, dynamic routing, {meas} network "
                     "cycles). Escape schemes: bubble (one escape VC, dimension-ordered), dateline_dim and "
                     "dateline_dir (a dateline VC pair, dimension- / direction-ordered; datelines at the wrap "
                     "link of the maximum coordinate). As in the published design-simulator runs, a dynamic "
                     "packet that fell back to its escape move and found no tokens waits for that escape VC "
                     "(torus.escape_commit = true); the `_rechoose` figures are the hardware's arbitration, "
                     "which lets such a head choose a dynamic VC again whenever one frees. throughput_cv: "
                     "standard deviation / mean of the windowed throughput after the first quarter; "
                     "unblock_prob: share of token returns after which a packet that had stalled for lack of "
                     "tokens moved at once.")
    for commit in (True, False):
        tail = "" if commit else "_rechoose"
        for scheme in ("bubble", "dateline_dim", "dateline_dir"):
            ctx.log(scheme + tail)
            r = _run(ctx, "hot_region", shape,
                     settings=[f'torus.escape="{scheme}"', f"torus.escape_commit={'true' if commit else 'false'}"],
                     routing="dynamic", load=1.5, hot_fraction=0.25, region_lo=lo, region_size=size, payload_bytes=240,
                     warmup_ncycles=0, measure_ncycles=meas, window_ncycles=win)
            thr = r.throughput_series()
            st = _steady(thr)
            mean = statistics.mean(st)
            cv = statistics.pstdev(st) / mean if mean > 0 else 0.0
            out.metrics[f"throughput_cv_{scheme}{tail}"] = round(cv, 4)
            out.metrics[f"unblock_prob_{scheme}{tail}"] = round(r.unblock_prob, 4)
            peak = r.peak_packets_per_node_ncycle
            out.add_series(f"throughput_{scheme}{tail}", [i * win for i in range(len(thr))],
                           [100 * t / peak for t in thr], "time (network cycles)", "throughput (% of peak)",
                           group="throughput" + tail)
            if commit:
                out.add_series(f"vc_share_{scheme}", list(range(len(r.vcs))), [v["share_pct"] for v in r.vcs],
                               "VC (dynamic..., escape..., high priority)", "share of hops (%)", group="vc_share")
    out.key_metrics = [f"throughput_cv_{s}{t}" for t in ("", "_rechoose") for s in ("bubble", "dateline_dim", "dateline_dir")] + \
        [f"unblock_prob_{s}" for s in ("bubble", "dateline_dim", "dateline_dir")]
    out.notes.append("With heads committed to the escape VC they fell back to, a head waiting for one of the two "
                     "dateline VCs blocks its buffer while tokens come back for the other and for the dynamic "
                     "VCs: the dateline pairs' throughput rises and falls in regular waves; with one bubble VC "
                     "the same commitment costs far less. Heads that choose again whenever something frees "
                     "(the hardware) fluctuate irregularly instead.")
    return out


# ---------------------------------------------------------------- bubble deadlock

@register("torus-bubble-deadlock", "bgl", "Variable-size packets: the bubble rule with actual vs full-size accounting")
def bubble_deadlock(ctx: Context) -> Outcome:
    out = Outcome()
    meas = 20000 if ctx.quick else 100000
    settings = ["torus.in_network_priority_fraction=0"]
    out.setup.append(f"8x8x8 torus; uniformly random destinations, variable-size packets (1 to 8 chunks, uniformly), "
                     "deterministic routing (every packet on the bubble VC), offered load 3 x the peak, senders "
                     "giving injected packets the same priority as packets in the network "
                     f"(torus.in_network_priority_fraction = 0), for {meas} network cycles; then the sources stop "
                     "and the network must drain. A deadlock is declared when packets sit in VCs and none has "
                     "moved for 20,000 network cycles; ncycles_to_deadlock is when the cycle of blocked VC heads "
                     "closed (the latest arrival among its packets).")
    for acc in ("actual_size", "full_size"):
        ctx.log(acc)
        r = _run(ctx, "uniform", "8x8x8", settings=settings + [f'torus.bubble_accounting="{acc}"'],
                 routing="deterministic", variable_size=True, load=3.0, warmup_ncycles=0, measure_ncycles=meas,
                 deadlock_ncycles=20000, drain=True)
        out.metrics[f"deadlock_{acc}"] = 1 if r.deadlock else 0
        if acc == "actual_size":
            out.metrics["ncycles_to_deadlock"] = round(r.ncycles_to_deadlock, 1) if r.deadlock else -1
        state = f"deadlocked with {r.packets['in_flight_at_end']} packets stuck in the network" if r.deadlock else "drained"
        out.notes.append(f"{acc}: {state}; {r.packets['delivered']} packets delivered.")
        out.add_series(f"throughput_{acc}", [i * r.window_ncycles for i in range(len(r.window_packets))],
                       r.window_packets, "time (network cycles)", "packets delivered per window", group="throughput")
    ctx.log("actual_size with in-network priority 100%")
    r = _run(ctx, "uniform", "8x8x8", settings=['torus.bubble_accounting="actual_size"'], routing="deterministic",
             variable_size=True, load=3.0, warmup_ncycles=0, measure_ncycles=meas, deadlock_ncycles=20000, drain=True)
    out.metrics["deadlock_actual_size_net_priority100"] = 1 if r.deadlock else 0
    out.notes.append("With the default 100% in-network priority (sources enter the bubble VC only when no packet "
                     "in the network wants the link), actual-size accounting "
                     f"{'also deadlocked, with the cycle closing at ' + format(r.ncycles_to_deadlock, '.0f') + ' network cycles' if r.deadlock else 'did not deadlock'} "
                     "in the same run length.")
    return out


# ---------------------------------------------------------------- link faults

@register("torus-faults", "bgl", "Link faults: bit errors (CRC, retransmission) and dead links (routes around them), "
          "and what they cost in latency and bandwidth")
def faults(ctx: Context) -> Outcome:
    out = Outcome()
    shape = "4x4x4" if ctx.quick else "8x8x8"
    meas = 10000 if ctx.quick else 40000
    rates = [0.0, 1e-6, 1e-5, 1e-4, 3e-4]
    out.setup.append(f"{shape} torus, uniformly random destinations, full packets, dynamic routing, offered load 0.5 "
                     f"of the peak, for {meas} network cycles from the start, then drained. Every bit on a link is "
                     "flipped with the given probability (torus.link_bit_error_rate); the receiver's CRC drops a "
                     "corrupted packet and the sender resends it from its retransmission buffer once the nack "
                     "is back (a hop later). The run checks that nothing is lost: every packet injected is "
                     "delivered once.")
    def key(ber: float) -> str:
        return f"{ber:g}".replace("-", "m").replace(".", "p").replace("+", "")

    def point(ber: float) -> Dict[str, float]:
        r = _run(ctx, "uniform", shape, settings=[f"torus.link_bit_error_rate={ber!r}"], routing="dynamic", load=0.5,
                 payload_bytes=240, warmup_ncycles=0, measure_ncycles=meas, drain=True)
        p = r.packets
        if p["delivered"] != p["injected"] or p["in_flight_at_end"]:
            raise ModelError(f"torus-faults: packets lost at bit error rate {ber:g}: {p}")
        out.metrics[f"lost_packets_ber{key(ber)}"] = p["injected"] - p["delivered"]
        return {"latency": r.latency_ncycles["mean"],
                "throughput": r.throughput_packets_per_node_ncycle / r.peak_packets_per_node_ncycle * 100,
                "link_util": r.links["mean_util_pct"], "retransmits": 100 * r.links["retransmits"] / max(1, p["hops"])}
    sweep(ctx, out, rates, point, [
        Curve("latency", "mean latency (network cycles)", lambda b: f"latency_ncycles_ber{key(b)}", 1),
        Curve("throughput", "delivered throughput (% of peak)"),
        Curve("link_util", "mean link utilization (%)", lambda b: f"link_util_pct_ber{key(b)}", 2, "link_util"),
        Curve("retransmits", "retransmitted hops (%)", lambda b: f"retransmit_pct_ber{key(b)}", 3, "link_util"),
    ], x_label="link bit error rate (0 plotted at 1e-7)", log=lambda b: f"bit error rate {b:g}",
        plot_xs=[max(b, 1e-7) for b in rates])
    _dead_links(ctx, out, shape, meas)
    _dead_nodes(ctx, out, shape)
    out.key_metrics = [m for m in out.metrics if m.startswith(("latency", "retransmit", "dead"))]
    return out


def _spread_links(shape: str, count: int, seed: int = 1) -> List[str]:
    """`count` links of a torus of `shape` drawn at random, no two on the same
    ring (two dead links on one ring would cut it)."""
    dims = [int(x) for x in shape.split("x")]
    rng = random.Random(seed)
    rings, links = set(), []
    while len(links) < count:
        c = [rng.randrange(d) for d in dims]
        k = rng.randrange(3)
        ring = (k, tuple(c[i] for i in range(3) if i != k))
        if dims[k] > 1 and ring not in rings:
            rings.add(ring)
            links.append(f"{c[0]},{c[1]},{c[2]}:{'xyz'[k]}{rng.choice('+-')}")
    return links


def _spread_nodes(shape: str, count: int, seed: int = 1) -> List[List[int]]:
    """`count` nodes of `shape` drawn at random, no two on one line (the
    system software's forwarding joins every pair round up to three such
    dead nodes)."""
    dims = [int(x) for x in shape.split("x")]
    rng = random.Random(seed)
    nodes: List[List[int]] = []
    while len(nodes) < count:
        c = [rng.randrange(d) for d in dims]
        if all(sum(a == b for a, b in zip(c, o)) < 2 for o in nodes):
            nodes.append(c)
    return nodes


def _dead_nodes(ctx: Context, out: Outcome, shape: str) -> None:
    from .. import MPI
    counts = [0, 1, 2, 3]
    dead = _spread_nodes(shape, counts[-1], ctx.seed)
    nbytes = 1024
    out.setup.append(f"Dead nodes: an MPI_Alltoall of {nbytes} B per pair among one rank per live node of {shape}, "
                     f"with 0 to {counts[-1]} dead nodes drawn at random (seed {ctx.seed}, no two on one line, "
                     "torus.dead_nodes). Every dead node is where some pairs' dimension-ordered routes turn: those "
                     "packets go to an intermediate node by one clean dimension-ordered route, its packet layer "
                     "reads them and sends them on by another (as the system software forwarded them). The "
                     "figures: the all-to-all's time, and the packets sent that went round a fault and that were "
                     "forwarded, in % of the packets sent.")

    def main():
        c = MPI.COMM_WORLD
        buf = np.zeros(nbytes * c.Get_size(), dtype="u1")
        c.Alltoall(buf, np.empty_like(buf))

    def point(k: int) -> Dict[str, float]:
        sets = [f"torus.dead_nodes={json.dumps([','.join(map(str, c)) for c in dead[:k]])}"] if k else []
        r = ctx.run(main, "bgl", shape=shape, settings=sets, seed=ctx.seed)
        c = r.counters
        sent = max(1, c["packets_sent"])
        return {"dn_time": r.time_s * 1e6, "dn_routed": 100 * c.get("fault_routed_packets", 0) / sent,
                "dn_forwarded": 100 * c.get("fault_forwarded_packets", 0) / sent}
    sweep(ctx, out, counts, point, [
        Curve("dn_time", "all-to-all time (us)", "deadnode{x}_alltoall_us", 1),
        Curve("dn_routed", "", "deadnode{x}_fault_routed_pct", 2, plot=False),
        Curve("dn_forwarded", "packets forwarded (%)", "deadnode{x}_forwarded_pct", 2),
    ], x_label="dead nodes", log="{x} dead nodes")


def _dead_links(ctx: Context, out: Outcome, shape: str, meas: int) -> None:
    counts = [0, 1, 2, 4, 8, 16]
    out.setup.append(f"Dead links: the same traffic with 0 to {counts[-1]} dead links drawn at random (seed 1, no two "
                     "on one ring, torus.dead_links). A packet whose minimal routes touch a dead link goes in "
                     "dimension order, the other way round the ring where the minimal way is cut; the others "
                     "route as before. Every packet is delivered and no dead link carries one.")
    def point(n: int) -> Dict[str, float]:
        dead = _spread_links(shape, n)
        sets = [f"torus.dead_links={json.dumps(dead)}"] if dead else []
        r = _run(ctx, "uniform", shape, settings=sets, routing="dynamic", load=0.5, payload_bytes=240,
                 warmup_ncycles=0, measure_ncycles=meas, drain=True)
        p = r.packets
        if p["delivered"] != p["injected"] or p["in_flight_at_end"]:
            raise ModelError(f"torus-faults: packets lost with {n} dead links: {p}")
        return {"dead_latency": r.latency_ncycles["mean"], "dead_hops": p["hops"] / max(1, p["delivered"]),
                "dead_max_util": r.links["max_util_pct"],
                "fault_routed": 100 * r.data.get("fault_routed_packets", 0) / max(1, p["injected"])}
    sweep(ctx, out, counts, point, [
        Curve("dead_latency", "mean latency (network cycles)", "dead{x}_latency_ncycles", 1),
        Curve("dead_hops", "hops per packet", "dead{x}_hops_per_packet", 3),
        Curve("dead_max_util", "busiest link utilization (%)", "dead{x}_max_link_util_pct", 2),
        Curve("fault_routed", "", "dead{x}_fault_routed_pct", 2, plot=False),
    ], x_label="dead links", log="{x} dead links")
