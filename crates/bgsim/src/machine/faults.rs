//! Dead nodes and dead links of a partition, as the machine file and `--set`
//! give them (`torus.dead_nodes = ["x,y,z", ...]`, `torus.dead_links =
//! ["x,y,z:x+", ...]`), checked against the partition's shape.
//!
//! A dead link is dead both ways (a cable or its link chip), named from
//! either end. A dead node sends, receives and forwards nothing; ranks are
//! placed on the live nodes. How packets route around them is the torus's
//! business (`torus::faults`).

use super::{MachineError, Shape};

/// Direction names, in the torus's numbering (0 x+, 1 x-, ... 5 z-).
const DIRS: [&str; 6] = ["x+", "x-", "y+", "y-", "z+", "z-"];

/// The dead nodes and links of a partition, by coordinates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Dead nodes, in the order given, without repeats.
    pub nodes: Vec<[u32; 3]>,
    /// Dead links: a node and the direction of the link leaving it, as
    /// given (each link once, from the end it was named from).
    pub links: Vec<([u32; 3], usize)>,
}

impl Faults {
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.links.is_empty()
    }

    /// Reads `dead_nodes` and `dead_links` for a partition of `shape`;
    /// errors name the key, the entry and what is allowed.
    pub fn parse(dead_nodes: &[String], dead_links: &[String], shape: &Shape, src: &str) -> Result<Faults, MachineError> {
        let bad = |key: &str, v: &str, allowed: String| MachineError::Invalid {
            source_name: src.into(),
            key: key.into(),
            value: format!("{v:?}"),
            allowed,
        };
        let dims = shape.dims;
        let shape_s = format!("{}x{}x{}", dims[0], dims[1], dims[2]);
        let coords = |key: &str, v: &str, text: &str| -> Result<[u32; 3], MachineError> {
            let parts: Vec<&str> = text.split(',').map(str::trim).collect();
            let form = if key.ends_with("links") { "`x,y,z:dir` (for example \"0,1,2:x+\")" } else { "`x,y,z` (for example \"0,1,2\")" };
            if parts.len() != 3 {
                return Err(bad(key, v, format!("node coordinates {form}")));
            }
            let mut c = [0u32; 3];
            for k in 0..3 {
                c[k] = parts[k].parse().map_err(|_| bad(key, v, format!("node coordinates {form}, each a non-negative integer")))?;
                if c[k] >= dims[k] {
                    return Err(bad(key, v, format!("a node of the partition {shape_s}: {} from 0 to {}", ["x", "y", "z"][k], dims[k] - 1)));
                }
            }
            Ok(c)
        };
        let mut f = Faults::default();
        for v in dead_nodes {
            let c = coords("torus.dead_nodes", v, v)?;
            if !f.nodes.contains(&c) {
                f.nodes.push(c);
            }
        }
        if f.nodes.len() as u32 >= shape.nodes() {
            return Err(bad("torus.dead_nodes", &dead_nodes.join(" "), format!("at most {} of the partition's {} nodes (one must live)", shape.nodes() - 1, shape.nodes())));
        }
        for v in dead_links {
            let key = "torus.dead_links";
            let Some((at, dir)) = v.rsplit_once(':') else {
                return Err(bad(key, v, "a link `x,y,z:dir`, dir one of x+ x- y+ y- z+ z- (for example \"0,1,2:x+\")".into()));
            };
            let c = coords(key, v, at)?;
            let d = DIRS
                .iter()
                .position(|&n| n == dir.trim())
                .ok_or_else(|| bad(key, v, format!("a direction after `:`, one of {}", DIRS.join(" "))))?;
            let k = d / 2;
            let minus = d % 2 == 1;
            let has = dims[k] > 1 && (shape.torus[k] || if minus { c[k] > 0 } else { c[k] + 1 < dims[k] });
            if !has {
                return Err(bad(key, v, format!("a link of the partition {shape_s}{}: node {} has no link {dir}",
                    if shape.torus[k] { "" } else { " (a mesh in this dimension)" }, at.trim())));
            }
            // The same link named from its other end counts once.
            let mut other = c;
            other[k] = if minus { (c[k] + dims[k] - 1) % dims[k] } else { (c[k] + 1) % dims[k] };
            if !f.links.contains(&(c, d)) && !f.links.contains(&(other, d ^ 1)) {
                f.links.push((c, d));
            }
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(nodes: &[&str], links: &[&str], shape: Shape) -> Result<Faults, String> {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Faults::parse(&s(nodes), &s(links), &shape, "t.toml").map_err(|e| e.to_string())
    }

    #[test]
    fn links_are_named_from_either_end_once() {
        let f = parse(&["1,1,1", "1,1,1"], &["3,0,0:x+", "0,0,0:x-", "0, 0, 0:y-"], Shape::torus(4, 4, 2)).unwrap();
        assert_eq!(f.nodes, vec![[1, 1, 1]]);
        assert_eq!(f.links, vec![([3, 0, 0], 0), ([0, 0, 0], 3)]);
    }

    #[test]
    fn bad_entries_name_the_key_the_entry_and_what_is_allowed() {
        let e = parse(&["4,0,0"], &[], Shape::torus(4, 4, 2)).unwrap_err();
        assert!(e.contains("torus.dead_nodes") && e.contains("\"4,0,0\"") && e.contains("x from 0 to 3"), "{e}");
        let e = parse(&["1,2"], &[], Shape::torus(4, 4, 2)).unwrap_err();
        assert!(e.contains("`x,y,z`"), "{e}");
        let e = parse(&[], &["0,0,0"], Shape::torus(4, 4, 2)).unwrap_err();
        assert!(e.contains("torus.dead_links") && e.contains("x+ x- y+"), "{e}");
        let e = parse(&[], &["0,0,0:w+"], Shape::torus(4, 4, 2)).unwrap_err();
        assert!(e.contains("a direction after"), "{e}");
        let e = parse(&[], &["0,0,0:x-"], Shape::mesh(4, 4, 2)).unwrap_err();
        assert!(e.contains("has no link x-") && e.contains("mesh"), "{e}");
        let e = parse(&[], &["0,0,0:z+"], Shape::torus(4, 4, 1)).unwrap_err();
        assert!(e.contains("has no link z+"), "{e}");
        let e = parse(&["0,0,0", "1,0,0"], &[], Shape::torus(2, 1, 1)).unwrap_err();
        assert!(e.contains("one must live"), "{e}");
    }
}
