"""Renders the output of `make bench` (JSON lines on stdin) into BENCHMARKS.md.

The file keeps the newest figure of each benchmark (the "Latest" section,
with its date, machine, command and commit) and a short history table, one
row per run (`BENCH_NOTE="..." make bench` gives the row its note); the
narrative of past runs lives in git history.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys

PATH = "BENCHMARKS.md"
HEADER = """# Benchmarks

Produced by `make bench` (the `bgsim-bench` binary, release build, one core;
`scripts/bench_mpi.py`, `bench_pingpong.py`, `bench_coll.py`, `bench_scale.py`,
`bench_osu.py`, `bench_million.py`, `bench_threads.py`, `bench_inflight.py` and `bench_smpi.py` from Python). Builds are
compared with `python3 scripts/bench_pair.py ROUNDS BIN_A BIN_B` (alternating
runs; only paired ratios tell changes apart on a shared machine).
Targets of the torus issue: at least 5 million packet-hops per second on one
core, under 4 KB per idle simulated node, and a 64x32x32 machine (65,536
nodes) that builds and runs within 24 GiB. Target of the MPI issue: at least
100,000 simulated MPI messages per wall second for 4,096 Python ranks doing a
1 KB halo exchange (`scripts/bench_mpi.py`).

"""


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f", {kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{cpu}, {os.cpu_count()} cores{mem}, {platform.system()} {platform.release()}"


def commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout
        return out.strip() + ("+" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


HISTORY = "## History\n\n| date | commit | torus packet-hops/s, median (best) | MPI halo messages/s | note |\n|---|---|---|---|---|\n"


def history_row(rows: list) -> str:
    by = {r["benchmark"]: r for r in rows}
    t = by.get("torus_uniform_16x16x16_load0.9_dynamic")
    h = next((r for r in rows if r["benchmark"].startswith("mpi_halo_")), None)
    hops = (f"{t['packet_hops_per_s'] / 1e6:.2f} M ({t.get('packet_hops_per_s_best', t['packet_hops_per_s']) / 1e6:.2f} M)"
            if t else "")
    halo = f"{h['messages_per_s']:,.0f}" if h else ""
    return f"| {datetime.date.today().isoformat()} | {commit()} | {hops} | {halo} | {os.environ.get('BENCH_NOTE', '')} |\n"


def render(rows: list) -> str:
    by = {r["benchmark"]: r for r in rows}
    out = [f"## Latest: {datetime.date.today().isoformat()}, commit {commit()}", "",
           f"Machine: {machine()}. Command: `make bench`.", ""]
    t = by.get("torus_uniform_16x16x16_load0.9_dynamic")
    if t:
        out += ["Uniform random traffic, 256-byte packets, 90% of the busiest-link peak, 16x16x16 torus, dynamic "
                f"routing, {t['simulated_ncycles']} network cycles ({t['simulated_us']:.1f} simulated us):", "",
                f"| measure (median of {t.get('runs', 1)} runs; best in brackets) | value |", "|---|---|",
                f"| packet-hops per wall second | {t['packet_hops_per_s'] / 1e6:.2f} M "
                f"({t.get('packet_hops_per_s_best', t['packet_hops_per_s']) / 1e6:.2f} M) |",
                f"| simulated us per wall second | {t['sim_us_per_wall_s']:.1f} |",
                f"| events per wall second | {t['events_per_s'] / 1e6:.2f} M |",
                f"| wall time | {t['wall_s']:.2f} s ({t.get('wall_s_best', t['wall_s']):.2f} s) |",
                f"| packet-hops | {t['packet_hops']} |",
                f"| events | {t['events']} (arbitration passes {t.get('arbitrations', 0)}) |",
                f"| mean link utilization | {t['mean_link_util_pct']:.1f}% |", ""]
    par = [by[k] for k in (f"torus_uniform_16x16x16_load0.9_dynamic_threads{n}" for n in (2, 4)) if k in by]
    if t and par:
        out += ["The same workload on the windowed engine's threads (`bgsim-bench --torus-only --threads N`: the "
                "machine cut into N partitions; the same result, bit for bit):", "",
                "| threads | wall time, median (best) | packet-hops per wall second | speed-up over 1 thread |",
                "|---|---|---|---|"]
        for r in [t] + par:
            out.append(f"| {r.get('threads', 1)} | {r['wall_s']:.2f} s ({r.get('wall_s_best', r['wall_s']):.2f} s) | "
                       f"{r['packet_hops_per_s'] / 1e6:.2f} M | {t['wall_s'] / r['wall_s']:.2f}x |")
        out.append("")
    big = by.get("torus_uniform_32x32x32_load0.9_dynamic")
    big2 = by.get("torus_uniform_32x32x32_load0.9_dynamic_threads2")
    if big and big2:
        out += [f"The same on 32x32x32 (`--shape 32x32x32 --runs {big.get('runs', 1)}`, {big['packet_hops']:,} packet-hops): "
                f"{big['wall_s']:.2f} s on one thread ({big['packet_hops_per_s'] / 1e6:.2f} M packet-hops/s), "
                f"{big2['wall_s']:.2f} s on two ({big2['packet_hops_per_s'] / 1e6:.2f} M): "
                f"{big['wall_s'] / big2['wall_s']:.2f}x (a window holds eight times the work of 16x16x16's).", ""]
    m = by.get("idle_memory_64x32x32")
    if m:
        out += [f"Idle 64x32x32 machine ({int(m['nodes'])} nodes): {m['bytes_per_idle_node']:.0f} bytes per node "
                f"(resident memory growth / nodes; router state {m['router_struct_bytes']} bytes), built in "
                f"{m['build_s']:.2f} s.", ""]
    b = by.get("uniform_64x32x32_load0.5")
    if b:
        out += [f"Uniform random traffic at 50% load on 64x32x32 for {b['simulated_ncycles']} network cycles: "
                f"{b['wall_s']:.1f} s wall, {b['packets_delivered']} packets delivered, "
                f"{b['packet_hops_per_s'] / 1e6:.2f} M packet-hops/s, peak resident memory {b['peak_rss_mb']:.0f} MB.", ""]
    h = next((r for r in rows if r["benchmark"].startswith("mpi_halo_")), None)
    if h:
        out += [f"MPI halo exchange from Python (`scripts/bench_mpi.py {h['iters']}`): {h['ranks']} ranks on "
                f"{h['benchmark'].split('_')[2]}, coprocessor mode, each exchanging 1 KB (rendezvous) with its six "
                f"neighbours {h['iters']} times:", "",
                "| measure | value |", "|---|---|",
                f"| simulated MPI messages per wall second | {h['messages_per_s']:,.0f} |",
                f"| messages | {h['messages']:,} |",
                f"| wall time | {h['wall_s']:.1f} s |",
                f"| peak resident memory | {h.get('peak_rss_mb', 0):,.0f} MB |",
                f"| share of wall time in Python (rank code, MPI module, calls into the core) | {100 * h['python_share']:.0f}% |",
                f"| share in the core's event loop | {100 * (1 - h['python_share']):.0f}% |",
                f"| simulated time | {h['simulated_us']:,.0f} us |",
                f"| packets, events | {h['packets']:,}, {h['events']:,} |", ""]
    rp = next((r for r in rows if r["benchmark"].startswith("replay_halo_")), None)
    same = next((r for r in rows if r["benchmark"].startswith("mpi_halo_") and rp and r["iters"] == rp["iters"]), None)
    if rp and same:
        out += [f"The same halo replayed from a trace (`scripts/bench_replay.py {rp['iters']}`: the trace a C program "
                f"doing it would leave, {rp['messages']:,} messages): {rp['messages_per_s']:,.0f} messages per wall "
                f"second ({rp['wall_s']:.1f} s, of which {rp['load_s']:.1f} s reading and checking the trace; peak "
                f"{rp.get('peak_rss_mb', 0):,.0f} MB), against {same['messages_per_s']:,.0f} for the mpi4py program "
                f"at the same size ({same['wall_s']:.1f} s): the replay takes "
                f"{rp['wall_s'] / same['wall_s']:.2f}x its wall time.", ""]
    pp = by.get("pingpong_8B_2ranks")
    if pp:
        out += [f"Ping-pong from Python (`scripts/bench_pingpong.py`): two ranks on 2x1x1, an 8-byte array with "
                f"blocking Send and Recv, {pp['round_trips']:,} round trips: {pp['messages_per_s']:,.0f} simulated "
                f"messages per wall second ({pp['wall_s']:.2f} s).", ""]
    mh = by.get("million_halo_64x64x64_vn")
    if mh:
        out += [f"A million ranks (`scripts/bench_million.py`): a halo exchange of 1 KB on a 1024x1024 grid of "
                f"{mh['ranks']:,} skeleton ranks driven by the core, 64x64x64 BG/P in VN mode: {mh['wall_s']:.0f} s "
                f"wall ({mh['build_s']:.1f} s to build), peak resident memory {mh['peak_rss_mb']:,.0f} MB "
                f"({mh['bytes_per_rank'] / 1024:.1f} KB per rank, nodes included), {mh['messages']:,} messages, "
                f"{mh['events']:,} events, {mh['simulated_s'] * 1e6:.1f} us simulated.", ""]
    mh2 = by.get("million_halo_64x64x64_vn_2_threads")
    if mh2:
        same = mh and (mh2["events"], mh2["simulated_s"]) == (mh["events"], mh["simulated_s"])
        out += [f"The same on 2 threads (`scripts/bench_million.py 2`: the machine cut into 2 partitions, each a copy "
                f"of the world): {mh2['wall_s']:.0f} s wall"
                + (f" ({mh['wall_s'] / mh2['wall_s']:.2f}x)" if mh else "")
                + f", peak resident memory {mh2['peak_rss_mb']:,.0f} MB"
                + ("; the same events and simulated time." if same else "."), ""]
    pt = by.get("python_threads_2")
    if pt:
        out += ["Python MPI programs on threads (`scripts/bench_threads.py 2 3`: 512 ranks on an 8x8x8 BG/L, each run "
                "a process of its own, 1 and 2 threads in alternation, the same figures on both):", "",
                "| program | events | Python's share (1 thread) | simulated time on the threads | 1 thread | 2 threads "
                "| 1 thread / 2 threads |",
                "|---|---|---|---|---|---|---|"]
        for name, what in (("far", "Sendrecv of 256 KB half the machine away, twice"),
                           ("ring", "300 Sendrecv of 8 B around a ring"),
                           ("a2a", "pairwise all-to-all skeleton of 1 KB"),
                           ("posted", "MPI_Alltoall of 1 KiB, every message posted at once, size-only")):
            if name not in pt:
                continue
            r = pt[name]
            w1, w2 = r["wall_s_1"], r["wall_s_2"]
            share = f"{r['threaded_share']:.0%}" if "threaded_share" in r else "-"
            out.append(f"| {what} | {r['events']:,} | {r['python_wall_s']:.2f} s | {share} | {w1[0]:.2f}-{w1[-1]:.2f} s | "
                       f"{w2[0]:.2f}-{w2[-1]:.2f} s | {r['ratios'][0]:.2f}-{r['ratios'][-1]:.2f}x |")
        out.append("")
    inf = by.get("inflight_alltoall_1024")
    if inf:
        out += [f"Memory of messages in flight (`scripts/bench_inflight.py`): MPI_Alltoall of 1 KiB on {inf['ranks']:,} "
                f"ranks, BG/P VN, size-only buffers, every send and receive posted at once ({inf['in_flight']:,} "
                f"messages): peak resident memory {inf['peak_rss_mb']:,.0f} MB against {inf['baseline_rss_mb']:,.0f} MB "
                f"for the same program with a barrier, {inf['bytes_per_message']:.0f} bytes per message; "
                f"{inf['wall_s']:.1f} s wall, {inf['simulated_us']:,.2f} us simulated.", ""]
    o = by.get("osu_alltoall_32")
    if o:
        out += [f"mpi4py's own `osu_alltoall` demo, unmodified (`scripts/bench_osu.py`): 32 ranks on a 4x4x2 BG/L, "
                f"0 B to {o['max_bytes']:,} B per pair: {o['wall_s']:.0f} s wall, peak resident memory "
                f"{o['peak_rss_mb']:,.0f} MB, {o['messages']:,} messages, {o['packets']:,} packets, "
                f"{o['simulated_s']:.2f} s simulated; {o['latency_us_largest']} us for the largest size.", ""]
    coll = [r for r in rows if r["benchmark"].startswith("coll_")]
    if coll:
        out += ["Collectives (`scripts/bench_coll.py`): MPI_Alltoall of 1 KB per pair with real data, MPI_Allreduce "
                "of 1 MB (doubles; a communication skeleton) with each family's algorithm, a 1 KB all-to-all "
                "skeleton, and a 64 KB one on BG/P in VN mode; on the packet tier, with the torus on its coarse tier "
                "(`--fidelity coarse`) or on the message tier (`--fidelity message`):", "",
                "| collective | machine, shape | algorithm | tier | simulated time | wall time | peak resident memory | packets | simulated packets per wall s |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in coll:
            algo = r["algorithms"].get(r["collective"].split("_")[0], {})
            algo = ", ".join(algo) or r["collective"]
            what = r["collective"].split("_")[0] + (" skeleton" if "skeleton" in r["collective"] else "")
            size = next((p for p in r["collective"].split("_") if p.endswith("B")), "")
            where = f"{r.get('machine', 'bgl')} {r.get('mode', '')} {r['shape']}".replace("  ", " ")
            out.append(f"| {what} {size} | {where} | {algo} | {r.get('fidelity', 'packet')} | "
                       f"{r['simulated_us']:,.0f} us | {r['wall_s']:.1f} s | {r.get('peak_rss_mb', 0):,.0f} MB | {r['packets']:,} | "
                       f"{r['packets_per_s']:,.0f} |")
        out.append("")
        out.append("Packets: torus packets delivered, plus packet transfers over tree links for the tree.")
        out.append("")
        tiers = {r.get("fidelity"): r for r in coll if "skeleton_64KB" in r["collective"]}
        if "packet" in tiers and "message" in tiers:
            p, m = tiers["packet"], tiers["message"]
            out += [f"The message tier against packets on the 64 KB all-to-all ({m['shape']}): "
                    f"{p['wall_s'] / m['wall_s']:.1f} times as fast, {p['events'] / max(m['events'], 1):.0f} times "
                    f"fewer events, simulated time {100 * (m['simulated_us'] / p['simulated_us'] - 1):+.1f}%.", ""]
    smpi = [r for r in rows if r["benchmark"].startswith("smpi_")]
    if smpi:
        out += ["Against SimGrid's SMPI, the flow model (`scripts/bench_smpi.py`): the same program on both, whole "
                "processes timed in alternating rounds; the ratio is SMPI's wall over bgsim's (above 1: bgsim is "
                "faster), the median of the rounds:", "",
                "| program | run | command | wall time | simulated time | SMPI / bgsim |", "|---|---|---|---|---|---|"]
        for r in smpi:
            what = r["benchmark"][len("smpi_"):]
            for v, cmd in r["commands"].items():
                ratio = "-" if v == "smpi" else f"{r['smpi_over_bgsim'][v]:.2f}"
                out.append(f"| {what} | {v} | `{cmd}` | {r['wall_s'][v]:.2f} s | {r['simulated_us'][v]:,.1f} us | "
                           f"{ratio} |")
        out.append("")
    skipped = by.get("smpi")
    if skipped:
        out += [f"The comparison with SimGrid's SMPI did not run: {skipped['skipped']}.", ""]
    scale = [r for r in rows if r["benchmark"].startswith("scale_halo_")]
    if scale:
        out += ["Large MPI programs (`scripts/bench_scale.py`): one round of a 2D halo exchange on a periodic "
                "Cartesian grid (Compute_dims, Create_cart, Shift, Sendrecv of 1 KB) on every core:", "",
                "| machine | ranks | wall time | peak resident memory | per rank |", "|---|---|---|---|---|"]
        for r in scale:
            out.append(f"| {r['machine']} | {r['ranks']:,} | {r['wall_s']:.1f} s | {r['peak_rss_mb']:,.0f} MB | "
                       f"{r['kb_per_rank']:.1f} KB |")
        out.append("")
    return "\n".join(out) + "\n"


def main() -> None:
    rows = [json.loads(l) for l in sys.stdin if l.strip().startswith("{")]
    if not rows:
        sys.exit("bench_report: no benchmark results on stdin")
    section = render(rows)
    old_rows = ""
    if os.path.exists(PATH):
        with open(PATH) as f:
            old = f.read()
        if HISTORY in old:
            old_rows = old.split(HISTORY, 1)[1]
    tmp = PATH + ".tmp"
    with open(tmp, "w") as f:
        f.write(HEADER + section + "\n" + HISTORY + history_row(rows) + old_rows)
    os.replace(tmp, PATH)
    print(section)


if __name__ == "__main__":
    main()
