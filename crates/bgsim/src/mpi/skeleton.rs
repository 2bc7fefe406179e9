//! Ranks that are communication skeletons driven by the core itself: no
//! program and no Python, for machines of a million ranks and more. A
//! skeleton makes the same calls a program would (through [`World`]'s
//! point-to-point API, with messages that carry only their size), so it
//! gives the same simulated times as the equivalent Python program.

use super::driven::Ranks;
use super::parts::{self, Program};
use super::{MpiError, SendCall, World};
use crate::msglayer::ReqId;
use serde::Serialize;

/// A periodic halo exchange on a logical grid of ranks, rank-major as
/// MPI_Cart_create orders them (the last dimension fastest): every rank
/// posts a receive from each of its 2 x dims neighbours (tag k ^ 1 for
/// neighbour k, the lower one of dimension d being k = 2d), then a send of
/// `bytes` to each (tag k), then waits for all of them; `iters` times.
#[derive(Clone, Debug)]
pub struct Halo {
    pub grid: Vec<u32>,
    pub bytes: u32,
    pub iters: u32,
}

/// What a skeleton run did.
#[derive(Clone, Debug, Serialize)]
pub struct SkeletonRun {
    pub ranks: u32,
    pub messages: u64,
    pub simulated_s: f64,
    pub events: u64,
}

impl Halo {
    pub fn ranks(&self) -> u64 {
        self.grid.iter().map(|&d| d as u64).product()
    }

    /// The neighbours of rank `r`: lower and upper along each dimension.
    pub fn neighbours(&self, r: u32) -> Vec<u32> {
        let n = self.grid.len();
        let mut coord = vec![0u32; n];
        let mut rest = r;
        for d in (0..n).rev() {
            coord[d] = rest % self.grid[d];
            rest /= self.grid[d];
        }
        let index = |c: &[u32]| c.iter().zip(&self.grid).fold(0u32, |acc, (&x, &g)| acc * g + x);
        let mut out = Vec::with_capacity(2 * n);
        for d in 0..n {
            for step in [self.grid[d] - 1, 1] {
                let mut c = coord.clone();
                c[d] = (c[d] + step) % self.grid[d];
                out.push(index(&c));
            }
        }
        out
    }

    fn post(&self, w: &mut World, r: u32, reqs: &mut Vec<ReqId>) -> Result<(), MpiError> {
        reqs.clear();
        let nbs = self.neighbours(r);
        for (k, &nb) in nbs.iter().enumerate() {
            reqs.push(w.irecv(r, nb as i64, 0, (k ^ 1) as i32, self.bytes)?);
        }
        for (k, &nb) in nbs.iter().enumerate() {
            reqs.push(w.isend(r, SendCall::sized(nb as i64, 0, k as i32, self.bytes))?);
        }
        Ok(())
    }

    /// Runs rank `r`'s iterations until it blocks (true) or is done
    /// (false); `reqs` are its requests of the last iteration, `left` the
    /// iterations it has still to do.
    fn advance(&self, w: &mut World, r: u32, reqs: &mut Vec<ReqId>, left: &mut u32) -> Result<bool, MpiError> {
        while *left > 0 {
            for &q in reqs.iter() {
                w.release(q);
            }
            *left -= 1;
            self.post(w, r, reqs)?;
            let need = reqs.len();
            if w.block(r, reqs.clone(), need) {
                return Ok(true);
            }
        }
        for &q in reqs.iter() {
            w.release(q);
        }
        reqs.clear();
        Ok(false)
    }

    /// The ranks of one partition of a run on `n` ranks.
    fn program(&self, n: u32) -> Box<dyn Program> {
        Box::new(HaloRanks { halo: self.clone(), reqs: vec![Vec::new(); n as usize], left: vec![self.iters; n as usize] })
    }

    /// The grid's ranks must be the world's.
    fn check(&self, w: &World) -> Result<(), MpiError> {
        let n = w.nranks();
        if self.ranks() != n as u64 {
            return Err(MpiError::Usage(format!("a halo grid of {} ranks on a world of {n}", self.ranks())));
        }
        Ok(())
    }

    /// Runs the exchange on copies of the fresh world `w` cut into `parts`
    /// partitions, on `threads` threads (see [`parts`]): the same result
    /// as [`Halo::run`] on `w`.
    pub fn run_parts(&self, w: &World, parts: usize, threads: usize) -> Result<SkeletonRun, MpiError> {
        self.check(w)?;
        let n = w.nranks();
        let r = parts::run(w, parts, threads, &|| self.program(n))?;
        Ok(SkeletonRun { ranks: n, messages: r.messages, simulated_s: w.micros(r.end) * 1e-6, events: r.events })
    }

    /// Runs the exchange on the processes of an MPI job, one partition each
    /// (see [`parts::run_distributed`]): every process calls this with the
    /// same fresh world, and gets the result [`Halo::run`] gives.
    pub fn run_distributed(&self, w: &World, transport: Box<dyn crate::engine::Transport>) -> Result<SkeletonRun, MpiError> {
        self.check(w)?;
        let n = w.nranks();
        let r = parts::run_distributed(w, transport, &|| self.program(n))?;
        Ok(SkeletonRun { ranks: n, messages: r.messages, simulated_s: w.micros(r.end) * 1e-6, events: r.events })
    }

    /// Runs the exchange on `ranks` (fresh, on their partitions and
    /// threads), whose ranks must be the grid's: the same result as
    /// [`Halo::run_parts`] for any cut.
    pub fn run(&self, ranks: &mut Ranks) -> Result<SkeletonRun, MpiError> {
        self.check(ranks.first())?;
        let n = ranks.nranks();
        let r = ranks.run_program(&|| self.program(n))?;
        Ok(SkeletonRun { ranks: n, messages: r.messages, simulated_s: ranks.first().micros(r.end) * 1e-6, events: r.events })
    }
}

/// The halo's ranks of one partition.
struct HaloRanks {
    halo: Halo,
    reqs: Vec<Vec<ReqId>>,
    left: Vec<u32>,
}

impl Program for HaloRanks {
    fn start(&mut self, w: &mut World, r: u32) -> Result<(), MpiError> {
        self.step(w, r)
    }
    fn step(&mut self, w: &mut World, r: u32) -> Result<(), MpiError> {
        self.halo.advance(w, r, &mut self.reqs[r as usize], &mut self.left[r as usize]).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_wrap_around_every_dimension() {
        let h = Halo { grid: vec![3, 4], bytes: 8, iters: 1 };
        // Rank 0 = (0, 0): rows 2 and 1 of column 0, columns 3 and 1 of row 0.
        assert_eq!(h.neighbours(0), vec![8, 4, 3, 1]);
        assert_eq!(h.neighbours(11), vec![7, 3, 10, 8]);
    }
}
