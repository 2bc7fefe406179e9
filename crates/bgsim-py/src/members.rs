//! `Members`: a communicator as the fast point-to-point calls see it.

use pyo3::prelude::*;
use std::collections::HashSet;
use std::sync::Arc;

/// A communicator as the fast point-to-point calls need it: its context id,
/// its ranks' world ranks and who is a member. Rebuilt by the MPI module
/// whenever the communicator's group or context changes.
#[pyclass(frozen, module = "bgsim._core")]
pub(crate) struct Members {
    pub(crate) ctx: u32,
    pub(crate) ranks: Arc<[u32]>,
    /// World ranks of the members, unless rank i of the communicator is
    /// world rank i for every i (the world communicator), which needs none.
    others: Option<HashSet<u32>>,
}

#[pymethods]
impl Members {
    #[new]
    fn new(ctx: u32, ranks: Vec<u32>) -> Self {
        let identity = ranks.iter().enumerate().all(|(i, &r)| i as u32 == r);
        let others = (!identity).then(|| ranks.iter().copied().collect());
        Members { ctx, ranks: ranks.into(), others }
    }
    /// Whether rank i of the communicator is world rank i for every i.
    #[getter]
    fn identity(&self) -> bool {
        self.others.is_none()
    }
}

impl Members {
    pub(crate) fn has(&self, world_rank: u32) -> bool {
        match &self.others {
            None => (world_rank as usize) < self.ranks.len(),
            Some(s) => s.contains(&world_rank),
        }
    }
    /// The world rank of communicator rank `r`, if `r` is an int in range.
    pub(crate) fn world(&self, r: &Bound<'_, PyAny>) -> Option<u32> {
        let r: i64 = r.extract().ok()?;
        usize::try_from(r).ok().and_then(|i| self.ranks.get(i)).copied()
    }
}
