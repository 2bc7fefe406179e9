//! Every parser, fed arbitrary and mutated input for a bounded number of
//! cases: machine TOML files and `--set` settings, mapfiles, traffic specs.
//! None may panic; every refusal is an error with a message. (proptest
//! draws the inputs; `PROPTEST_CASES` raises the count for a longer run.)

use bgsim::machine::{self, Mapping, MachineSource, Shape};
use bgsim::workload::TrafficSpec;
use proptest::prelude::*;

const BGL: &str = include_str!("../../../machines/bgl.toml");

/// `text` with the byte at `at` (modulo its length) replaced, or a slice
/// cut out: small mutations of a valid input reach deep into a parser.
fn mutate(text: &str, at: usize, byte: u8, cut: usize) -> String {
    let mut b = text.as_bytes().to_vec();
    if b.is_empty() {
        return String::new();
    }
    let i = at % b.len();
    if cut > 0 {
        let end = (i + cut).min(b.len());
        b.drain(i..end);
    } else {
        b[i] = byte;
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn config() -> ProptestConfig {
    ProptestConfig { cases: 256, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn machine_files_never_panic(at in any::<usize>(), byte in any::<u8>(), cut in 0usize..40, garbage in ".{0,200}") {
        for text in [mutate(BGL, at, byte, cut), garbage.clone(), format!("base = \"bgl\"\n{garbage}")] {
            let src = MachineSource::File { name: "fuzz.toml".into(), text };
            if let Err(e) = machine::load(&src, &[]) {
                prop_assert!(!e.to_string().is_empty());
            }
        }
    }

    #[test]
    fn settings_never_panic(key in "[a-z_.]{0,30}", value in ".{0,40}", number in any::<f64>(), int in any::<i64>()) {
        for s in [format!("{key}={value}"), format!("torus.{key}={number}"), format!("torus.dynamic_vcs={int}"),
                  format!("partition.shape={value}"), format!("clock.cpu_mhz={number}"), value.clone()] {
            if let Err(e) = machine::load(&MachineSource::Preset("bgl".into()), &[s]) {
                prop_assert!(!e.to_string().is_empty());
            }
        }
    }

    #[test]
    fn fault_lists_never_panic(entries in prop::collection::vec("[0-9,: xyz+\\-]{0,12}", 0..6), nodes in any::<bool>()) {
        let list = entries.iter().map(|e| format!("{e:?}")).collect::<Vec<_>>().join(",");
        let key = if nodes { "torus.dead_nodes" } else { "torus.dead_links" };
        let s = [format!("{key}=[{list}]"), "partition.shape=\"4x3x1\"".into()];
        if let Err(e) = machine::load(&MachineSource::Preset("bgl".into()), &s) {
            prop_assert!(e.to_string().contains(key) || e.to_string().contains("--set"), "{e}");
        }
    }

    #[test]
    fn mapfiles_never_panic(lines in prop::collection::vec("[0-9 \\-x#]{0,16}", 0..40), nranks in prop::option::of(0u32..40)) {
        let shape = Shape::parse("4x2x2", "").unwrap();
        let text = lines.join("\n");
        match Mapping::mapfile(&text, "fuzz.map", &shape, 2, nranks) {
            Ok(Mapping::Slots(s)) => prop_assert!(!s.is_empty()),
            Ok(_) => {}
            Err(e) => prop_assert!(e.to_string().contains("fuzz.map")),
        }
    }

    #[test]
    fn traffic_specs_never_panic(at in any::<usize>(), byte in any::<u8>(), cut in 0usize..10, key in "[a-z_]{1,20}",
                                 value in prop::sample::select(vec!["0", "-1", "1e400", "null", "true", "\"x\"", "[1,2]", "{}", "18446744073709551616"])) {
        let valid = r#"{"pattern": "hot_spot", "packets": 4, "region_size": [2, 1, 1], "seed": 3, "routing": "dynamic"}"#;
        for text in [mutate(valid, at, byte, cut), format!(r#"{{"pattern": "uniform", "{key}": {value}}}"#),
                     format!(r#"{{"pattern": "alltoall", "message_bytes": {value}}}"#)] {
            if let Err(e) = TrafficSpec::from_json(&text) {
                prop_assert!(!e.to_string().is_empty());
            }
        }
    }
}
