//! Layer 8: what drives a run. Built-in traffic patterns on the packet layer
//! (`spec` says what a run asks for, `patterns` holds one file per pattern,
//! `source` the state they share, `driver` hands them the packet layer's
//! calls), the bounds behind "% of peak" (`bounds`),
//! and the run loop that ties engine, machine and software together.

pub mod bounds;
pub mod driver;
pub mod patterns;
pub mod source;
pub mod spec;

pub use crate::torus::Routing;
pub use driver::Driver;
pub use source::{Progress, Source};
pub use patterns::{node_at_hops, TrafficPattern, PLANE_COLOURS};
pub use spec::{Pattern, PatternSpec, TrafficSpec, WorkloadError};

use crate::engine::{Engine, EngineStats, Event, EventQueue, Model, Partitioned, Tick, Transport};
use crate::machine::Machine;
use crate::packet::{Net, Software};
use crate::report::{TrafficResult, TrafficRun};
use crate::torus::{ev as torus_ev, Packet};
use std::time::Instant;

/// A run: the machine below, the driver above.
pub struct Sim {
    pub net: Net,
    pub driver: Driver,
}

impl Model for Sim {
    #[inline]
    fn handle(&mut self, now: Tick, ev: Event, q: &mut EventQueue) {
        self.net.handle(&mut self.driver, now, ev, q);
    }
    #[inline]
    fn touch(&self, ev: &Event, stage: usize) {
        self.net.touch(ev, stage);
    }
}

/// Builds the simulation of `spec` on `machine`.
pub fn build(machine: &Machine, spec: &TrafficSpec) -> Result<Sim, WorkloadError> {
    spec.validate()?;
    spec.validate_for(machine)?;
    let net = Net::new(machine, spec.common.seed);
    check_faults(&net, spec.kind())?;
    let driver = Driver::new(spec, &net)?;
    Ok(Sim { net, driver })
}

/// Traffic on a partition with dead nodes or links: patterns send from and
/// to every node, so dead nodes are refused (MPI programs place their ranks
/// on the live nodes); deposit-bit fills cannot leave their lines; every
/// other pattern runs when every pair of nodes has a route around the dead
/// links.
fn check_faults(net: &Net, pattern: Pattern) -> Result<(), WorkloadError> {
    let Some(f) = net.faults() else { return Ok(()) };
    let unfit = |reason: String| Err(WorkloadError::Unfit { pattern: pattern.name(), reason });
    if f.dead_nodes() > 0 {
        return unfit(format!(
            "traffic patterns send from and to every node, and this partition has {} dead node(s) (torus.dead_nodes); run an MPI program (its ranks go on the live nodes) or give dead links instead",
            f.dead_nodes()
        ));
    }
    if matches!(pattern, Pattern::LineFill | Pattern::PlaneFill) {
        return unfit("deposit-bit line broadcasts cannot route around dead links (torus.dead_links)".into());
    }
    let geo = net.geometry();
    match f.unreachable(geo, &vec![true; geo.nodes() as usize]) {
        Some(bad) => unfit(format!("{bad} (torus.dead_links)")),
        None => Ok(()),
    }
}

/// Where a traffic run stands, for progress reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunProgress {
    /// Fraction of the run done: of simulated time for timed patterns, of
    /// packets read for finite ones.
    pub fraction: f64,
    /// Simulated time (network cycles).
    pub ncycles: f64,
    /// Events simulated so far.
    pub events: u64,
}

/// How a traffic run uses the machine it runs on (not part of what it
/// simulates: every choice gives the same result, bit for bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Threads the windows of the partitions run on.
    pub threads: usize,
    /// Partitions the machine is cut into (at least `threads`; patterns
    /// whose nodes share state run as one).
    pub partitions: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { threads: 1, partitions: 1 }
    }
}

impl RunOptions {
    /// `threads` threads, one partition each.
    pub fn threads(threads: usize) -> Self {
        RunOptions { threads: threads.max(1), partitions: threads.max(1) }
    }
}

impl Partitioned for Sim {
    type Load = Packet;
    #[inline]
    fn emigrate(&mut self, ev: &Event) -> Option<Packet> {
        (ev.kind == torus_ev::ARRIVE).then(|| self.net.emigrate(ev.data))
    }
    #[inline]
    fn immigrate(&mut self, ev: &mut Event, pk: Packet) {
        ev.data = self.net.immigrate(pk);
    }
}

/// Runs a traffic pattern on one thread. `progress` is called now and then
/// with where the run stands. Returning false from `progress` stops the run
/// with an error.
pub fn run(machine: &Machine, spec: &TrafficSpec, progress: &mut dyn FnMut(RunProgress) -> bool) -> Result<TrafficResult, WorkloadError> {
    run_with(machine, spec, RunOptions::default(), progress)
}

/// Runs a traffic pattern with the machine cut into partitions that run
/// their windows on threads (see [`crate::engine::parallel`]); see [`run`].
pub fn run_with(machine: &Machine, spec: &TrafficSpec, opts: RunOptions, progress: &mut dyn FnMut(RunProgress) -> bool) -> Result<TrafficResult, WorkloadError> {
    run_on(machine, spec, opts, None, progress).map(|r| r.expect("one process has the result"))
}

/// Runs a traffic pattern on the processes of `transport` (an MPI job),
/// one partition each: every process calls this with the same arguments;
/// process 0 gets the result, the others None. A pattern whose nodes share
/// state runs whole on every process.
pub fn run_distributed(machine: &Machine, spec: &TrafficSpec, transport: Box<dyn Transport>, progress: &mut dyn FnMut(RunProgress) -> bool) -> Result<Option<TrafficResult>, WorkloadError> {
    run_on(machine, spec, RunOptions::default(), Some(transport), progress)
}

/// What the run loop asks of all partitions between steps.
struct Census {
    live: u64,
    reads: u64,
    events: u64,
    busy_queues: u64,
    last_progress: Tick,
}

impl Census {
    fn of(eng: &Engine<Sim>) -> Census {
        let mut sums = [0u64; 4];
        let mut maxes = [0u64; 1];
        for p in &eng.parts {
            sums[0] += p.model.net.live_packets() as u64;
            sums[1] += p.model.driver.progress().reads;
            sums[2] += p.stats.events;
            sums[3] += !p.q.is_empty() as u64;
            maxes[0] = maxes[0].max(p.model.net.last_progress());
        }
        if let Some(t) = eng.transport() {
            t.reduce(&mut sums, &mut maxes);
        }
        Census { live: sums[0], reads: sums[1], events: sums[2], busy_queues: sums[3], last_progress: maxes[0] }
    }
}

/// What a process of a distributed run sends process 0 at the end.
#[derive(serde::Serialize, serde::Deserialize)]
struct PartState {
    lo: u32,
    hi: u32,
    net: crate::packet::NetPart,
    driver: (Progress, source::Sent),
}

fn run_on(machine: &Machine, spec: &TrafficSpec, opts: RunOptions, remote: Option<Box<dyn Transport>>, progress: &mut dyn FnMut(RunProgress) -> bool) -> Result<Option<TrafficResult>, WorkloadError> {
    let wall = Instant::now();
    let nodes = machine.shape.nodes();
    let partitionable = Driver::partitionable_spec(spec);
    let root = remote.as_ref().is_none_or(|t| t.rank() == 0);
    // A pattern that cannot be cut runs whole on every process; process 0 reports.
    let remote = remote.filter(|_| partitionable);
    let parts = if remote.is_some() || !partitionable { 1 } else { opts.partitions.max(opts.threads).clamp(1, nodes as usize) };
    // The partitions' copies of the machine, built on the run's threads.
    let threads = opts.threads.clamp(1, parts);
    let built: Vec<Result<Vec<Sim>, WorkloadError>> = std::thread::scope(|s| {
        let jobs: Vec<_> = (1..threads).map(|i| s.spawn(move || (0..parts).filter(|k| k % threads == i).map(|_| build(machine, spec)).collect())).collect();
        let mine = (0..parts).filter(|k| k % threads == 0).map(|_| build(machine, spec)).collect();
        std::iter::once(mine).chain(jobs.into_iter().map(|j| j.join().expect("building a partition does not panic"))).collect()
    });
    let mut built = built.into_iter().map(|b| b.map(Vec::into_iter)).collect::<Result<Vec<_>, _>>()?;
    let mut sims: Vec<Sim> = (0..parts).map(|k| built[k % threads].next().expect("one copy per partition")).collect();
    let tb = machine.tick_byte;
    let timing = spec.pattern.timed().cloned();
    let timed = timing.is_some();
    let (warm, drain) = timing.as_ref().map_or((0, false), |t| (t.warmup_ncycles * tb, t.drain));
    let end_gen = warm + timing.as_ref().map_or(0, |t| t.measure_ncycles * tb);
    let c = &spec.common;
    let peak = sims[0].driver.peak_rate(machine);
    let mut eng = match remote {
        Some(t) => Engine::distributed(sims.pop().expect("one model"), nodes, machine.hop_latency, t),
        None => Engine::new(sims, nodes, machine.hop_latency, opts.threads),
    };
    for p in eng.parts.iter_mut() {
        let sim = &mut p.model;
        sim.net.set_partition(p.lo, p.hi);
        sim.net.set_window(c.window_ncycles * tb);
        if timed {
            let rate = sim.driver.offered_rate(peak);
            sim.driver.set_rate(rate, end_gen);
        }
        // Every partition runs the whole start; its queue keeps what its
        // own nodes are to do.
        sim.driver.start(&mut sim.net, &mut p.q);
    }
    let max_t = c.max_ncycles.map_or(Tick::MAX, |m| m * tb);
    let step = (2_000 * tb).max(1);
    let dl = c.deadlock_ncycles * tb;
    let mut t: Tick = 0;
    let mut deadlocked = false;
    let mut measured_from = 0;
    let mut last_report = Instant::now();
    let mut draining = false;
    let mut stopped_at_max = false;
    let expected = eng.parts[0].model.driver.progress().expected_reads;
    let mut census;
    loop {
        let target = if timed && t < warm { warm.min(t + step) } else { t.saturating_add(step) };
        let target = if timed && !draining { target.min(end_gen) } else { target.min(max_t) };
        t = eng.run_until(target);
        if timed && t == warm && measured_from == 0 && warm > 0 {
            for p in eng.parts.iter_mut() {
                p.model.net.reset_counters(t);
                p.model.driver.restart_counts();
            }
            measured_from = t;
        }
        census = Census::of(&eng);
        if timed && t >= end_gen && !draining {
            if !drain {
                break;
            }
            draining = true;
        }
        if draining && census.live == 0 {
            break;
        }
        if !timed && ((expected > 0 && census.reads == expected) || census.busy_queues == 0) {
            break;
        }
        if t >= max_t {
            stopped_at_max = true;
            break;
        }
        // Deadlock: packets are in the machine (in VCs, FIFOs or software
        // queues: every live packet) and none has moved for `dl`.
        if t > census.last_progress + dl && census.live > 0 {
            deadlocked = true;
            break;
        }
        if root && last_report.elapsed().as_secs_f64() > 0.5 {
            last_report = Instant::now();
            let f = if timed { t as f64 / end_gen as f64 } else { census.reads as f64 / expected.max(1) as f64 };
            let now = RunProgress { fraction: f.min(1.0), ncycles: t as f64 / tb as f64, events: census.events };
            if !progress(now) {
                return Err(WorkloadError::Interrupted);
            }
        }
    }
    let stats = EngineStats { events: census.events };
    let quiet = census.busy_queues == 0;
    let distributed = eng.transport().map(|t| t.size());
    let partitions = distributed.unwrap_or(eng.parts.len());
    let threads = if distributed.is_some() { 1 } else { opts.threads.min(partitions) };
    for p in eng.parts.iter_mut() {
        p.model.net.close_counters(t);
    }
    // Partition 0 takes in the others: this process's other partitions, and
    // in a distributed run the other processes', rebuilt from their states.
    let gathered = eng.transport().map(|tr| {
        let p = &eng.parts[0];
        let bytes = if tr.rank() == 0 {
            Vec::new()
        } else {
            let st = PartState { lo: p.lo, hi: p.hi, net: p.model.net.export_part(p.lo, p.hi), driver: p.model.driver.export_part() };
            bincode::serialize(&st).expect("a partition's state serializes")
        };
        tr.gather(bytes)
    });
    let mut parts: Vec<(u32, u32, Sim)> = eng.parts.into_iter().map(|p| (p.lo, p.hi, p.model)).collect();
    match gathered {
        Some(None) => return Ok(None),
        Some(Some(all)) => {
            for bytes in all.iter().skip(1) {
                let st: PartState = bincode::deserialize(bytes).expect("a partition's state from a process of this run");
                let mut o = build(machine, spec)?;
                o.net.import_part(st.net, st.lo, st.hi);
                o.driver.import_part(st.driver);
                parts.push((st.lo, st.hi, o));
            }
        }
        None if !root => return Ok(None),
        None => {}
    }
    let packet_slots = parts.iter().map(|(_, _, o)| o.net.packet_slots()).sum();
    let mut parts = parts.into_iter();
    let (_, _, mut sim) = parts.next().expect("at least one partition");
    for (lo, hi, o) in parts {
        sim.net.absorb(&o.net, lo, hi);
        sim.driver.absorb(&o.driver);
    }
    let last = sim.net.last_progress();
    let deadlock_at = deadlocked.then(|| sim.net.deadlock_formed().unwrap_or(last));
    let progress_at_end = sim.driver.progress().clone();
    let end = if timed { t.min(end_gen) } else { progress_at_end.finished_at.unwrap_or(t) };
    let bound = sim.driver.bound_ticks(machine);
    let run = TrafficRun {
        pattern: spec.kind().name(),
        spec: spec.resolved(machine).to_map(),
        timed,
        per_link: c.per_link,
        window_ncycles: c.window_ncycles,
        from: measured_from,
        end,
        now: t,
        bound,
        peak_rate: peak,
        deadlock_at,
        stopped_at_max,
        finished: progress_at_end.finished_at.is_some(),
        created: progress_at_end.created,
        throttled: progress_at_end.throttled,
        oneway: progress_at_end.oneway,
    };
    let mut result = crate::report::summarize(&sim.net, run, &stats, wall.elapsed().as_secs_f64());
    result.engine.threads = threads;
    result.engine.partitions = partitions;
    result.engine.packet_slots = packet_slots;
    if cfg!(debug_assertions) {
        if let Err(broken) = invariants(&sim.net, &result, quiet) {
            panic!("{}: {broken}", spec.kind().name());
        }
    }
    progress(RunProgress { fraction: 1.0, ncycles: t as f64 / tb as f64, events: stats.events });
    Ok(Some(result))
}

/// Conservation and sanity at the end of a traffic run (checked after every
/// run in debug builds, and by the tests): every packet injected is
/// delivered or still in the network, per-VC packets add up to the hops,
/// "% of peak" is at most 100, a finite pattern that completed delivered
/// every packet it injected (and its deposit copies), and a
/// network with nothing left to happen (`quiet`: no event pending, so no
/// token in flight either) has every token back.
pub fn invariants(net: &Net, r: &TrafficResult, quiet: bool) -> Result<(), String> {
    let p = &r.packets;
    let vc_packets: u64 = r.vcs.iter().map(|v| v.packets).sum();
    if vc_packets != p.hops {
        return Err(format!("per-VC packets {vc_packets} != hops {}", p.hops));
    }
    if !(0.0..=100.0 + 1e-9).contains(&r.pct_peak) {
        return Err(format!("{}% of peak", r.pct_peak));
    }
    if p.injected + p.in_flight_at_start != p.delivered - p.deposit_copies + p.in_flight_at_end {
        return Err(format!("packets unaccounted for: injected + in flight at the start != delivered + in flight at the end: {p:?}"));
    }
    let timed = r.spec.get("warmup_ncycles").is_some();
    if !timed && r.completed && (p.delivered != p.injected + p.deposit_copies || p.created != p.injected) {
        return Err(format!("a completed finite pattern lost or gained packets: {p:?}"));
    }
    if quiet && net.live_packets() == 0 {
        net.check_tokens().map_err(|e| e.to_string())?;
    }
    Ok(())
}
