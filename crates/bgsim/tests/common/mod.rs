//! What the integration tests share: the processes of a distributed run
//! as threads of the test.

use bgsim::engine::Transport;
use std::sync::{Arc, Barrier, Mutex};

/// The processes of a distributed run as threads of this test: every call
/// of [`Transport`] meets the others' at barriers.
struct Threads {
    rank: usize,
    hub: Arc<Hub>,
}

struct Hub {
    n: usize,
    barrier: Barrier,
    /// [from][to]
    slots: Mutex<Vec<Vec<Vec<u8>>>>,
    sums: Mutex<(Vec<u64>, Vec<u64>)>,
}

impl Transport for Threads {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.hub.n
    }
    fn exchange(&self, out: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        self.hub.slots.lock().unwrap()[self.rank] = out;
        self.hub.barrier.wait();
        let got = self.hub.slots.lock().unwrap().iter().map(|row| row[self.rank].clone()).collect();
        self.hub.barrier.wait();
        got
    }
    fn reduce(&self, sums: &mut [u64], maxes: &mut [u64]) {
        {
            let mut r = self.hub.sums.lock().unwrap();
            r.0.resize(sums.len(), 0);
            r.1.resize(maxes.len(), 0);
            for (a, b) in r.0.iter_mut().zip(sums.iter()) {
                *a += b;
            }
            for (a, b) in r.1.iter_mut().zip(maxes.iter()) {
                *a = (*a).max(*b);
            }
        }
        self.hub.barrier.wait();
        {
            let r = self.hub.sums.lock().unwrap();
            sums.copy_from_slice(&r.0);
            maxes.copy_from_slice(&r.1);
        }
        if self.hub.barrier.wait().is_leader() {
            *self.hub.sums.lock().unwrap() = (Vec::new(), Vec::new());
        }
        self.hub.barrier.wait();
    }
    fn gather(&self, bytes: Vec<u8>) -> Option<Vec<Vec<u8>>> {
        self.hub.slots.lock().unwrap()[self.rank] = vec![bytes];
        self.hub.barrier.wait();
        let all = (self.rank == 0).then(|| self.hub.slots.lock().unwrap().iter_mut().map(|row| std::mem::take(&mut row[0])).collect());
        self.hub.barrier.wait();
        all
    }
}

/// Runs `f` on `n` processes (threads here), each with its transport;
/// their results in process order.
pub fn processes<T: Send>(n: usize, f: impl Fn(Box<dyn Transport>) -> T + Sync) -> Vec<T> {
    let hub = Arc::new(Hub {
        n,
        barrier: Barrier::new(n),
        slots: Mutex::new(vec![vec![Vec::new(); n]; n]),
        sums: Mutex::new((Vec::new(), Vec::new())),
    });
    std::thread::scope(|sc| {
        let f = &f;
        let jobs: Vec<_> = (0..n)
            .map(|rank| {
                let hub = hub.clone();
                sc.spawn(move || f(Box::new(Threads { rank, hub })))
            })
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).collect()
    })
}
