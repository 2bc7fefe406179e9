//! Event queue: timing wheels for the near future (where nearly every event of
//! a network model lands: hop latencies, packet transfer times, processor
//! costs) plus a binary heap for far events. Events at the same tick come out
//! in the order they were scheduled, which makes runs deterministic.
//!
//! Two wheels: events due less than `NEAR` ticks after they are scheduled
//! (a hop, a token-ack, most processor costs) go to a small wheel whose slots
//! stay in the cache; the others (a whole packet on a link ...) to a large
//! one. Every event of a tick in the large wheel was scheduled before every
//! event of that tick in the small one, so handing out the large wheel's
//! slot first keeps the order of scheduling.

use super::{Event, Tick};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const WHEEL_BITS: u32 = 14;
const WHEEL: usize = 1 << WHEEL_BITS;
const MASK: u64 = (WHEEL as u64) - 1;
const NEAR_BITS: u32 = 8;
const NEAR: usize = 1 << NEAR_BITS;
const NEAR_MASK: u64 = (NEAR as u64) - 1;
/// Events a slot's buffer holds. Slots hold no buffer while empty: the first
/// event takes one from the queue's spare buffers, the one handed out last
/// (so still in the cache: a slot's own buffer would be cold, last used a
/// whole turn of the wheel ago), and gives it back when it is handed out. A
/// slot that needs more than SLOT_KEEP borrows a larger buffer from a second
/// pool and gives that back too, so that the wheels' memory follows the
/// events pending, not the largest batch each slot ever held, and nothing
/// allocates once the pools have grown to the working set.
const SLOT_KEEP: usize = 64;

/// Batches smaller than this are not followed by a preview of the events
/// after them (see [`EventQueue::preview`]): in a sparse run (a coarse-tier
/// skeleton, a ping-pong: one or two events per tick) the preview cost more
/// than the look-ahead it gave.
const PREVIEW_MIN_BATCH: usize = 8;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Far {
    t: Tick,
    seq: u64,
    ev: EvKey,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct EvKey(u8, u8, u8, u8, u32, u32);

impl From<Event> for EvKey {
    fn from(e: Event) -> Self {
        EvKey(e.kind, e.a, e.b, e.c, e.node, e.data)
    }
}
impl From<EvKey> for Event {
    fn from(k: EvKey) -> Self {
        Event { kind: k.0, a: k.1, b: k.2, c: k.3, node: k.4, data: k.5 }
    }
}

pub struct EventQueue {
    now: Tick,
    /// Events scheduled less than NEAR ticks ahead, by tick.
    near: Vec<Vec<Event>>,
    /// Events scheduled NEAR..WHEEL ticks ahead, and far events once they are
    /// less than WHEEL ticks ahead, by tick.
    slots: Vec<Vec<Event>>,
    /// Events taken out of a slot of the current tick, being handed out
    /// (`..current_end`), followed by a preview of the events after them.
    current: Vec<Event>,
    current_pos: usize,
    current_end: usize,
    /// `current` came from the small wheel (the last part of its tick).
    current_near: bool,
    /// Events in both wheels.
    in_wheels: usize,
    /// Which slots of each wheel hold events, a bit per slot: the next
    /// tick with events is found a word (64 ticks) at a time, not a slot at
    /// a time (sparse runs - a Python program's messages, microseconds
    /// apart - would otherwise look at thousands of empty slots per event).
    near_bits: [u64; NEAR / 64],
    slot_bits: Vec<u64>,
    far: BinaryHeap<Reverse<Far>>,
    seq: u64,
    /// Events pushed so far (`Self::pushes`).
    pushes: u64,
    /// Buffers larger than SLOT_KEEP not lent to a slot.
    big: Vec<Vec<Event>>,
    /// Empty SLOT_KEEP-event buffers not lent to a slot, the one given back
    /// last on top.
    spare: Vec<Vec<Event>>,
    /// Windowed runs (see [`super::parallel`]): events for another node are
    /// held in `outbox` until the window ends.
    windowed: bool,
    /// The node whose event is being handled ([`NO_NODE`] outside events).
    pub(crate) cur: u32,
    /// The window being run: `window.1` is its end, before which no event
    /// for another node may be due (the lookahead).
    pub(crate) window: (Tick, Tick),
    /// The nodes this queue's partition owns (windowed runs): events
    /// scheduled outside any event for other nodes are theirs to schedule.
    own: (u32, u32),
    pub(crate) outbox: Vec<Crossing>,
}

/// No node: scheduling outside the handling of an event.
pub const NO_NODE: u32 = u32::MAX;

/// The node of a note for every partition ([`Crossing::note_all`]).
pub const EVERY: u32 = u32::MAX - 1;

/// Nodes a windowed run may have: a crossing's order key holds the node.
pub const MAX_NODES: u32 = 1 << NODE_BITS;
pub(crate) const NODE_BITS: u32 = 24;

/// An event for another node, held until the window in which it was
/// scheduled ends: due at `t`; `key` orders it among the window's (the time
/// in the window it was scheduled at, then the node that scheduled it).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct Crossing {
    pub t: Tick,
    pub key: u64,
    pub ev: Event,
    /// What it carries to another partition, by index ([`NO_LOAD`]: nothing).
    pub load: u32,
}

/// A crossing that carries nothing.
pub const NO_LOAD: u32 = u32::MAX;

/// The due time of a crossing that is a note, not an event (see
/// [`Crossing::note`]).
pub const NOTE: Tick = Tick::MAX;

impl Crossing {
    /// A note for the partition of `ev.node`, written now: handed to its
    /// model at the window's end ([`super::Partitioned::note`]) with what
    /// the writer's model gives for it ([`super::Partitioned::emigrate`]),
    /// never scheduled.
    pub fn note(q: &mut EventQueue, ev: Event) {
        debug_assert!(q.windowed && !q.owns(ev.node), "a note goes to another partition");
        let src = if q.cur == NO_NODE { ev.node } else { q.cur };
        q.outbox.push(Crossing { t: NOTE, key: Crossing::key(q.now - q.window.0, src), ev, load: NO_LOAD });
    }

    /// A note for every partition (this one's too), written now by node
    /// `src`: `ev.node` is set to [`EVERY`].
    pub fn note_all(q: &mut EventQueue, mut ev: Event, src: u32) {
        debug_assert!(q.windowed, "notes are for windowed runs");
        ev.node = EVERY;
        q.outbox.push(Crossing { t: NOTE, key: Crossing::key(q.now - q.window.0, src), ev, load: NO_LOAD });
    }

    /// The order key of an event scheduled `s` ticks into its window by an
    /// event of `src`.
    #[inline]
    pub fn key(s: Tick, src: u32) -> u64 {
        s << NODE_BITS | src as u64
    }
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

/// Appends `ev` to a slot; an empty slot first takes a spare buffer, a full
/// one of SLOT_KEEP events or more borrows a larger buffer from the pool.
#[inline(always)]
fn put(slot: &mut Vec<Event>, ev: Event, big: &mut Vec<Vec<Event>>, spare: &mut Vec<Vec<Event>>) {
    if slot.len() == slot.capacity() {
        make_room(slot, big, spare);
    }
    slot.push(ev);
}

/// A full slot: an empty one takes a spare buffer, one of SLOT_KEEP events
/// or more borrows a larger one (a smaller one grows by itself).
#[inline(never)]
fn make_room(slot: &mut Vec<Event>, big: &mut Vec<Vec<Event>>, spare: &mut Vec<Vec<Event>>) {
    if slot.capacity() == 0 {
        *slot = spare.pop().unwrap_or_else(|| Vec::with_capacity(SLOT_KEEP));
    } else if slot.capacity() >= SLOT_KEEP {
        enlarge(slot, big, spare);
    }
}

/// Gives an emptied slot's buffer back to its pool.
#[inline]
fn give_back(slot: &mut Vec<Event>, big: &mut Vec<Vec<Event>>, spare: &mut Vec<Vec<Event>>) {
    let mut b = std::mem::take(slot);
    b.clear();
    if b.capacity() > SLOT_KEEP {
        big.push(b);
    } else {
        spare.push(b);
    }
}

#[cold]
#[inline(never)]
fn enlarge(slot: &mut Vec<Event>, big: &mut Vec<Vec<Event>>, spare: &mut Vec<Vec<Event>>) {
    let Some(mut b) = big.pop() else { return };
    if b.capacity() <= slot.capacity() {
        // Too small to help: the slot grows by itself (the pool's buffers
        // grow to the largest batches this way).
        big.push(b);
        return;
    }
    b.extend_from_slice(slot);
    let mut old = std::mem::replace(slot, b);
    give_back(&mut old, big, spare);
}

/// How far round from slot `from` (0 for `from` itself) the first set bit
/// of a wheel's occupancy `bits` is, if it is less than `limit` (at most
/// the wheel's size) away; usize::MAX if not.
#[inline]
fn first_set(bits: &[u64], from: usize, limit: usize) -> usize {
    let n = bits.len();
    let (w0, b0) = (from / 64, from % 64);
    // The rest of `from`'s word, the words after it going round, then the
    // part of `from`'s word before it; words wholly beyond `limit` are
    // not read.
    let found = |d: usize| if d < limit { d } else { usize::MAX };
    let head = bits[w0] >> b0;
    if head != 0 {
        return found(head.trailing_zeros() as usize);
    }
    for k in 1..n {
        if k * 64 - b0 >= limit {
            return usize::MAX;
        }
        let w = bits[(w0 + k) % n];
        if w != 0 {
            return found(k * 64 - b0 + w.trailing_zeros() as usize);
        }
    }
    let tail = bits[w0] & ((1u64 << b0) - 1);
    if tail != 0 {
        return found(n * 64 - b0 + tail.trailing_zeros() as usize);
    }
    usize::MAX
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue {
            now: 0,
            near: (0..NEAR).map(|_| Vec::new()).collect(),
            slots: (0..WHEEL).map(|_| Vec::new()).collect(),
            current: Vec::new(),
            current_pos: 0,
            current_end: 0,
            current_near: false,
            in_wheels: 0,
            near_bits: [0; NEAR / 64],
            slot_bits: vec![0; WHEEL / 64],
            far: BinaryHeap::new(),
            seq: 0,
            pushes: 0,
            big: Vec::new(),
            spare: Vec::new(),
            windowed: false,
            cur: NO_NODE,
            window: (0, 0),
            own: (0, u32::MAX),
            outbox: Vec::new(),
        }
    }

    /// A queue for a windowed run of the partition that owns nodes
    /// `lo..hi` (see [`super::parallel`]).
    pub fn windowed(lo: u32, hi: u32) -> Self {
        EventQueue { windowed: true, own: (lo, hi), ..Self::new() }
    }

    /// Whether `node` belongs to this queue's partition.
    #[inline]
    pub fn owns(&self, node: u32) -> bool {
        node >= self.own.0 && node < self.own.1
    }

    /// Current simulated time (the time of the last event handed out).
    #[inline]
    pub fn now(&self) -> Tick {
        self.now
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.in_wheels + self.far.len() + (self.current_end - self.current_pos)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `ev` `delay` ticks from now.
    #[inline]
    pub fn push(&mut self, delay: Tick, ev: Event) {
        self.push_at(self.now + delay, ev);
    }

    /// How many events have been pushed so far: software that would push
    /// an event right behind its last one, at the same time, can tell
    /// whether anything else was pushed in between.
    #[inline]
    pub fn pushes(&self) -> u64 {
        self.pushes
    }

    /// Schedules `ev` at absolute time `t` (not before now).
    #[inline(always)]
    pub fn push_at(&mut self, t: Tick, ev: Event) {
        self.pushes += 1;
        if self.windowed && ev.node != self.cur {
            return self.cross(t, ev);
        }
        self.schedule(t, ev);
    }

    /// Windowed runs: an event for another node than the one handled. Held
    /// until the window ends; outside events, kept if this partition owns
    /// the node (every partition runs the same start).
    #[inline]
    fn cross(&mut self, t: Tick, ev: Event) {
        if self.cur == NO_NODE {
            if self.owns(ev.node) {
                self.schedule(t, ev);
            }
            return;
        }
        assert!(
            t >= self.window.1,
            "an event for node {} at {t} from node {} at {}: sooner than the window's end {} (the lookahead)",
            ev.node, self.cur, self.now, self.window.1
        );
        self.outbox.push(Crossing { t, key: Crossing::key(self.now - self.window.0, self.cur), ev, load: NO_LOAD });
    }

    /// Schedules `ev` at `t` in this queue (see [`Self::push_at`]).
    #[inline(always)]
    pub(crate) fn schedule(&mut self, t: Tick, ev: Event) {
        debug_assert!(t >= self.now, "event scheduled in the past");
        let t = t.max(self.now);
        // Same tick as now: the slot of now is handed out after the current
        // batch, so the event goes after everything already due.
        let delay = t - self.now;
        if delay < NEAR as u64 {
            let i = (t & NEAR_MASK) as usize;
            put(&mut self.near[i], ev, &mut self.big, &mut self.spare);
            self.near_bits[i / 64] |= 1 << (i % 64);
            self.in_wheels += 1;
        } else if delay < WHEEL as u64 {
            let i = (t & MASK) as usize;
            put(&mut self.slots[i], ev, &mut self.big, &mut self.spare);
            self.slot_bits[i / 64] |= 1 << (i % 64);
            self.in_wheels += 1;
        } else {
            self.seq += 1;
            self.far.push(Reverse(Far { t, seq: self.seq, ev: ev.into() }));
        }
    }

    /// Moves far events that now fit in the wheel into it.
    fn refill(&mut self) {
        while let Some(Reverse(f)) = self.far.peek() {
            if f.t - self.now < WHEEL as u64 {
                let Reverse(f) = self.far.pop().unwrap();
                let i = (f.t & MASK) as usize;
                put(&mut self.slots[i], f.ev.into(), &mut self.big, &mut self.spare);
                self.slot_bits[i / 64] |= 1 << (i % 64);
                self.in_wheels += 1;
            } else {
                break;
            }
        }
    }

    /// The first tick from `t` on (`t` at most one tick after now) with
    /// events in a wheel. Only called with events in the wheels, all due
    /// less than WHEEL ticks from now: each wheel's first occupied slot
    /// from `t`'s on, going round, is its earliest tick.
    #[inline]
    fn first_due(&self, t: Tick) -> Tick {
        debug_assert!(self.in_wheels > 0 && t <= self.now + 1);
        let near = first_set(&self.near_bits, (t & NEAR_MASK) as usize, NEAR);
        // The large wheel only up to the small one's find.
        let d = near.min(first_set(&self.slot_bits, (t & MASK) as usize, near.min(WHEEL)));
        debug_assert!(d < WHEEL, "events in the wheels, none found");
        t + d as Tick
    }

    /// Pops the next event strictly before `until`, advancing time to it.
    #[inline]
    pub fn pop_before(&mut self, until: Tick) -> Option<(Tick, Event)> {
        loop {
            if self.current_pos < self.current_end {
                let ev = self.current[self.current_pos];
                self.current_pos += 1;
                return Some((self.now, ev));
            }
            if !self.next_batch(until) {
                return None;
            }
        }
    }

    /// The current batch is exhausted: takes the next one - the rest of the
    /// current tick (the large wheel's slot, then the small one's, which also
    /// receives events scheduled for now while the tick is handed out), or
    /// the first later tick with events before `until`. False if there is
    /// none.
    fn next_batch(&mut self, until: Tick) -> bool {
        loop {
            for near in [false, true] {
                let slot = if near { &mut self.near[(self.now & NEAR_MASK) as usize] } else { &mut self.slots[(self.now & MASK) as usize] };
                if !slot.is_empty() {
                    // Copied out rather than swapped, and the buffer given
                    // back: a slot that once held a large batch would
                    // otherwise keep (or pass on) its room for good, and the
                    // wheels would spread over hundreds of megabytes.
                    self.current.clear();
                    self.current.extend_from_slice(slot);
                    self.current_pos = 0;
                    self.current_end = slot.len();
                    self.current_near = near;
                    self.in_wheels -= slot.len();
                    give_back(slot, &mut self.big, &mut self.spare);
                    let (bits, i) = if near { (&mut self.near_bits[..], (self.now & NEAR_MASK) as usize) } else { (&mut self.slot_bits[..], (self.now & MASK) as usize) };
                    bits[i / 64] &= !(1 << (i % 64));
                    if self.current_end >= PREVIEW_MIN_BATCH {
                        self.preview();
                    }
                    return true;
                }
            }
            // Advance to the next non-empty tick.
            if self.in_wheels == 0 {
                match self.far.peek() {
                    None => return false,
                    Some(Reverse(f)) => {
                        if f.t >= until {
                            return false;
                        }
                        self.now = f.t;
                        self.refill();
                        continue;
                    }
                }
            }
            let t = self.first_due(self.now + 1);
            if t >= until {
                return false;
            }
            self.now = t;
            self.refill();
        }
    }

    /// Appends to the batch just taken (of at least [`PREVIEW_MIN_BATCH`]
    /// events) a copy of the first events due after it, as things stand
    /// (the rest of the tick, then the next tick), as far as the
    /// look-ahead reaches: [`Self::peek_ahead`] then finds them in one
    /// place. Events scheduled later may come before some of them, so the
    /// look-ahead sees only what is likely next.
    #[inline]
    fn preview(&mut self) {
        let next = self.now + 1;
        let this_near = if self.current_near { None } else { Some(&self.near[(self.now & NEAR_MASK) as usize]) };
        let mut want = super::TOUCH_AHEAD[0];
        for slot in [this_near, Some(&self.slots[(next & MASK) as usize]), Some(&self.near[(next & NEAR_MASK) as usize])].into_iter().flatten() {
            let n = slot.len().min(want);
            self.current.extend_from_slice(&slot[..n]);
            want -= n;
        }
        // The next tick's large-wheel slot, written up to a turn of the
        // wheel ago, is copied out next: its lines start on their way now.
        let slot = &self.slots[(next & MASK) as usize];
        for i in (0..slot.len().min(SLOT_KEEP)).step_by(64 / std::mem::size_of::<Event>()) {
            super::prefetch(&slot[i]);
        }
    }

    /// The event `k` places behind the next one to be handed out, as things
    /// stood when the batch was taken (for touching its data ahead): in the
    /// current batch, the rest of the current tick or the next tick.
    #[inline]
    pub fn peek_ahead(&self, k: usize) -> Option<&Event> {
        self.current.get(self.current_pos + k)
    }

    /// Advances time to `t` if nothing is pending before it.
    pub fn advance_to(&mut self, t: Tick) {
        if t > self.now && self.peek_time().is_none_or(|p| p >= t) {
            // Only legal when no event lies before t.
            self.now = t;
            self.refill();
        }
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Tick> {
        if self.current_pos < self.current_end {
            return Some(self.now);
        }
        if self.in_wheels > 0 {
            return Some(self.first_due(self.now));
        }
        self.far.peek().map(|Reverse(f)| f.t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(d: u32) -> Event {
        Event { kind: 0, a: 0, b: 0, c: 0, node: 0, data: d }
    }

    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::new();
        q.push(5, ev(1));
        q.push(3, ev(2));
        q.push(5, ev(3));
        q.push(10_000, ev(4));
        q.push(0, ev(5));
        let mut out = vec![];
        while let Some((t, e)) = q.pop_before(u64::MAX) {
            out.push((t, e.data));
            if e.data == 2 {
                q.push(0, ev(6)); // same tick, after everything already due
                q.push(2, ev(7)); // lands at 5, after 1 and 3
            }
        }
        assert_eq!(out, vec![(0, 5), (3, 2), (3, 6), (5, 1), (5, 3), (5, 7), (10_000, 4)]);
        assert!(q.is_empty());
    }

    /// The look-ahead sees the rest of the batch, then the rest of the tick
    /// and the next tick, as they stood when the batch was taken (a batch
    /// of at least PREVIEW_MIN_BATCH events); after a smaller batch only
    /// the batch.
    #[test]
    fn peek_ahead_reaches_past_the_batch() {
        let mut q = EventQueue::new();
        let big = PREVIEW_MIN_BATCH as u32;
        for d in 1..=big {
            q.push(300, ev(d)); // large wheel, tick 300
        }
        q.advance_to(45);
        assert_eq!(q.now(), 45);
        q.push(255, ev(100)); // small wheel, tick 300
        q.push(256, ev(101)); // large wheel, tick 301
        q.push(5_000, ev(102)); // far beyond the preview
        assert_eq!(q.pop_before(u64::MAX).map(|(t, e)| (t, e.data)), Some((300, 1)));
        let ahead: Vec<u32> = (0..big as usize + 5).map_while(|k| q.peek_ahead(k).map(|e| e.data)).collect();
        let mut want: Vec<u32> = (2..=big).collect();
        want.extend([100, 101]);
        assert_eq!(ahead, want);
        // Handing out is not changed by the preview.
        let rest: Vec<(Tick, u32)> = std::iter::from_fn(|| q.pop_before(u64::MAX).map(|(t, e)| (t, e.data))).collect();
        let mut want: Vec<(Tick, u32)> = (2..=big).map(|d| (300, d)).collect();
        want.extend([(300, 100), (301, 101), (5_045, 102)]);
        assert_eq!(rest, want);
        assert!(q.is_empty());
        // A batch of two events: no preview of the next tick.
        q.push(10, ev(1));
        q.push(10, ev(2));
        q.push(11, ev(3));
        assert_eq!(q.pop_before(u64::MAX).map(|(_, e)| e.data), Some(1));
        assert_eq!(q.peek_ahead(0).map(|e| e.data), Some(2));
        assert_eq!(q.peek_ahead(1).map(|e| e.data), None);
        let rest: Vec<u32> = std::iter::from_fn(|| q.pop_before(u64::MAX).map(|(_, e)| e.data)).collect();
        assert_eq!(rest, vec![2, 3]);
    }

    #[test]
    fn respects_until() {
        let mut q = EventQueue::new();
        q.push(10, ev(1));
        q.push(20, ev(2));
        assert_eq!(q.pop_before(15).map(|x| x.1.data), Some(1));
        assert_eq!(q.pop_before(15), None);
        q.advance_to(15);
        assert_eq!(q.now(), 15);
        assert_eq!(q.pop_before(100).map(|x| (x.0, x.1.data)), Some((20, 2)));
    }

    /// Random schedules from handlers (delays of every range, same-tick
    /// events, jumps over empty stretches, `until` bounds) come out exactly
    /// in (time, order of scheduling).
    #[test]
    fn hands_out_in_time_then_scheduling_order() {
        let mut rng = crate::engine::Rng::new(3, 0);
        use crate::engine::Draws;
        for round in 0..20 {
            let mut q = EventQueue::new();
            let mut reference = std::collections::BTreeMap::new();
            let mut seq = 0u32;
            let mut push = |q: &mut EventQueue, reference: &mut std::collections::BTreeMap<(Tick, u32), ()>, now: Tick, delay: Tick| {
                seq += 1;
                q.push_at(now + delay, ev(seq));
                reference.insert((now + delay, seq), ());
            };
            for _ in 0..50 {
                let d = [0, 1, 63, 255, 256, 257, 1048, 16_383, 16_384, 40_000][rng.below(10) as usize];
                push(&mut q, &mut reference, 0, d);
            }
            let mut until = 0;
            let mut handled = 0;
            while handled < 5_000 && !reference.is_empty() {
                until += 1 + rng.below(3_000) as Tick;
                while let Some((t, e)) = q.pop_before(until) {
                    let (&(rt, rs), _) = reference.iter().next().unwrap();
                    assert_eq!((t, e.data), (rt, rs), "round {round}");
                    reference.remove(&(rt, rs));
                    handled += 1;
                    for _ in 0..rng.below(3) {
                        let d = match rng.below(4) {
                            0 => rng.below(4) as Tick,
                            1 => rng.below(256) as Tick,
                            2 => 200 + rng.below(16_400) as Tick,
                            _ => rng.below(60_000) as Tick,
                        };
                        push(&mut q, &mut reference, t, d);
                    }
                }
                q.advance_to(until);
                assert!(reference.keys().next().is_none_or(|&(t, _)| t >= until));
            }
        }
    }

    /// Batches far larger than a slot's own buffer (every rank of a big
    /// machine acting at once) come out whole and in order, round after
    /// round, and the borrowed buffers come back to the pool.
    #[test]
    fn large_batches_borrow_buffers_and_give_them_back() {
        let mut q = EventQueue::new();
        let mut next = 0u32;
        let mut now = 0;
        for round in 0..6u64 {
            let mut expect = vec![];
            for k in 0..(200 * (round + 1)) as u32 {
                // Three ticks, each in both wheels, interleaved.
                let t = now + [3, 300, 3, 301, 5000, 3][(k % 6) as usize];
                next += 1;
                q.push_at(t, ev(next));
                expect.push((t, next));
            }
            expect.sort();
            let mut got = vec![];
            while let Some((t, e)) = q.pop_before(u64::MAX) {
                got.push((t, e.data));
                now = t;
            }
            assert_eq!(got, expect, "round {round}");
            assert!(!q.big.is_empty(), "no buffer was borrowed");
            assert!(q.slots.iter().chain(&q.near).all(|s| s.capacity() <= SLOT_KEEP), "a slot kept a borrowed buffer");
        }
    }

    #[test]
    fn far_events_interleave_with_near_ones() {
        let mut q = EventQueue::new();
        let mut expect = vec![];
        for i in 0..200u64 {
            let t = (i * 7919) % 20_000;
            q.push_at(t, ev(i as u32));
            expect.push((t, i as u32));
        }
        expect.sort();
        let mut got = vec![];
        while let Some((t, e)) = q.pop_before(u64::MAX) {
            got.push((t, e.data));
        }
        assert_eq!(got, expect);
    }

    #[test]
    fn first_set_goes_round_the_wheel() {
        let mut bits = [0u64; 4];
        assert_eq!(first_set(&bits, 17, 256), usize::MAX);
        bits[0] |= 1 << 10;
        assert_eq!(first_set(&bits, 10, 256), 0);
        assert_eq!(first_set(&bits, 3, 256), 7);
        assert_eq!(first_set(&bits, 3, 7), usize::MAX);
        // From past it: round through the other words to it.
        assert_eq!(first_set(&bits, 11, 256), 255);
        assert_eq!(first_set(&bits, 11, 255), usize::MAX);
        bits[3] |= 1 << 63;
        assert_eq!(first_set(&bits, 11, 256), 255 - 11);
        assert_eq!(first_set(&bits, 11, 200), usize::MAX);
        assert_eq!(first_set(&bits, 0, 256), 10);
    }

    proptest::proptest! {
        /// Whatever is scheduled when - the same tick, within either wheel,
        /// far ahead - comes out in time order, then the order it was
        /// scheduled in, in windows of any length, and `peek_time` is
        /// always the next one's time (before and after the window's end).
        #[test]
        fn hands_out_what_a_sorted_list_would(
            steps in proptest::collection::vec((0u64..4, 0u64..40_000, 1u64..3_000), 1..200),
        ) {
            let mut q = EventQueue::new();
            let mut pending: Vec<(Tick, u32)> = Vec::new();
            let mut got = Vec::new();
            let mut want = Vec::new();
            let mut id = 0u32;
            let mut until = 0;
            for (kind, delay, window) in steps {
                // Schedule a few events around now: near, in the large
                // wheel, far ones.
                let delay = match kind { 0 => delay % 4, 1 => delay % NEAR as u64, 2 => delay % WHEEL as u64, _ => delay * 7 };
                for k in 0..3 {
                    let t = q.now() + delay + k * (delay / 3);
                    q.push_at(t, ev(id));
                    pending.push((t, id));
                    id += 1;
                }
                pending.sort();
                proptest::prop_assert_eq!(q.peek_time(), pending.first().map(|p| p.0));
                until += window;
                while let Some((t, e)) = q.pop_before(until) {
                    got.push((t, e.data));
                }
                let n = pending.partition_point(|p| p.0 < until);
                want.extend(pending.drain(..n));
                proptest::prop_assert_eq!(&got, &want);
                // As a window's loop does: time to the window's end, then
                // the next one's start asked again.
                proptest::prop_assert_eq!(q.peek_time(), pending.first().map(|p| p.0));
                q.advance_to(until);
                proptest::prop_assert_eq!(q.peek_time(), pending.first().map(|p| p.0));
            }
        }
    }
}
