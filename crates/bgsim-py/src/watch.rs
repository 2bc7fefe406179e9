//! The memory watch of an MPI run: a thread that samples the process's
//! resident memory and stops the process, with a message, before the
//! kernel's out-of-memory killer would (which ends it without a word and
//! may starve the machine first).
//!
//! The Python runtime stops a run cleanly (a `MemoryLimitError`) at 92% of
//! what the process may use, but it looks only between calls into the
//! core: a run whose memory grows inside one long call - every rank of a
//! large all-to-all posting thousands of messages, the core working through
//! them - passes no such point. The watch is the backstop, at a higher
//! share, sampled every 100 ms whatever the process is doing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn gb(b: u64) -> String {
    format!("{:.1} GB", b as f64 / (1u64 << 30) as f64)
}

/// A running watch; dropping it ends the thread.
pub(crate) struct Watch {
    stop: Arc<AtomicBool>,
}

impl Watch {
    /// Starts watching: the process ends, with a message on stderr and
    /// status 1, when it holds more than `stop_at` bytes (`limit`: what it
    /// may use in all, for the message).
    pub(crate) fn start(stop_at: u64, limit: u64) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("bgsim-memory-watch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    let rss = bgsim::engine::process_memory_bytes("VmRSS").unwrap_or(0);
                    if rss > stop_at && !flag.load(Ordering::Relaxed) {
                        eprintln!(
                            "bgsim: error: the run was stopped: it holds {} of the about {} this process may use, and \
                             would have been killed for lack of memory; use fewer ranks, --buffers size-only, or \
                             --fidelity coarse",
                            gb(rss),
                            gb(limit)
                        );
                        #[cfg(feature = "mpi")]
                        if bgsim::engine::parallel::launched_by_mpi() {
                            bgsim::engine::mpi::abort(1);
                        }
                        std::process::exit(1);
                    }
                }
            })
            .expect("a thread for the memory watch");
        Watch { stop }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
