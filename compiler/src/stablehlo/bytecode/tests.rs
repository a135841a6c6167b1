//! Hand-made bytecode: a tiny writer for the format's pieces, a module built with it as
//! StableHLO 1.15's serializer lays one out, then truncations and corruptions of it.

use super::*;

fn varint(out: &mut Vec<u8>, v: u64) {
    // MLIR's EncodingEmitter::emitVarInt.
    if v < 1 << 7 {
        out.push(((v << 1) | 1) as u8);
        return;
    }
    for extra in 1..8u32 {
        if v < 1u64 << (7 * (extra + 1)) {
            let word = (v << (extra + 1)) | (1 << extra);
            out.extend_from_slice(&word.to_le_bytes()[..=extra as usize]);
            return;
        }
    }
    out.push(0);
    out.extend_from_slice(&v.to_le_bytes());
}

fn bytes_of(vs: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    for &v in vs {
        varint(&mut out, v);
    }
    out
}

fn section(out: &mut Vec<u8>, id: u8, data: &[u8]) {
    out.push(id);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

/// `func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> { %0 = add %a, %a; return %0 }` in
/// a module, as a VHLO portable artifact written by `producer`, with the add op named `add`.
pub(crate) fn artifact(producer: &str, add: &str) -> Vec<u8> {
    let strings = ["builtin", "vhlo", "module", "func_v1", add, "return_v1", "main", ""];
    let mut string_section = Vec::new();
    varint(&mut string_section, strings.len() as u64);
    for s in strings.iter().rev() {
        varint(&mut string_section, s.len() as u64 + 1);
    }
    for s in strings {
        string_section.extend_from_slice(s.as_bytes());
        string_section.push(0);
    }
    // Dialects builtin (string 0) and vhlo (1), unversioned; 4 op names, all registered.
    let dialect_section = bytes_of(&[2, 0, 1 << 1, 4, 0, 1, (2 << 1) | 1, 1, 3, (3 << 1) | 1, (4 << 1) | 1, (5 << 1) | 1]);
    // Types: f32, tensor<2xf32>, (tensor<2xf32>) -> tensor<2xf32>.
    let types: [Vec<u8>; 3] = [bytes_of(&[4]), bytes_of(&[20, 1, 4, 0]), bytes_of(&[8, 1, 1, 1, 1])];
    // Attributes: "main", the function type, "" (visibility), [] (arg/result attributes),
    // then builtin's unknown location.
    let attrs: [Vec<u8>; 5] = [bytes_of(&[14, 6]), bytes_of(&[17, 2]), bytes_of(&[14, 7]), bytes_of(&[1, 0]), bytes_of(&[15])];
    let mut attr_type = Vec::new();
    let mut offsets = bytes_of(&[5, 3, 1, 4]);
    for a in &attrs[..4] {
        varint(&mut offsets, ((a.len() as u64) << 1) | 1);
        attr_type.extend_from_slice(a);
    }
    offsets.extend(bytes_of(&[0, 1]));
    varint(&mut offsets, ((attrs[4].len() as u64) << 1) | 1);
    attr_type.extend_from_slice(&attrs[4]);
    offsets.extend(bytes_of(&[1, 3]));
    for t in &types {
        varint(&mut offsets, ((t.len() as u64) << 1) | 1);
        attr_type.extend_from_slice(t);
    }
    // Properties: the module's (no name, no visibility), the function's (sorted by name:
    // arg_attrs, function_type, res_attrs, sym_name, sym_visibility).
    let props = [bytes_of(&[0, 0]), bytes_of(&[3, 1, 3, 0, 2])];
    let mut prop_section = bytes_of(&[2]);
    for p in &props {
        varint(&mut prop_section, p.len() as u64);
        prop_section.extend_from_slice(p);
    }
    // The function's body: one region, 2 values; block of 2 ops with 1 argument of type 1.
    let mut body = bytes_of(&[1, 2, (2 << 1) | 1, 1, 1 << 1]);
    body.push(0); // no use-list orders
    body.extend(bytes_of(&[2]));
    body.push(0x06); // results, operands
    body.extend(bytes_of(&[4, 1, 1, 2, 0, 0]));
    body.extend(bytes_of(&[3]));
    body.push(0x04);
    body.extend(bytes_of(&[4, 1, 1]));
    let mut module_region = bytes_of(&[1, 0, 1 << 1, 1]);
    module_region.push(0x50); // properties, regions
    module_region.extend(bytes_of(&[4, 1, (1 << 1) | 1]));
    section(&mut module_region, 4, &body);
    let mut ir = bytes_of(&[1 << 1, 0]);
    ir.push(0x50);
    ir.extend(bytes_of(&[4, 0, (1 << 1) | 1]));
    section(&mut ir, 4, &module_region);

    let mut file = b"ML\xEFR".to_vec();
    varint(&mut file, 6);
    file.extend_from_slice(producer.as_bytes());
    file.push(0);
    section(&mut file, 1, &dialect_section);
    section(&mut file, 3, &offsets);
    section(&mut file, 2, &attr_type);
    section(&mut file, 4, &ir);
    section(&mut file, 0, &string_section);
    section(&mut file, 8, &prop_section);
    file
}

#[test]
fn reads_a_hand_made_module() {
    let m = parse_bytecode(&artifact("StableHLO_v1.15.0", "add_v1")).expect("reads");
    assert_eq!(m.ops.len(), 1);
    let f = &m.ops[0];
    assert_eq!(f.name, "func.func");
    assert_eq!(f.attr("sym_name"), Some(&crate::stablehlo::ir::Attr::String("main".into())));
    let block = &f.regions[0].blocks[0];
    assert_eq!(block.args.len(), 1);
    assert_eq!(block.ops.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), ["stablehlo.add", "stablehlo.return"]);
    assert_eq!(block.ops[0].operands.len(), 2);
    assert_eq!(block.ops[0].operands[0].name, block.args[0].0);
    assert_eq!(block.ops[1].operands[0], block.ops[0].result_refs()[0]);
    // And on to HLO.
    let hlo = crate::stablehlo::parse_bytecode(&artifact("StableHLO_v1.15.0", "add_v1")).expect("converts");
    let text = hlo.to_string();
    assert!(text.contains("= f32[2] add(%Arg.2, %Arg.2)"), "{text}");
}

#[test]
fn newer_versions_and_unknown_ops_are_refused_by_name() {
    let e = parse_bytecode(&artifact("StableHLO_v1.99.0", "add_v1")).unwrap_err();
    assert!(e.message.contains("StableHLO_v1.99.0") && e.message.contains("1.20.0"), "{}", e.message);
    let e = parse_bytecode(&artifact("StableHLO_v1.15.0", "frobnicate_v1")).unwrap_err();
    assert!(e.message.contains("'vhlo.frobnicate_v1'"), "{}", e.message);
    assert!(e.offset > 0);
    let e = parse_bytecode(&artifact("MLIR20.0.0git", "add_v1")).unwrap_err();
    assert!(e.message.contains("not StableHLO"), "{}", e.message);
    let mut v7 = artifact("StableHLO_v1.15.0", "add_v1");
    v7[4] = (7 << 1) | 1;
    assert!(parse_bytecode(&v7).unwrap_err().message.contains("format version 7"));
}

#[test]
fn every_truncation_is_an_error() {
    let file = artifact("StableHLO_v1.15.0", "add_v1");
    for len in 0..file.len() {
        assert!(parse_bytecode(&file[..len]).is_err(), "prefix of {len} bytes read");
    }
}

#[test]
fn corrupted_bytes_give_errors_not_panics() {
    let file = artifact("StableHLO_v1.15.0", "add_v1");
    for i in 4..file.len() {
        for v in [0x00, 0x01, 0x02, 0x7F, 0x80, 0xCB, 0xFE, 0xFF] {
            let mut bad = file.clone();
            bad[i] = v;
            // Ok or Err both fine; what matters is no panic, no runaway allocation.
            let _ = parse_bytecode(&bad);
            let _ = crate::stablehlo::parse_bytecode(&bad);
        }
    }
    for garbage in [&b"ML\xEFR"[..], b"ML\xEFR\x0d", b"ML\xEFR\x0dStableHLO_v1.0.0\0\x04\xff\xff\xff\xff", b"\x00\x01\x02"] {
        assert!(parse_bytecode(garbage).is_err());
    }
}

#[test]
fn the_corpus_artifacts_read() {
    // Every portable artifact of the corpus copy reads into a module with @main.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance/cases");
    let Ok(entries) = std::fs::read_dir(&root) else { return };
    let mut n = 0;
    for e in entries.flatten() {
        let p = e.path().join("module.stablehlo.mlirbc");
        if let Ok(bytes) = std::fs::read(&p) {
            let m = parse_bytecode(&bytes).unwrap_or_else(|e| panic!("{}: {e:?}", p.display()));
            assert!(m.ops.iter().any(|o| o.attr("sym_name") == Some(&crate::stablehlo::ir::Attr::String("main".into()))), "{}", p.display());
            n += 1;
        }
    }
    assert!(n == 0 || n > 250, "{n} artifacts");
}
