use super::*;

fn err_of(settings: &[&str]) -> String {
    bgl(settings).unwrap_err().to_string()
}

#[test]
fn preset_loads_and_derives_ticks() {
    let m = bgl(&[]).unwrap();
    assert_eq!(m.name(), "bgl");
    assert_eq!(m.tick_byte, 4 * m.tick_cycle);
    assert_eq!(m.shape, Shape::torus(8, 8, 8));
    assert_eq!(m.vcs, 4);
    assert_eq!(m.vc_tokens, 32);
    assert_eq!(m.full_packet_tokens, 8);
    assert_eq!(m.max_payload_bytes(), 240);
    assert_eq!(m.wire_bytes(256) + m.torus().ack_bytes, 270);
}

#[test]
fn settings_override_values() {
    let m = bgl(&["torus.dynamic_vcs=4", "torus.escape=dateline_dir", "partition.shape=4x4x2", "partition.mesh=z"]).unwrap();
    assert_eq!(m.torus().dynamic_vcs, 4);
    assert_eq!(m.vcs, 4 + 2 + 1);
    assert_eq!(m.shape.dims, [4, 4, 2]);
    assert_eq!(m.shape.torus, [true, true, false]);
}

#[test]
fn unknown_key_is_named() {
    let e = err_of(&["torus.dynamic_vc=4"]);
    assert!(e.contains("dynamic_vc"), "{e}");
    let e = err_of(&["bogus.x=1"]);
    assert!(e.contains("bogus"), "{e}");
}

#[test]
fn out_of_range_values_are_named_with_what_is_allowed() {
    let e = err_of(&["torus.dynamic_vcs=0"]);
    assert!(e.contains("torus.dynamic_vcs") && e.contains("1, 2, 3 or 4"), "{e}");
    let e = err_of(&["torus.slq_fraction=1.5"]);
    assert!(e.contains("torus.slq_fraction") && e.contains("1.5"), "{e}");
    let e = err_of(&["torus.vc_buffer_bytes=100"]);
    assert!(e.contains("torus.vc_buffer_bytes"), "{e}");
    // One-byte tokens would make a full packet's charge 256 tokens.
    let e = err_of(&["torus.token_bytes=1"]);
    assert!(e.contains("torus.token_bytes") && e.contains("255 tokens"), "{e}");
    // A negative size does not even fit the unsigned type.
    let e = err_of(&["torus.vc_buffer_bytes=-1024"]);
    assert!(e.contains("torus.vc_buffer_bytes") && e.contains("-1024"), "{e}");
    let e = err_of(&["clock.cpu_mhz=\"fast\""]);
    assert!(e.contains("clock.cpu_mhz"), "{e}");
    let e = err_of(&["torus.escape=ring"]);
    assert!(e.contains("ring") && e.contains("bubble"), "{e}");
    let e = err_of(&["partition.mode=smp"]);
    assert!(e.contains("partition.mode") && e.contains("coprocessor"), "{e}");
}

#[test]
fn bad_shapes_are_refused() {
    for bad in ["8x8", "8x8x8x8", "0x8x8", "8x-1x8", "axbxc", "8x8x", ""] {
        let e = err_of(&[&format!("partition.shape=\"{bad}\"")]);
        assert!(e.contains("partition.shape"), "{bad}: {e}");
    }
    let e = err_of(&["partition.mesh=w"]);
    assert!(e.contains("partition.mesh"), "{e}");
    // A dimension of size 1 is allowed.
    let m = bgl(&["partition.shape=8x1x1"]).unwrap();
    assert_eq!(m.shape.nodes(), 8);
}

#[test]
fn file_with_base_merges_over_preset() {
    let src = MachineSource::File { name: "my.toml".into(), text: "base = \"bgl\"\n[torus]\nvc_buffer_bytes = 2048\n".into() };
    let m = load(&src, &[]).unwrap();
    assert_eq!(m.torus().vc_buffer_bytes, 2048);
    assert_eq!(m.vc_tokens, 64);
    let src = MachineSource::File { name: "bad.toml".into(), text: "base = \"bgl\"\n[torus]\nvc_bufer_bytes = 2048\n".into() };
    let e = load(&src, &[]).unwrap_err().to_string();
    assert!(e.contains("bad.toml") && e.contains("vc_bufer_bytes"), "{e}");
    let src = MachineSource::File { name: "syntax.toml".into(), text: "[torus\n".into() };
    assert!(load(&src, &[]).unwrap_err().to_string().contains("syntax.toml"));
    let src = MachineSource::File { name: "b.toml".into(), text: "base = \"bgq\"\n".into() };
    let e = load(&src, &[]).unwrap_err().to_string();
    assert!(e.contains("b.toml") && e.contains("`base` = \"bgq\"") && e.contains("bgl"), "{e}");
}

#[test]
fn preset_round_trips_through_toml() {
    let m = bgl(&[]).unwrap();
    let text = m.to_toml();
    let src = MachineSource::File { name: "rt.toml".into(), text };
    let m2 = load(&src, &[]).unwrap();
    assert_eq!(m.spec, m2.spec);
}

#[test]
fn malformed_setting_is_refused() {
    assert!(parse_setting("torus.dynamic_vcs").is_err());
    assert!(parse_setting("=3").is_err());
}
