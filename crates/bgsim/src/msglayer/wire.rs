//! What the message layer writes into a packet's tag and a timer's tag: the
//! packet kinds of its protocols, its timer kinds, and how a message id and
//! an offset share a tag with them.

use super::MsgId;

/// Packet kinds (top bits of the packet tag).
pub(super) mod pk {
    pub const ONE: u64 = 1;
    pub const EAGER: u64 = 2;
    pub const ADAPT: u64 = 3;
    pub const SCOUT: u64 = 4;
    pub const RACK: u64 = 5;
    pub const RDATA: u64 = 6;
    pub const CONFIRM: u64 = 7;
    pub const SYNCACK: u64 = 8;
    pub const DEPOSIT: u64 = 9;
}

/// Timer kinds (top bits of a timer tag).
pub(super) mod tk {
    pub const INTRA_ARRIVE: u32 = 1;
    pub const INTRA_FREE: u32 = 2;
    pub const REQ_DONE: u32 = 3;
    pub const RECV_COPIED: u32 = 4;
    pub const START: u32 = 5;
    pub const ENVELOPE: u32 = 6;
    pub const POSTED: u32 = 7;
}

pub(super) fn tag(kind: u64, msg: MsgId, offset: u32) -> u64 {
    (kind << 60) | ((msg as u64) << 30) | offset as u64
}
pub(super) fn untag(t: u64) -> (u64, MsgId, u32) {
    (t >> 60, ((t >> 30) & ((1 << 30) - 1)) as MsgId, (t & ((1 << 30) - 1)) as u32)
}
pub(super) fn timer_tag(kind: u32, id: u32) -> u32 {
    debug_assert!(id < 1 << 28);
    (kind << 28) | id
}
