//! Deadlock detection and invariants: token conservation when quiescent, a
//! head that could move but was left, and cycles of escape moves waiting on
//! each other.

use super::*;

impl Torus {

    /// Checks that every sender's view of downstream tokens plus what the
    /// downstream VC holds plus what is in flight adds up to the VC size, and
    /// that no VC holds more than its size. Only exact when no packet or
    /// token is in flight (e.g. after the network drained).
    pub fn check_tokens_quiescent(&self) -> Result<(), TorusError> {
        for n in 0..self.routers.len() as u32 {
            for d in 0..NDIR {
                if !self.geo.has_link(n, d) {
                    continue;
                }
                let nb = self.geo.neighbor(n, d);
                for v in 0..self.p.nvc {
                    let t = self.routers[n as usize].tokens(d, v);
                    let used = self.routers[nb as usize].recv[d].vc[v].used;
                    if t + used != self.p.vc_tokens {
                        return Err(TorusError::Tokens { node: n, dir: DIR_NAMES[d], vc: v, tokens: t, used, size: self.p.vc_tokens });
                    }
                }
            }
        }
        Ok(())
    }

    /// Arbitration is work-conserving: after an event at node `n` has been
    /// handled, no head there could start now - a VC head at its
    /// destination with the path to the reception FIFOs free and room in
    /// its FIFO, or a head whose preferred move is on a free sender (and,
    /// for a VC head, a transfer path left). Returns the first such head.
    /// Evaluates the moves on a copy of the router, so the run is unchanged.
    pub fn movable_head(&self, n: u32) -> Option<String> {
        let (p, pool) = (&self.p, &self.pool);
        let mut r = self.routers[n as usize].clone();
        let free = r.free();
        for port in 0..NDIR {
            for v in 0..p.nvc {
                let vc = &r.recv[port].vc[v];
                if vc.q.is_empty() || vc.busy {
                    continue;
                }
                let h = vc.head;
                let prod = r.hprod[port * 8 + v];
                let movable = if prod == 0 {
                    delivery_room(p, &r, pool, port, v).is_some() && !r.rx_busy(port)
                } else if r.paths_left[port] == 0 || (h.is(flags::DEPOSIT) && !deposit_ok(p, &r, port, h)) {
                    false
                } else {
                    matches!(choose_move(p, &self.geo, &mut r, n, h, v as u8, prod, free), Choice::Move(d, ..) if free & (1 << d) != 0)
                };
                if movable {
                    return Some(format!("node {n}: the head of receiver {} VC {v} could move", DIR_NAMES[port]));
                }
            }
        }
        for f in 0..p.ninj + p.nhp_inj {
            let fifo = &r.inj[f];
            if fifo.q.is_empty() || fifo.busy {
                continue;
            }
            let (h, vc, prod) = (fifo.head, fifo.vc, r.inj_hprod[f]);
            if matches!(choose_move(p, &self.geo, &mut r, n, h, vc, prod, free), Choice::Move(d, ..) if free & (1 << d) != 0) {
                return Some(format!("node {n}: the head of injection FIFO {f} could move"));
            }
        }
        None
    }

    /// Largest occupancy of any VC right now, in tokens (never above the VC size).
    pub fn max_vc_used(&self) -> u16 {
        self.routers.iter().flat_map(|r| r.recv.iter().flat_map(|rv| rv.vc.iter().map(|v| v.used))).max().unwrap_or(0)
    }

    /// A sender's state: (busy until, packet in transfer or NIL, tokens per VC).
    pub fn sender_state(&self, n: u32, d: usize) -> (Tick, u32, Vec<u16>) {
        let s = &self.routers[n as usize].send[d];
        let r = &self.routers[n as usize];
        (s.busy_until, s.xfer, (0..self.p.nvc).map(|v| r.tokens(d, v)).collect())
    }

    /// After the network stopped moving: follows the escape moves that the
    /// waiting VC heads are blocked on until they close cycles of waiting
    /// heads. Returns, for the cycle that closed first, (the time it closed =
    /// the latest arrival among its packets, the number of VCs in it), or
    /// None when no cycle exists.
    pub fn deadlock_cycle(&self) -> Option<(Tick, usize)> {
        let nvc = self.p.nvc;
        let idx = |n: u32, port: usize, v: usize| (n as usize * NDIR + port) * nvc + v;
        let total = self.routers.len() * NDIR * nvc;
        let mut state = vec![0u32; total]; // 0 unvisited, else walk id
        let mut walk = 0u32;
        let mut best: Option<(Tick, usize)> = None;
        for n in 0..self.routers.len() as u32 {
            for port in 0..NDIR {
                for v in 0..nvc {
                    let mut cur = (n, port, v);
                    walk += 1;
                    let mut path: Vec<usize> = Vec::new();
                    loop {
                        let (cn, cp, cv) = cur;
                        let i = idx(cn, cp, cv);
                        let vc = &self.routers[cn as usize].recv[cp].vc[cv];
                        if vc.busy || vc.q.head == NIL {
                            break;
                        }
                        if state[i] == walk {
                            // Closed a cycle: the part of the path from i on.
                            let start = path.iter().position(|&x| x == i).unwrap_or(0);
                            let members = &path[start..];
                            let mut latest = 0;
                            for &m in members {
                                let (mn, rest) = (m / (NDIR * nvc), m % (NDIR * nvc));
                                let (mp, mv) = (rest / nvc, rest % nvc);
                                let h = self.routers[mn].recv[mp].vc[mv].q.head;
                                latest = latest.max(self.pool.get(h).arrived);
                            }
                            // Several cycles may exist by now: keep the one that closed first.
                            if best.is_none_or(|(t, _)| latest < t) {
                                best = Some((latest, members.len()));
                            }
                            break;
                        }
                        if state[i] != 0 {
                            break;
                        }
                        state[i] = walk;
                        path.push(i);
                        let pk = self.pool.get(vc.q.head);
                        if pk.prod == 0 {
                            break;
                        }
                        let (d, tv) = escape_move(&self.p, &self.geo, self.geo.coords(cn), Head::of(pk), pk.prod);
                        cur = (self.geo.neighbor(cn, d), d, tv);
                    }
                }
            }
        }
        best
    }
}
