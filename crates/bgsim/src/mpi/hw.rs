//! Hardware collectives' joins (the tree and the global-interrupt
//! barrier), as every partition of a windowed run takes them in.
//!
//! A rank's join is a note to every partition (`Crossing::note_all`), taken
//! in at the end of the window it was made in, in the engine's order of
//! held events, by each partition alike - on one partition too. When the
//! last participant's join is taken in, every partition computes the same
//! operation on its copy of the hardware's state and schedules the release
//! of its own nodes' participants, at the end of that window at the
//! earliest: what a node does reaches another a hop later at the earliest,
//! so no partition learns of a join sooner. (A node that only contributes
//! to a tree operation - a reduce's other nodes, a broadcast's root - is
//! therefore released at that window's end, not at the last join's tick.)

use super::{HwOp, MpiError, Stack, TreeOpRanks};
use crate::collective::{Participant, TreeOp};
use crate::engine::{Event, EventQueue, Tick};
use crate::msglayer::ReqId;
use std::collections::HashMap;

/// The kind of a join's note.
pub const NOTE_JOIN: u8 = crate::engine::event_kind(15, 1);
/// The kind of a deposit-bit broadcast's note: its root tells every
/// partition (`data`: the broadcast's id; the root's partition has its
/// record already).
pub const NOTE_DEPOSIT: u8 = crate::engine::event_kind(15, 2);
/// The kind of a message-layer allreduce's note on the processes of an
/// MPI job: a rank's contribution for every partition (`data`: its place
/// in the writer's [`super::World`] list of contributions).
pub const NOTE_CONTRIB: u8 = crate::engine::event_kind(15, 3);

/// One participant's join of hardware collective `key`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Join {
    pub key: u64,
    pub expected: u32,
    pub what: HwOp,
    pub rank: u32,
    /// The request that completes when the rank is done (an id of the
    /// rank's partition), and where and how it is told.
    pub req: ReqId,
    pub node: u32,
    pub core: usize,
    pub tag: u32,
    pub joined: Tick,
    /// What the rank contributes, for drivers on other processes (empty:
    /// nothing, or the driver sees every rank).
    pub payload: Vec<u8>,
}

/// A hardware collective waiting for its participants.
struct Joining {
    joins: Vec<Join>,
}

/// The joins a world has taken in, and those it wrote this window.
#[derive(Default)]
pub(super) struct Joins {
    joining: HashMap<u64, Joining>,
    /// This partition's joins of the current window, by a note's data,
    /// until it takes them in itself.
    notes: Vec<Option<Join>>,
    /// A mismatch found when a join was taken in.
    pub(super) error: Option<MpiError>,
    /// The contributions of finished operations that carried any, by key:
    /// (rank, payload), until the driver forgets them.
    pub(super) payloads: HashMap<u64, Vec<(u32, Vec<u8>)>>,
}

impl Joins {
    /// Whether `j` agrees with the joins of its operation this partition
    /// knows of (taken in, or written this window).
    pub(super) fn check(&self, j: &Join) -> Result<(), MpiError> {
        let known = self.joining.get(&j.key).and_then(|x| x.joins.first()).or_else(|| self.notes.iter().flatten().find(|n| n.key == j.key));
        match known {
            Some(o) if o.what != j.what || o.expected != j.expected => Err(MpiError::CollectiveMismatch {
                rank: j.rank,
                what: j.what,
                expected: j.expected,
                other: o.rank,
                other_what: o.what,
                other_expected: o.expected,
            }),
            _ => Ok(()),
        }
    }

    /// Writes `j` as this window's note number `data` of the returned event.
    pub(super) fn write(&mut self, j: Join) -> Event {
        self.notes.push(Some(j));
        Event { kind: NOTE_JOIN, a: 0, b: 0, c: 0, node: 0, data: (self.notes.len() - 1) as u32 }
    }

    /// The join of this partition's note `ev`, for the other partitions.
    pub(super) fn emigrate(&self, ev: &Event) -> Join {
        self.notes[ev.data as usize].clone().expect("a join not taken in yet")
    }

    /// Takes in this partition's own note `ev` (see [`Joins::take`]).
    pub(super) fn take_own(&mut self, stack: &mut Stack, q: &mut EventQueue, ev: &Event) {
        let j = self.notes[ev.data as usize].take().expect("a join taken in once");
        if self.notes.iter().all(Option::is_none) {
            self.notes.clear();
        }
        self.take(stack, q, j);
    }

    /// Takes in join `j` at the end of a window (`q.window`); the last one
    /// of an operation releases its participants (this partition's, in `q`).
    pub(super) fn take(&mut self, stack: &mut Stack, q: &mut EventQueue, j: Join) {
        if let Err(e) = self.check(&j) {
            self.error.get_or_insert(e);
            return;
        }
        let key = j.key;
        let entry = self.joining.entry(key).or_insert_with(|| Joining { joins: Vec::new() });
        entry.joins.push(j);
        if entry.joins.len() as u32 == entry.joins[0].expected {
            let mut done = self.joining.remove(&key).expect("joining");
            if done.joins.iter().any(|j| !j.payload.is_empty()) {
                self.payloads.insert(key, done.joins.iter_mut().map(|j| (j.rank, std::mem::take(&mut j.payload))).collect());
            }
            release(stack, q, done.joins, q.window.1);
        }
    }

    /// What rank `rank` waits for in request `req`, if it is a join.
    pub(super) fn describe(&self, rank: u32, req: ReqId) -> Option<String> {
        self.joining.values().find(|x| x.joins.iter().any(|j| j.rank == rank && j.req == req)).map(|x| {
            let what = match x.joins[0].what {
                HwOp::Barrier => "the global-interrupt barrier".to_string(),
                HwOp::Tree { op, bytes, .. } => format!("a collective-network {op:?} of {bytes} bytes"),
            };
            format!("{what} ({} of {} ranks have joined)", x.joins.len(), x.joins[0].expected)
        })
    }
}

/// The operation of `joins` (every participant's), its releases no
/// earlier than `floor`.
fn release(stack: &mut Stack, q: &mut EventQueue, joins: Vec<Join>, floor: Tick) {
    let Stack { net, ml, .. } = stack;
    let who: Vec<Participant> = joins.iter().map(|j| Participant { node: j.node, core: j.core, tag: j.tag, joined: j.joined }).collect();
    match joins[0].what {
        HwOp::Barrier => net.barrier_operation(q, &who, floor),
        HwOp::Tree { op, bytes, two_pass } => {
            let node = |r: u32| ml.place(r).0;
            let op = match op {
                TreeOpRanks::Bcast { root } => TreeOp::Bcast { source: node(root) },
                TreeOpRanks::Reduce { root } => TreeOp::Reduce { dest: node(root) },
                TreeOpRanks::Allreduce => TreeOp::Allreduce,
            };
            net.tree_operation(q, op, bytes, two_pass, &who, floor);
        }
    }
}
