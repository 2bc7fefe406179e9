//! Layer 1: simulated time, the event queue, seeded random streams and the
//! partition / time-window protocol. Knows nothing about hardware.
//!
//! Time is an integer number of *ticks*. A machine description fixes how many
//! ticks make a processor cycle and how many make one network byte-time, so
//! the same engine serves BG/L (4 processor cycles per link byte) and BG/P.

#[cfg(feature = "mpi")]
pub mod mpi;
pub mod parallel;
mod queue;
mod rng;
mod window;

pub use parallel::{Engine, Halt, Part, Partitioned, Transport};
pub use queue::{Crossing, EventQueue, NOTE, NO_NODE};
pub use rng::{stream_seed, Draws, Rng, StreamDraw, StreamState};
pub use window::{Partitioning, WindowPlan};

/// Simulated time in ticks.
pub type Tick = u64;

/// One event: a small plain value (12 bytes) so that queue operations never
/// allocate once the queue's buffers have grown to the working-set size.
/// The meaning of the fields belongs to the model that scheduled it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// Model-defined event kind.
    pub kind: u8,
    /// Small operand (a port, a direction, a core index ...).
    pub a: u8,
    /// Small operand (a virtual channel, a FIFO index ...).
    pub b: u8,
    /// Small operand.
    pub c: u8,
    /// The node (dense index) the event happens at.
    pub node: u32,
    /// Large operand (a packet id, a token count, a timer tag ...).
    pub data: u32,
}

const _: () = assert!(std::mem::size_of::<Event>() == 12);

impl Event {
    pub const fn new(kind: u8, node: u32) -> Self {
        Event { kind, a: 0, b: 0, c: 0, node, data: 0 }
    }

    /// The owner of the event's kind (see [`event_kind`]).
    #[inline(always)]
    pub const fn owner(&self) -> u8 {
        self.kind >> 4
    }
}

/// An event kind: `local`, one of 16 kinds of model component `owner` (one
/// of 16). The model declares its components and their kinds with this;
/// the dispatcher reads the owner back with [`Event::owner`].
pub const fn event_kind(owner: u8, local: u8) -> u8 {
    assert!(owner < 16 && local < 16, "an event kind is 16 owners x 16 kinds");
    owner << 4 | local
}

/// A model driven by the engine: it handles one event at a time and may
/// schedule more through the queue.
pub trait Model {
    fn handle(&mut self, now: Tick, ev: Event, q: &mut EventQueue);
    /// Prefetches the state an upcoming event will use, so that it is on its
    /// way into the cache while earlier events are handled (optional).
    /// Called for each event at `TOUCH_AHEAD[0]`, `[1]`, ... places ahead,
    /// with `stage` 0, 1, ...: a later stage may read what an earlier one
    /// prefetched to find the next lines (a VC's head packet, say).
    fn touch(&self, _ev: &Event, _stage: usize) {}
}

/// How many events ahead of the one being handled [`run_until`] touches, by
/// stage (see [`Model::touch`]).
pub const TOUCH_AHEAD: [usize; 2] = [16, 8];

/// Touches the events the given distances ahead (see [`Model::touch`]).
#[inline]
pub fn touch_ahead(q: &EventQueue, touch: impl Fn(&Event, usize)) {
    for (stage, &k) in TOUCH_AHEAD.iter().enumerate() {
        if let Some(e) = q.peek_ahead(k - 1) {
            touch(e, stage);
        }
    }
}

/// Asks the processor to bring the cache line holding `x` into its caches,
/// without waiting for it (a hint: it changes no result).
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    prefetch_index::prefetch_index(std::slice::from_ref(x), 0);
}

/// Counters of the engine itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct EngineStats {
    pub events: u64,
}

/// Runs `model` until the queue holds no event before `until`; time then
/// stands at `until`. Calling it with successive window ends is the building
/// block of the conservative time-window protocol (see [`WindowPlan`]).
pub fn run_until<M: Model + ?Sized>(model: &mut M, q: &mut EventQueue, until: Tick, stats: &mut EngineStats) -> Tick {
    while let Some((t, ev)) = q.pop_before(until) {
        stats.events += 1;
        touch_ahead(q, |e, stage| model.touch(e, stage));
        q.cur = ev.node;
        model.handle(t, ev, q);
    }
    q.cur = NO_NODE;
    q.advance_to(until);
    q.now()
}

/// A `kB` field of this process's `/proc/self/status` (`VmRSS`: resident
/// memory now, `VmHWM`: its peak), in bytes; None where it cannot be read.
pub fn process_memory_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
}

/// A vector of `n` elements made by `f` whose buffer the kernel is asked to
/// back with huge pages (see [`advise_huge`]) before anything is written.
pub fn huge_vec<T>(n: usize, f: impl FnMut(usize) -> T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise_huge(&v);
    v.extend((0..n).map(f));
    v
}

/// Asks the kernel to back the whole 2 MB pages inside `v`'s buffer with
/// huge pages where it can (Linux transparent huge pages, `madvise` mode).
/// The simulator reaches its large arrays (routers, cores, packets) at
/// random; with 4 KB pages most such accesses on a large machine also miss
/// the TLB (16x16x16: 9.7 MB of routers). A hint: it changes no result,
/// does nothing where the system does not offer it, and only helps the
/// parts of the buffer not yet written.
#[allow(unsafe_code)]
pub fn advise_huge<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_ptr() as usize;
        let end = start + v.capacity() * std::mem::size_of::<T>();
        let (lo, hi) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if hi > lo {
            // SAFETY: [lo, hi) lies inside the buffer `v` owns and is page
            // aligned; MADV_HUGEPAGE changes how the range is backed, never
            // its contents or whether it is mapped. A failure (a kernel
            // without huge pages) leaves things as they were.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
}

/// Index of the `k`-th (from 0) set bit of `m`, for `k` below its count.
/// With `deposit` (see [`fast_bit_deposit`]) one BMI2 bit-deposit
/// instruction; otherwise a loop whose exit, at a random `k`, the branch
/// predictor cannot foresee.
#[inline(always)]
#[allow(unsafe_code)]
pub fn nth_set_bit(m: u64, k: u32, deposit: bool) -> usize {
    #[cfg(all(target_arch = "x86_64", target_feature = "bmi2"))]
    if deposit {
        // SAFETY: the instruction exists: the build enables BMI2 (cfg above).
        let d = unsafe { std::arch::x86_64::_pdep_u64(1 << k, m) };
        return d.trailing_zeros() as usize;
    }
    let _ = deposit;
    let mut m = m;
    for _ in 0..k {
        m &= m - 1;
    }
    m.trailing_zeros() as usize
}

/// Whether [`nth_set_bit`] should use BMI2's bit deposit: the build enables
/// BMI2 and this processor runs the instruction in a few cycles - every one
/// that has it except AMD's before Zen 3 (family 19h), where it is
/// microcoded, takes tens to hundreds of cycles and the loop is faster.
#[allow(unsafe_code, unused_unsafe)]
pub fn fast_bit_deposit() -> bool {
    #[cfg(all(target_arch = "x86_64", target_feature = "bmi2"))]
    {
        use std::arch::x86_64::__cpuid;
        // SAFETY: every x86-64 processor has CPUID (the call is safe in
        // newer Rust).
        let (vendor, sig) = unsafe { (__cpuid(0), __cpuid(1).eax) };
        let amd = (vendor.ebx, vendor.edx, vendor.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163);
        let family = (sig >> 8 & 0xf) + (sig >> 20 & 0xff);
        !amd || family >= 0x19
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "bmi2")))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_memory_reads_the_named_field_in_bytes() {
        let rss = process_memory_bytes("VmRSS").expect("Linux's /proc/self/status");
        assert!(rss > 1 << 20 && rss % 1024 == 0);
        assert!(process_memory_bytes("VmHWM").unwrap() >= rss);
        // A field whose name is only the start of another's is not it.
        assert_eq!(process_memory_bytes("VmRS"), None);
    }

    #[test]
    fn nth_set_bit_finds_the_set_bit_with_k_below_it() {
        // Both ways where the build has the deposit instruction.
        let ways = [false, fast_bit_deposit()];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..5_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            for m in [x, x & x >> 7 & x >> 13, x >> 40, 1 << (x % 64), u64::MAX] {
                for k in 0..m.count_ones() {
                    for deposit in ways {
                        let i = nth_set_bit(m, k, deposit);
                        assert!(m & 1 << i != 0 && (m & ((1 << i) - 1)).count_ones() == k, "{m:#x} {k} {deposit}: {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn huge_vec_holds_the_elements_in_order() {
        assert_eq!(huge_vec(5, |i| i * 2), vec![0, 2, 4, 6, 8]);
        // Large enough to hold whole 2 MB pages: the advice changes nothing.
        let v = huge_vec(3 << 20, |i| (i % 251) as u8);
        assert_eq!(v.len(), 3 << 20);
        assert!(v.iter().enumerate().all(|(i, &x)| x == (i % 251) as u8));
        assert!(huge_vec(0, |i| i).is_empty());
    }
}
