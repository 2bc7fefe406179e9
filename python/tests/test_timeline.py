"""Timelines (`bgsim run --timeline FILE`): the file follows the Trace Event
Format that Perfetto and chrome://tracing read - checked event by event
against the format's rules (phases, required fields, flow and async
pairs, slices nested on every track) - and tells what the run did."""

import json
import os
from collections import defaultdict

import bgsim
from conftest import ROOT, run_cli

HALO = os.path.join(ROOT, "examples", "halo2d.py")
PHASES = {"X", "M", "C", "s", "f", "b", "e"}


def check_trace_event_format(trace):
    """The rules of the Trace Event Format for the phases bgsim writes."""
    assert set(trace) >= {"traceEvents"} and isinstance(trace["traceEvents"], list)
    assert trace.get("displayTimeUnit") in (None, "ms", "ns")
    flows, asyncs, slices = defaultdict(list), defaultdict(list), defaultdict(list)
    for ev in trace["traceEvents"]:
        ph = ev["ph"]
        assert ph in PHASES, ev
        assert isinstance(ev["name"], str) and isinstance(ev["pid"], int), ev
        if ph == "M":
            assert ev["name"] in ("process_name", "thread_name", "thread_sort_index") and isinstance(ev["args"], dict)
            continue
        assert isinstance(ev["ts"], (int, float)) and ev["ts"] >= 0, ev
        if ph == "X":
            assert isinstance(ev["tid"], int) and ev["dur"] >= 0, ev
            slices[(ev["pid"], ev["tid"])].append((ev["ts"], ev["ts"] + ev["dur"], ev["name"]))
        elif ph == "C":
            assert ev["args"] and all(isinstance(v, (int, float)) for v in ev["args"].values()), ev
        elif ph in "sf":
            assert ev["cat"] and isinstance(ev["tid"], int), ev
            if ph == "f":
                assert ev.get("bp") == "e", ev
            flows[ev["id"]].append(ev)
        else:
            asyncs[(ev["cat"], ev["id"])].append(ev)
    for fid, pair in flows.items():
        assert [e["ph"] for e in pair] == ["s", "f"] and pair[0]["ts"] <= pair[1]["ts"], pair
    for key, pair in asyncs.items():
        assert sorted(e["ph"] for e in pair) == ["b", "e"] and pair[0]["name"] == pair[1]["name"], pair
    # Complete events on one track nest (a viewer cannot draw partial overlaps).
    eps = 1e-6
    for track, spans in slices.items():
        stack = []
        for a, b, name in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1][1] <= a + eps:
                stack.pop()
            assert not stack or b <= stack[-1][1] + eps, (track, name, (a, b), stack[-1])
            stack.append((a, b, name))
    return flows, slices


def test_a_timeline_shows_calls_waits_compute_messages_and_counters(tmp_path):
    path = tmp_path / "t.json"
    r = bgsim.run_file(HALO, ["32", "3"], shape="2x2x2", timeline=str(path), timeline_ranks="all",
                       timeline_nodes="0,3")
    trace = json.loads(path.read_text())
    flows, slices = check_trace_event_format(trace)
    names = {n for spans in slices.values() for _, _, n in spans}
    assert {"Comm.Sendrecv", "Comm.Allreduce", "Comm.Create_cart", "wait", "compute"} <= names
    assert len(slices) == 8  # every rank has a track
    threads = [e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
    assert threads[0] == "rank 0 (0,0,0,0)" and len(threads) == 8
    # One flow per point-to-point message, each with its protocol.
    assert len(flows) == r.counters["messages_completed"] > 0
    protos = {e["args"]["protocol"] for e in trace["traceEvents"] if e["ph"] == "b"}
    assert protos <= {"one packet", "eager", "adaptive eager", "rendezvous", "intranode"} and protos
    counters = {e["name"] for e in trace["traceEvents"] if e["ph"] == "C"}
    assert counters == {f"node {n} {what}" for n in (0, 3) for what in ("link utilization %", "injection FIFO bytes")}
    # A rank's last slice ends by the end of the run.
    assert max(b for spans in slices.values() for _, b, _ in spans) <= r.time_us + 1e-6
    assert trace["otherData"]["messages_left_out"] == 0 and trace["otherData"]["events_dropped"] == 0


def test_large_runs_keep_the_timeline_bounded_and_say_what_was_left_out(tmp_path):
    path = tmp_path / "t.json"
    p = run_cli("run", "--quiet", "--shape", "4x4x2", "--timeline", str(path), "--timeline-ranks", "0,5-6",
                HALO, "32", "3")
    assert p.returncode == 0, p.stderr
    trace = json.loads(path.read_text())
    flows, slices = check_trace_event_format(trace)
    assert {t for _, t in slices} == {0, 5, 6}
    # Arrows only between tracks that are there; every message of a shown rank is on its track.
    assert flows and all(e["tid"] in (0, 5, 6) for pair in flows.values() for e in pair)
    protocol = [e for e in trace["traceEvents"] if e["ph"] == "b"]
    assert all(e["tid"] in (0, 5, 6) and (e["args"]["from"] == e["tid"] or e["args"]["to"] == e["tid"])
               for e in protocol)
    other = trace["otherData"]
    assert other["ranks_shown"] == 3 and other["ranks"] == 32 and other["nodes_sampled"] == [0]


def test_bad_timeline_options_are_refused(tmp_path):
    p = run_cli("run", "--shape", "2x2x2", "--timeline", str(tmp_path / "t.json"), "--timeline-ranks", "0-99",
                HALO, "8", "1")
    assert p.returncode == 2 and "--timeline-ranks `0-99`: ranks run from 0 to 7" in p.stderr
    p = run_cli("run", "--shape", "2x2x2", "--timeline", str(tmp_path / "t.json"), "--timeline-nodes", "x",
                HALO, "8", "1")
    assert p.returncode == 2 and "--timeline-nodes `x`" in p.stderr
