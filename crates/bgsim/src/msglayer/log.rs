//! The message log of timelines: a record of each point-to-point message
//! whose sender or receiver is watched.

use super::MsgLayer;
use crate::engine::Tick;

pub(super) const NO_RECORD: u32 = u32::MAX;

/// One point-to-point message of a run, when the layer logs them
/// (timelines): ranks, size, protocol (`Protocol::index`, 4 = between two
/// tasks of a node), when it was posted, and when each side completed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MsgRecord {
    pub src: u32,
    pub dst: u32,
    pub bytes: u32,
    pub proto: u8,
    pub posted: Tick,
    pub send_done: Tick,
    pub recv_done: Tick,
}

/// The message log: records of the messages whose sender or receiver is
/// watched, up to a limit; the messages past it are counted.
///
/// A record is kept by its sender's partition. Past `limit` records one
/// posted at the same tick as the last kept one is kept too, so that the
/// logs of any cut of the machine, merged (`mpi::timeline`), hold the
/// first `limit` records in (posted, sender) order.
#[derive(Clone, Debug, Default)]
pub struct MsgLog {
    pub watched: Vec<bool>,
    pub limit: usize,
    pub records: Vec<MsgRecord>,
    pub dropped: u64,
    /// Receives completed here of messages whose records another
    /// partition keeps: (sender, its record there, completion time).
    pub remote_done: Vec<(u32, u32, Tick)>,
}

impl MsgLayer {
    /// A new record in the message log, if messages are logged and one of
    /// the two ranks is watched (else `NO_RECORD`).
    pub(super) fn log_record(&mut self, src: u32, dst: u32, bytes: u32, proto: u8, now: Tick) -> u32 {
        let Some(log) = self.log.as_mut() else { return NO_RECORD };
        if !(log.watched[src as usize] || log.watched[dst as usize]) {
            return NO_RECORD;
        }
        if log.records.len() >= log.limit && log.records.last().is_none_or(|r| now > r.posted) {
            log.dropped += 1;
            return NO_RECORD;
        }
        log.records.push(MsgRecord { src, dst, bytes, proto, posted: now, send_done: 0, recv_done: 0 });
        (log.records.len() - 1) as u32
    }
}
