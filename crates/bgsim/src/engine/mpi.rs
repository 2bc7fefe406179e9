//! The processes of an MPI job as the [`Transport`] of a distributed
//! windowed run (`mpirun -n P bgsim traffic ...`): Open MPI through rsmpi.
//! Each process runs one partition; the held events of each window go to
//! their processes with one MPI_Alltoallv, the run loop's questions are
//! MPI_Allreduce, and process 0 gathers the partitions' states at the end.

use super::parallel::Transport;
use mpi::datatype::{Partition, PartitionMut};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Count;
use std::sync::Mutex;

/// MPI, once this process started it ([`init`]); dropped by [`finalize`].
static UNIVERSE: Mutex<Option<mpi::environment::Universe>> = Mutex::new(None);

/// Starts MPI in this process (once; later calls do nothing).
pub fn init() {
    let mut u = UNIVERSE.lock().expect("MPI state");
    if u.is_none() {
        *u = Some(mpi::initialize().expect("MPI is started once, by bgsim"));
    }
}

/// Ends MPI in this process (MPI_Finalize), if it was started.
pub fn finalize() {
    UNIVERSE.lock().expect("MPI state").take();
}

/// Ends every process of the job (MPI_Abort) with `code`: one process's
/// failure would otherwise leave the others waiting for it.
pub fn abort(code: i32) -> ! {
    init();
    Mpi::world().comm().abort(code)
}

/// The world communicator as a transport. [`init`] first. It holds no
/// handle (MPI_COMM_WORLD is named at each call), so that it may move with
/// the run it serves to the thread that runs it.
pub struct Mpi {
    _started: (),
}

impl Mpi {
    pub fn world() -> Mpi {
        let u = UNIVERSE.lock().expect("MPI state");
        assert!(u.is_some(), "MPI was started (engine::mpi::init)");
        Mpi { _started: () }
    }

    /// MPI_COMM_WORLD.
    fn comm(&self) -> SimpleCommunicator {
        SimpleCommunicator::world()
    }

    /// Process 0's `bytes`, on every process.
    pub fn broadcast(&self, bytes: Vec<u8>) -> Vec<u8> {
        let world = self.comm();
        let root = world.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        let mut buf = if self.comm().rank() == 0 { bytes } else { vec![0u8; len as usize] };
        root.broadcast_into(&mut buf[..]);
        buf
    }
}

/// Offsets of consecutive blocks of `counts`.
fn displacements(counts: &[Count]) -> Vec<Count> {
    counts.iter().scan(0, |acc, &c| {
        let d = *acc;
        *acc += c;
        Some(d)
    }).collect()
}

impl Transport for Mpi {
    fn rank(&self) -> usize {
        self.comm().rank() as usize
    }
    fn size(&self) -> usize {
        self.comm().size() as usize
    }
    fn exchange(&self, out: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        let send_counts: Vec<Count> = out.iter().map(|b| b.len() as Count).collect();
        let mut recv_counts = vec![0 as Count; out.len()];
        self.comm().all_to_all_into(&send_counts[..], &mut recv_counts[..]);
        // Never empty: two empty vectors share one dangling address, and
        // MPI refuses a send buffer that is the receive buffer.
        let mut flat: Vec<u8> = out.concat();
        flat.push(0);
        let (sd, rd) = (displacements(&send_counts), displacements(&recv_counts));
        let mut recv = vec![0u8; recv_counts.iter().sum::<Count>() as usize + 1];
        {
            let send = Partition::new(&flat[..], &send_counts[..], &sd[..]);
            let mut into = PartitionMut::new(&mut recv[..], &recv_counts[..], &rd[..]);
            self.comm().all_to_all_varcount_into(&send, &mut into);
        }
        rd.iter().zip(&recv_counts).map(|(&d, &c)| recv[d as usize..(d + c) as usize].to_vec()).collect()
    }
    fn reduce(&self, sums: &mut [u64], maxes: &mut [u64]) {
        if !sums.is_empty() {
            let mine = sums.to_vec();
            self.comm().all_reduce_into(&mine[..], sums, SystemOperation::sum());
        }
        if !maxes.is_empty() {
            let mine = maxes.to_vec();
            self.comm().all_reduce_into(&mine[..], maxes, SystemOperation::max());
        }
    }
    fn gather(&self, bytes: Vec<u8>) -> Option<Vec<Vec<u8>>> {
        let world = self.comm();
        let root = world.process_at_rank(0);
        let len = bytes.len() as Count;
        // Never empty (see `exchange`).
        let mut bytes = bytes;
        bytes.push(0);
        if self.comm().rank() != 0 {
            root.gather_into(&len);
            root.gather_varcount_into(&bytes[..len as usize]);
            return None;
        }
        let mut lens = vec![0 as Count; self.size()];
        root.gather_into_root(&len, &mut lens[..]);
        let displs = displacements(&lens);
        let mut all = vec![0u8; lens.iter().sum::<Count>() as usize + 1];
        {
            let mut into = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
            root.gather_varcount_into_root(&bytes[..len as usize], &mut into);
        }
        Some(displs.iter().zip(&lens).map(|(&d, &c)| all[d as usize..(d + c) as usize].to_vec()).collect())
    }
}
