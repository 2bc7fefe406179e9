//! Rank mapping: MPI_COMM_WORLD rank -> task slot (x, y, z, t).
//!
//! A mapping is named by a permutation of the letters X, Y, Z, T (the first
//! letter varies fastest; the default XYZT fills every node's first task
//! before any second task), or given as a mapfile: one `x y z t` line per
//! rank in rank order, blank lines and `#` comments allowed.

use super::Shape;
use thiserror::Error;

/// A task slot: node coordinates and task index within the node.
pub type Slot = [u32; 4];

/// Errors of a rank mapping.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum MappingError {
    #[error("mapping `{0}`: not a permutation of the letters X, Y, Z, T (e.g. XYZT, TXYZ) and no such mapfile")]
    BadName(String),
    #[error("{file}:{line}: {message}")]
    File { file: String, line: usize, message: String },
    #[error("{file}: {message}")]
    FileCount { file: String, message: String },
    #[error("{0} ranks do not fit: the partition has {1} task slots ({2} live nodes x {3} tasks per node)")]
    TooMany(u32, u32, u32, u32),
    #[error("mapfile: rank {0} is placed on slot {} {} {} {}, a dead node (torus.dead_nodes)", .1[0], .1[1], .1[2], .1[3])]
    DeadNode(u32, Slot),
}

/// How ranks are placed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// Letter order, fastest first, as indices 0=X 1=Y 2=Z 3=T.
    Order([u8; 4]),
    /// One slot per rank.
    Slots(Vec<Slot>),
}

impl Default for Mapping {
    fn default() -> Self {
        Mapping::Order([0, 1, 2, 3])
    }
}

impl Mapping {
    /// Parses a permutation name such as `XYZT` or `TXYZ` (case-insensitive).
    pub fn order(name: &str) -> Result<Mapping, MappingError> {
        let up = name.trim().to_ascii_uppercase();
        let mut order = [0u8; 4];
        let letters: Vec<char> = up.chars().collect();
        if letters.len() != 4 {
            return Err(MappingError::BadName(name.into()));
        }
        for (i, ch) in letters.iter().enumerate() {
            order[i] = match ch {
                'X' => 0,
                'Y' => 1,
                'Z' => 2,
                'T' => 3,
                _ => return Err(MappingError::BadName(name.into())),
            };
        }
        let mut seen = [false; 4];
        for &o in &order {
            if std::mem::replace(&mut seen[o as usize], true) {
                return Err(MappingError::BadName(name.into()));
            }
        }
        Ok(Mapping::Order(order))
    }

    /// Whether `name` looks like a permutation name (otherwise a file).
    pub fn is_order_name(name: &str) -> bool {
        Mapping::order(name).is_ok()
    }

    /// Parses the text of a mapfile for `nranks` ranks (None: as many as it
    /// has lines); every error names the file and line.
    pub fn mapfile(text: &str, file: &str, shape: &Shape, tasks: u32, nranks: Option<u32>) -> Result<Mapping, MappingError> {
        let ferr = |line: usize, message: String| MappingError::File { file: file.into(), line, message };
        let mut slots: Vec<Slot> = Vec::new();
        let mut owner = std::collections::HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let body = raw.split('#').next().unwrap_or("").trim();
            if body.is_empty() {
                continue;
            }
            let fields: Vec<&str> = body.split_whitespace().collect();
            if fields.len() != 4 {
                return Err(ferr(line, format!("`{body}`: expected four integers `x y z t`, found {} fields", fields.len())));
            }
            let mut s = [0u32; 4];
            for (k, f) in fields.iter().enumerate() {
                s[k] = f.parse().map_err(|_| ferr(line, format!("`{f}` is not a non-negative integer (expected `x y z t`)")))?;
            }
            for (k, name) in ["x", "y", "z"].iter().enumerate() {
                if s[k] >= shape.dims[k] {
                    return Err(ferr(line, format!("{name} = {} is outside the shape {}x{}x{} (allowed 0..{})", s[k], shape.dims[0], shape.dims[1], shape.dims[2], shape.dims[k] - 1)));
                }
            }
            if s[3] >= tasks {
                return Err(ferr(line, format!("t = {} is beyond the {tasks} task(s) per node of this node mode (allowed 0..{})", s[3], tasks - 1)));
            }
            let rank = slots.len();
            if let Some(prev) = owner.insert(s, rank) {
                return Err(ferr(line, format!("slot {} {} {} {} is already taken by rank {prev}", s[0], s[1], s[2], s[3])));
            }
            slots.push(s);
        }
        if slots.is_empty() {
            return Err(MappingError::FileCount { file: file.into(), message: "lists no ranks (one `x y z t` line per rank is needed)".into() });
        }
        if let Some(n) = nranks.filter(|&n| slots.len() as u32 != n) {
            return Err(MappingError::FileCount { file: file.into(), message: format!("has {} rank lines, but the run has {n} ranks (one `x y z t` line per rank is needed)", slots.len()) });
        }
        Ok(Mapping::Slots(slots))
    }

    /// The slot of every rank `0..nranks`, on the live nodes: an order
    /// passes over the slots of dead nodes, a mapfile may not use them.
    pub fn slots(&self, shape: &Shape, tasks: u32, nranks: u32, dead: &[[u32; 3]]) -> Result<Vec<Slot>, MappingError> {
        let live = shape.nodes() - dead.len() as u32;
        let total = live * tasks;
        if nranks > total {
            return Err(MappingError::TooMany(nranks, total, live, tasks));
        }
        let on_dead = |s: &Slot| dead.contains(&[s[0], s[1], s[2]]);
        match self {
            Mapping::Slots(s) if s.len() as u32 != nranks => Err(MappingError::FileCount {
                file: "mapfile".into(),
                message: format!("has {} rank lines, but the run has {nranks} ranks", s.len()),
            }),
            Mapping::Slots(s) => match s.iter().position(on_dead) {
                Some(r) => Err(MappingError::DeadNode(r as u32, s[r])),
                None => Ok(s.clone()),
            },
            Mapping::Order(order) => {
                let size = [shape.dims[0], shape.dims[1], shape.dims[2], tasks];
                Ok((0..shape.nodes() * tasks)
                    .map(|r| {
                        let mut rest = r;
                        let mut slot = [0u32; 4];
                        for &o in order {
                            slot[o as usize] = rest % size[o as usize];
                            rest /= size[o as usize];
                        }
                        slot
                    })
                    .filter(|s| dead.is_empty() || !on_dead(s))
                    .take(nranks as usize)
                    .collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_place_first_letter_fastest() {
        let shape = Shape::torus(2, 2, 1);
        let xyzt = Mapping::order("XYZT").unwrap().slots(&shape, 2, 8, &[]).unwrap();
        assert_eq!(xyzt[1], [1, 0, 0, 0]);
        assert_eq!(xyzt[4], [0, 0, 0, 1]);
        let txyz = Mapping::order("txyz").unwrap().slots(&shape, 2, 8, &[]).unwrap();
        assert_eq!(txyz[1], [0, 0, 0, 1]);
        assert_eq!(txyz[2], [1, 0, 0, 0]);
        assert!(Mapping::order("XYZ").is_err());
        assert!(Mapping::order("XXZT").is_err());
        assert!(matches!(Mapping::order("XYZT").unwrap().slots(&shape, 1, 5, &[]), Err(MappingError::TooMany(5, 4, 4, 1))));
        // Dead nodes: an order passes over their slots, a mapfile may not use them.
        let live = Mapping::order("XYZT").unwrap().slots(&shape, 1, 3, &[[1, 0, 0]]).unwrap();
        assert_eq!(live, vec![[0, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0]]);
        assert!(matches!(Mapping::order("XYZT").unwrap().slots(&shape, 1, 4, &[[1, 0, 0]]), Err(MappingError::TooMany(4, 3, 3, 1))));
        let file = Mapping::Slots(vec![[0, 0, 0, 0], [1, 0, 0, 0]]);
        assert!(file.slots(&shape, 1, 2, &[[1, 0, 0]]).unwrap_err().to_string().contains("rank 1 is placed on slot 1 0 0 0, a dead node"));
    }

    #[test]
    fn mapfile_errors_name_the_line() {
        let shape = Shape::torus(2, 2, 2);
        let ok = Mapping::mapfile("# comment\n0 0 0 0\n\n1 0 0 0 # second\n", "m.txt", &shape, 1, Some(2)).unwrap();
        assert_eq!(ok, Mapping::Slots(vec![[0, 0, 0, 0], [1, 0, 0, 0]]));
        let e = |t: &str, n| Mapping::mapfile(t, "m.txt", &shape, 1, Some(n)).unwrap_err().to_string();
        assert!(e("0 0 0 0\n0 0 0 0\n", 2).starts_with("m.txt:2: slot 0 0 0 0 is already taken by rank 0"));
        assert!(e("0 0 0 0\n2 0 0 0\n", 2).contains("m.txt:2: x = 2 is outside"));
        assert!(e("0 0 0 1\n", 1).contains("m.txt:1: t = 1 is beyond"));
        assert!(e("0 a 0 0\n", 1).contains("m.txt:1: `a` is not"));
        assert!(e("0 0 0\n", 1).contains("found 3 fields"));
        assert!(e("0 0 0 0\n", 2).contains("has 1 rank lines, but the run has 2 ranks"));
    }
}
