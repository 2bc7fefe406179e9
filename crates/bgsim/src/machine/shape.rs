//! Partition shapes and node modes.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// A partition shape or mesh that cannot be parsed.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ShapeError {
    #[error("`{0}` is not a shape: expected XxYxZ with three positive integers, e.g. 8x8x8")]
    NotAShape(String),
    #[error("`{shape}`: `{part}` is not a positive integer (expected XxYxZ, e.g. 8x8x8)")]
    NotAnInteger { shape: String, part: String },
    #[error("`{shape}`: dimension {dim} is {value}; every dimension must be at least 1")]
    TooSmall { shape: String, dim: char, value: i64 },
    #[error("`{shape}`: dimension {dim} is {value}; at most 256 nodes per dimension are supported")]
    TooLarge { shape: String, dim: char, value: i64 },
    #[error("mesh dimensions `{mesh}`: `{letter}` is not one of x, y, z")]
    MeshLetter { mesh: String, letter: char },
    #[error("`{shape}` has {nodes} nodes; at most 4,194,304 are supported")]
    TooManyNodes { shape: String, nodes: u64 },
}

/// A name that is not one of an enum's stable names.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("`{value}` is not a {what} (allowed: {allowed})")]
pub struct UnknownName {
    pub what: &'static str,
    pub value: String,
    pub allowed: String,
}

impl UnknownName {
    pub fn new<'a>(what: &'static str, value: &str, allowed: impl IntoIterator<Item = &'a str>) -> Self {
        UnknownName { what, value: value.to_string(), allowed: allowed.into_iter().collect::<Vec<_>>().join(", ") }
    }
}

/// A partition shape X x Y x Z, each dimension a torus (with wrap-around
/// links) or a mesh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    pub dims: [u32; 3],
    pub torus: [bool; 3],
}

impl Shape {
    pub fn torus(x: u32, y: u32, z: u32) -> Self {
        Shape { dims: [x, y, z], torus: [true; 3] }
    }
    pub fn mesh(x: u32, y: u32, z: u32) -> Self {
        Shape { dims: [x, y, z], torus: [false; 3] }
    }
    pub fn nodes(&self) -> u32 {
        self.dims[0] * self.dims[1] * self.dims[2]
    }
    /// Parses `XxYxZ` (e.g. `8x8x8`); every dimension a positive integer.
    pub fn parse(s: &str, mesh: &str) -> Result<Self, ShapeError> {
        let parts: Vec<&str> = s.trim().split(['x', 'X']).collect();
        if parts.len() != 3 {
            return Err(ShapeError::NotAShape(s.to_string()));
        }
        let mut dims = [0u32; 3];
        for (i, p) in parts.iter().enumerate() {
            let v: i64 = p.trim().parse().map_err(|_| ShapeError::NotAnInteger { shape: s.to_string(), part: p.to_string() })?;
            if v < 1 {
                return Err(ShapeError::TooSmall { shape: s.to_string(), dim: ['X', 'Y', 'Z'][i], value: v });
            }
            if v > 256 {
                return Err(ShapeError::TooLarge { shape: s.to_string(), dim: ['X', 'Y', 'Z'][i], value: v });
            }
            dims[i] = v as u32;
        }
        let mut torus = [true; 3];
        for c in mesh.chars() {
            match c.to_ascii_lowercase() {
                'x' => torus[0] = false,
                'y' => torus[1] = false,
                'z' => torus[2] = false,
                ',' | ' ' => {}
                other => return Err(ShapeError::MeshLetter { mesh: mesh.to_string(), letter: other }),
            }
        }
        let n = dims.iter().map(|&d| d as u64).product::<u64>();
        if n > (1 << 22) {
            return Err(ShapeError::TooManyNodes { shape: s.to_string(), nodes: n });
        }
        Ok(Shape { dims, torus })
    }
    /// The mesh letters, e.g. "z".
    pub fn mesh_letters(&self) -> String {
        (0..3).filter(|&d| !self.torus[d]).map(|d| ['x', 'y', 'z'][d]).collect()
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.dims[0], self.dims[1], self.dims[2])?;
        let m = self.mesh_letters();
        if !m.is_empty() {
            write!(f, " (mesh in {m})")?;
        }
        Ok(())
    }
}

/// How many tasks a node runs and what its cores do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum NodeMode {
    /// BG/L: one task; the second core helps with communication.
    Coprocessor,
    /// Virtual node: one task per core; FIFOs and memory split evenly.
    Vn,
    /// BG/L: one task; the second core idles.
    Heater,
    /// BG/P: one task per node.
    Smp,
    /// BG/P: two tasks per node.
    Dual,
}

impl NodeMode {
    pub const ALL: [NodeMode; 5] = [NodeMode::Coprocessor, NodeMode::Vn, NodeMode::Heater, NodeMode::Smp, NodeMode::Dual];
    pub fn name(&self) -> &'static str {
        match self {
            NodeMode::Coprocessor => "coprocessor",
            NodeMode::Vn => "vn",
            NodeMode::Heater => "heater",
            NodeMode::Smp => "smp",
            NodeMode::Dual => "dual",
        }
    }
    /// Tasks per node on a node with `cores` cores.
    pub fn tasks_per_node(&self, cores: u32) -> u32 {
        match self {
            NodeMode::Coprocessor | NodeMode::Heater | NodeMode::Smp => 1,
            NodeMode::Dual => 2,
            NodeMode::Vn => cores,
        }
    }
    /// Cores that run communication work (packet reads and writes).
    pub fn comm_cores(&self, cores: u32) -> u32 {
        match self {
            NodeMode::Heater => 1,
            _ => cores,
        }
    }
}

impl FromStr for NodeMode {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        NodeMode::ALL
            .iter()
            .copied()
            .find(|m| m.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| UnknownName::new("node mode", s, NodeMode::ALL.iter().map(|m| m.name())))
    }
}
