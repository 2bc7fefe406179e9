//! Arbitration, in the hardware's three phases: each head's choice of move
//! (JSQ among the dynamic VCs, or the escape move), the receiver arbiter
//! (one transfer per receiver per round; SLQ, JSQ or random among its
//! requests) and the sender arbiter (one packet per link).

use super::*;
use crate::engine::{nth_set_bit, Draws};
use crate::machine::Arbitration;
use wide::{i16x8, CmpEq, CmpGt};

/// A request made in arbitration phase 1.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Req {
    /// Receiver index 0..6 or 6 + FIFO index.
    pub(super) src: u8,
    pub(super) src_vc: u8,
    /// Output direction.
    pub(super) dir: u8,
    pub(super) vc: u8,
    /// Tokens to charge downstream.
    pub(super) charge: u8,
    /// Queue fullness range of the source (for SLQ).
    pub(super) fill: u8,
    pub(super) hp: bool,
    pub(super) pkt: u32,
    /// The packet's size, flags and datelines crossed (from its head
    /// summary, which the packet's own fields equal).
    pub(super) chunks: u8,
    pub(super) flags: u8,
    pub(super) crossed: u8,
}

impl Torus {

    /// Runs the three arbitration phases at node `n` for the heads in
    /// `focus` (see [`Focus`]). `trigger` is the direction whose tokens just
    /// came back (for the unblocking statistic).
    ///
    /// A receiver starts at most one transfer per round; when a receiver had
    /// several movable VCs and something was granted, or a request lost at
    /// its sender while its head still has a free productive link, another
    /// round runs at once (the hardware would run it on the next cycle).
    pub(super) fn arbitrate(&mut self, n: u32, now: Tick, q: &mut EventQueue, trigger: u8, focus: Focus) {
        let ni = n as usize;
        self.global.arbitrations += 1;
        let mut cands = self.routers[ni].candidates(focus);
        if cands == (0, 0) {
            return;
        }
        self.prefetch_heads(ni, cands.0, cands.1);
        let (c0, c1) = cands;
        if if c0 != 0 { c0 & (c0 - 1) == 0 && c1 == 0 } else { c1 & (c1 - 1) == 0 } {
            // One head to evaluate (the usual case).
            self.arbitrate_one(n, now, q, trigger, c0, c1);
            return;
        }
        let Torus { p, geo, routers, pool, global, reqs, .. } = self;
        let r = &mut routers[ni];
        let slq = p.arbitration == Arbitration::Slq;
        // Requests in a fixed array; phase 3 finds a sender's requests
        // through per-direction bit masks (request i = bit i).
        for round in 0..NDIR {
            // Phases 1 and 2 for the receivers' VC heads worth evaluating
            // (found before the first round, again for later ones).
            if round > 0 {
                cands = r.candidates(focus);
                if cands == (0, 0) {
                    return;
                }
            }
            let (cand, inj_cand) = cands;
            let free = r.free();
            let mut nreq = 0usize;
            let mut net_by_dir = [0u32; NDIR];
            let mut fresh_by_dir = [0u32; NDIR];
            // Directions with a request.
            let mut req_dirs = 0u8;
            let mut multi = false;
            let mut ports = nonzero_bytes(cand);
            while ports != 0 {
                let port = ports.trailing_zeros() as usize;
                ports &= ports - 1;
                let mut bits = (cand >> (port * 8)) as u8;
                // This receiver's candidates go to reqs[nreq..nreq + ncand];
                // the one it lets go then moves to reqs[nreq].
                let mut ncand = 0usize;
                // The receiver's path to its reception FIFOs serves the VC
                // heads waiting for it first come, first served.
                let mut delivery: Option<(usize, u32, usize, u32, Tick)> = None;
                while bits != 0 {
                    let v = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    global.head_evaluations += 1;
                    if r.hprod[port * 8 + v] == 0 {
                        // Delivery uses the receiver's own path to its reception FIFO.
                        if let Some((id, f, bytes)) = delivery_room(p, r, pool, port, v) {
                            let arrived = pool.get(id).arrived;
                            if delivery.is_none_or(|d| arrived < d.4) {
                                delivery = Some((v, id, f, bytes, arrived));
                            }
                        }
                        continue;
                    }
                    if let Some(rq) = vc_request(p, geo, r, pool, global, n, port, v, free) {
                        reqs[nreq + ncand] = rq;
                        ncand += 1;
                    }
                }
                if let Some((v, id, f, bytes, _)) = delivery {
                    start_delivery(p, r, pool, global, n, now, port, v, id, f, bytes, q);
                }
                if ncand > 0 {
                    let pick = receiver_pick(p, r, n, &reqs[nreq..nreq + ncand]);
                    let rq = reqs[nreq + pick];
                    net_by_dir[rq.dir as usize] |= 1 << nreq;
                    req_dirs |= 1 << rq.dir;
                    reqs[nreq] = rq;
                    nreq += 1;
                    multi |= ncand > 1;
                }
            }
            // Phase 1 for the injection FIFO heads.
            let mut ib = inj_cand;
            while ib != 0 {
                let f = ib.trailing_zeros() as usize;
                ib &= ib - 1;
                if let Some(rq) = inj_request(p, geo, r, pool, global, n, f, free) {
                    fresh_by_dir[rq.dir as usize] |= 1 << nreq;
                    req_dirs |= 1 << rq.dir;
                    reqs[nreq] = rq;
                    nreq += 1;
                }
            }
            // Phase 3: each free sender with requests picks one: packets
            // already in the network first (on a programmable fraction of
            // decisions), SLQ / random among equals.
            let mut m = req_dirs;
            // The productive directions of the heads whose requests lost at
            // their senders: a head with one of them still free chooses again.
            let mut lost_prod = 0u8;
            while m != 0 {
                let d = m.trailing_zeros() as usize;
                m &= m - 1;
                let (net, fresh) = (net_by_dir[d], fresh_by_dir[d]);
                let mut rng = r.rng.draw(n as u64);
                let prefer_net = net != 0 && (fresh == 0 || rng.chance(p.net_priority));
                let set = if prefer_net { net } else { fresh };
                let chosen = pick_slq_mask(&mut rng, &reqs[..], set, slq, p);
                let rq = reqs[chosen];
                if trigger == d as u8 && rq.flags & flags::STALLED != 0 {
                    global.unblocking_returns += 1;
                }
                let mut losers = (net | fresh) & !(1 << chosen);
                while losers != 0 {
                    let l = &reqs[losers.trailing_zeros() as usize];
                    losers &= losers - 1;
                    let src = l.src as usize;
                    lost_prod |= if src < NDIR { r.hprod[src * 8 + l.src_vc as usize] } else { r.inj_hprod[src - NDIR] };
                }
                start_transfer(p, geo, r, pool, global, n, now, rq, q);
            }
            if !multi && lost_prod & r.free() == 0 {
                return;
            }
        }
    }

    /// [`Torus::arbitrate`] after a packet became the head of injection FIFO
    /// `f`, a head that may move. Only this head can move (see [`Focus`]):
    /// it is evaluated straight away if one of its productive links is free.
    #[inline]
    pub(super) fn arbitrate_injection(&mut self, n: u32, now: Tick, q: &mut EventQueue, f: usize) {
        self.global.arbitrations += 1;
        let r = &self.routers[n as usize];
        if r.inj_hprod[f] & r.free() != 0 {
            self.arbitrate_one(n, now, q, NO_DIR, 0, 1 << f);
        }
    }

    /// [`Torus::arbitrate`] after a packet became the head of VC `v` of
    /// receiver `port`, a head that may move and has a free productive link
    /// or is at its destination. Only this head can move (see [`Focus`]):
    /// it is evaluated straight away if its receiver has a transfer path
    /// left (if at its destination, its path to the reception FIFOs is
    /// free). Its queue and packet are in the cache: the arrival wrote them.
    #[inline(always)]
    pub(super) fn arbitrate_arrival(&mut self, n: u32, now: Tick, q: &mut EventQueue, port: usize, v: usize) {
        self.global.arbitrations += 1;
        let r = &self.routers[n as usize];
        let candidate = if r.hprod[port * 8 + v] == 0 { !r.rx_busy(port) } else { r.paths_left[port] != 0 };
        if candidate {
            self.arbitrate_one(n, now, q, NO_DIR, 1 << (port * 8 + v), 0);
        }
    }

    /// The three arbitration phases at node `n` for its one head worth
    /// evaluating: VC head bit `c0` (port * 8 + vc) or, if `c0` is 0,
    /// injection FIFO head bit `c1`. They draw nothing beyond its choice of
    /// move. `trigger` as for [`Torus::arbitrate`].
    #[inline(always)]
    pub(super) fn arbitrate_one(&mut self, n: u32, now: Tick, q: &mut EventQueue, trigger: u8, c0: u64, c1: u32) {
        let Torus { p, geo, routers, pool, global, .. } = self;
        let r = &mut routers[n as usize];
        let rq = if c0 != 0 {
            let (port, v) = (c0.trailing_zeros() as usize / 8, c0.trailing_zeros() as usize % 8);
            global.head_evaluations += 1;
            if r.hprod[port * 8 + v] == 0 {
                if let Some((id, f, bytes)) = delivery_room(p, r, pool, port, v) {
                    start_delivery(p, r, pool, global, n, now, port, v, id, f, bytes, q);
                }
                return;
            }
            vc_request(p, geo, r, pool, global, n, port, v, r.free())
        } else {
            inj_request(p, geo, r, pool, global, n, c1.trailing_zeros() as usize, r.free())
        };
        if let Some(rq) = rq {
            if trigger == rq.dir && rq.flags & flags::STALLED != 0 {
                global.unblocking_returns += 1;
            }
            start_transfer(p, geo, r, pool, global, n, now, rq, q);
        }
    }
}

/// JSQ's options for a head with productive directions `prod` among the
/// machine's dynamic VCs: the (direction, VC) pairs in the best token range that can
/// take a full packet, as bits direction * 4 + VC. At most one direction
/// per dimension is productive (the minus one when both are); each of the
/// three vectors holds one dimension's two directions, so all 24 scores
/// come out together, without a branch per direction.
#[inline(always)]
pub(super) fn jsq_options(p: &Params, r: &Router, prod: u8) -> u64 {
    let t = &r.tokens_lo;
    let dim = |k: usize| {
        let (a, b) = (t[2 * k], t[2 * k + 1]);
        i16x8::new([a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]].map(|x| x as i16))
    };
    let (x0, x1, x2) = (dim(0), dim(1), dim(2));
    // The scores: one multiplication (see `Params::jsq_mul`), else +1 per
    // step passed (counts biased by 0x8000 for the signed comparison).
    let (mut s0, mut s1, mut s2);
    if let Some(m) = p.jsq_mul {
        (s0, s1, s2) = (mul_scores(x0, m, p.full_tokens), mul_scores(x1, m, p.full_tokens), mul_scores(x2, m, p.full_tokens));
    } else {
        let bias = i16x8::splat(i16::MIN);
        let (x0, x1, x2) = (x0 ^ bias, x1 ^ bias, x2 ^ bias);
        (s0, s1, s2) = (i16x8::splat(0), i16x8::splat(0), i16x8::splat(0));
        for &step in &p.jsq_steps {
            let step = i16x8::splat(step);
            s0 -= x0.cmp_gt(step);
            s1 -= x1.cmp_gt(step);
            s2 -= x2.cmp_gt(step);
        }
    }
    let lanes = &JSQ_LANES[p.ndyn];
    let hint = |k: usize| ((prod >> (2 * k)) & 3) as usize;
    s0 &= i16x8::new(lanes[hint(0)]);
    s1 &= i16x8::new(lanes[hint(1)]);
    s2 &= i16x8::new(lanes[hint(2)]);
    let best = s0.max(s1).max(s2).reduce_max();
    if best == 0 {
        return 0;
    }
    let best = i16x8::splat(best);
    let m = |s: i16x8| s.cmp_eq(best).move_mask() as u64;
    m(s0) | m(s1) << 8 | m(s2) << 16
}

/// JSQ scores of eight token counts with multiplier `m` (see
/// `Params::jsq_mul`): `((count * m) >> 16) + 1` from `full` tokens on, 0
/// below.
#[inline(always)]
pub(super) fn mul_scores(x: i16x8, m: i16, full: u16) -> i16x8 {
    (i16x8::mul_keep_high(x, i16x8::splat(m)) + i16x8::splat(1)) & x.cmp_gt(i16x8::splat(full as i16 - 1))
}

/// For n dynamic VCs and a dimension's hint bits (plus, minus), the lanes
/// (direction * 4 + VC within the dimension) JSQ considers: VCs 0..n of the
/// productive direction, the minus one when both are.
pub(super) const JSQ_LANES: [[[i16; 8]; 4]; 5] = {
    let mut t = [[[0i16; 8]; 4]; 5];
    let mut n = 0;
    while n <= 4 {
        let mut hint = 1;
        while hint < 4 {
            let mut v = 0;
            while v < n {
                t[n][hint][(hint >> 1) * 4 + v] = -1;
                v += 1;
            }
            hint += 1;
        }
        n += 1;
    }
    t
};

/// The head of VC `v` of receiver `port` at router `r`, at its destination:
/// (the packet, its reception FIFO, its bytes) if that FIFO has room for it.
#[inline(always)]
pub(super) fn delivery_room(p: &Params, r: &Router, pool: &Pool, port: usize, v: usize) -> Option<(u32, usize, u32)> {
    let (id, h) = (r.recv[port].vc[v].q.head, r.recv[port].vc[v].head);
    debug_assert_eq!(h, Head::of(pool.get(id)));
    let f = rx_index(h.flags, port);
    let bytes = h.chunks as u32 * p.chunk_bytes;
    (r.rx[f].used + bytes <= p.rx_bytes).then_some((id, f, bytes))
}

/// Phase 1 for the head of VC `v` of receiver `port` at router `r` of node
/// `n`, a head not at its destination, with the senders `free` free: its
/// request, if it may move now.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn vc_request(p: &Params, geo: &Geometry, r: &mut Router, pool: &mut Pool, global: &mut GlobalCounters, n: u32, port: usize, v: usize, free: u8) -> Option<Req> {
    let vc = &r.recv[port].vc[v];
    let (id, used, h) = (vc.q.head, vc.used, vc.head);
    debug_assert_eq!(h, Head::of(pool.get(id)));
    if h.is(flags::DEPOSIT) && !deposit_ok(p, r, port, h) {
        return None;
    }
    let (d, tv, ch) = match choose_move(p, geo, r, n, h, v as u8, r.hprod[port * 8 + v], free) {
        Choice::Busy => return None,
        Choice::Move(d, tv, ch) => (d, tv, ch),
        Choice::NoTokens(d, tv) => {
            r.recv[port].vc[v].head.flags = record_stall(r, pool, global, id, h, d, tv);
            return None;
        }
    };
    // An escape move on a busy link: the head waits for it.
    (free & (1 << d) != 0).then(|| Req { src: port as u8, src_vc: v as u8, dir: d, vc: tv, charge: ch, fill: p.token_range[used as usize], hp: v == p.hp, pkt: id, chunks: h.chunks, flags: h.flags, crossed: h.crossed })
}

/// Phase 1 for the head of injection FIFO `f` (see [`vc_request`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn inj_request(p: &Params, geo: &Geometry, r: &mut Router, pool: &mut Pool, global: &mut GlobalCounters, n: u32, f: usize, free: u8) -> Option<Req> {
    let fifo = &r.inj[f];
    let (id, fused, h, vc) = (fifo.q.head, fifo.used, fifo.head, fifo.vc);
    debug_assert_eq!((h, vc), (Head::of(pool.get(id)), pool.get(id).vc));
    let (d, tv, ch) = match choose_move(p, geo, r, n, h, vc, r.inj_hprod[f], free) {
        Choice::Busy => return None,
        Choice::Move(d, tv, ch) => (d, tv, ch),
        Choice::NoTokens(d, tv) => {
            r.inj[f].head.flags = record_stall(r, pool, global, id, h, d, tv);
            return None;
        }
    };
    (free & (1 << d) != 0).then(|| Req { src: (NDIR + f) as u8, src_vc: 0, dir: d, vc: tv, charge: ch, fill: quantize(fused, p.inj_bytes, p.ranges), hp: f >= p.ninj, pkt: id, chunks: h.chunks, flags: h.flags, crossed: h.crossed })
}

/// A head that found no downstream tokens for its escape move in direction
/// `d` onto VC `v`: a no-token stall, counted once per packet and hop.
/// Returns the head's flags with the stall marked.
#[inline]
pub(super) fn record_stall(r: &mut Router, pool: &mut Pool, global: &mut GlobalCounters, id: u32, h: Head, d: usize, v: usize) -> u8 {
    if !h.is(flags::STALLED) {
        pool.get_mut(id).flags |= flags::STALLED;
        r.link_high[d].stalls += 1;
        global.stalls_by_vc[v] += 1;
    }
    h.flags | flags::STALLED
}

/// Deposit packets at an intermediate node also need reception room.
#[inline]
pub(super) fn deposit_ok(p: &Params, r: &Router, port: usize, h: Head) -> bool {
    !r.rx_busy(port) && r.rx[rx_index(h.flags, port)].used + h.chunks as u32 * p.chunk_bytes <= p.rx_bytes
}

/// Phase 2: a receiver lets one of its requesting VCs go: high priority
/// first, else SLQ on a fraction of decisions, else random.
#[inline]
pub(super) fn receiver_pick(p: &Params, r: &mut Router, n: u32, cand: &[Req]) -> usize {
    if cand.len() == 1 {
        return 0;
    }
    if let Some(i) = cand.iter().position(|c| c.hp) {
        return i;
    }
    let slq = p.arbitration == Arbitration::Slq;
    let all = (1u32 << cand.len()) - 1;
    pick_slq_mask(&mut r.rng.draw(n as u64), cand, all, slq, p)
}

/// Bit i set when byte i of `x` is not zero.
#[inline]
pub(super) fn nonzero_bytes(x: u64) -> u8 {
    pub(super) const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let high = (((x & LOW7) + LOW7) | x) & !LOW7;
    ((high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

/// Picks among the requests whose bits are set in `set` (in increasing
/// order): on `slq_fraction` of the decisions (when SLQ is on) one from the
/// fullest source queue (ties at random), otherwise one at random. Returns
/// the chosen request's index.
pub(super) fn pick_slq_mask(rng: &mut impl Draws, reqs: &[Req], set: u32, slq: bool, p: &Params) -> usize {
    let len = set.count_ones();
    if len == 1 {
        return set.trailing_zeros() as usize;
    }
    if slq && rng.chance(p.slq_fraction) {
        // The fullest source queues; one of them at random.
        let mut best = 0u8;
        let mut tied = 0u32;
        let mut m = set;
        while m != 0 {
            let i = m.trailing_zeros();
            m &= m - 1;
            let fill = reqs[i as usize].fill;
            if tied == 0 || fill > best {
                best = fill;
                tied = 0;
            }
            if fill == best {
                tied |= 1 << i;
            }
        }
        nth_set_bit(tied as u64, rng.below(tied.count_ones()), p.bit_deposit)
    } else {
        nth_set_bit(set as u64, rng.below(len), p.bit_deposit)
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonzero_bytes_marks_exactly_the_nonzero_bytes() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Zero some bytes, keep single high or low bits in others.
            let w = x & (x >> 8 | 0x8001_0080_0100_8001) & !(i.wrapping_mul(0x00ff_0000_ff00_00ff) & 0xff00_ff00_00ff_ff00);
            let expect = (0..8).fold(0u8, |m, b| if (w >> (8 * b)) & 0xff != 0 { m | 1 << b } else { m });
            assert_eq!(nonzero_bytes(w), expect, "{w:#018x}");
        }
        assert_eq!(nonzero_bytes(0), 0);
        assert_eq!(nonzero_bytes(u64::MAX), 0xff);
        assert_eq!(nonzero_bytes(0x8000_0000_0000_0001), 0x81);
    }

    #[test]
    fn one_multiplication_scores_the_counts_of_real_machines_and_others_keep_the_steps() {
        let params = |settings: &[&str]| Params::from_machine(&crate::machine::bgl(settings).unwrap());
        // BG/L: 32 tokens in 4 ranges; random arbitration scores 1 from a full packet on.
        assert_eq!(params(&[]).jsq_mul, Some(7944));
        assert_eq!(params(&["torus.arbitration=random"]).jsq_mul, Some(0));
        // 64 ranges of 32 tokens need a multiplier beyond 16 bits.
        assert_eq!(params(&["torus.token_ranges=64"]).jsq_mul, None);
        for settings in [&[][..], &["torus.token_ranges=3", "torus.token_bytes=8"], &["torus.arbitration=random"]] {
            let p = params(settings);
            let m = p.jsq_mul.unwrap();
            for (c, &score) in p.jsq_score.iter().enumerate() {
                let got = mul_scores(i16x8::splat(c as i16), m, p.full_tokens);
                assert_eq!(got.to_array(), [score as i16; 8], "{settings:?} count {c}");
            }
        }
    }

    /// JSQ's options by the definition: the open (direction, dynamic VC)
    /// pairs with the best non-zero score from the score table.
    fn jsq_by_table(p: &Params, tokens: &[[u16; 4]; NDIR], prod: u8) -> u64 {
        let open: Vec<(usize, usize)> = (0..3)
            .filter_map(|k| {
                let hint = (prod >> (2 * k)) & 3;
                (hint != 0).then_some(2 * k + (hint >> 1) as usize)
            })
            .flat_map(|d| (0..p.ndyn).map(move |v| (d, v)))
            .collect();
        let score = |&(d, v): &(usize, usize)| p.jsq_score[tokens[d][v] as usize];
        let best = open.iter().map(score).max().unwrap_or(0);
        if best == 0 {
            return 0;
        }
        open.iter().filter(|o| score(o) == best).fold(0, |m, &(d, v)| m | 1 << (d * 4 + v))
    }

    proptest::proptest! {
        #[test]
        fn jsq_options_are_the_best_scoring_open_pairs(
            ndyn in 1u32..=4, ranges in 1u32..=64, arb in 0usize..3, buffer_packets in 2u32..=8,
            token_bytes in proptest::sample::select(vec![8u32, 16, 32]),
            seed: [u16; NDIR * 4], prod in 0u8..64)
        {
            let arb = ["random", "jsq", "slq"][arb];
            let settings = [
                format!("torus.dynamic_vcs={ndyn}"),
                format!("torus.token_ranges={ranges}"),
                format!("torus.arbitration={arb}"),
                format!("torus.token_bytes={token_bytes}"),
                format!("torus.vc_buffer_bytes={}", buffer_packets * 256),
            ];
            let m = crate::machine::bgl(&settings.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
            let p = Params::from_machine(&m);
            let mut torus = Torus::new(&m, 1);
            let r = &mut torus.routers[0];
            // Token counts anywhere from empty to full, with the steps' edges likely.
            let mut tokens = [[0u16; 4]; NDIR];
            for (i, t) in tokens.iter_mut().flatten().enumerate() {
                let x = seed[i] as u32;
                *t = if x % 3 == 0 { p.full_tokens - (x % 2) as u16 } else { (x % (p.vc_tokens as u32 + 1)) as u16 };
            }
            r.tokens_lo = tokens;
            let got = jsq_options(&p, r, prod);
            proptest::prop_assert_eq!(got, jsq_by_table(&p, &tokens, prod), "tokens {:?} prod {:#08b}", tokens, prod);
        }
    }

    /// JSQ compares token ranges only, but the hardware draws its tie-break
    /// anew every cycle: of tied options it ends up on a free link, and it
    /// waits only when every option in the best range is on a busy one.
    #[test]
    fn a_tie_goes_to_a_free_link_and_a_busy_best_range_waits() {
        let m = crate::machine::bgl(&[]).unwrap();
        let p = Params::from_machine(&m);
        let mut torus = Torus::new(&m, 7);
        let Torus { geo, routers, .. } = &mut torus;
        let r = &mut routers[0];
        let h = Head { flags: flags::DYNAMIC, chunks: 8, last_dir: 0, crossed: 0 };
        // Productive: x+ (direction 0) and y+ (direction 2), all tokens full.
        let prod = 0b0101;
        let choices = |r: &mut Router, busy: u8| {
            r.xfer_mask = busy;
            let free = r.free();
            (0..200)
                .map(|_| match choose_move(&p, geo, r, 0, h, 0, prod, free) {
                    Choice::Move(d, v, _) => Some((d, v)),
                    Choice::Busy => None,
                    Choice::NoTokens(..) => panic!("full tokens, yet no move"),
                })
                .collect::<Vec<_>>()
        };
        // Both links free: the four tied options all come up.
        let all = choices(r, 0);
        for opt in [(0, 0), (0, 1), (2, 0), (2, 1)] {
            assert!(all.contains(&Some(opt)), "{opt:?} never chosen: {all:?}");
        }
        // x+ busy: every draw takes y+, on either VC.
        let ys = choices(r, 1);
        assert!(ys.iter().all(|c| matches!(c, Some((2, _)))), "{ys:?}");
        assert!(ys.contains(&Some((2, 0))) && ys.contains(&Some((2, 1))));
        // Both busy: no request.
        assert!(choices(r, 0b101).iter().all(Option::is_none));
        // y+ in a lower token range and x+ busy: the head waits for x+ (JSQ
        // does not trade tokens for a free link).
        r.tokens_lo[2] = [p.full_tokens; 4];
        assert!(choices(r, 1).iter().all(Option::is_none));
        assert!(choices(r, 0).iter().all(|c| matches!(c, Some((0, _)))));
    }
}

