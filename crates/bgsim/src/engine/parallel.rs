//! The windowed engine, serial or on threads: the machine is cut into
//! partitions (contiguous blocks of nodes, see [`Partitioning`]), each with
//! its own copy of the model and its own queue, and all of them run the
//! same conservative time windows (YAWNS), one lookahead long.
//!
//! **Why windows are safe.** Every event one node schedules for another
//! (a packet's head reaching the next router, tokens coming back) is due at
//! least one lookahead after it is scheduled, so nothing scheduled inside a
//! window for another node is due inside it.
//!
//! **Why the result does not depend on the partitions.** Within a window an
//! event for another node is not scheduled at once but held in the queue's
//! outbox, in every run, partitioned or not. When the window ends the held
//! events of all partitions are put in one order, by the time they were
//! scheduled and then by the node that scheduled them, ties kept in the
//! order that node scheduled them, and scheduled in that order into their
//! nodes' queues. What a node sees is then the same whatever the cut:
//! its own events in the order it scheduled them, and each window's
//! events from other nodes after them, in that fixed order. Random streams
//! belong to nodes; counters that span nodes are sums (or maxima) merged at
//! the end. A run at 1, 2 or 4 partitions on any number of threads gives
//! the same result, bit for bit.
//!
//! **What crosses a partition.** An event crossing to another partition may
//! carry state of its model with it (a torus packet moving to the next
//! router): the model hands it over with [`Partitioned::emigrate`] and takes
//! it in with [`Partitioned::immigrate`].
//!
//! **Threads.** Each thread runs the windows of its partitions; two
//! barriers per window separate running from exchanging. Windows in which
//! nothing happens are skipped together: the next window starts at the
//! earliest pending event of all partitions.

use super::queue::{Crossing, EVERY, MAX_NODES, NOTE, NO_LOAD};
use super::{run_until, EngineStats, Event, EventQueue, Model, Partitioning, Tick};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::RwLock;

/// A model that can run as one partition of a windowed run.
pub trait Partitioned: Model + Send {
    /// What an event crossing to another partition carries (a packet).
    type Load: Clone + Send + Sync + serde::Serialize + serde::de::DeserializeOwned;
    /// `ev`, scheduled by this partition, goes to another one: what it
    /// carries, if anything (the model lets go of it).
    fn emigrate(&mut self, ev: &Event) -> Option<Self::Load>;
    /// `ev` comes from another partition with `load`: the model takes it
    /// in and points the event at it.
    fn immigrate(&mut self, ev: &mut Event, load: Self::Load);
    /// A note for the node of `ev` from another partition, taken in at the
    /// end of the window it was written in (see [`Crossing::note`]): state
    /// that partition hands over, not an event; what it schedules goes in
    /// `q` (the partition's queue). A note to every partition
    /// ([`Crossing::note_all`]) comes to its writer too, without a load.
    fn note(&mut self, _q: &mut EventQueue, _ev: &Event, _load: Option<Self::Load>) {
        unreachable!("this model writes no notes");
    }
    /// Runs the window up to `end`: the engine's [`run_until`] unless the
    /// model has its own loop (one that acts between ticks).
    fn run_window(&mut self, q: &mut EventQueue, end: Tick, stats: &mut EngineStats) {
        run_until(self, q, end, stats);
    }
    /// Whether the model stopped inside the window it last ran, for its
    /// driver to act (see [`Engine::run_until_stop`]).
    fn stopped(&self) -> bool {
        false
    }
}

/// Whether this process was started by an MPI launcher as one of several
/// (Open MPI's `mpirun`, or a PMI/PMIx launcher such as Slurm's `srun`).
pub fn launched_by_mpi() -> bool {
    launched_processes() > 1
}

/// How many processes the MPI launcher that started this process started
/// (1 without one).
pub fn launched_processes() -> usize {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"]
        .iter()
        .find_map(|k| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok()).filter(|&n| n > 1))
        .unwrap_or(1)
}

/// The processes of a distributed run (an MPI job, see `engine::mpi`):
/// each runs one partition, and every process makes the same calls in the
/// same order. A transport may move to the thread that runs its partition.
pub trait Transport: Send {
    /// This process's index, and how many there are.
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// Sends `out[p]` to process `p` (`out[rank]` is empty); returns what
    /// each process sent this one.
    fn exchange(&self, out: Vec<Vec<u8>>) -> Vec<Vec<u8>>;
    /// Element-wise sums of `sums` and maxima of `maxes` over the processes.
    fn reduce(&self, sums: &mut [u64], maxes: &mut [u64]);
    /// Every process's `bytes`, at process 0 (None elsewhere).
    fn gather(&self, bytes: Vec<u8>) -> Option<Vec<Vec<u8>>>;
}

/// One partition: its model, its queue, the nodes it owns.
pub struct Part<M> {
    pub model: M,
    pub q: EventQueue,
    pub lo: u32,
    pub hi: u32,
    pub stats: EngineStats,
    /// The window's held events for this partition's own nodes, in order.
    local: Vec<Crossing>,
    /// Scratch of [`sort_held`].
    keys: Vec<u64>,
    spare: Vec<Crossing>,
    /// The only partition of a run on one process: its held events are
    /// scheduled in order without being moved into order first.
    alone: bool,
}

impl<M: Partitioned> Part<M> {
    fn new(model: M, lo: u32, hi: u32, alone: bool) -> Self {
        Part { model, q: EventQueue::windowed(lo, hi), lo, hi, stats: EngineStats::default(), local: Vec::new(), keys: Vec::new(), spare: Vec::new(), alone }
    }

    /// Puts the window's held events in order (see [`sort_held`]), unless
    /// the partition is alone: [`Part::take_in`] then schedules them in
    /// order where they are.
    fn order_held(&mut self) {
        if !self.alone {
            sort_held(&mut self.q.outbox, &mut self.keys, &mut self.spare);
        }
    }

    /// Runs the window `[t, end)` and puts the events it held for other
    /// nodes in order (see [`sort_held`]). Whether it did anything: handled
    /// an event or held one.
    fn run_window(&mut self, t: Tick, end: Tick) -> bool {
        let before = self.stats.events;
        self.q.window = (t, end);
        self.model.run_window(&mut self.q, end, &mut self.stats);
        self.order_held();
        self.stats.events != before || !self.q.outbox.is_empty()
    }

    /// Hands the window's held events out (in order): those for this
    /// partition `k`'s own nodes stay, the others go to `to` by partition,
    /// with what they carry.
    fn hand_out(&mut self, k: usize, split: &Partitioning, to: &mut [Letter<M::Load>]) {
        if to.len() == 1 {
            std::mem::swap(&mut self.local, &mut self.q.outbox);
            return;
        }
        for mut c in self.q.outbox.drain(..) {
            if c.ev.node == EVERY {
                // A note for every partition: its own model keeps what it
                // wrote; the others get it as a load.
                let l = self.model.emigrate(&c.ev);
                for (d, (cs, loads)) in to.iter_mut().enumerate() {
                    if d == k {
                        continue;
                    }
                    let mut c = c;
                    if let Some(l) = &l {
                        c.load = loads.len() as u32;
                        loads.push(l.clone());
                    }
                    cs.push(c);
                }
                self.local.push(c);
                continue;
            }
            let d = split.part_of(c.ev.node) as usize;
            if d == k {
                self.local.push(c);
                continue;
            }
            let (cs, loads) = &mut to[d];
            if let Some(l) = self.model.emigrate(&c.ev) {
                c.load = loads.len() as u32;
                loads.push(l);
            }
            cs.push(c);
        }
    }

    /// Schedules this window's held events for this partition, its own and
    /// those of `others` (each list in order, with what its events carry),
    /// in one order: by order key (equal keys come from one node, so from
    /// one list). Whether there were any.
    fn take_in(&mut self, others: Vec<(&[Crossing], &[M::Load])>) -> bool {
        if self.alone {
            return self.take_in_alone();
        }
        let local = std::mem::take(&mut self.local);
        let mut lists = others;
        lists.push((&local[..], &[]));
        lists.retain(|(l, _)| !l.is_empty());
        let got = !lists.is_empty();
        if let [(only, loads)] = lists[..] {
            // One sender (always so on one partition): its order is the order.
            for &c in only {
                self.schedule_held(c, loads);
            }
        } else {
            while let Some((i, _)) = lists.iter().enumerate().filter(|(_, (l, _))| !l.is_empty()).min_by_key(|(_, (l, _))| l[0].key) {
                let (l, loads) = &mut lists[i];
                let c = l[0];
                *l = &l[1..];
                self.schedule_held(c, loads);
            }
        }
        drop(lists);
        self.local = local;
        self.local.clear();
        got
    }

    /// [`Part::take_in`] for the only partition: its own held events, in
    /// order of their keys ([`held_order`]), none carrying a load.
    fn take_in_alone(&mut self) -> bool {
        let mut local = std::mem::take(&mut self.local);
        let mut keys = std::mem::take(&mut self.keys);
        if held_order(&mut local, &mut keys) {
            for &k in &keys {
                self.schedule_held(local[(k & PLACE_MASK) as usize], &[]);
            }
        } else {
            for &c in &local {
                self.schedule_held(c, &[]);
            }
        }
        let got = !local.is_empty();
        local.clear();
        self.local = local;
        self.keys = keys;
        got
    }

    /// Schedules a held event `c` (taking in what it carries, in `loads`),
    /// or hands a note to the model.
    #[inline]
    fn schedule_held(&mut self, mut c: Crossing, loads: &[M::Load]) {
        if c.t == NOTE {
            let load = (c.load != NO_LOAD).then(|| loads[c.load as usize].clone());
            return self.model.note(&mut self.q, &c.ev, load);
        }
        if c.load != NO_LOAD {
            self.model.immigrate(&mut c.ev, loads[c.load as usize].clone());
        }
        self.q.schedule(c.t, c.ev);
    }

    /// When the partition's next event is due, for skipping idle windows:
    /// 0 if it was `busy` this window (no skipping).
    fn next_due(&self, busy: bool) -> Tick {
        if busy {
            0
        } else {
            self.q.peek_time().unwrap_or(Tick::MAX)
        }
    }
}

/// Held events for one partition, and what they carry (indexed by their
/// `load`).
type Letter<L> = (Vec<Crossing>, Vec<L>);

/// A partition's held events of one window for other partitions, by the
/// partition they go to.
struct Mail<L> {
    to: Vec<Letter<L>>,
}

/// The windowed engine over `parts.len()` partitions on `threads` threads.
pub struct Engine<M: Partitioned> {
    pub parts: Vec<Part<M>>,
    split: Partitioning,
    lookahead: Tick,
    threads: usize,
    now: Tick,
    mail: Vec<RwLock<Mail<M::Load>>>,
    /// A distributed run: the processes (this one runs partition `rank`).
    remote: Option<Box<dyn Transport>>,
}

impl<M: Partitioned> Engine<M> {
    /// The partitions of a machine of `nodes` nodes, one per model (each a
    /// full copy of the model: it only ever handles its own nodes' events),
    /// run with windows of `lookahead` ticks on up to `threads` threads.
    pub fn new(models: Vec<M>, nodes: u32, lookahead: Tick, threads: usize) -> Self {
        assert!(nodes <= MAX_NODES, "a windowed run has at most {MAX_NODES} nodes, not {nodes}");
        let p = models.len().max(1) as u32;
        let split = Partitioning { nodes, parts: p };
        let bounds: Vec<u32> = (0..=p).map(|k| first_node(&split, k)).collect();
        let parts = models
            .into_iter()
            .enumerate()
            .map(|(k, model)| {
                let (lo, hi) = (bounds[k], bounds[k + 1]);
                Part::new(model, lo, hi, p == 1)
            })
            .collect();
        let mail = (0..p).map(|_| RwLock::new(Mail { to: (0..p).map(|_| (Vec::new(), Vec::new())).collect() })).collect();
        Engine { parts, split, lookahead: lookahead.max(1), threads: threads.clamp(1, p as usize), now: 0, mail, remote: None }
    }

    /// This process's partition of a distributed run: one per process of
    /// `transport`, each a full copy of the model (see [`Engine::new`]).
    pub fn distributed(model: M, nodes: u32, lookahead: Tick, transport: Box<dyn Transport>) -> Self {
        assert!(nodes <= MAX_NODES, "a windowed run has at most {MAX_NODES} nodes, not {nodes}");
        let (k, n) = (transport.rank(), transport.size());
        let split = Partitioning { nodes, parts: n as u32 };
        let (lo, hi) = (first_node(&split, k as u32), first_node(&split, k as u32 + 1));
        Engine { parts: vec![Part::new(model, lo, hi, false)], split, lookahead: lookahead.max(1), threads: 1, now: 0, mail: Vec::new(), remote: Some(transport) }
    }

    /// The start of the current window (the end of the last, or later).
    pub fn now(&self) -> Tick {
        self.now
    }

    /// Runs the next windows on up to `threads` threads (one: on the
    /// calling thread).
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.clamp(1, self.parts.len());
    }

    /// The other processes of a distributed run, if any.
    pub fn transport(&self) -> Option<&dyn Transport> {
        self.remote.as_deref()
    }

    /// Runs windows until no event is pending before `until`; time then
    /// stands at `until`.
    pub fn run_until(&mut self, until: Tick) -> Tick {
        if self.now >= until {
            return self.now;
        }
        if let Some(transport) = &self.remote {
            windows_remote(&mut self.parts[0], &self.split, transport.as_ref(), self.lookahead, self.now, until);
            self.now = until;
            return until;
        }
        self.run_windows(until, false, u64::MAX);
        self.now = until;
        until
    }

    /// Runs at most `limit` windows from the current time, as
    /// [`Engine::run_until`] does, and up to one in which a partition's
    /// model stopped ([`Partitioned::stopped`]): that window is left open
    /// (what the partitions held in it is not exchanged) and time stands at
    /// its start.
    pub fn run_until_stop(&mut self, limit: u64) -> Halt {
        assert!(self.remote.is_none(), "a distributed run does not stop inside a window");
        let halt = self.run_windows(Tick::MAX, true, limit);
        match halt {
            Halt::Stopped(t, _) | Halt::Limit(t) => self.now = t,
            Halt::Idle => {}
        }
        halt
    }

    /// At most `limit` windows from now to `until` on the engine's
    /// threads; with `may_stop`, up to the first in which a model stopped.
    fn run_windows(&mut self, until: Tick, may_stop: bool, limit: u64) -> Halt {
        let (split, lookahead, threads, start) = (&self.split, self.lookahead, self.threads, self.now);
        let mail = &self.mail;
        let sync = Shared::new(threads, self.parts.len());
        if threads == 1 {
            let mut mine: Vec<(usize, &mut Part<M>)> = self.parts.iter_mut().enumerate().collect();
            return windows(&mut mine, split, mail, &sync, lookahead, start, until, may_stop, limit);
        }
        let mut groups: Vec<Vec<(usize, &mut Part<M>)>> = (0..threads).map(|_| Vec::new()).collect();
        for (k, p) in self.parts.iter_mut().enumerate() {
            groups[k % threads].push((k, p));
        }
        std::thread::scope(|s| {
            let sync = &sync;
            let jobs: Vec<_> = groups.into_iter().map(|mut mine| s.spawn(move || windows(&mut mine, split, mail, sync, lookahead, start, until, may_stop, limit))).collect();
            // Every thread stops at the same window.
            jobs.into_iter().map(|j| j.join().expect("a partition's thread does not panic")).next().expect("a thread")
        })
    }

    /// Ends the window that ends at `end` of a run driven from outside one
    /// window at a time (`mpi::driven`), whose partitions' queues are in
    /// their parts and whose windows the driver ran itself (`ran[k]`:
    /// partition k handled an event in it): what the partitions held is put
    /// in order, handed out and taken in, as [`windows`] does. Returns when
    /// the next window starts, as there (`Tick::MAX`: nothing is pending
    /// anywhere; time then stands at `end`).
    pub fn close_window(&mut self, end: Tick, ran: &[bool]) -> Tick {
        let (split, mail) = (&self.split, &self.mail);
        if let Some(transport) = &self.remote {
            // One partition here; the others on the processes.
            let p = &mut self.parts[0];
            p.order_held();
            let busy = ran[0] || !p.q.outbox.is_empty();
            let mut to = (0..transport.size()).map(|_| (Vec::new(), Vec::new())).collect::<Vec<Letter<M::Load>>>();
            let first = exchange_remote(p, split, transport.as_ref(), busy, &mut to);
            return self.open_next(end, first);
        }
        let mut busy = vec![false; self.parts.len()];
        for (k, p) in self.parts.iter_mut().enumerate() {
            p.order_held();
            busy[k] = ran[k] || !p.q.outbox.is_empty();
            let mut m = mail[k].write().expect("one thread");
            p.hand_out(k, split, &mut m.to);
        }
        let mut first = Tick::MAX;
        for (k, p) in self.parts.iter_mut().enumerate() {
            let guards: Vec<_> = (0..mail.len()).filter(|&s| s != k).map(|s| mail[s].read().expect("one thread")).collect();
            let got = p.take_in(guards.iter().map(|m| (&m.to[k].0[..], &m.to[k].1[..])).collect());
            first = first.min(p.next_due(busy[k] || got));
        }
        for m in mail {
            for (cs, loads) in m.write().expect("one thread").to.iter_mut() {
                cs.clear();
                loads.clear();
            }
        }
        self.open_next(end, first)
    }

    /// After the window that ends at `end`, the earliest pending event of
    /// any partition being due at `first` (0: a partition was busy): the
    /// next window's start, time moved there (`Tick::MAX`: nothing is
    /// pending; time stands at `end`).
    fn open_next(&mut self, end: Tick, first: Tick) -> Tick {
        if first == Tick::MAX {
            self.now = end;
            return Tick::MAX;
        }
        let t = end.max(first);
        if t > end {
            for p in self.parts.iter_mut() {
                p.q.advance_to(t);
            }
        }
        self.now = t;
        t
    }
}

/// The first node of partition `k` (`parts` for one past the last).
fn first_node(split: &Partitioning, k: u32) -> u32 {
    if k >= split.parts {
        return split.nodes;
    }
    // part_of is monotone in the node: the first node whose part is k.
    let (mut lo, mut hi) = (0u32, split.nodes);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if split.part_of(mid) < k {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// This process's partition (its rank's) of a distributed run from `start` to
/// `until`: the windows of [`windows`], with the held events for other
/// partitions sent to their processes after each window.
fn windows_remote<M: Partitioned>(p: &mut Part<M>, split: &Partitioning, transport: &dyn Transport, lookahead: Tick, start: Tick, until: Tick) {
    let mut t = start;
    let mut to: Vec<Letter<M::Load>> = (0..transport.size()).map(|_| (Vec::new(), Vec::new())).collect();
    while t < until {
        let end = t.saturating_add(lookahead).min(until);
        let busy = p.run_window(t, end);
        let first = exchange_remote(p, split, transport, busy, &mut to);
        t = end.max(first.min(until));
        if t > end {
            p.q.advance_to(t);
        }
    }
}

/// The end of a window of process `transport.rank()`'s partition `p` of a
/// distributed run (`busy`: it handled or held an event): the events held
/// in order (`p`'s outbox sorted) go to their processes, theirs come in.
/// Returns the earliest pending event of any process (0 if any was busy:
/// the next window starts at this one's end), the same on every process.
fn exchange_remote<M: Partitioned>(p: &mut Part<M>, split: &Partitioning, transport: &dyn Transport, busy: bool, to: &mut [Letter<M::Load>]) -> Tick {
    p.hand_out(transport.rank(), split, to);
    let out = to
        .iter_mut()
        .map(|m| {
            let b = if m.0.is_empty() { Vec::new() } else { bincode::serialize(&*m).expect("held events serialize") };
            m.0.clear();
            m.1.clear();
            b
        })
        .collect();
    let got: Vec<Letter<M::Load>> =
        transport.exchange(out).iter().filter(|b| !b.is_empty()).map(|b| bincode::deserialize(b).expect("held events from a process of this run")).collect();
    let took = p.take_in(got.iter().map(|(c, l)| (&c[..], &l[..])).collect());
    // The next window starts at the earliest pending event of any
    // process, if that is later than this window's end.
    let mut latest = [u64::MAX - p.next_due(busy || took)];
    transport.reduce(&mut [], &mut latest);
    u64::MAX - latest[0]
}

/// Puts a window's held events in order of their keys; events of one key
/// (one node's, at one time) keep the order they were scheduled in. See
/// [`held_order`].
fn sort_held(v: &mut Vec<Crossing>, keys: &mut Vec<u64>, spare: &mut Vec<Crossing>) {
    if held_order(v, keys) {
        spare.clear();
        spare.extend(keys.iter().map(|&k| v[(k & PLACE_MASK) as usize]));
        std::mem::swap(v, spare);
    }
}

/// Bits of an order word ([`held_order`]) that hold the event's place.
const PLACE_BITS: u32 = 20;
const PLACE_MASK: u64 = (1 << PLACE_BITS) - 1;

/// The order of a window's held events `v` (see [`sort_held`]): false if
/// they are in order already; else true, with `keys` holding one word per
/// event in order, its place in `v` in the low [`PLACE_BITS`] bits. A
/// window too long or events too many for the word are sorted in `v`
/// itself (a stable sort of the events; false). The events come in order
/// of time already, so each time's run is sorted on its own (short runs:
/// insertion sorts).
fn held_order(v: &mut [Crossing], keys: &mut Vec<u64>) -> bool {
    const TIME_BITS: u32 = 64 - PLACE_BITS - super::queue::NODE_BITS;
    if v.len() < 2 || v.windows(2).all(|w| w[0].key <= w[1].key) {
        return false;
    }
    let span = v[v.len() - 1].key >> super::queue::NODE_BITS;
    if span >= 1 << TIME_BITS || v.len() >= 1 << PLACE_BITS {
        v.sort_by_key(|c| c.key);
        return false;
    }
    keys.clear();
    keys.extend(v.iter().enumerate().map(|(i, c)| c.key << PLACE_BITS | i as u64));
    let mut i = 0;
    while i < keys.len() {
        let t = keys[i] >> (PLACE_BITS + super::queue::NODE_BITS);
        let mut j = i + 1;
        while j < keys.len() && keys[j] >> (PLACE_BITS + super::queue::NODE_BITS) == t {
            j += 1;
        }
        keys[i..j].sort_unstable();
        i = j;
    }
    true
}

/// What the threads of a run share besides the mail: two barriers' worth
/// of state, each partition's earliest pending event after an exchange,
/// and whether a thread has failed.
struct Shared {
    n: usize,
    count: AtomicUsize,
    generation: AtomicUsize,
    failed: AtomicBool,
    /// A model stopped in the window (see [`Engine::run_until_stop`]).
    stop: AtomicBool,
    /// Per window parity, per partition: its earliest pending event after
    /// the exchange (0 if it was busy). Two sets: a fast thread writes the
    /// next window's while a slow one still reads this one's.
    next: [Vec<AtomicU64>; 2],
    /// Turns a waiting thread spins before it yields its processor.
    spin: u32,
}

impl Shared {
    fn new(n: usize, parts: usize) -> Self {
        Shared {
            n,
            count: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            next: [0, 1].map(|_| (0..parts).map(|_| AtomicU64::new(0)).collect()),
            // More threads than processors: a spinning thread holds the
            // processor the one it waits for needs, so give it up at once.
            spin: if processors() >= n { 2_000 } else { 0 },
        }
    }

    /// Waits until every thread is here. Spins (windows are a few hundred
    /// microseconds; a sleeping thread would take tens to wake), yielding
    /// after a while. Panics if another thread failed.
    fn wait(&self) {
        if self.n == 1 {
            return;
        }
        let g = self.generation.load(Ordering::Acquire);
        if self.count.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.count.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == g {
            if self.failed.load(Ordering::Relaxed) {
                panic!("another partition's thread failed");
            }
            spins += 1;
            if spins < self.spin {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// The processors this process may use (read once: on Linux it reads the
/// cgroup's files).
fn processors() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::thread::available_parallelism().map_or(1, |p| p.get()))
}

/// Marks the run failed if its thread unwinds, so that the others stop
/// waiting for it at a barrier.
struct FailGuard<'a>(&'a Shared);

impl Drop for FailGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.failed.store(true, Ordering::Relaxed);
        }
    }
}

/// Where [`Engine::run_until_stop`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halt {
    /// A model stopped in the window `[start, end)`.
    Stopped(Tick, Tick),
    /// The windows ran out; the next starts here.
    Limit(Tick),
    /// Nothing is pending anywhere (or the run reached its end).
    Idle,
}

/// One thread's share of a run: at most `limit` windows of its partitions
/// `mine` from `start` to `until`; with `may_stop`, up to the first window
/// in which a model stopped, left without its exchange (every thread
/// returns the same).
#[allow(clippy::too_many_arguments)]
fn windows<M: Partitioned>(
    mine: &mut [(usize, &mut Part<M>)],
    split: &Partitioning,
    mail: &[RwLock<Mail<M::Load>>],
    sync: &Shared,
    lookahead: Tick,
    start: Tick,
    until: Tick,
    may_stop: bool,
    limit: u64,
) -> Halt {
    let _guard = FailGuard(sync);
    let mut t = start;
    let mut parity = 0;
    let mut left = limit;
    let mut busy = vec![false; mine.len()];
    while t < until {
        if left == 0 {
            return Halt::Limit(t);
        }
        left -= 1;
        let next = &sync.next[parity];
        parity ^= 1;
        let end = t.saturating_add(lookahead).min(until);
        // Run the window; hand what goes to other partitions to the mail.
        for (i, (_, p)) in mine.iter_mut().enumerate() {
            busy[i] = p.run_window(t, end);
            if may_stop && p.model.stopped() {
                sync.stop.store(true, Ordering::Relaxed);
            }
        }
        if may_stop {
            // Every thread sees every model's stop here.
            sync.wait();
            if sync.stop.load(Ordering::Relaxed) {
                return Halt::Stopped(t, end);
            }
        }
        for (k, p) in mine.iter_mut() {
            let mut m = mail[*k].write().expect("no thread failed while holding mail");
            p.hand_out(*k, split, &mut m.to);
        }
        sync.wait();
        // Take in the window's held events for this thread's partitions.
        for (i, (k, p)) in mine.iter_mut().enumerate() {
            let guards: Vec<_> = (0..mail.len()).filter(|s| s != k).map(|s| mail[s].read().expect("no thread failed while holding mail")).collect();
            let got = p.take_in(guards.iter().map(|m| (&m.to[*k].0[..], &m.to[*k].1[..])).collect());
            next[*k].store(p.next_due(busy[i] || got), Ordering::Relaxed);
        }
        sync.wait();
        // Every thread reads the same figures here and makes the same
        // choice: the next window starts where the earliest pending event
        // of any partition is, if that is later than this window's end.
        let first = next.iter().map(|x| x.load(Ordering::Relaxed)).min().unwrap_or(0);
        t = end.max(first.min(until));
        // Clear this thread's mail for the next window: every reader is
        // past the barrier above.
        for (k, p) in mine.iter_mut() {
            for (cs, loads) in mail[*k].write().expect("no thread failed while holding mail").to.iter_mut() {
                cs.clear();
                loads.clear();
            }
            if t > end && t != Tick::MAX {
                p.q.advance_to(t);
            }
        }
    }
    Halt::Idle
}
