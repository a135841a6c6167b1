//! The corpus through ahead-of-time objects: each case compiled by `compile_aot` into an
//! object and its header, linked with a C driver and the runtime's static library into a
//! program of its own, and run on the case's inputs laid out as the header says. What it
//! checks beyond the JIT: the object's code (relocations, constants, the weak built-in
//! targets) and its link against `libhlojit_runtime.a` alone, as users link it.

use super::case::Case;
use super::{compare_outputs, ModuleFile, Outcome};
use crate::runtime_library::{current_profile_dir, runtime_static_library};
use hlojit::{compile_aot, parse_module_bytes, ArrayLiteral, CompileOptions, HostBuffer, OutputKind};
use std::path::Path;
use std::process::Command;

/// The program around the object: `prog IN... OUT...` reads each argument buffer's bytes from
/// a file and writes each result buffer's bytes to one. Every buffer starts a scalar of its
/// element type (at most 8 bytes) past a 64-byte boundary: aligned as the header promises
/// callers may (to the element type) and no further, so that code assuming more faults here.
const DRIVER: &str = r#"#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "m.h"

static int transfer(const char* path, void* buf, size_t bytes, int write) {
  FILE* f = fopen(path, write ? "wb" : "rb");
  if (!f) return perror(path), 1;
  size_t n = write ? fwrite(buf, 1, bytes, f) : fread(buf, 1, bytes, f);
  fclose(f);
  return n != bytes;
}

static void* buffer(const hlojit_aot_buffer_info* info) {
  char* raw = calloc(1, info->size_bytes + 128);
  if (!raw) return NULL;
  size_t scalar = info->element_bytes < 8 ? info->element_bytes : 8;
  return raw + (64 - (uintptr_t)raw % 64) + (scalar ? scalar : 1);
}

int main(int argc, char** argv) {
  if (argc != 1 + M_NUM_ARGS + M_NUM_RESULTS) return 2;
  void* args[M_NUM_ARGS > 0 ? M_NUM_ARGS : 1];
  void* results[M_NUM_RESULTS > 0 ? M_NUM_RESULTS : 1];
  for (int i = 0; i < M_NUM_ARGS; ++i)
    if (!(args[i] = buffer(&m_args[i])) || transfer(argv[1 + i], args[i], m_args[i].size_bytes, 0)) return 3;
  for (int i = 0; i < M_NUM_RESULTS; ++i)
    if (!(results[i] = buffer(&m_results[i]))) return 3;
  if (m((const void* const*)args, results) != 0) {
    const char* why = hlojit_last_error();
    fprintf(stderr, "%s\n", why ? why : "failed without a message");
    return 1;
  }
  for (int i = 0; i < M_NUM_RESULTS; ++i)
    if (transfer(argv[1 + M_NUM_ARGS + i], results[i], m_results[i].size_bytes, 1)) return 4;
  return 0;
}
"#;

/// Compiles, links and runs one case as an AOT program and compares its results.
pub(super) fn run_case(dir: &Path, file: ModuleFile, options: &CompileOptions, outcome: &mut Outcome) -> Result<(), String> {
    let case = Case::load(dir)?;
    outcome.case = case.name.clone();
    outcome.group = case.group.clone();
    let bytes = crate::module_file::read_module_bytes(&dir.join(file.file_name()))?;
    let module = parse_module_bytes(&bytes).map_err(|e| format!("parse: {e}"))?;
    let start = std::time::Instant::now();
    let aot = compile_aot(&module, "m", options, OutputKind::Object).map_err(|e| {
        outcome.not_runnable =
            matches!(e, hlojit::Error::ElidedConstant(_)) || (case.replicas > 1 && matches!(e, hlojit::Error::Unsupported(_)));
        e.to_string()
    })?;
    outcome.compile_ms = start.elapsed().as_secs_f64() * 1e3;
    let work = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
    let w = work.path();
    let write = |name: &str, bytes: &[u8]| std::fs::write(w.join(name), bytes).map_err(|e| format!("{name}: {e}"));
    write("m.o", &aot.code)?;
    write("m.h", aot.header.as_bytes())?;
    write("main.c", DRIVER.as_bytes())?;
    let profile = current_profile_dir().ok_or("cannot tell where this executable was built")?;
    let runtime = runtime_static_library(&profile).ok_or_else(|| format!("no libhlojit_runtime.a under {}", profile.display()))?;
    let program = w.join("prog");
    run(Command::new("cc")
        .args(["-O1", "-I"])
        .arg(w)
        .arg(w.join("main.c"))
        .arg(w.join("m.o"))
        .arg(&runtime)
        // Unused runtime code and symbols dropped: the link writes a 0.6 MB program, not 20 MB.
        .args(["-lpthread", "-ldl", "-lm", "-s", "-Wl,--gc-sections", "-o"])
        .arg(&program))
    .map_err(|e| format!("linking: {e}"))?;
    let inputs: Vec<ArrayLiteral> = case.inputs.iter().map(|a| case.read_array(a)).collect::<Result<_, _>>()?;
    if inputs.len() != aot.arguments.len() {
        return Err(format!("{} inputs for {} argument buffers", inputs.len(), aot.arguments.len()));
    }
    let mut command = Command::new(&program);
    for (i, (input, shape)) in inputs.iter().zip(&aot.arguments).enumerate() {
        let layout = shape.layout_or_default();
        let buffer = HostBuffer::from_literal_with_layout(input, layout).map_err(|e| format!("argument {i}: {e}"))?;
        write(&format!("in{i}"), buffer.bytes())?;
        command.arg(w.join(format!("in{i}")));
    }
    for i in 0..aot.results.len() {
        command.arg(w.join(format!("out{i}")));
    }
    run(&mut command)?;
    let got: Vec<ArrayLiteral> = aot
        .results
        .iter()
        .enumerate()
        .map(|(i, shape)| {
            let bytes = std::fs::read(w.join(format!("out{i}"))).map_err(|e| format!("result {i}: {e}"))?;
            HostBuffer::from_bytes(shape, &bytes).map(|b| b.to_literal()).map_err(|e| format!("result {i}: {e}"))
        })
        .collect::<Result<_, String>>()?;
    compare_outputs(&case, &got.iter().collect::<Vec<_>>())
}

/// Runs `command`; its standard error as the error when it fails.
fn run(command: &mut Command) -> Result<(), String> {
    let out = command.output().map_err(|e| format!("{:?}: {e}", command.get_program()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{} ({})", String::from_utf8_lossy(&out.stderr).trim(), out.status))
    }
}
