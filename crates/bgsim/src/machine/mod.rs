//! Layer 2: the typed, validated description of a machine.
//!
//! A machine is a preset (`bgl`, later `bgp`) plus overrides from a TOML file
//! (`base = "bgl"` then any keys) and from `key=value` settings (the CLI's
//! `--set`, experiment variants). Everything is checked before a run starts:
//! unknown keys, values out of range and malformed shapes stop with a message
//! naming the key, the value and what is allowed.

mod component;
mod faults;
mod mapping;
mod shape;
mod spec;

pub use component::{Component, NRX, RX_GROUP, RX_GROUPS};
pub use faults::Faults;
pub use mapping::{Mapping, MappingError, Slot};

pub use shape::{NodeMode, Shape, ShapeError, UnknownName};
pub use spec::*;

use thiserror::Error;

/// Errors of the machine description.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum MachineError {
    #[error("{source_name}: {message}")]
    Parse { source_name: String, message: String },
    #[error("{source_name}: key `{key}` = {value}: {allowed}")]
    Invalid { source_name: String, key: String, value: String, allowed: String },
    #[error("unknown machine preset `{0}` (allowed: {})", preset_names().join(", "))]
    UnknownPreset(String),
}

/// The built-in machines: name and TOML (`machines/NAME.toml`, every
/// parameter commented). A preset declares its components by its sections
/// (see [`Component`]). Adding one: its file and its line here.
pub const PRESETS: &[(&str, &str)] = &[
    ("bgl", include_str!("../../../../machines/bgl.toml")),
    ("bgp", include_str!("../../../../machines/bgp.toml")),
];

/// Names of the built-in presets.
pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.0).collect()
}

/// The text of a preset.
pub fn preset_text(name: &str) -> Result<&'static str, MachineError> {
    PRESETS.iter().find(|p| p.0 == name).map(|p| p.1).ok_or_else(|| MachineError::UnknownPreset(name.to_string()))
}

fn parse_err(source_name: &str, message: impl Into<String>) -> MachineError {
    MachineError::Parse { source_name: source_name.to_string(), message: message.into() }
}

/// Deep-merges `over` into `base`; tables merge key by key, anything else replaces.
fn merge(base: &mut toml::Value, over: toml::Value) {
    match (base, over) {
        (toml::Value::Table(b), toml::Value::Table(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

/// Parses a `dotted.key=value` setting; the value is TOML (a bare word that is
/// not valid TOML is taken as a string, so `torus.escape=bubble` works).
pub fn parse_setting(setting: &str) -> Result<toml::Value, MachineError> {
    let (key, value) = setting.split_once('=').ok_or_else(|| {
        parse_err("--set", format!("`{setting}` is not of the form section.key=value"))
    })?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(|p| p.trim().is_empty()) {
        return Err(parse_err("--set", format!("`{setting}`: empty key")));
    }
    let value = value.trim();
    let parsed: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
        Ok(t) => t["v"].clone(),
        Err(_) => toml::Value::String(value.to_string()),
    };
    let mut v = parsed;
    for part in key.split('.').rev() {
        let mut t = toml::Table::new();
        t.insert(part.trim().to_string(), v);
        v = toml::Value::Table(t);
    }
    Ok(v)
}

/// Where a machine comes from: a preset name or a TOML file's text.
#[derive(Clone, Debug)]
pub enum MachineSource {
    Preset(String),
    File { name: String, text: String },
}

impl MachineSource {
    /// `bgl` names a preset; anything ending in `.toml` (or containing a path
    /// separator) is read as a file.
    pub fn from_arg(arg: &str) -> Result<Self, MachineError> {
        if arg.ends_with(".toml") || arg.contains('/') {
            let text = std::fs::read_to_string(arg)
                .map_err(|e| parse_err(arg, format!("cannot read machine file: {e}")))?;
            Ok(MachineSource::File { name: arg.to_string(), text })
        } else if preset_names().contains(&arg) {
            Ok(MachineSource::Preset(arg.to_string()))
        } else {
            Err(MachineError::UnknownPreset(arg.to_string()))
        }
    }
}

/// Builds and validates a machine from a source plus `key=value` settings.
pub fn load(source: &MachineSource, settings: &[String]) -> Result<Machine, MachineError> {
    let (name, mut value) = match source {
        MachineSource::Preset(p) => {
            let text = preset_text(p)?;
            (format!("preset {p}"), toml::from_str::<toml::Value>(text).map_err(|e| parse_err(p, e.to_string()))?)
        }
        MachineSource::File { name, text } => {
            let mut v: toml::Value = toml::from_str(text).map_err(|e| parse_err(name, e.to_string()))?;
            let base = match v.as_table_mut().and_then(|t| t.remove("base")) {
                Some(toml::Value::String(b)) => Some(b),
                Some(other) => {
                    return Err(MachineError::Invalid {
                        source_name: name.clone(),
                        key: "base".into(),
                        value: other.to_string(),
                        allowed: format!("a preset name ({})", preset_names().join(", ")),
                    })
                }
                None => None,
            };
            match base {
                Some(b) => {
                    let text = preset_text(&b).map_err(|_| MachineError::Invalid {
                        source_name: name.clone(),
                        key: "base".into(),
                        value: format!("{b:?}"),
                        allowed: format!("a preset name ({})", preset_names().join(", ")),
                    })?;
                    let mut base_v: toml::Value = toml::from_str(text).map_err(|e| parse_err(&b, e.to_string()))?;
                    merge(&mut base_v, v);
                    (name.clone(), base_v)
                }
                None => (name.clone(), v),
            }
        }
    };
    for s in settings {
        merge(&mut value, parse_setting(s)?);
    }
    let spec: MachineSpec = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = inner.message().replace("expected u32", "expected a non-negative integer of at most 4294967295");
        if path.is_empty() || path == "." {
            parse_err(&name, msg)
        } else {
            parse_err(&name, format!("key `{path}`: {msg}"))
        }
    })?;
    Machine::new(spec, &name)
}

/// Convenience: the preset `bgl` with settings.
pub fn bgl(settings: &[&str]) -> Result<Machine, MachineError> {
    let s: Vec<String> = settings.iter().map(|s| s.to_string()).collect();
    load(&MachineSource::Preset("bgl".into()), &s)
}

#[cfg(test)]
mod tests;
