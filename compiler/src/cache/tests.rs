//! The in-process cache through the public API: hits share code and give the same results,
//! and a changed custom-call target is never served stale code.

use crate::{Client, CodeSource, CompileOptions, CustomCallRegistry};
use hlojit_runtime::HostBuffer;
use std::ffi::c_void;

const NEGATE: &str = "HloModule m\nENTRY e {\n  x = f32[3] parameter(0)\n  ROOT y = f32[3] negate(x)\n}\n";

fn negate_of(exe: &crate::Executable) -> Vec<f32> {
    let x = HostBuffer::from_slice(&[3], &[1.5f32, -2.0, 0.0]).unwrap();
    exe.run([&x]).unwrap()[0].as_slice::<f32>().unwrap().to_vec()
}

#[test]
fn a_client_compiles_a_module_once() {
    let client = Client::new();
    let first = client.compile_text(NEGATE).unwrap();
    assert_eq!(first.compile_stats().source, CodeSource::Compiled);
    // Other spacing, same canonical text; and through a clone of the client.
    let again = client.clone().compile_text(&NEGATE.replace("\n  ", "\n      ")).unwrap();
    assert_eq!(again.compile_stats().source, CodeSource::MemoryCache);
    assert_eq!(negate_of(&first), [-1.5, 2.0, -0.0]);
    drop(first);
    assert_eq!(negate_of(&again), [-1.5, 2.0, -0.0]);
    // Another module, another client: compiled.
    let other = client.compile_text(&NEGATE.replace("negate", "abs")).unwrap();
    assert_eq!(other.compile_stats().source, CodeSource::Compiled);
    assert_eq!(negate_of(&other), [1.5, 2.0, 0.0]);
    assert_eq!(Client::new().compile_text(NEGATE).unwrap().compile_stats().source, CodeSource::Compiled);
    assert_eq!(client.cache().len(), 2);
    client.cache().clear();
    assert_eq!(client.compile_text(NEGATE).unwrap().compile_stats().source, CodeSource::Compiled);
}

unsafe extern "C" fn write_ones(out: *mut c_void, _ins: *const *const c_void) {
    std::slice::from_raw_parts_mut(out as *mut f32, 2).fill(1.0);
}

unsafe extern "C" fn write_twos(out: *mut c_void, _ins: *const *const c_void) {
    std::slice::from_raw_parts_mut(out as *mut f32, 2).fill(2.0);
}

#[test]
fn a_target_registered_anew_is_linked_anew() {
    let registry = CustomCallRegistry::new();
    registry.register_original("fill", write_ones);
    let client = Client::with_options(CompileOptions { custom_calls: registry.clone(), ..CompileOptions::default() });
    let text = "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  ROOT y = f32[2] custom-call(x), custom_call_target=\"fill\"\n}\n";
    let x = HostBuffer::from_slice(&[2], &[0.0f32, 0.0]).unwrap();
    let run = |exe: &crate::Executable| exe.run([&x]).unwrap()[0].as_slice::<f32>().unwrap().to_vec();
    let ones = client.compile_text(text).unwrap();
    assert_eq!(run(&ones), [1.0, 1.0]);
    assert_eq!(client.compile_text(text).unwrap().compile_stats().source, CodeSource::MemoryCache);
    registry.register_original("fill", write_twos);
    let twos = client.compile_text(text).unwrap();
    assert_eq!(twos.compile_stats().source, CodeSource::Compiled);
    assert_eq!(run(&twos), [2.0, 2.0]);
    assert_eq!(run(&ones), [1.0, 1.0]);
}
