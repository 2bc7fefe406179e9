//! MPI's matching order without scanning: a rank's posted receives and its
//! unexpected messages, each kept in the order they came. A message matches
//! the oldest posted receive for its context whose source is its own or
//! any and whose tag is its own or any; a receive takes the oldest
//! unexpected message for its context from its source (from any, for
//! `ANY`) with its tag (any, for `ANY`).
//!
//! A few entries are one short list, searched in order (a ping-pong's one
//! receive costs no more than it did). Past `SMALL` entries they go into
//! linked lists per (context, source), in one array of entries with a free
//! list (no allocation per list: a post-all exchange makes one list per
//! source), and a sequence number per entry decides between lists: a
//! message or receive then looks at one or two lists (all of its context's
//! for an `ANY` source), where one list of everything made a post-all
//! exchange on n ranks cost each message a walk over up to n posted
//! receives. Only the simulator's own time changes: matching costs
//! the simulated cores what it did.

use super::ANY;
use rustc_hash::FxHashMap;

/// No entry (end of a linked list).
const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Order of arrival (compared with wrap-around: only entries present
    /// together are compared).
    seq: u32,
    id: u32,
    tag: i32,
    /// The next entry of its list (`Lists`), or of the free list.
    next: u32,
}

/// An entry of the short list (its place there is its order).
#[derive(Clone, Copy, Debug)]
struct Small {
    id: u32,
    ctx: u32,
    src: i32,
    tag: i32,
}

/// Entries in linked lists per (context, source).
#[derive(Debug)]
struct Lists {
    /// First and last entry of each list.
    ends: FxHashMap<(u32, i32), (u32, u32)>,
    slab: Vec<Entry>,
    free: u32,
    len: u32,
    /// Entries whose source is `ANY` (a message looks up their list only
    /// if there are any).
    any: u32,
}

impl Lists {
    /// Appends entry `e` to list `key` (context, source).
    fn push(&mut self, key: (u32, i32), e: Entry) {
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.slab[i as usize].next;
            self.slab[i as usize] = e;
            i
        } else {
            self.slab.push(e);
            self.slab.len() as u32 - 1
        };
        match self.ends.get_mut(&key) {
            Some(ends) => {
                self.slab[ends.1 as usize].next = i;
                ends.1 = i;
            }
            None => {
                self.ends.insert(key, (i, i));
            }
        }
        self.len += 1;
        self.any += (key.1 == ANY) as u32;
    }

    /// The first entry of list `key` that `ok` accepts: its sequence
    /// number and place.
    fn first(&self, key: (u32, i32), ok: impl Fn(&Entry) -> bool) -> Option<(u32, At)> {
        let (mut i, mut prev) = (self.ends.get(&key)?.0, NIL);
        while i != NIL {
            let e = &self.slab[i as usize];
            if ok(e) {
                return Some((e.seq, At::List { key, i, prev }));
            }
            (prev, i) = (i, e.next);
        }
        None
    }

    fn take(&mut self, key: (u32, i32), i: u32, prev: u32) -> u32 {
        let e = self.slab[i as usize];
        let ends = self.ends.get_mut(&key).expect("matching list");
        if prev == NIL {
            ends.0 = e.next;
        } else {
            self.slab[prev as usize].next = e.next;
        }
        if ends.1 == i {
            ends.1 = prev;
        }
        if ends.0 == NIL {
            self.ends.remove(&key);
        }
        self.slab[i as usize].next = self.free;
        self.free = i;
        self.len -= 1;
        self.any -= (key.1 == ANY) as u32;
        e.id
    }
}

/// Posted receives (`src` may be `ANY`) or unexpected messages of one rank.
/// Its entries are all in `small` or all in `lists`.
#[derive(Debug, Default)]
pub(super) struct Queue {
    small: Vec<Small>,
    lists: Option<Box<Lists>>,
    next: u32,
}

/// Entries a queue keeps in one short list.
const SMALL: usize = 8;

/// Where an entry is: its place in the short list, or its list, its index
/// and the entry before it in its list.
#[derive(Clone, Copy)]
enum At {
    Small(usize),
    List { key: (u32, i32), i: u32, prev: u32 },
}

/// Whether sequence number `a` came before `b`.
fn older(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// Where the oldest of the entries found in several lists is (each found
/// with its sequence number).
fn oldest(found: impl IntoIterator<Item = (u32, At)>) -> Option<At> {
    found.into_iter().reduce(|a, b| if older(b.0, a.0) { b } else { a }).map(|x| x.1)
}

impl Queue {
    pub fn push(&mut self, ctx: u32, src: i32, tag: i32, id: u32) {
        let e = Small { id, ctx, src, tag };
        if self.lists.is_none() && self.small.len() < SMALL {
            self.small.push(e);
            return;
        }
        let lists = self.lists.get_or_insert_with(|| {
            Box::new(Lists { ends: FxHashMap::default(), slab: Vec::new(), free: NIL, len: 0, any: 0 })
        });
        // Numbered as they go into the lists, the short list's first.
        for e in self.small.drain(..).chain([e]) {
            lists.push((e.ctx, e.src), Entry { seq: self.next, id: e.id, tag: e.tag, next: NIL });
            self.next = self.next.wrapping_add(1);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.small.is_empty() && self.lists.is_none()
    }

    /// The first entry `ok` accepts, in the short list.
    fn first_small(&self, ok: impl Fn(&Small) -> bool) -> Option<At> {
        self.small.iter().position(ok).map(At::Small)
    }

    fn get(&self, at: At) -> u32 {
        match (at, &self.lists) {
            (At::Small(i), _) => self.small[i].id,
            (At::List { i, .. }, Some(l)) => l.slab[i as usize].id,
            (At::List { .. }, None) => unreachable!("a list entry without lists"),
        }
    }

    fn take(&mut self, at: At) -> u32 {
        match (at, &mut self.lists) {
            (At::Small(i), _) => self.small.remove(i).id,
            (At::List { key, i, prev }, Some(l)) => {
                let id = l.take(key, i, prev);
                if l.len == 0 {
                    // Back to the short list; the array goes.
                    self.lists = None;
                }
                id
            }
            (At::List { .. }, None) => unreachable!("a list entry without lists"),
        }
    }

    /// Posted receives: takes the oldest that a message from `src` with
    /// `tag` on `ctx` matches.
    pub fn take_receive(&mut self, ctx: u32, src: u32, tag: i32) -> Option<u32> {
        let ok = |t: i32| t == ANY || t == tag;
        let at = match &self.lists {
            None => self.first_small(|e| e.ctx == ctx && (e.src == ANY || e.src == src as i32) && ok(e.tag)),
            Some(l) => {
                let named = l.first((ctx, src as i32), |e| ok(e.tag));
                let any = if l.any > 0 { l.first((ctx, ANY), |e| ok(e.tag)) } else { None };
                oldest(named.into_iter().chain(any))
            }
        };
        at.map(|at| self.take(at))
    }

    /// Unexpected messages: where the oldest is that a receive for `src`
    /// (or `ANY`) with `tag` (or `ANY`) on `ctx` matches.
    fn find_message(&self, ctx: u32, src: i32, tag: i32) -> Option<At> {
        let ok = |t: i32| tag == ANY || t == tag;
        let Some(l) = &self.lists else {
            return self.first_small(|e| e.ctx == ctx && (src == ANY || e.src == src) && ok(e.tag));
        };
        if src != ANY {
            return l.first((ctx, src), |e| ok(e.tag)).map(|x| x.1);
        }
        oldest(l.ends.keys().filter(|k| k.0 == ctx).filter_map(|&k| l.first(k, |e| ok(e.tag))))
    }

    /// The oldest unexpected message such a receive matches, left in place
    /// (a probe).
    pub fn peek_message(&self, ctx: u32, src: i32, tag: i32) -> Option<u32> {
        self.find_message(ctx, src, tag).map(|at| self.get(at))
    }

    /// The same, taken out (a receive).
    pub fn take_message(&mut self, ctx: u32, src: i32, tag: i32) -> Option<u32> {
        self.find_message(ctx, src, tag).map(|at| self.take(at))
    }

    /// Removes entry `id` (of context `ctx`, source `src`); false if it is
    /// not there.
    pub fn remove(&mut self, ctx: u32, src: i32, id: u32) -> bool {
        let at = match &self.lists {
            None => self.first_small(|e| e.id == id),
            Some(l) => l.first((ctx, src), |e| e.id == id).map(|x| x.1),
        };
        at.map(|at| self.take(at)).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Fills a queue past its short list, so that the lists are tested too.
    fn long(q: &mut Queue) {
        for i in 0..SMALL as u32 {
            q.push(9, 0, 0, 1000 + i);
        }
    }

    #[test]
    fn a_message_takes_the_oldest_matching_receive_across_lists() {
        for fill in [false, true] {
            let mut q = Queue::default();
            if fill {
                long(&mut q);
            }
            q.push(0, 3, 7, 100); // from 3, tag 7
            q.push(0, ANY, 7, 101); // any source, tag 7
            q.push(0, 3, ANY, 102); // from 3, any tag
            q.push(1, 3, 7, 103); // another context
            assert_eq!(q.take_receive(0, 5, 7), Some(101), "only the any-source receive fits rank 5");
            assert_eq!(q.take_receive(0, 3, 9), Some(102), "tag 9 skips the tag-7 receive");
            assert_eq!(q.take_receive(0, 3, 7), Some(100));
            assert_eq!(q.take_receive(0, 3, 7), None, "context 0 is empty");
            assert_eq!(q.take_receive(1, 3, 7), Some(103));
            if fill {
                for i in 0..SMALL as u32 {
                    assert_eq!(q.take_receive(9, 0, 0), Some(1000 + i));
                }
            }
            assert!(q.is_empty());
        }
    }

    #[test]
    fn an_older_any_source_receive_comes_before_a_named_one() {
        let mut q = Queue::default();
        long(&mut q);
        q.push(0, ANY, ANY, 1);
        q.push(0, 4, 2, 2);
        assert_eq!(q.take_receive(0, 4, 2), Some(1));
        assert_eq!(q.take_receive(0, 4, 2), Some(2));
    }

    #[test]
    fn a_receive_takes_the_oldest_matching_message() {
        for fill in [false, true] {
            let mut q = Queue::default();
            if fill {
                long(&mut q);
            }
            q.push(0, 2, 5, 10); // unexpected: from 2, tag 5
            q.push(0, 1, 6, 11);
            q.push(0, 2, 6, 12);
            q.push(0, 1, 5, 13);
            assert_eq!(q.peek_message(0, ANY, 6), Some(11), "probe leaves it");
            assert_eq!(q.take_message(0, ANY, 6), Some(11));
            assert_eq!(q.take_message(0, 2, ANY), Some(10));
            assert_eq!(q.take_message(0, ANY, ANY), Some(12));
            assert_eq!(q.take_message(1, ANY, ANY), None, "no context-1 messages");
            assert!(q.remove(0, 1, 13));
            assert!(!q.remove(0, 1, 13));
        }
    }

    #[test]
    fn the_order_holds_across_the_sequence_numbers_wrapping_around() {
        for take_messages in [false, true] {
            let mut q = Queue { next: u32::MAX - SMALL as u32, ..Queue::default() };
            long(&mut q); // numbered MAX - 8 to MAX - 1
            q.push(0, 4, 2, 1); // MAX
            q.push(0, ANY, 2, 2); // 0
            if take_messages {
                assert_eq!(q.take_message(0, ANY, 2), Some(1), "numbered before the wrap, so older");
            } else {
                assert_eq!(q.take_receive(0, 4, 2), Some(1), "numbered before the wrap, so older");
            }
            assert_eq!(q.take_receive(0, 4, 2), Some(2));
        }
    }

    /// One list of everything, searched in order: what MPI's order is.
    #[derive(Default)]
    struct Naive(Vec<(u32, i32, i32, u32)>);

    impl Naive {
        fn take(&mut self, f: impl Fn(&(u32, i32, i32, u32)) -> bool) -> Option<u32> {
            self.0.iter().position(f).map(|i| self.0.remove(i).3)
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Push(u32, i32, i32),
        Receive(u32, u32, i32),
        Message(u32, i32, i32, bool),
        Remove(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        let src = prop_oneof![Just(ANY), 0..4i32];
        let tag = prop_oneof![Just(ANY), 0..3i32];
        prop_oneof![
            4 => (0..2u32, src.clone(), tag.clone()).prop_map(|(c, s, t)| Op::Push(c, s, t)),
            2 => (0..2u32, 0..4u32, 0..3i32).prop_map(|(c, s, t)| Op::Receive(c, s, t)),
            2 => (0..2u32, src, tag, any::<bool>()).prop_map(|(c, s, t, p)| Op::Message(c, s, t, p)),
            1 => (0..64usize).prop_map(Op::Remove),
        ]
    }

    proptest! {
        /// Any sequence of posts, matches, probes and cancels gives what
        /// one list searched in order gives, across the short list's limit.
        #[test]
        fn the_queue_matches_as_one_list_in_order(ops in proptest::collection::vec(op(), 1..120)) {
            let (mut q, mut naive, mut id) = (Queue::default(), Naive::default(), 0u32);
            for op in ops {
                match op {
                    Op::Push(c, s, t) => {
                        q.push(c, s, t, id);
                        naive.0.push((c, s, t, id));
                        id += 1;
                    }
                    Op::Receive(c, s, t) => {
                        let want = naive.take(|e| e.0 == c && (e.1 == ANY || e.1 == s as i32) && (e.2 == ANY || e.2 == t));
                        prop_assert_eq!(q.take_receive(c, s, t), want);
                    }
                    Op::Message(c, s, t, peek) => {
                        let f = |e: &(u32, i32, i32, u32)| e.0 == c && (s == ANY || e.1 == s) && (t == ANY || e.2 == t);
                        if peek {
                            prop_assert_eq!(q.peek_message(c, s, t), naive.0.iter().find(|e| f(e)).map(|e| e.3));
                        } else {
                            prop_assert_eq!(q.take_message(c, s, t), naive.take(f));
                        }
                    }
                    Op::Remove(k) => {
                        if let Some(&(c, s, _, i)) = naive.0.get(k % naive.0.len().max(1)) {
                            naive.0.retain(|e| e.3 != i);
                            prop_assert!(q.remove(c, s, i));
                        }
                    }
                }
            }
            prop_assert_eq!(q.is_empty(), naive.0.is_empty());
        }
    }
}
