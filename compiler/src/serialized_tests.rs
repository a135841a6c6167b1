//! Serialized executables: they load and run as the compiled ones, and bytes that cannot be
//! loaded safely are refused with a reason.

use super::*;
use crate::cache::disk::{decode_entry, encode_entry};
use crate::{Argument, Client, CustomCallRegistry};
use hlojit_runtime::HostBuffer;
use std::ffi::c_void;

const NEGATE: &str = "HloModule m\nENTRY e {\n  x = f32[3] parameter(0)\n  ROOT y = f32[3] negate(x)\n}\n";

fn negate_of(exe: &Executable) -> Vec<f32> {
    let x = HostBuffer::from_slice(&[3], &[1.5f32, -2.0, 0.0]).unwrap();
    exe.run([&x]).unwrap()[0].as_slice::<f32>().unwrap().to_vec()
}

fn load(bytes: &[u8]) -> Result<Executable> {
    Executable::deserialize(bytes, &CompileOptions::default())
}

fn serialized_negate() -> Vec<u8> {
    Client::new().compile_text(NEGATE).unwrap().serialize().unwrap()
}

/// `bytes` with their header rewritten by `edit` (and a checksum that fits).
fn with_header(bytes: &[u8], edit: impl Fn(&str) -> String) -> Vec<u8> {
    let (header, attachment, entry) = decode_entry(MAGIC, "", bytes).unwrap();
    encode_entry(MAGIC, edit(std::str::from_utf8(header).unwrap()).as_bytes(), attachment, &entry)
}

/// The reason loading `bytes` fails.
fn refusal(bytes: &[u8]) -> String {
    match load(bytes) {
        Ok(_) => panic!("{} bytes were loaded", bytes.len()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn machine_code_round_trips_with_its_signature_and_attachment() {
    let text = "HloModule m, input_output_alias={ {}: (1, {}, must-alias) }\nENTRY e {\n  x = f32[2,3] parameter(0)\n  \
                acc = f32[3,2] parameter(1)\n  t = f32[3,2] transpose(x), dimensions={1,0}\n  ROOT s = f32[3,2] add(t, acc)\n}\n";
    let exe = Client::new().compile_text(text).unwrap();
    assert_eq!(exe.compile_stats().source, CodeSource::Compiled);
    let bytes = exe.serialize_with(b"mine").unwrap();
    let (again, attachment) = Executable::deserialize_with(&bytes, &CompileOptions::default()).unwrap();
    assert_eq!(attachment, b"mine");
    assert_eq!(again.compile_stats().source, CodeSource::Deserialized);
    assert_eq!(again.executor().signature(), exe.executor().signature());
    assert!(again.executor().signature().aliases[0].must);
    let x = HostBuffer::from_slice(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let run = |e: &Executable| {
        let acc = HostBuffer::from_slice(&[3, 2], &[10.0f32; 6]).unwrap();
        e.run([Argument::from(&x), Argument::Donated(acc)]).unwrap()[0].as_slice::<f32>().unwrap().to_vec()
    };
    assert_eq!(run(&again), run(&exe));
    // The executable loaded serializes to the same bytes.
    assert_eq!(again.serialize_with(b"mine").unwrap(), bytes);
}

#[test]
fn programs_of_runtime_calls_and_multi_device_grids_round_trip() {
    let dot = "HloModule m\nENTRY e {\n  a = f32[64,64] parameter(0)\n  b = f32[64,64] parameter(1)\n  \
               ROOT d = f32[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
    let exe = Client::new().compile_text(dot).unwrap();
    let again = load(&exe.serialize().unwrap()).unwrap();
    let a = HostBuffer::from_slice(&[64, 64], &(0..4096).map(|i| (i % 7) as f32 - 3.0).collect::<Vec<_>>()).unwrap();
    let result = |e: &Executable| e.run([&a, &a]).unwrap()[0].as_slice::<f32>().unwrap().to_vec();
    assert_eq!(result(&again), result(&exe));
    // A call naming a parameter the signature lacks is refused, not run (hosts with the
    // precompiled GEMM, AVX2 and up, run this dot as a program of runtime calls).
    let bytes = exe.serialize().unwrap();
    let (header, _, mut entry) = decode_entry(MAGIC, "", &bytes).unwrap();
    let mut meta = EntryMeta::decode(&entry.meta).unwrap();
    assert_eq!(meta.calls.is_some(), exe.compile_stats().source == CodeSource::RuntimeCalls);
    if let Some(calls) = meta.calls.as_mut() {
        calls[0].fields.push(crate::backend::library_program::Field::Parameter(2));
        entry.meta = meta.encode().unwrap();
        let forged = encode_entry(MAGIC, header, &[], &entry);
        assert!(refusal(&forged).contains("name buffers it does not have"), "{}", refusal(&forged));
    }
    let replicated = "HloModule m, replica_count=2\nENTRY e {\n  x = f32[3] parameter(0)\n  ROOT y = f32[3] negate(x)\n}\n";
    let exe = Client::new().compile_text(replicated).unwrap();
    assert_eq!(load(&exe.serialize().unwrap()).unwrap().grid, exe.grid);
    assert_eq!(exe.grid.replicas, 2);
}

unsafe extern "C" fn write_ones(out: *mut c_void, _ins: *const *const c_void) {
    unsafe { std::slice::from_raw_parts_mut(out as *mut f32, 2).fill(1.0) };
}

unsafe extern "C" fn write_twos(out: *mut c_void, _ins: *const *const c_void) {
    unsafe { std::slice::from_raw_parts_mut(out as *mut f32, 2).fill(2.0) };
}

#[test]
fn custom_call_targets_are_resolved_where_the_executable_is_loaded() {
    let text = "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  ROOT y = f32[2] custom-call(x), custom_call_target=\"serialized_fill\"\n}\n";
    let with = |f: unsafe extern "C" fn(*mut c_void, *const *const c_void)| {
        let registry = CustomCallRegistry::new();
        registry.register_original("serialized_fill", f);
        CompileOptions { custom_calls: registry, ..CompileOptions::default() }
    };
    let bytes = Client::with_options(with(write_ones)).compile_text(text).unwrap().serialize().unwrap();
    let x = HostBuffer::from_slice(&[2], &[0.0f32, 0.0]).unwrap();
    let twos = Executable::deserialize(&bytes, &with(write_twos)).unwrap();
    assert_eq!(twos.run([&x]).unwrap()[0].as_slice::<f32>().unwrap(), [2.0, 2.0]);
    let missing = Executable::deserialize(&bytes, &CompileOptions::default()).unwrap_err();
    assert!(matches!(missing, Error::MissingCustomCallTarget(ref t) if t == "serialized_fill"), "{missing}");
}

#[test]
fn damaged_or_foreign_bytes_are_refused() {
    let good = serialized_negate();
    assert_eq!(negate_of(&load(&good).unwrap()), [-1.5, 2.0, -0.0]);
    let mut other_magic = good.clone();
    other_magic[7] = b'9';
    assert!(refusal(&other_magic).contains("not a serialized executable of this hlojit version"));
    for cut in [0, 1, 8, 15, 16, good.len() / 3, good.len() / 2, good.len() - 9, good.len() - 1] {
        let why = refusal(&good[..cut]);
        assert!(why.contains("not a serialized executable") || why.contains("checksum"), "cut at {cut}: {why}");
    }
    for at in [8, 9, 20, good.len() / 4, good.len() / 2, good.len() - 20, good.len() - 1] {
        let mut flipped = good.clone();
        flipped[at] ^= 0x10;
        assert!(refusal(&flipped).contains("checksum mismatch"), "byte {at}");
    }
    // A disk cache entry is not a serialized executable.
    let mut entry = good.clone();
    entry[..8].copy_from_slice(b"HLOJITX3");
    assert!(refusal(&entry).contains("not a serialized executable"));
}

#[test]
fn bytes_of_another_build_or_target_are_refused() {
    let good = serialized_negate();
    let other_build = with_header(&good, |h| h.replacen("compiler: hlojit", "compiler: hlojit 0.0.0 build 0 was", 1));
    assert!(refusal(&other_build).contains("compile it again"), "{}", refusal(&other_build));
    let arm = with_header(&good, |h| {
        h.lines().map(|l| if l.starts_with("triple: ") { "triple: aarch64-unknown-linux-gnu".to_string() } else { l.to_string() } + "\n").collect()
    });
    assert!(refusal(&arm).contains("it is for aarch64-unknown-linux-gnu"), "{}", refusal(&arm));
    let other_cpu = with_header(&good, |h| {
        h.lines().map(|l| if l.starts_with("cpu: ") { "cpu: some-other-cpu".to_string() } else { l.to_string() } + "\n").collect()
    });
    assert!(refusal(&other_cpu).contains("compiled for CPU some-other-cpu"), "{}", refusal(&other_cpu));
    let more_features = with_header(&good, |h| {
        h.lines().map(|l| if l.starts_with("features: ") { format!("{l},+a-feature-nobody-has") } else { l.to_string() } + "\n").collect()
    });
    assert!(refusal(&more_features).contains("features this host lacks: a-feature-nobody-has"), "{}", refusal(&more_features));
    // Code for a baseline CPU with fewer features runs anywhere.
    let baseline = with_header(&good, |h| {
        h.lines()
            .map(|l| match l.split_once(": ") {
                Some(("cpu", _)) => "cpu: x86-64".to_string(),
                Some(("features", _)) => "features: ".to_string(),
                _ => l.to_string(),
            } + "\n")
            .collect()
    });
    #[cfg(target_arch = "x86_64")]
    assert_eq!(negate_of(&load(&baseline).unwrap()), [-1.5, 2.0, -0.0]);
    let _ = baseline;
    let no_header = with_header(&good, |_| String::new());
    assert!(refusal(&no_header).contains("the header has no 'compiler'"));
}
