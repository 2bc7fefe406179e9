//! Python binding of bgsim: conversions, GIL release and error mapping only.
//! No model logic lives here. `World` (an MPI run driven by the Python
//! runtime) is here; the rest is one file per concern: `registry` (what can
//! be chosen: machines, patterns, collectives), `traffic` (traffic runs),
//! `launcher` (the MPI job that started the process), `members`
//! (communicators for the fast calls), `errors` (one mapping to Python
//! exceptions), `geometry` (the core's placement and routes).

mod errors;
mod geometry;
mod launcher;
mod members;
mod registry;
mod traffic;
mod watch;

/// Rust's allocations in this library go to mimalloc: partitions on threads
/// free what other threads allocated (a rank's message posted from the
/// driver's thread, a packet's load taken in from another partition), and
/// glibc's malloc serializes those frees on the allocating thread's arena
/// lock.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use errors::to_py;
use members::Members;
use registry::load_machine;

use bgsim::machine::Mapping;
use bgsim::mpi;
use bgsim::mpi::SendCall;
use bgsim::mpi::coll;
use bgsim::machine::Protocol;
use bgsim::msglayer::SendMode;
use pyo3::buffer::PyBuffer;
use pyo3::types::{PyBytes, PyMemoryView, PyTuple};
use pyo3::types::{PyDict, PyList};
use bgsim::mpi::agent::{Agent, Exchange, Parts, Payload, Steps};
use pyo3::prelude::*;

/// What `finish` returns: (source, tag, count, cancelled, truncated, data).
type Finished<'py> = (i32, i32, u32, bool, bool, Option<Bound<'py, PyBytes>>);

/// Refuses a message larger than the message layer carries, before
/// anything is copied.
fn check_message_size(bytes: u64) -> PyResult<()> {
    if bytes > bgsim::msglayer::MAX_MESSAGE_BYTES {
        return Err(to_py(mpi::MpiError::message_too_large(bytes)));
    }
    Ok(())
}

/// Copies `data` into the start of `buf` (which holds at least as many bytes).
fn copy_into(py: Python<'_>, buf: &PyBuffer<u8>, data: &[u8]) -> PyResult<()> {
    if data.len() == buf.item_count() {
        return buf.copy_from_slice(py, data);
    }
    let cells = buf.as_mut_slice(py).ok_or_else(|| errors::usage("receive buffer is not writable and contiguous"))?;
    for (c, &b) in cells.iter().zip(data) {
        c.set(b);
    }
    Ok(())
}

/// A simulated machine running MPI ranks, driven by the Python runtime.
/// Each call acts at the current simulated time; `run` advances it.
#[pyclass(unsendable, module = "bgsim._core")]
struct World {
    w: mpi::driven::Ranks,
    /// The caller's buffers of receives posted by `irecv_fast`, by request:
    /// the received data is copied straight into them.
    recv_bufs: Vec<Option<PyBuffer<u8>>>,
    /// Wall time spent in `run`, for the run's Python share (timed here:
    /// from Python it would cost two clock calls per run).
    run_wall: std::time::Duration,
    /// The memory watch of the run, once started (`watch_memory`).
    watch: Option<watch::Watch>,
}

/// A logged message as Python sees it: (src, dst, bytes, protocol, posted,
/// send_done, recv_done).
type LogRecord = (u32, u32, u32, u8, u64, u64, u64);

/// A node's counters as Python sees them: (tick, bytes sent on each of its
/// six links, bytes in its injection FIFOs).
type NodeSample = (u64, [u64; 6], u64);

/// Largest MPI tag (mpi4py's `TAG_UB`).
const TAG_UB: i64 = i32::MAX as i64;

/// What a blocking call's fast path (`send_fast` / `recv_fast`) leaves
/// to its caller when the call is not over: the request to finish once the
/// rank runs again (`release` a send, `finish` a receive), whether the rank
/// waits for it first, and, if the core ran the simulation for the waiting
/// rank, the ranks that run made ready (in the order `run` returns them).
#[pyclass(frozen, get_all, module = "bgsim._core")]
pub(crate) struct Blocked {
    req: u32,
    waits: bool,
    ready: Option<Vec<u32>>,
}

/// `send_fast` / `recv_fast`'s answer: False (not the common case: nothing
/// was done), True (done: the request is finished and freed), or a
/// [`Blocked`].
enum Fast {
    NotTaken,
    Done,
    Blocked(Blocked),
}

impl IntoPy<PyObject> for Fast {
    fn into_py(self, py: Python<'_>) -> PyObject {
        match self {
            Fast::NotTaken => false.into_py(py),
            Fast::Done => true.into_py(py),
            Fast::Blocked(b) => Py::new(py, b).expect("a Blocked is made").into_py(py),
        }
    }
}

impl World {
    /// `send_fast` / `recv_fast`'s end: blocks `rank` on request `r` (if
    /// the call was the common case, `r` >= 0). With `run` (no other rank
    /// is due in the driver) a rank that waits runs the simulation here at
    /// once, as the driver would next: if it alone becomes ready the call
    /// is over (the request finished here: `recv` says it is a receive,
    /// whose data goes into its buffer; one truncated is left to the
    /// caller, which reports it). See [`Fast`] for the answer.
    fn block_fast(&mut self, py: Python<'_>, rank: u32, r: i64, run: bool, recv: bool) -> PyResult<Fast> {
        let Ok(req) = u32::try_from(r) else { return Ok(Fast::NotTaken) };
        if self.w.block(rank, vec![req], 1) {
            let waits = |ready| Ok(Fast::Blocked(Blocked { req, waits: true, ready }));
            if !run {
                return waits(None);
            }
            match self.timed_run() {
                // The driver's own run finds the deadlock again and reports it.
                Err(_) => return waits(None),
                Ok(ready) if ready[..] != [rank] => return waits(Some(ready)),
                // The rank alone goes on: the call is over.
                Ok(_) => {}
            }
        }
        if recv && self.w.status(req).truncated {
            return Ok(Fast::Blocked(Blocked { req, waits: false, ready: None }));
        }
        if recv {
            self.finish(py, req)?;
        } else {
            self.release(req);
        }
        Ok(Fast::Done)
    }
    /// The core's run (see `run`), its wall time counted in `run_wall`.
    fn timed_run(&mut self) -> Result<Vec<u32>, mpi::MpiError> {
        let t0 = std::time::Instant::now();
        let ready = self.w.run();
        self.run_wall += t0.elapsed();
        ready
    }
    /// What `rank`'s finished exchange received, (source, payload) in
    /// receive order.
    fn finished_exchange(&mut self, rank: u32) -> PyResult<Vec<(u32, Payload)>> {
        Ok(self.finished_agent(rank)?.into_received())
    }
    /// `rank`'s finished exchange.
    fn finished_agent(&mut self, rank: u32) -> PyResult<Agent> {
        self.w.take_result(rank).ok_or_else(|| errors::usage(format!("rank {rank} has no finished collective")))
    }
}

/// `tag` as an int in `lowest..=TAG_UB`.
fn plain_tag(tag: &Bound<'_, PyAny>, lowest: i64) -> Option<i32> {
    let t: i64 = tag.extract().ok()?;
    (lowest..=TAG_UB).contains(&t).then_some(t as i32)
}

/// A send's mode and protocol from the code Python passes: 0..6 the modes
/// of `SendMode` in order (0 standard, 1 synchronous, 2 ready, 3 buffered,
/// 4 direct, 5 remote, 6 served); 7 a message of the machine's own
/// collective protocols (BG/P's broadcasts below MPI): a standard send,
/// eager at every size.
fn send_mode(m: u8) -> PyResult<(SendMode, Option<Protocol>)> {
    Ok(match m {
        0 => (SendMode::Standard, None),
        1 => (SendMode::Synchronous, None),
        2 => (SendMode::Ready, None),
        3 => (SendMode::Buffered, None),
        4 => (SendMode::Direct, None),
        5 => (SendMode::Remote, None),
        6 => (SendMode::Served, None),
        7 => (SendMode::Standard, Some(Protocol::Eager)),
        _ => return Err(errors::usage(format!("send mode {m}: allowed 0..7"))),
    })
}

/// `s` sent in mode `m` (see [`send_mode`]).
fn in_mode(s: SendCall, m: u8) -> PyResult<SendCall> {
    let (mode, proto) = send_mode(m)?;
    Ok(s.mode(mode).protocol(proto))
}

#[pymethods]
impl World {
    /// `mapping`: a permutation name such as "XYZT"; or `mapfile` =
    /// (file name, text); `nranks` None: every task slot (or the mapfile's lines).
    /// `fidelity`: "packet" (the torus packet by packet), "coarse" (the
    /// torus's coarse tier) or "message" (the coarse torus, messages moving
    /// as trains of packets). `threads` > 1: the machine cut into that many
    /// partitions (or `partitions`, at least as many), run on as many
    /// threads (the same result). `processes`:
    /// in a process started by an MPI launcher, one partition per process
    /// of the job, each running its own ranks (else every process runs the
    /// whole world).
    #[new]
    #[pyo3(signature = (machine, settings, nranks=None, mapping="XYZT", mapfile=None, seed=1, mpi=true, fidelity="packet", threads=1, processes=false, partitions=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(machine: &str, settings: Vec<String>, nranks: Option<u32>, mapping: &str, mapfile: Option<(String, String)>, seed: u64, mpi: bool, fidelity: &str, threads: usize,
           processes: bool, partitions: Option<usize>) -> PyResult<Self> {
        if !matches!(fidelity, "packet" | "coarse" | "message") {
            return Err(errors::usage(format!("fidelity `{fidelity}`: allowed packet, coarse, message")));
        }
        let m = load_machine(machine, settings)?;
        let tasks = m.tasks_per_node();
        let (map, n) = match mapfile {
            Some((file, text)) => {
                let map = Mapping::mapfile(&text, &file, &m.shape, tasks, nranks).map_err(to_py)?;
                let n = match &map {
                    Mapping::Slots(s) => s.len() as u32,
                    _ => unreachable!(),
                };
                (map, n)
            }
            None => (Mapping::order(mapping).map_err(to_py)?, nranks.unwrap_or((m.shape.nodes() - m.faults.nodes.len() as u32) * tasks)),
        };
        if n == 0 {
            return Err(errors::usage("the number of ranks must be at least 1"));
        }
        let parts = partitions.unwrap_or(threads);
        errors::check_cut(threads, parts)?;
        let mut w = mpi::World::new(&m, n, &map, seed, mpi).map_err(to_py)?;
        if fidelity == "coarse" {
            w.set_coarse().map_err(to_py)?;
        } else if fidelity == "message" {
            w.set_trains(bgsim::mpi::MESSAGE_TRAIN).map_err(to_py)?;
        }
        let w = if processes && bgsim::engine::parallel::launched_by_mpi() {
            // One partition per process of the MPI job; each runs its own ranks.
            if parts > 1 {
                return Err(errors::cut_under_launcher(threads, parts));
            }
            #[cfg(not(feature = "mpi"))]
            return Err(errors::usage("this process was started by an MPI launcher, and this bgsim was built without MPI: build it with `make build`"));
            #[cfg(feature = "mpi")]
            {
                bgsim::engine::mpi::init();
                mpi::driven::Ranks::distributed(w, Box::new(bgsim::engine::mpi::Mpi::world())).map_err(to_py)?
            }
        } else {
            mpi::driven::Ranks::cut(w, parts, threads).map_err(to_py)?
        };
        Ok(World { w, recv_bufs: Vec::new(), run_wall: std::time::Duration::ZERO, watch: None })
    }
    /// Stops the process, with a message, when it holds more than
    /// `stop_at` bytes (`limit`: what it may use in all), whatever it is
    /// doing (see `watch.rs`); until this world is dropped.
    fn watch_memory(&mut self, stop_at: u64, limit: u64) {
        self.watch = Some(watch::Watch::start(stop_at, limit));
    }
    /// Ends the memory watch, if one runs.
    fn watch_memory_end(&mut self) {
        self.watch = None;
    }
    /// Partitions of the machine, each run on a thread of its own (or,
    /// under an MPI launcher, on a process of its own).
    #[getter]
    fn partitions(&self) -> usize {
        self.w.partitions()
    }
    /// The threads the partitions run on.
    #[getter]
    fn threads(&self) -> usize {
        self.w.threads()
    }
    /// The share of the simulated time that ran on the partitions'
    /// threads (0 on one partition): the engine keeps to one thread while
    /// the ranks act too often for threads to pay.
    #[getter]
    fn threaded_share(&self) -> f64 {
        self.w.threaded_share()
    }
    /// (this process's index, processes): (0, 1) unless the ranks run on
    /// the processes of an MPI job.
    #[getter]
    fn process(&self) -> (usize, usize) {
        self.w.process()
    }
    /// The ranks this process runs (all of them unless on an MPI job's
    /// processes).
    #[getter]
    fn local_ranks(&self) -> Vec<u32> {
        (0..self.w.nranks()).filter(|&r| self.w.is_local(r)).collect()
    }
    /// Every process's `data`, in process order (collective: every process
    /// calls it).
    fn share<'py>(&self, py: Python<'py>, data: &[u8]) -> Vec<Bound<'py, PyBytes>> {
        self.w.share(data.to_vec()).iter().map(|b| PyBytes::new_bound(py, b)).collect()
    }
    #[getter]
    fn nranks(&self) -> u32 {
        self.w.nranks()
    }
    /// "packet", "coarse" or "message".
    #[getter]
    fn fidelity(&self) -> &'static str {
        self.w.fidelity()
    }
    /// The machine's hardware components ("torus", "node", "collective", "barrier").
    #[getter]
    fn components(&self) -> Vec<&'static str> {
        self.w.machine().spec.components().iter().map(|c| c.name()).collect()
    }
    #[getter]
    fn tasks_per_node(&self) -> u32 {
        self.w.machine().tasks_per_node()
    }
    /// Whether the partition has dead nodes or links.
    #[getter]
    fn faulty_torus(&self) -> bool {
        !self.w.machine().faults.is_empty()
    }
    #[getter]
    fn shape(&self) -> (u32, u32, u32) {
        let d = self.w.machine().shape.dims;
        (d[0], d[1], d[2])
    }
    /// Whether each dimension is a torus (true) or a mesh.
    #[getter]
    fn torus(&self) -> (bool, bool, bool) {
        let t = self.w.machine().shape.torus;
        (t[0], t[1], t[2])
    }
    #[getter]
    fn mode(&self) -> &'static str {
        self.w.machine().mode.name()
    }
    #[getter]
    fn ticks_per_second(&self) -> f64 {
        self.w.machine().ticks_per_second()
    }
    /// Buffer alignment network access needs, bytes.
    #[getter]
    fn alignment(&self) -> u32 {
        self.w.machine().spec.cpu.network_alignment_bytes
    }
    #[getter]
    fn ticks_per_link_byte(&self) -> u64 {
        self.w.machine().tick_byte
    }
    /// The largest torus packet, bytes.
    #[getter]
    fn max_packet_bytes(&self) -> u32 {
        self.w.machine().max_packet_bytes()
    }
    #[getter]
    fn ticks_per_cycle(&self) -> u64 {
        self.w.machine().tick_cycle
    }
    /// The machine's collective algorithm choices, op -> name ("auto" or an algorithm).
    fn collectives(&self) -> Vec<(String, String)> {
        coll::OPERATIONS
            .iter()
            .map(|op| (op.name.to_string(), self.w.machine().spec.collectives.get(op.name).unwrap_or("auto").to_string()))
            .collect()
    }
    /// Whether the machine's MPI runs its torus algorithms where they
    /// apply (`collectives.torus_algorithms`).
    #[getter]
    fn torus_algorithms(&self) -> bool {
        self.w.machine().spec.collectives.torus_algorithms
    }
    fn machine_toml(&self) -> String {
        self.w.machine().to_toml()
    }
    fn now(&self) -> u64 {
        self.w.now()
    }
    /// Events simulated so far.
    fn events(&self) -> u64 {
        self.w.events()
    }
    /// Runs a halo exchange whose ranks are skeletons driven by the core
    /// (`bgsim.skeleton.halo_in_core`): logical grid `grid` (rank-major),
    /// `nbytes` to each neighbour, `iters` times; with `threads` > 1 on
    /// copies of this (fresh) world cut into that many partitions (or
    /// `partitions`, at least as many) on as many threads, and under an
    /// MPI launcher one partition per process (the same result). Returns
    /// the run as JSON.
    #[pyo3(signature = (grid, nbytes, iters, threads=1, partitions=None))]
    fn skeleton_halo(&mut self, py: Python<'_>, grid: Vec<u32>, nbytes: u32, iters: u32, threads: usize, partitions: Option<usize>) -> PyResult<String> {
        let parts = partitions.unwrap_or(threads);
        errors::check_cut(threads, parts)?;
        if parts > 1 && self.w.now() > 0 {
            return Err(errors::usage("a halo on partitions runs on a fresh world (this one has run)"));
        }
        let distributed = bgsim::engine::parallel::launched_by_mpi();
        if distributed && parts > 1 {
            return Err(errors::cut_under_launcher(threads, parts));
        }
        #[cfg(not(feature = "mpi"))]
        if distributed {
            return Err(errors::usage("this process was started by an MPI launcher, and this bgsim was built without MPI: build it with `make build`"));
        }
        let halo = mpi::skeleton::Halo { grid, bytes: nbytes, iters };
        if self.w.partitions() > 1 {
            return Err(errors::usage("a core-driven halo runs on a world of one partition (its `threads` cut it)"));
        }
        let w = &mut self.w;
        let r = py
            .allow_threads(|| {
                #[cfg(feature = "mpi")]
                if distributed {
                    // One partition per process; every process gets the result.
                    bgsim::engine::mpi::init();
                    return halo.run_distributed(w.first(), Box::new(bgsim::engine::mpi::Mpi::world()));
                }
                if parts > 1 {
                    halo.run_parts(w.first(), parts, threads)
                } else {
                    halo.run(w)
                }
            })
            .map_err(to_py)?;
        Ok(serde_json::to_string(&r).expect("a skeleton run is plain data"))
    }
    /// Logs the point-to-point messages of the ranks `watched` marks (at
    /// most `limit`), for timelines.
    fn record_messages(&mut self, watched: Vec<bool>, limit: usize) -> PyResult<()> {
        if watched.len() != self.w.nranks() as usize {
            return Err(errors::usage(format!("{} flags for {} ranks", watched.len(), self.w.nranks())));
        }
        self.w.record_messages(watched, limit);
        Ok(())
    }
    /// The message log: ([(src, dst, bytes, protocol, posted, send_done,
    /// recv_done)] in ticks, ordered by (posted, src); messages past the
    /// limit).
    fn message_log(&self) -> (Vec<LogRecord>, u64) {
        let (recs, dropped) = self.w.message_log();
        (recs.iter().map(|r| (r.src, r.dst, r.bytes, r.proto, r.posted, r.send_done, r.recv_done)).collect(), dropped)
    }
    /// From now on, samples the outgoing link bytes (six directions) and
    /// injection FIFO bytes of `nodes` every `interval` ticks, at most `cap`
    /// samples a node (the interval doubles past that).
    fn sample_nodes(&mut self, nodes: Vec<u32>, interval: u64, cap: usize) -> PyResult<()> {
        let n = self.w.machine().shape.nodes();
        if let Some(bad) = nodes.iter().find(|&&x| x >= n) {
            return Err(errors::usage(format!("node {bad}: the partition has {n} nodes")));
        }
        if interval == 0 || cap < 2 {
            return Err(errors::usage(format!("sampling every {interval} ticks, {cap} samples: expected at least 1 tick and 2 samples")));
        }
        self.w.sample_nodes(&nodes, interval, cap);
        Ok(())
    }
    /// The sampled nodes' samples once the run is drained: [(node, [(tick,
    /// link bytes (6), FIFO bytes)])], by node.
    fn node_samples(&self) -> Vec<(u32, Vec<NodeSample>)> {
        self.w.node_samples().into_iter().map(|(n, v)| (n, v.iter().map(|s| (s.tick, s.links, s.fifo)).collect())).collect()
    }
    fn rank_time(&self, rank: u32) -> u64 {
        self.w.rank_time(rank)
    }
    fn coords(&self, rank: u32) -> (u32, u32, u32, u32) {
        let c = self.w.coords(rank);
        (c[0], c[1], c[2], c[3])
    }
    fn node_of(&self, rank: u32) -> u32 {
        self.w.place(rank).0
    }
    /// Protocol MPI would use for a message of `nbytes`.
    fn protocol_for(&self, nbytes: u32) -> &'static str {
        self.w.protocol_for(nbytes, None).name()
    }
    /// Posts a send by world rank `rank` to world rank `dest` on context
    /// `ctx`: `message` is the data (bytes), or a size (an int) for a
    /// message without content (communication skeletons, size-only
    /// buffers); `mode` the send mode (0 standard, 1 synchronous, 2
    /// ready, 3 buffered; the others the message layer's, see
    /// `send_mode`). Returns the request.
    #[pyo3(signature = (rank, dest, ctx, tag, message, mode=0))]
    fn isend(&mut self, rank: u32, dest: i64, ctx: u32, tag: i32, message: &Bound<'_, PyAny>, mode: u8) -> PyResult<u32> {
        let send = if let Ok(data) = message.downcast::<PyBytes>() {
            let data = data.as_bytes();
            check_message_size(data.len() as u64)?;
            SendCall::new(dest, ctx, tag, self.w.buffer_from(data))
        } else {
            let n: u64 = message.extract().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "isend: message must be bytes or a size in bytes (a non-negative int), got {}",
                    message.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                ))
            })?;
            check_message_size(n)?;
            SendCall::sized(dest, ctx, tag, n as u32)
        };
        self.w.isend(rank, in_mode(send, mode)?).map_err(to_py)
    }
    /// Posts a send of `nbytes` without content by world rank `rank` when
    /// request `after` (one of `rank`'s, or of a rank on its node's
    /// partition) completes, or at once if it has; `mode` as for `isend`.
    /// The send is released when done; `after` stays until `unwatch`ed.
    fn isend_after(&mut self, after: u32, rank: u32, dest: i64, ctx: u32, tag: i32, nbytes: u64, mode: u8) -> PyResult<()> {
        check_message_size(nbytes)?;
        let send = in_mode(SendCall::sized(dest, ctx, tag, nbytes as u32), mode)?;
        self.w.isend_after(after, rank, send).map_err(to_py)
    }
    /// Request `req` is nobody's to wait for: it is released when it completes.
    fn unwatch(&mut self, req: u32) {
        self.w.unwatch(req)
    }
    /// The common case of the buffer API's `Isend`, in one call: a standard
    /// send of `data` by world rank `rank`, a member of `comm`, to rank
    /// `dest` of `comm` with a tag in 0..=TAG_UB. Returns the request, or -1
    /// having done nothing when the call is not that case (PROC_NULL, a bad
    /// rank or tag, a caller outside `comm`): the MPI module's general path
    /// then handles it and raises the errors mpi4py would.
    fn isend_fast(&mut self, rank: u32, comm: &Members, dest: &Bound<'_, PyAny>, tag: &Bound<'_, PyAny>, data: &[u8]) -> i64 {
        let (Some(wdest), Some(tag)) = (comm.world(dest), plain_tag(tag, 0)) else { return -1 };
        if !comm.has(rank) || data.len() as u64 > bgsim::msglayer::MAX_MESSAGE_BYTES {
            return -1;
        }
        let data = self.w.buffer_from(data);
        match self.w.isend(rank, SendCall::new(wdest as i64, comm.ctx, tag, data)) {
            Ok(r) => r as i64,
            Err(_) => -1,
        }
    }
    /// The common case of the buffer API's `Irecv`, in one call: a receive by
    /// world rank `rank`, a member of `comm`, from rank `source` of `comm` or
    /// ANY_SOURCE (-1), with a tag in 0..=TAG_UB or ANY_TAG (-1), into `buf`,
    /// any writable C-contiguous buffer. The data goes straight into `buf`
    /// when the request is finished. Returns the request, or -1 having done
    /// nothing when the call is not that case (see `isend_fast`).
    fn irecv_fast(&mut self, rank: u32, comm: &Members, source: &Bound<'_, PyAny>, tag: &Bound<'_, PyAny>, buf: &Bound<'_, PyAny>) -> i64 {
        let src = match source.extract::<i64>() {
            Ok(-1) => -1,
            Ok(_) => match comm.world(source) {
                Some(w) => w as i64,
                None => return -1,
            },
            Err(_) => return -1,
        };
        let Some(tag) = plain_tag(tag, -1) else { return -1 };
        if !comm.has(rank) {
            return -1;
        }
        // Bytes of any element type (a numpy array of doubles, say).
        let buf = match PyBuffer::<u8>::get_bound(buf) {
            Ok(b) => b,
            Err(_) => match PyMemoryView::from_bound(buf).and_then(|m| m.call_method1("cast", ("B",))).and_then(|m| PyBuffer::<u8>::get_bound(&m)) {
                Ok(b) => b,
                Err(_) => return -1,
            },
        };
        if buf.readonly() || !buf.is_c_contiguous() {
            return -1;
        }
        let align = self.w.machine().spec.cpu.network_alignment_bytes.max(1) as usize;
        let unaligned = buf.item_count() > 0 && (buf.buf_ptr() as usize) % align != 0;
        match self.w.irecv_into(rank, src, comm.ctx, tag, buf.item_count() as u32, unaligned) {
            Ok(r) => {
                let i = r as usize;
                if self.recv_bufs.len() <= i {
                    self.recv_bufs.resize_with(i + 1, || None);
                }
                self.recv_bufs[i] = Some(buf);
                r as i64
            }
            Err(_) => -1,
        }
    }
    /// Blocking `Send`'s common case (see `isend_fast`): posts the send
    /// and blocks the rank on it. Returns -1 having done nothing when the
    /// call is not that case, True when the send is done, else a
    /// `Blocked`: the rank waits (`run`: the simulation ran for it, and the
    /// ranks it made ready go next).
    #[pyo3(signature = (rank, comm, dest, tag, data, run=false))]
    fn send_fast(&mut self, py: Python<'_>, rank: u32, comm: &Members, dest: &Bound<'_, PyAny>, tag: &Bound<'_, PyAny>, data: &[u8], run: bool) -> PyResult<Fast> {
        let r = self.isend_fast(rank, comm, dest, tag, data);
        self.block_fast(py, rank, r, run, false)
    }
    /// Blocking `Recv`'s common case (see `irecv_fast`), as `send_fast`.
    #[pyo3(signature = (rank, comm, source, tag, buf, run=false))]
    fn recv_fast(&mut self, py: Python<'_>, rank: u32, comm: &Members, source: &Bound<'_, PyAny>, tag: &Bound<'_, PyAny>, buf: &Bound<'_, PyAny>, run: bool) -> PyResult<Fast> {
        let r = self.irecv_fast(rank, comm, source, tag, buf);
        self.block_fast(py, rank, r, run, true)
    }
    /// Status and data of a completed request, and frees it:
    /// (source, tag, count, cancelled, truncated, data or None). The data of
    /// a receive posted by `irecv_fast` goes into its buffer instead (unless
    /// truncated), and None is returned for it.
    fn finish<'py>(&mut self, py: Python<'py>, req: u32) -> PyResult<Finished<'py>> {
        let s = self.w.status(req);
        let data = self.w.take_data(req);
        let data = match self.recv_bufs.get_mut(req as usize).and_then(Option::take) {
            Some(buf) => {
                if let Some(d) = data {
                    let copied = if s.truncated { Ok(()) } else { copy_into(py, &buf, &d) };
                    self.w.recycle(d);
                    copied?;
                }
                None
            }
            None => data.map(|d| {
                let b = PyBytes::new_bound(py, &d);
                self.w.recycle(d);
                b
            }),
        };
        self.w.release(req);
        Ok((s.source, s.tag, s.count, s.cancelled, s.truncated, data))
    }
    /// [`finish`] for several requests at once (all complete), in order.
    /// A request without data (a send, a receive posted by `irecv_fast`)
    /// gets its status alone, a 5-tuple.
    fn finish_all(&mut self, py: Python<'_>, reqs: Vec<u32>) -> PyResult<Vec<PyObject>> {
        reqs.into_iter()
            .map(|r| {
                let (s, t, c, canc, trunc, data) = self.finish(py, r)?;
                Ok(match data {
                    Some(d) => (s, t, c, canc, trunc, d).into_py(py),
                    None => (s, t, c, canc, trunc).into_py(py),
                })
            })
            .collect()
    }
    #[pyo3(signature = (rank, src, ctx, tag, capacity, unaligned=false))]
    fn irecv(&mut self, rank: u32, src: i64, ctx: u32, tag: i32, capacity: u32, unaligned: bool) -> PyResult<u32> {
        self.w.irecv_into(rank, src, ctx, tag, capacity, unaligned).map_err(to_py)
    }
    fn probe(&mut self, rank: u32, src: i64, ctx: u32, tag: i32) -> PyResult<u32> {
        self.w.probe(rank, src, ctx, tag).map_err(to_py)
    }
    /// Joins a hardware collective: `kind` is "barrier", "bcast", "reduce"
    /// or "allreduce" (tree network); `key` names the operation (the same on
    /// every participant), `expected` the number of participants.
    /// `payload`: the rank's contribution as bytes, for drivers on the
    /// processes of an MPI job (`hw_payloads`).
    #[pyo3(signature = (rank, key, expected, kind, root=0, nbytes=0, two_pass=false, payload=None))]
    #[allow(clippy::too_many_arguments)]
    fn hw_collective(&mut self, rank: u32, key: u64, expected: u32, kind: &str, root: u32, nbytes: u64, two_pass: bool,
                     payload: Option<&[u8]>) -> PyResult<u32> {
        let what = match kind {
            "barrier" => mpi::HwOp::Barrier,
            "bcast" => mpi::HwOp::Tree { op: mpi::TreeOpRanks::Bcast { root }, bytes: nbytes, two_pass },
            "reduce" => mpi::HwOp::Tree { op: mpi::TreeOpRanks::Reduce { root }, bytes: nbytes, two_pass },
            "allreduce" => mpi::HwOp::Tree { op: mpi::TreeOpRanks::Allreduce, bytes: nbytes, two_pass },
            _ => return Err(errors::usage(format!("hardware collective `{kind}`: allowed barrier, bcast, reduce, allreduce"))),
        };
        self.w.hw_collective(rank, key, expected, what, payload.map(<[u8]>::to_vec).unwrap_or_default()).map_err(to_py)
    }
    /// Every participant's payload of finished hardware collective `key`:
    /// [(world rank, bytes)], or None if none carried one.
    fn hw_payloads<'py>(&self, py: Python<'py>, key: u64) -> Option<Vec<(u32, Bound<'py, PyBytes>)>> {
        self.w.hw_payloads(key).map(|v| v.iter().map(|(r, b)| (*r, PyBytes::new_bound(py, b))).collect())
    }
    /// Drops the payloads of hardware collective `key`.
    fn hw_forget(&mut self, key: u64) {
        self.w.hw_forget(key)
    }
    /// Joins message-layer deposit-bit broadcast `id` (the same on every
    /// rank and process). `payload`: the root's data, which goes to the
    /// other processes of an MPI job with the root's join.
    #[pyo3(signature = (rank, id, root, nbytes, payload=None))]
    fn ml_bcast(&mut self, rank: u32, id: u32, root: u32, nbytes: u64, payload: Option<&[u8]>) -> u32 {
        self.w.line_bcast(rank, id, root, nbytes, payload.map(<[u8]>::to_vec))
    }
    /// Joins message-layer allreduce `id` (ids shared with the deposit-bit
    /// broadcasts; the same on every rank and process) of `nbytes` to
    /// `root`, one rank on every node. `payload`: the rank's contribution,
    /// which goes to the other processes of an MPI job with its join.
    #[pyo3(signature = (rank, id, root, nbytes, payload=None))]
    fn ml_allreduce(&mut self, rank: u32, id: u32, root: u32, nbytes: u64, payload: Option<&[u8]>) -> u32 {
        self.w.line_allreduce(rank, id, root, nbytes, payload.map(<[u8]>::to_vec))
    }
    /// The contributions to message-layer allreduce `id` that came from
    /// the other processes of an MPI job ([] elsewhere).
    fn ml_allreduce_payloads<'py>(&self, py: Python<'py>, id: u32) -> Vec<Bound<'py, PyBytes>> {
        self.w.reduce_payloads(id).iter().map(|b| PyBytes::new_bound(py, b)).collect()
    }
    /// Forgets message-layer collective `id`, a deposit-bit broadcast or a
    /// torus allreduce (this process's ranks are done with it).
    fn ml_forget(&mut self, id: u32) {
        self.w.line_forget(id)
    }
    /// Message-layer collectives the core keeps: (deposit-bit broadcasts,
    /// torus allreduces).
    fn ml_records(&self) -> (usize, usize) {
        self.w.line_records()
    }
    /// The root's data of deposit-bit broadcast `id`, on the processes of
    /// an MPI job once it came (None elsewhere).
    fn ml_bcast_payload<'py>(&self, py: Python<'py>, id: u32) -> Option<Bound<'py, PyBytes>> {
        self.w.bcast_payload(id).map(|b| PyBytes::new_bound(py, b))
    }
    fn compute(&mut self, rank: u32, ticks: u64) -> u32 {
        self.w.compute(rank, ticks)
    }
    /// A reduction's local combine of `bytes` of result: a request done
    /// when the rank's core has done it.
    fn combine(&mut self, rank: u32, bytes: u64) -> u32 {
        self.w.combine(rank, bytes)
    }
    /// MPI's pack or unpack of `bytes` of a non-contiguous datatype: a
    /// request done when the rank's core has copied them.
    fn pack(&mut self, rank: u32, bytes: u64) -> u32 {
        self.w.pack(rank, bytes)
    }
    /// A poll that found nothing: a request done when the core has spent
    /// the poll's cost.
    fn poll(&mut self, rank: u32) -> u32 {
        self.w.poll(rank)
    }
    fn cancel(&mut self, req: u32) -> bool {
        self.w.cancel(req)
    }
    fn done(&self, req: u32) -> bool {
        self.w.is_done(req)
    }
    /// (source, tag, count, cancelled, truncated)
    fn status(&self, req: u32) -> (i32, i32, u32, bool, bool) {
        let s = self.w.status(req);
        (s.source, s.tag, s.count, s.cancelled, s.truncated)
    }
    fn take<'py>(&mut self, py: Python<'py>, req: u32) -> Option<Bound<'py, PyBytes>> {
        self.w.take_data(req).map(|d| PyBytes::new_bound(py, &d))
    }
    fn release(&mut self, req: u32) {
        if let Some(b) = self.recv_bufs.get_mut(req as usize) {
            *b = None;
        }
        self.w.release(req)
    }
    /// Runs an exchange of a collective in the core for world rank `rank`,
    /// a member of `comm` (`bgsim.mpishim.coll.base.Call.exchange`): sends
    /// `parts[d]` (bytes, any buffer, an int: a size without content, or
    /// None: what this rank received last) to each communicator rank `d`
    /// of `dests` in that order and receives from each of `srcs`, on the
    /// communicator's collective context with `tag` (`parts` an int: every
    /// send that many bytes without content; a pair (buffer, size): block d
    /// of the buffer's bytes for rank d; ("relay", first): the first send
    /// `first`, every later one what this rank received last; ("grow",
    /// n): every send n bytes and as many as received so far, without
    /// content; ("sizes", list): send k that many bytes without content).
    /// `steps`: None, all at once; "pairwise", the k-th receive
    /// and send as step k; or a list of (receives, sends) per step.
    /// `combine[k]`: bytes of result the rank's core combines once step k
    /// is done, before the next (a reduction's). `parts` is a list by
    /// communicator rank or a dict. `packed`: what arrives is kept in one
    /// buffer, for `coll_result_packed`. `p2p`: on the communicator's
    /// point-to-point context instead (a replay's rounds of point-to-point
    /// messages, `bgsim.trace.replay`). Returns true if the rank waits
    /// (the driver switches away; `run` gives it back).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (rank, comm, tag, parts, dests, srcs, steps=None, mode=0, packed=false, p2p=false, combine=Vec::new()))]
    fn coll_exchange(&mut self, rank: u32, comm: &Members, tag: i32, parts: &Bound<'_, PyAny>, dests: Vec<u32>, srcs: Vec<u32>,
                     steps: Option<&Bound<'_, PyAny>>, mode: u8, packed: bool, p2p: bool, combine: Vec<u64>) -> PyResult<bool> {
        let dict = parts.downcast::<PyDict>().ok();
        let convert = |p: Bound<'_, PyAny>| -> PyResult<Option<Payload>> {
            if p.is_none() {
                return Ok(None);
            }
            if let Ok(n) = p.extract::<u32>() {
                return Ok(Some(Payload::Size(n)));
            }
            if let Ok(b) = p.downcast::<PyBytes>() {
                check_message_size(b.as_bytes().len() as u64)?;
                return Ok(Some(Payload::Bytes(b.as_bytes().to_vec())));
            }
            let buf = PyBuffer::<u8>::get_bound(&p)?;
            check_message_size(buf.len_bytes() as u64)?;
            Ok(Some(Payload::Bytes(buf.to_vec(p.py())?)))
        };
        let payload = |d: u32| -> PyResult<Option<Payload>> {
            convert(match dict {
                Some(dict) => dict.get_item(d)?.ok_or_else(|| errors::usage(format!("no part for rank {d}")))?,
                None => parts.get_item(d)?,
            })
        };
        // ("relay", first): the first send carries `first`, every later
        // one what this rank received last (a ring); ("grow", n): sizes
        // that add up what arrived; ("sizes", [n, ...]): send k n_k bytes
        // without content.
        let tagged = |name: &str| {
            parts.downcast::<PyTuple>().ok().filter(|t| t.len() == 2 && t.get_item(0).is_ok_and(|k| k.extract::<&str>().is_ok_and(|k| k == name)))
        };
        let relay = tagged("relay");
        let grow = tagged("grow");
        let sizes = tagged("sizes");
        let steps = match steps {
            None => Steps::All,
            Some(s) if s.extract::<&str>().is_ok_and(|s| s == "pairwise") => Steps::Pairwise,
            Some(s) => Steps::Counts(s.extract().map_err(|_| errors::usage("steps: None, \"pairwise\" or a list of (receives, sends)"))?),
        };
        let parts = if let Some(t) = relay {
            let mut each: Vec<Option<Payload>> = vec![None; dests.len()];
            if let Some(first) = each.first_mut() {
                *first = convert(t.get_item(1)?)?;
            }
            Parts::Each(each)
        } else if let Some(t) = sizes {
            let v: Vec<u32> = t.get_item(1)?.extract().map_err(|_| errors::usage("(\"sizes\", list): a size in bytes for each send"))?;
            Parts::Each(v.into_iter().map(|n| Some(Payload::Size(n))).collect())
        } else if let Some(t) = grow {
            Parts::Grow(t.get_item(1)?.extract().map_err(|_| errors::usage("(\"grow\", n): n a size in bytes"))?)
        } else if let Ok(n) = parts.extract::<u32>() {
            Parts::Same(n)
        } else if let Ok((whole, size)) = parts.extract::<(Bound<'_, PyAny>, usize)>() {
            // Block d of one buffer: bytes d * size .. (d + 1) * size.
            let buf = PyBuffer::<u8>::get_bound(&whole)?;
            let bytes = buf.to_vec(parts.py())?;
            let block = |d: u32| bytes.get(d as usize * size..(d as usize + 1) * size).map(|b| Some(Payload::Bytes(b.to_vec())));
            Parts::Each(dests.iter().map(|&d| block(d).ok_or_else(|| errors::usage(format!("no block {d} of {size} bytes in a buffer of {}", bytes.len())))).collect::<PyResult<Vec<_>>>()?)
        } else {
            Parts::Each(dests.iter().map(|&d| payload(d)).collect::<PyResult<Vec<_>>>()?)
        };
        let ctx = if p2p { comm.ctx } else { comm.ctx + 1 };
        let (mode, protocol) = send_mode(mode)?;
        let x = Exchange { peers: comm.ranks.clone(), ctx, tag, mode, protocol, dests, parts, recvs: srcs, steps, combine };
        self.w.start(rank, if packed { Agent::packed(x) } else { Agent::new(x) }).map_err(to_py)
    }
    /// Drops what `rank`'s finished exchange received (a driver that
    /// needs none of it).
    fn coll_discard(&mut self, rank: u32) -> PyResult<()> {
        self.finished_agent(rank).map(drop)
    }
    /// Advances a rank `run` returned marked with the agent bit (its bit
    /// cleared); true if it waits again.
    fn coll_step(&mut self, rank: u32) -> PyResult<bool> {
        self.w.step(rank).map_err(to_py)
    }
    /// What a finished exchange received: with `n`, a list of n items by
    /// source communicator rank (bytes, an int for a size without content,
    /// None where nothing came); else a list of (source, bytes or int).
    #[pyo3(signature = (rank, n=None))]
    fn coll_result(&mut self, py: Python<'_>, rank: u32, n: Option<u32>) -> PyResult<PyObject> {
        let got = self.finished_exchange(rank)?;
        let mut item = |p: Payload| -> PyObject {
            match p {
                Payload::Bytes(b) => {
                    let o = PyBytes::new_bound(py, &b).into_py(py);
                    self.w.recycle(b);
                    o
                }
                Payload::Size(k) => k.into_py(py),
            }
        };
        Ok(match n {
            Some(n) => {
                let mut out: Vec<PyObject> = (0..n).map(|_| py.None()).collect();
                for (src, p) in got {
                    if let Some(o) = out.get_mut(src as usize) {
                        *o = item(p);
                    }
                }
                PyList::new_bound(py, out).into_py(py)
            }
            None => PyList::new_bound(py, got.into_iter().map(|(s, p)| -> PyObject { (s, item(p)).into_py(py) })).into_py(py),
        })
    }
    /// What a finished exchange started with `packed` received, in the
    /// order of its receives: (one bytes object, where each message ends
    /// in it); None if a message had no content.
    fn coll_result_packed(&mut self, py: Python<'_>, rank: u32) -> PyResult<Option<(PyObject, Vec<usize>)>> {
        Ok(self.finished_agent(rank)?.into_packed().map(|(bytes, ends)| (PyBytes::new_bound(py, &bytes).into_py(py), ends)))
    }
    /// What a finished exchange received, written into `buf` (a writable
    /// contiguous buffer): the message from communicator rank s at byte
    /// s * `size`. Returns None, or (source, bytes) of a message longer
    /// than `size` (nothing is written from it: MPI_ERR_TRUNCATE).
    fn coll_result_into(&mut self, py: Python<'_>, rank: u32, buf: &Bound<'_, PyAny>, size: usize) -> PyResult<Option<(u32, usize)>> {
        let got = self.finished_exchange(rank)?;
        let buf = PyBuffer::<u8>::get_bound(buf)?;
        if buf.readonly() || !buf.is_c_contiguous() {
            return Err(errors::usage("receive buffer is not writable and contiguous"));
        }
        // The buffer's bytes, the blocks put in, and back: two copies of
        // the whole buffer by memcpy (a byte at a time through the
        // buffer's cells was the slowest part of a 1 MB all-to-all).
        let mut whole = buf.to_vec(py)?;
        let mut long = None;
        for (src, p) in got {
            if let Payload::Bytes(b) = p {
                let at = src as usize * size;
                if b.len() > size || at + b.len() > whole.len() {
                    long.get_or_insert((src, b.len()));
                } else {
                    whole[at..at + b.len()].copy_from_slice(&b);
                }
                self.w.recycle(b);
            }
        }
        buf.copy_from_slice(py, &whole)?;
        Ok(long)
    }
    fn block(&mut self, rank: u32, reqs: Vec<u32>, need: usize) -> bool {
        self.w.block(rank, reqs, need)
    }
    /// Advances until some blocked ranks may go on; returns them. Raises
    /// DeadlockError (args: message, [(rank, [what it waits for])]).
    fn run(&mut self) -> PyResult<Vec<u32>> {
        self.timed_run().map_err(to_py)
    }
    /// Wall seconds spent in `run` so far.
    #[getter]
    fn run_wall(&self) -> f64 {
        self.run_wall.as_secs_f64()
    }
    /// Runs until nothing is left to do; returns the time. Raises
    /// DeadlockError if ranks of other processes wait forever.
    fn drain(&mut self) -> PyResult<u64> {
        self.w.drain().map_err(to_py)
    }
    /// The run's report (JSON): per rank, network-wide counters, the
    /// collective network's busy links. `finished[r]`: when rank r ended.
    /// Counts the bytes of every send per (source, destination) rank.
    fn record_traffic(&mut self) {
        self.w.record_traffic();
    }
    /// The recorded traffic: [(source, destination, bytes)], sorted.
    fn traffic_matrix(&self) -> Vec<(u32, u32, u64)> {
        self.w.traffic_matrix()
    }
    fn report(&self, finished: Vec<Option<u64>>) -> String {
        serde_json::to_string(&bgsim::report::ranks_report(&self.w, &finished)).expect("a report is plain data")
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<World>()?;
    m.add_class::<Members>()?;
    m.add_class::<Blocked>()?;
    m.add_function(wrap_pyfunction!(registry::machine_info, m)?)?;
    m.add_function(wrap_pyfunction!(registry::patterns, m)?)?;
    m.add_function(wrap_pyfunction!(registry::routings, m)?)?;
    m.add_function(wrap_pyfunction!(registry::pattern_options, m)?)?;
    m.add_function(wrap_pyfunction!(registry::collective_algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(registry::collective_registry, m)?)?;
    m.add_function(wrap_pyfunction!(registry::collective_choose, m)?)?;
    m.add_function(wrap_pyfunction!(registry::collective_generic, m)?)?;
    m.add_function(wrap_pyfunction!(traffic::run_traffic, m)?)?;
    m.add_function(wrap_pyfunction!(launcher::mpi_rank, m)?)?;
    m.add_function(wrap_pyfunction!(launcher::mpi_finalize, m)?)?;
    m.add_function(wrap_pyfunction!(launcher::mpi_abort, m)?)?;
    m.add_function(wrap_pyfunction!(launcher::mpi_launched, m)?)?;
    m.add_function(wrap_pyfunction!(launcher::mpi_size, m)?)?;
    m.add_function(wrap_pyfunction!(registry::collective_thresholds, m)?)?;
    m.add_function(wrap_pyfunction!(geometry::order_slots, m)?)?;
    m.add_function(wrap_pyfunction!(geometry::deterministic_route, m)?)?;
    m.add("MAX_MESSAGE_BYTES", bgsim::msglayer::MAX_MESSAGE_BYTES)?;
    m.add("AGENT_RANK", mpi::agent::AGENT_RANK)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
