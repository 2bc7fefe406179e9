//! The torus parameters in the form the hot path wants, derived once from the
//! machine description.

use super::*;
use crate::machine::{Arbitration, BubbleAccounting, Escape};

/// Static parameters in the form the hot path wants.
#[derive(Clone, Debug)]
pub struct Params {
    pub tick_byte: Tick,
    pub hop_latency: Tick,
    pub chunk_bytes: u32,
    pub token_bytes: u32,
    pub trailer_gap: u32,
    pub ack_bytes: u32,
    pub ndyn: usize,
    /// First escape VC; dateline schemes use esc and esc + 1.
    pub esc: usize,
    pub hp: usize,
    pub nvc: usize,
    pub vc_tokens: u16,
    pub full_tokens: u16,
    pub escape: Escape,
    pub bubble: BubbleAccounting,
    /// Head flags that must read exactly `flags::DYNAMIC` for a head to
    /// choose among the dynamic VCs: DYNAMIC | HIGH_PRIORITY, and STALLED
    /// too with `escape_commit` (a stalled head waits for its escape VC).
    pub dynamic_choice_mask: u8,
    pub arbitration: Arbitration,
    pub slq_fraction: f64,
    pub ranges: u32,
    pub net_priority: f64,
    pub paths: u8,
    pub ninj: usize,
    pub nhp_inj: usize,
    pub inj_bytes: u32,
    pub rx_bytes: u32,
    pub max_packet_bytes: u32,
    pub sw_header: u32,
    pub hw_header: u32,
    /// Ticks per throughput window.
    pub window: Tick,
    /// Tokens per chunk.
    pub tokens_per_chunk: u16,
    /// Range (0..token_ranges) of a token count or VC occupancy, by count.
    pub token_range: Vec<u8>,
    /// JSQ's score of a dynamic VC with a given token count: 0 when it
    /// cannot take a full packet, else 1 + its token range (1 for all under
    /// random arbitration).
    pub jsq_score: Vec<u8>,
    /// The token counts at which JSQ's score steps up by one, less one,
    /// biased by 0x8000 for signed comparison (a count passes step `s` when
    /// `(count ^ 0x8000) as i16 > s`): a count's score is the number of
    /// steps it passes (see [`jsq_options`]).
    pub jsq_steps: Vec<i16>,
    /// When some `m` gives every count's score as `((count * m) >> 16) + 1`
    /// from one full packet on (0 below): that `m` (0 under random
    /// arbitration, whose scores are all 1). Then [`jsq_options`] scores a
    /// count with one multiplication instead of a comparison per step.
    pub jsq_mul: Option<i16>,
    /// A link's payload counter takes a packet's payload when its transfer
    /// ends rather than when it starts (the counters read the same: see
    /// `Sender::owed`). Only when the packet is sure to exist then: its
    /// delivery at the next node, after which software may free it, ends
    /// after its transfer here when a hop's latency exceeds the trailer and
    /// gap's time.
    pub payload_at_end: bool,
    /// Random picks among set bits use the bit-deposit instruction (a
    /// property of the processor running the model, not of the machine;
    /// see [`crate::engine::fast_bit_deposit`]).
    pub bit_deposit: bool,
    /// Link bit error rate (0: none; see `transfer::retries`).
    pub bit_error_rate: f64,
}

impl Params {
    pub fn from_machine(m: &Machine) -> Self {
        let t = m.torus();
        let ndyn = t.dynamic_vcs as usize;
        let esc = ndyn;
        let hp = esc + t.escape.escape_vcs();
        let token_range: Vec<u8> = (0..=m.vc_tokens).map(|v| quantize(v, m.vc_tokens, t.token_ranges)).collect();
        let jsq_score: Vec<u8> = token_range
            .iter()
            .enumerate()
            .map(|(v, &range)| match () {
                _ if (v as u32) < m.full_packet_tokens => 0,
                _ if t.arbitration == Arbitration::Random => 1,
                _ => range + 1,
            })
            .collect();
        // The score starts at 0 (no count below one full packet scores) and
        // never falls; a step of k is k steps at the same count.
        let jsq_steps = (1..jsq_score.len())
            .flat_map(|c| (jsq_score[c - 1]..jsq_score[c]).map(move |_| ((c as u16 - 1) ^ 0x8000) as i16))
            .collect();
        let jsq_mul = score_multiplier(&jsq_score, m.full_packet_tokens as u16, t.arbitration, t.token_ranges);
        Params {
            tick_byte: m.tick_byte,
            hop_latency: m.hop_latency,
            chunk_bytes: t.chunk_bytes,
            token_bytes: t.token_bytes,
            trailer_gap: t.trailer_bytes + t.gap_bytes,
            ack_bytes: t.ack_bytes,
            ndyn,
            esc,
            hp,
            nvc: hp + 1,
            vc_tokens: m.vc_tokens as u16,
            full_tokens: m.full_packet_tokens as u16,
            escape: t.escape,
            bubble: t.bubble_accounting,
            dynamic_choice_mask: flags::DYNAMIC | flags::HIGH_PRIORITY | if t.escape_commit { flags::STALLED } else { 0 },
            arbitration: t.arbitration,
            slq_fraction: t.slq_fraction,
            ranges: t.token_ranges,
            net_priority: t.in_network_priority_fraction,
            bit_error_rate: t.link_bit_error_rate,
            paths: t.paths_per_receiver as u8,
            ninj: t.injection_fifos as usize,
            nhp_inj: t.hp_injection_fifos as usize,
            inj_bytes: t.injection_fifo_bytes,
            rx_bytes: t.reception_fifo_bytes,
            max_packet_bytes: m.max_packet_bytes(),
            sw_header: t.sw_header_bytes,
            hw_header: t.hw_header_bytes,
            window: 10_000 * m.tick_byte,
            tokens_per_chunk: (t.chunk_bytes / t.token_bytes) as u16,
            jsq_score,
            jsq_steps,
            jsq_mul,
            payload_at_end: m.hop_latency > (t.trailer_bytes + t.gap_bytes) as Tick * m.tick_byte,
            bit_deposit: crate::engine::fast_bit_deposit(),
            token_range,
        }
    }
}

/// The multiplier `m` with which `((count * m) >> 16) + 1` (signed 16-bit
/// multiplication, high half) is the JSQ score `scores[count]` of every
/// count from `full` on, if there is one: a count's range is
/// `count * ranges / (size + 1)`, which `m = ceil(65536 * ranges / (size +
/// 1))` gives exactly for the small sizes of real machines. Checked here
/// for every count, so a machine it does not fit keeps the steps.
pub(super) fn score_multiplier(scores: &[u8], full: u16, arbitration: Arbitration, ranges: u32) -> Option<i16> {
    let m = if arbitration == Arbitration::Random { 0 } else { (65536 * ranges as u64).div_ceil(scores.len() as u64) };
    let m = i16::try_from(m).ok()?;
    let fits = scores.len() <= i16::MAX as usize
        && scores.iter().enumerate().all(|(c, &s)| {
            let want = if (c as u16) < full { 0 } else { ((c as i32 * m as i32) >> 16) + 1 };
            s as i32 == want
        });
    fits.then_some(m)
}

#[inline]
pub(super) fn quantize(v: u32, cap: u32, ranges: u32) -> u8 {
    ((v as u64 * ranges as u64) / (cap as u64 + 1)).min(ranges as u64 - 1) as u8
}
