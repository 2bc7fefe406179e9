//! The core's placement and routing, for the Python tools that plan a
//! mapping (`bgsim.mapping`, `bgsim map`): the slots a mapping order gives
//! and the deterministic route between two nodes. The Python package calls
//! these instead of keeping copies of the rules.

use crate::errors::to_py;
use bgsim::machine::{Mapping, Shape};
use bgsim::torus::Geometry;
use pyo3::prelude::*;

/// The slot (x, y, z, t) of every rank 0..nranks under the mapping order
/// `order` (a permutation of X, Y, Z, T, the first letter fastest) on a
/// partition of `shape` with `tasks` tasks a node, passing over `dead`
/// nodes - as a run places its ranks.
#[pyfunction]
#[pyo3(signature = (shape, tasks, nranks, order="XYZT", dead=vec![]))]
pub(crate) fn order_slots(shape: [u32; 3], tasks: u32, nranks: u32, order: &str, dead: Vec<[u32; 3]>) -> PyResult<Vec<[u32; 4]>> {
    let mapping = Mapping::order(order).map_err(to_py)?;
    mapping.slots(&Shape::torus(shape[0], shape[1], shape[2]), tasks, nranks, &dead).map_err(to_py)
}

/// The links of the deterministic route from node `src` to node `dst`
/// (node = x + X (y + Y z)) on a partition of `shape` (`torus`: which
/// dimensions wrap): [(node the hop leaves, direction)], directions
/// x+ x- y+ y- z+ z- as 0..5, dimension order x, y, z, the shorter way
/// round with the model's tie rule.
#[pyfunction]
pub(crate) fn deterministic_route(shape: [u32; 3], torus: [bool; 3], src: u32, dst: u32) -> Vec<(u32, u8)> {
    let geo = Geometry::new(&Shape { dims: shape, torus });
    let (a, b) = (geo.coords32(src), geo.coords32(dst));
    let mut node = src;
    let mut links = Vec::new();
    for k in 0..3 {
        let o = geo.offset(k, a[k], b[k]);
        let dir = 2 * k + (o < 0) as usize;
        for _ in 0..o.unsigned_abs() {
            links.push((node, dir as u8));
            node = geo.neighbor(node, dir);
        }
    }
    links
}
