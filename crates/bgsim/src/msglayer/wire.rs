//! What the message layer writes into a packet's tag and a timer's tag: the
//! packet kinds of its protocols, its timer kinds, and how a message id and
//! an argument (a data packet's number in its message, a control packet's
//! flag, a deposit packet's stage and index) share a tag with them.

use super::{MsgId, MsgLayer};

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
    pub const REDUCE: u64 = 10;
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
    pub const REDUCE: u32 = 8;
}

pub(super) fn tag(kind: u64, msg: MsgId, arg: u32) -> u64 {
    debug_assert!(arg < 1 << 30);
    (kind << 60) | ((msg as u64) << 30) | arg as u64
}
pub(super) fn untag(t: u64) -> (u64, MsgId, u32) {
    (t >> 60, ((t >> 30) & ((1 << 30) - 1)) as MsgId, (t & ((1 << 30) - 1)) as u32)
}
pub(super) fn timer_tag(kind: u32, id: u32) -> u32 {
    debug_assert!(id < 1 << 28);
    (kind << 28) | id
}

impl MsgLayer {
    /// The number a data packet of `kind` starting at byte `offset` of its
    /// message carries in its tag: its index in the message (0 for the
    /// first), so that the tag's 30 bits serve messages of any size up to
    /// [`super::MAX_MESSAGE_BYTES`] (a byte offset would stop at 1 GiB).
    #[inline]
    pub(super) fn packet_number(&self, kind: u64, offset: u32) -> u32 {
        match kind {
            pk::EAGER | pk::ADAPT if offset > 0 => 1 + (offset - (self.maxp - self.meta)) / self.maxp,
            pk::RDATA => offset / self.maxp,
            _ => 0,
        }
    }

    /// The byte offset of data packet `number` of `kind` in its message
    /// (the inverse of [`MsgLayer::packet_number`]): eager packets after
    /// the first, which carries the metadata block, and rendezvous packets
    /// are full.
    #[inline]
    pub(super) fn packet_offset(&self, kind: u64, number: u32) -> u32 {
        match kind {
            pk::EAGER | pk::ADAPT if number > 0 => (self.maxp - self.meta) + (number - 1) * self.maxp,
            pk::RDATA => number * self.maxp,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pk;
    use crate::machine::{self, MachineSource};
    use crate::msglayer::{MsgLayer, MAX_MESSAGE_BYTES};
    use crate::packet::Net;

    /// Data packets name their place in the message by number, so messages
    /// up to the largest size fit the tag's 30 bits, and the receiver gets
    /// every packet's byte offset back.
    #[test]
    fn packet_numbers_cover_the_largest_message_and_give_the_offsets_back() {
        let m = machine::load(&MachineSource::Preset("bgl".into()), &["partition.shape=\"2x1x1\"".into()]).unwrap();
        let mut net = Net::new(&m, 1);
        let ml = MsgLayer::new(&mut net, &[[0, 0, 0, 0], [1, 0, 0, 0]], true);
        let (maxp, first) = (ml.maxp, ml.maxp - ml.meta);
        let last = MAX_MESSAGE_BYTES as u32;
        for kind in [pk::EAGER, pk::ADAPT] {
            let offsets = [0, first, first + maxp, first + 7 * maxp, first + (last - first) / maxp * maxp];
            for (i, &o) in offsets.iter().enumerate() {
                let n = ml.packet_number(kind, o);
                assert!(n < 1 << 30 && ml.packet_offset(kind, n) == o, "{kind} {o}");
                assert!(i == 0 || n > ml.packet_number(kind, offsets[i - 1]));
            }
        }
        for o in [0, maxp, 9 * maxp, last / maxp * maxp] {
            let n = ml.packet_number(pk::RDATA, o);
            assert!(n < 1 << 30 && ml.packet_offset(pk::RDATA, n) == o);
        }
    }
}
