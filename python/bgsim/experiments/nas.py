"""The NAS Parallel Benchmarks' communication skeletons on BG/L: coprocessor
against virtual node mode, and BT under the default and a chosen mapping."""

from __future__ import annotations

import math
import os
import tempfile
from typing import Dict, Tuple

from .. import mapping as _mapping
from .. import nas
from ..errors import WorkloadError
from .base import Context, Curve, Outcome, register, sweep
from .mpi import BGL

MODES_BENCHMARKS = ("bt", "sp", "cg", "lu", "mg", "ft", "is", "ep")


def _skeleton(ctx: Context, name: str, cls: str, shape: str, nranks: int, mode: str, iterations: int,
              mapfile: str = "") -> Dict:
    res = ctx.run(lambda: nas.run_rank(name, cls, iterations=iterations), BGL, shape=shape, mode=mode,
                  nranks=nranks, seed=ctx.seed, mapping=mapfile or None)
    return res.results[0]


@register("mpi-modes", "bgl", "NAS skeletons on 32 nodes: coprocessor mode (32 tasks) vs virtual node mode (64)")
def modes(ctx: Context) -> Outcome:
    out = Outcome()
    cls = "W" if ctx.quick else "B"
    iters = 1 if ctx.quick else 2
    out.setup.append(f"4x4x2 torus (32 nodes); NAS class {cls} communication skeletons with their compute bursts "
                     f"(bgsim.nas; docs/skeletons.md); coprocessor mode with 32 tasks (25 for BT and SP, which "
                     f"need a square), virtual node mode with 64; one warm-up and {iters} timed iteration(s) of "
                     "each main loop; rate per task = the benchmark's operations per iteration / time / tasks.")
    def point(b: str) -> Dict[str, float]:
        co = _skeleton(ctx, b, cls, "4x4x2", 25 if b in ("bt", "sp") else 32, "coprocessor", iters)
        ctx.log(f"{b} coprocessor: {co['mops_per_proc']:.1f} Mop/s per task")
        vn = _skeleton(ctx, b, cls, "4x4x2", 64, "vn", iters)
        ctx.log(f"{b} virtual node: {vn['mops_per_proc']:.1f} Mop/s per task")
        return {"per_task_ratio": vn["mops_per_proc"] / co["mops_per_proc"], "co": co["mops_per_proc"],
                "vn": vn["mops_per_proc"]}
    sweep(ctx, out, MODES_BENCHMARKS, point, [
        Curve("per_task_ratio", "VN per-task rate / CO per-task rate", "per_task_ratio_{x}", 4),
        Curve("co", "", "mops_per_task_co_{x}", 2, plot=False), Curve("vn", "", "mops_per_task_vn_{x}", 2, plot=False),
    ], x_label="benchmark (" + ", ".join(f"{k} {b}" for k, b in enumerate(MODES_BENCHMARKS)) + ")",
        plot_xs=range(len(MODES_BENCHMARKS)))
    out.key_metrics = [f"per_task_ratio_{b}" for b in MODES_BENCHMARKS]
    out.notes.append("Both modes compute at the same rate per core (nas.CYCLES_PER_OP, an assumption): a ratio "
                     "below 1 is what virtual node mode costs in communication - the computing core also does all "
                     "its message-passing work, the node's links and FIFOs are shared by two tasks, and a task has "
                     "more, smaller messages.")
    return out


def _bt_shape(p: int) -> Tuple[int, int, int]:
    """The BG/L partition a BT run of p processes (one per node) gets."""
    for s in ((4, 4, 2), (4, 4, 8), (8, 8, 8), (8, 8, 16)):
        if p <= s[0] * s[1] * s[2]:
            return s
    raise WorkloadError(f"{p} processes: more than 1,024")


@register("mpi-mapping-bt", "bgl", "NAS BT on 1..1,024 processes: default XYZT mapping vs one chosen from its graph")
def mapping_bt(ctx: Context) -> Outcome:
    out = Outcome()
    cls = "W" if ctx.quick else "B"
    counts = [4, 16, 36, 64] if ctx.quick else [1, 4, 9, 16, 25, 36, 64, 100, 144, 256, 400, 576, 1024]
    out.setup.append(f"NAS BT class {cls} skeleton (bgsim.nas), one process per node (coprocessor mode) on the "
                     "smallest partition that holds it (4x4x2, 4x4x8, 8x8x8, 8x8x16; the rest of the nodes idle); "
                     "one warm-up and one timed iteration; `optimized` = bgsim.mapping.optimize on BT's "
                     "point-to-point bytes per pair (hop-bytes by simulated annealing), run from XYZT and from "
                     "the fold of BT's square process grid onto the torus (bgsim.mapping.grid_mapping); the "
                     "lower in hop-bytes of the two.")
    with tempfile.TemporaryDirectory() as tmp:
        def point(p: int) -> Dict[str, float]:
            shape = _bt_shape(p)
            sname = "x".join(map(str, shape))
            traffic = nas.traffic(nas.plan("bt", cls, p))
            base = _mapping.order_slots(shape, 1, p)
            # BT runs on a square process grid: the annealing also starts
            # from its fold onto the torus (grid neighbours one hop apart
            # where the sizes allow); the lower in hop-bytes of the two
            # results is the mapping.
            q = math.isqrt(p)
            opt = min((_mapping.optimize(traffic, shape, 1, p, seed=ctx.seed),
                       _mapping.optimize(traffic, shape, 1, p, start=_mapping.grid_mapping((q, q), shape, 1),
                                         seed=ctx.seed)),
                      key=lambda m: _mapping.hop_bytes(traffic, m, shape))
            path = os.path.join(tmp, f"bt{p}.map")
            _mapping.write_mapfile(path, opt)
            hb0, hb1 = _mapping.hop_bytes(traffic, base, shape), _mapping.hop_bytes(traffic, opt, shape)
            rates = {key: _skeleton(ctx, "bt", cls, sname, p, "coprocessor", 1, mf)["mops_per_proc"]
                     for key, mf in (("xyzt", ""), ("optimized", path))}
            out.metrics[f"hop_bytes_ratio_{p}"] = round(hb1 / hb0, 4) if hb0 else 1.0
            ctx.log(f"{p} processes on {sname}: {rates['xyzt']:.1f} (XYZT) / {rates['optimized']:.1f} "
                    f"(optimized) Mop/s per process; hop-bytes x{(hb1 / hb0 if hb0 else 1):.3f}")
            return rates
        sweep(ctx, out, counts, point, [Curve(key, "Mop/s per process", f"mops_per_proc_{key}_{{x}}", 3, "rate")
                                        for key in ("xyzt", "optimized")],
              x_label="processes", log="{x} processes")
    big = counts[-1]
    out.key_metrics = [f"mops_per_proc_{k}_{p}" for p in (counts[1], big) for k in ("xyzt", "optimized")] + \
        [f"hop_bytes_ratio_{big}"]
    out.notes.append("BT's graph is its multi-partition: every process exchanges faces with six others and "
                     "pipelines its line solves through them; with XYZT, the sqrt(P) x sqrt(P) process grid "
                     "wraps around the torus rows, so the successors in the grid's second and diagonal "
                     "directions land several hops away.")
    return out
