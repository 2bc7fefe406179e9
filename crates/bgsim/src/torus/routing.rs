//! Routing: which (direction, VC) moves a packet at the head of a queue may
//! take. Minimal routes from the hint bits; dynamic packets choose among the
//! dynamic VCs of their productive directions (JSQ in `arbitration`), the
//! escape move is dimension-ordered on the escape VC(s) of the machine's
//! escape scheme (bubble or dateline pair).
//!
//! [`Routing`] is the one list of routing algorithms: its names are the ones
//! TOML, the CLI and Python accept. A packet carries its algorithm in its
//! flags ([`Routing::flags`]); [`choose_move`] asks it for the candidate
//! moves. Adding an algorithm: a variant here with its name, description
//! and flag, its candidate set in `choose_move`, a test, and its entry in
//! `docs/torus.md`.

use super::*;
use crate::engine::nth_set_bit;
use crate::machine::{BubbleAccounting, Escape};
use serde::{Deserialize, Serialize};

/// How a packet is routed. Stable names (`snake_case`) in TOML, the CLI and
/// Python.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Routing {
    /// Dimension-ordered on the escape VC; in order between a pair of nodes.
    Deterministic,
    /// Adaptive: minimal, over the dynamic VCs of every productive
    /// direction (JSQ), the escape VC as the fallback.
    #[default]
    Dynamic,
}

impl Routing {
    pub const ALL: [Routing; 2] = [Routing::Deterministic, Routing::Dynamic];

    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            Routing::Deterministic => "deterministic",
            Routing::Dynamic => "dynamic",
        }
    }

    /// One line for `--help` and the docs.
    pub fn description(self) -> &'static str {
        match self {
            Routing::Deterministic => "dimension-ordered on the escape VC, in order between a pair of nodes",
            Routing::Dynamic => "adaptive over the dynamic VCs of the productive directions (JSQ), escape VC as fallback",
        }
    }

    /// The packet flags that carry this algorithm.
    #[inline]
    pub fn flags(self) -> u8 {
        match self {
            Routing::Deterministic => 0,
            Routing::Dynamic => flags::DYNAMIC,
        }
    }

    /// The algorithm a packet with these flags is routed by.
    #[inline]
    pub fn of(pk_flags: u8) -> Routing {
        if pk_flags & flags::DYNAMIC != 0 {
            Routing::Dynamic
        } else {
            Routing::Deterministic
        }
    }

    /// Whether packets may take any productive direction (so software may
    /// pick among the injection FIFOs of several directions); otherwise
    /// their route, and their FIFO, is fixed by source and destination.
    #[inline]
    pub fn adaptive(self) -> bool {
        self == Routing::Dynamic
    }
}

/// Productive directions of a packet at a node with coordinates `c`: the
/// hint bits of the dimensions where it has not reached its destination.
#[inline]
pub fn prod_at(c: [u8; 3], pk: &Packet) -> u8 {
    let mut open = 0u8;
    for k in 0..3 {
        open |= ((c[k] != pk.dc[k]) as u8 * 3) << (2 * k);
    }
    pk.hint & open
}

/// Tokens needed downstream and tokens charged for a move of head `h`, now
/// in VC `at_vc`, in direction `d` onto escape VC `v`.
#[inline]
pub(super) fn escape_need(p: &Params, h: Head, at_vc: u8, d: usize, v: usize) -> (u16, u16) {
    let actual = h.chunks as u16 * p.tokens_per_chunk;
    let full = p.full_tokens;
    match p.escape {
        Escape::Bubble => {
            // Continuing on the bubble VC in the same direction needs
            // tokens for one packet; entering it (injection, turning into
            // a new dimension, falling back from a dynamic VC) needs two.
            // With full-size accounting every packet on the bubble VC
            // counts (and is charged) as full-sized. The naive
            // actual-size accounting counts real sizes, so the free space
            // fragments into holes too small for the waiting packets.
            let staying = h.last_dir == d as u8 && at_vc as usize == v;
            let unit = match p.bubble {
                BubbleAccounting::FullSize => full,
                BubbleAccounting::ActualSize => actual,
            };
            (if staying { unit } else { 2 * unit }, unit)
        }
        _ => (full, actual),
    }
}

/// The escape move of head `h` at a node with coordinates `c` and
/// productive mask `prod`: (direction, VC).
#[inline]
pub(super) fn escape_move(p: &Params, geo: &Geometry, c: [u8; 3], h: Head, prod: u8) -> (usize, usize) {
    let d = match p.escape {
        Escape::DatelineDir => {
            // x+, y+, z+, then x-, y-, z-.
            let plus = prod & 0b01_0101;
            let m = if plus != 0 { plus } else { prod };
            m.trailing_zeros() as usize
        }
        _ => prod.trailing_zeros() as usize,
    };
    let base = if h.is(flags::HIGH_PRIORITY) { p.hp } else { p.esc };
    let v = match p.escape {
        Escape::Bubble => base,
        _ if h.is(flags::HIGH_PRIORITY) => base,
        _ => {
            let k = dim_of(d);
            if h.crossed & (1 << k) != 0 || geo.crosses_dateline_at(c, d) {
                base + 1
            } else {
                base
            }
        }
    };
    (d, v)
}

/// The outcome of phase 1 for one head.
#[derive(Clone, Copy, Debug)]
pub(super) enum Choice {
    /// Move in direction `.0` onto VC `.1`, charging `.2` tokens downstream.
    Move(u8, u8, u8),
    /// No downstream tokens for the escape move in direction `.0` onto VC `.1`.
    NoTokens(usize, usize),
    /// Every option in the best token range is on a busy link.
    Busy,
}

/// For a mask of free senders, the JSQ option bits (direction * 4 + VC) on
/// them.
pub(super) const FREE_OPTIONS: [u64; 64] = {
    let mut t = [0u64; 64];
    let mut free = 0;
    while free < 64 {
        let mut d = 0;
        while d < NDIR {
            if free & (1 << d) != 0 {
                t[free] |= 0xf << (4 * d);
            }
            d += 1;
        }
        free += 1;
    }
    t
};

/// Phase 1 for a head `h` with productive directions `prod` (not zero), now
/// in VC `at_vc`, at router `r` whose senders `free` are free: its
/// preferred move. JSQ among the (direction, dynamic VC) pairs that can take
/// a full packet, ties at random among those on a free link (the hardware
/// draws anew every cycle; the model only when something changes here), no
/// request while the best range is all on busy links; else the escape move
/// if it has the tokens.
#[inline(always)]
pub(super) fn choose_move(p: &Params, geo: &Geometry, r: &mut Router, n: u32, h: Head, at_vc: u8, prod: u8, free: u8) -> Choice {
    // High-priority packets take the escape move on the high-priority VC.
    // One mask test: dynamic, not high priority and (with escape_commit)
    // not stalled on its escape move.
    if h.flags & p.dynamic_choice_mask == flags::DYNAMIC {
        // The (direction, dynamic VC) options in the best token range, as
        // bits direction * 4 + VC; one of those on a free link at random
        // when several tie.
        let best = jsq_options(p, r, prod);
        if best != 0 {
            let opts = best & FREE_OPTIONS[free as usize];
            if opts == 0 {
                return Choice::Busy;
            }
            // A tie draws a number, one option does not. Whether it ties is
            // a coin flip for the branch predictor: the number is worked
            // out either way (scaled to one option it is 0, that option)
            // and only the stream's advance depends on the tie.
            let nopt = opts.count_ones();
            let x = r.rng.draw_if(n as u64, nopt > 1);
            let i = nth_set_bit(opts, ((x as u64 * nopt as u64) >> 32) as u32, p.bit_deposit);
            let actual = (h.chunks as u16 * p.tokens_per_chunk) as u8;
            return Choice::Move((i >> 2) as u8, (i & 3) as u8, actual);
        }
    }
    let (d, v) = escape_move(p, geo, r.coords, h, prod);
    let (need, charge) = escape_need(p, h, at_vc, d, v);
    if r.tokens(d, v) >= need {
        Choice::Move(d as u8, v as u8, charge as u8)
    } else {
        Choice::NoTokens(d, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_routing_keeps_its_name_and_its_flag() {
        for r in Routing::ALL {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.name()));
            assert_eq!(serde_json::from_str::<Routing>(&json).unwrap(), r);
            assert_eq!(Routing::of(r.flags()), r, "{r:?} is not read back from its packet flags");
            assert_eq!(Routing::of(r.flags() | flags::HIGH_PRIORITY | flags::DEPOSIT), r);
            assert!(!r.description().is_empty());
        }
        assert!(serde_json::from_str::<Routing>("\"adaptive\"").is_err());
    }
}
