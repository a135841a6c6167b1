//! Ahead-of-time output: the module as an object file (or assembly, or LLVM IR) exporting
//!
//! ```c
//! int NAME(const void* const* args, void* const* results);
//! ```
//!
//! and a C header declaring it with the number, element types, dimensions and byte sizes of
//! its arguments and results. The object needs only `libhlojit_runtime.a` (no LLVM) and libm;
//! its custom-call targets are ordinary external symbols the linker resolves, the built-in
//! ones (LAPACK, jaxlib's) weakly defined in the object itself. It references the runtime's ABI
//! identity (`hlojit_runtime::abi_identity`), so only the library of its compiler's build links.

use crate::codegen::array::buffer_bytes;
use crate::codegen::context::Codegen;
use crate::error::{Error, Result};
use crate::hlo::Module;
use crate::pipeline::{compile_to, prepare, CompileOptions, OutputKind};
use hlojit_runtime::{ArrayShape, Shape};
use std::fmt::Write;

/// The generated code and the header that declares it.
#[derive(Clone, Debug)]
pub struct AotOutput {
    /// Object file bytes, or assembly / LLVM IR text.
    pub code: Vec<u8>,
    /// The C header declaring the entry function and describing its arguments and results.
    pub header: String,
    /// The argument buffers, in order, each with the layout the function reads it in.
    pub arguments: Vec<ArrayShape>,
    /// The result buffers, in order, each with the layout the function writes it in.
    pub results: Vec<ArrayShape>,
}

/// The link line the header suggests (from the repository root, after `cargo build --release`):
/// the runtime and the C libraries it uses (it opens the system LAPACK itself when a LAPACK
/// target first runs).
pub fn link_libs() -> String {
    "-Ltarget/release -lhlojit_runtime -lpthread -ldl -lm".to_string()
}

/// Makes the entry function `entry` read the runtime's identity byte
/// (`hlojit_runtime::abi_identity::ABI_SYMBOL`) first thing: a volatile load, which no optimizer
/// removes, from the function's own section, which the linker keeps whenever the function is
/// used. A runtime library of another build leaves the symbol undefined and the link fails
/// naming it. One load per call.
pub(crate) fn reference_runtime_identity(cg: &Codegen, entry: &str) -> Result<()> {
    let symbol = hlojit_runtime::abi_identity::ABI_SYMBOL;
    let first = cg
        .module
        .get_function(entry)
        .and_then(|f| f.get_first_basic_block())
        .and_then(|b| b.get_first_instruction())
        .ok_or_else(|| Error::Internal(format!("no entry function '{entry}' to reference {symbol} from")))?;
    let identity = cg.module.add_global(cg.i8(), None, symbol);
    cg.b.position_before(&first);
    let load = cg.b.build_load(cg.i8(), identity.as_pointer_value(), "runtime.abi")?.into_int_value();
    let instruction = load.as_instruction().ok_or_else(|| Error::Internal("a load is an instruction".into()))?;
    instruction.set_volatile(true).map_err(|e| Error::Llvm(e.to_string()))?;
    Ok(())
}

/// Whether `name` can be the C function's name.
pub fn is_c_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Compiles `module` into code exporting `name` and its header.
pub fn compile_aot(module: &Module, name: &str, options: &CompileOptions, emit: OutputKind) -> Result<AotOutput> {
    if !is_c_identifier(name) {
        return Err(Error::InvalidArgument(format!("'{name}' is not a C identifier: choose another function name")));
    }
    let grid = crate::codegen::collectives::groups::DeviceGrid::of(module);
    if grid.devices() > 1 && emit == OutputKind::Object {
        // The in-process device threads and their rendezvous are set up by
        // Executable::run_devices; an AOT function has no such driver yet.
        return Err(Error::Unsupported(format!(
            "AOT compilation of a program for {} devices ({} replicas x {} partitions); run it with the JIT (Executable::run_devices)",
            grid.devices(),
            grid.replicas,
            grid.partitions
        )));
    }
    let prepared = prepare(module, options)?;
    let code = compile_to(&prepared, name, options, emit, false)?;
    let header = header(&prepared, name)?;
    let arguments = leaves(&prepared.entry_parameter_shapes());
    let results = leaves(&[prepared.entry_result_shape()]);
    Ok(AotOutput { code, header, arguments, results })
}

fn leaves(shapes: &[Shape]) -> Vec<ArrayShape> {
    shapes
        .iter()
        .flat_map(|s| {
            s.array_leaves().into_iter().map(|a| ArrayShape { layout: Some(a.layout_or_default()), ..a.clone() })
        })
        .collect()
}

/// The C header for the function `name` compiled from `module` (already prepared).
pub fn header(module: &Module, name: &str) -> Result<String> {
    let args = leaves(&module.entry_parameter_shapes());
    let results = leaves(&[module.entry_result_shape()]);
    let upper = name.to_ascii_uppercase();
    let mut h = String::new();
    let w = &mut h;
    let _ =
        writeln!(w, "/* {name}.h: the AOT-compiled HLO module '{}' (generated by hlojit; do not edit).", module.name);
    let _ = writeln!(w, " *");
    let _ = writeln!(w, " * Link the object with hlojit's runtime library (no LLVM needed):");
    let _ = writeln!(w, " *   cc main.c {name}.o {}", link_libs());
    let identity = hlojit_runtime::abi_identity::ABI_SYMBOL;
    let _ = writeln!(w, " * Only the library of the hlojit build that compiled the object links: the object");
    let _ = writeln!(w, " * references {identity}, which that build's runtime defines (a hash");
    let _ = writeln!(w, " * of its sources). Another build's library, whose descriptors may differ, fails with");
    let _ = writeln!(w, " * \"undefined reference to `{identity}'\": compile the module again");
    let _ = writeln!(w, " * or link the library of the build that compiled it.");
    let _ = writeln!(w, " *");
    let _ = writeln!(w, " * Every argument and result is one dense array buffer (tuples are flattened, depth");
    let _ = writeln!(w, " * first) in the layout its comment gives, allocated by the caller; arguments in parameter");
    let _ = writeln!(w, " * order, results in the order of the flattened output. Custom-call targets the module");
    let _ = writeln!(w, " * names are resolved by the linker; hlojit's built-in ones (LAPACK and jaxlib's targets)");
    let _ = writeln!(w, " * are defined weakly in the object, so a definition of the program's own replaces them.");
    let _ = writeln!(w, " */");
    let _ = writeln!(w, "#ifndef HLOJIT_AOT_{upper}_H_");
    let _ = writeln!(w, "#define HLOJIT_AOT_{upper}_H_\n");
    let _ = writeln!(w, "#include <stddef.h>\n#include <stdint.h>\n");
    let _ = writeln!(w, "#ifdef __cplusplus\nextern \"C\" {{\n#endif\n");
    let _ = writeln!(w, "/* Runs the computation. Returns 0 on success, non-zero on failure (a custom call");
    let _ = writeln!(w, " * failed: hlojit_last_error() says why). Safe to call from several threads at once. */");
    let _ = writeln!(w, "int {name}(const void* const* args, void* const* results);\n");
    let _ = writeln!(w, "/* The message of this thread's last failure, or NULL. */");
    let _ = writeln!(w, "const char* hlojit_last_error(void);\n");
    let _ = writeln!(w, "#define {upper}_NUM_ARGS {}", args.len());
    let _ = writeln!(w, "#define {upper}_NUM_RESULTS {}\n", results.len());
    let _ = writeln!(w, "#ifndef HLOJIT_AOT_BUFFER_INFO_DEFINED");
    let _ = writeln!(w, "#define HLOJIT_AOT_BUFFER_INFO_DEFINED");
    let _ = writeln!(w, "#if defined(__GNUC__)\n#define HLOJIT_AOT_UNUSED __attribute__((unused))\n#else\n#define HLOJIT_AOT_UNUSED\n#endif");
    let _ = writeln!(w, "/* One argument or result buffer. */");
    let _ = writeln!(w, "typedef struct hlojit_aot_buffer_info {{");
    let _ = writeln!(w, "  const char* element_type; /* HLO name: \"f32\", \"s32\", \"pred\", ... */");
    let _ = writeln!(w, "  size_t element_bytes;");
    let _ = writeln!(w, "  int rank;");
    let _ = writeln!(w, "  const int64_t* dims;      /* logical dimensions, `rank` of them */");
    let _ = writeln!(w, "  const char* shape;        /* HLO shape with layout, e.g. \"f32[2,3]{{1,0}}\" */");
    let _ = writeln!(w, "  size_t size_bytes;        /* bytes of the buffer */");
    let _ = writeln!(w, "}} hlojit_aot_buffer_info;");
    let _ = writeln!(w, "#endif\n");
    for (kind, list) in [("ARG", &args), ("RESULT", &results)] {
        for (i, s) in list.iter().enumerate() {
            let bytes = buffer_bytes(s)?;
            let text = Shape::Array(s.clone()).to_text(true);
            let prefix = format!("{upper}_{kind}{i}");
            let _ = writeln!(w, "/* {} {i}: {text} */", if kind == "ARG" { "Argument" } else { "Result" });
            let _ = writeln!(w, "#define {prefix}_TYPE \"{}\"", s.element_type.name());
            let _ = writeln!(w, "#define {prefix}_RANK {}", s.rank());
            let _ = writeln!(w, "#define {prefix}_ELEMENTS {}", s.element_count());
            let _ = writeln!(w, "#define {prefix}_BYTES {bytes}");
            let dims: Vec<String> = s.dims.iter().map(|d| d.to_string()).collect();
            let dims = if dims.is_empty() { "0 /* scalar: no dimensions */".to_string() } else { dims.join(", ") };
            let _ = writeln!(
                w,
                "static const int64_t {name}_{}{i}_dims[] HLOJIT_AOT_UNUSED = {{{dims}}};\n",
                kind.to_ascii_lowercase()
            );
        }
    }
    for (kind, list) in [("args", &args), ("results", &results)] {
        let count = format!("{upper}_NUM_{}", if kind == "args" { "ARGS" } else { "RESULTS" });
        let _ = writeln!(
            w,
            "static const hlojit_aot_buffer_info {name}_{kind}[{count} > 0 ? {count} : 1] HLOJIT_AOT_UNUSED = {{"
        );
        if list.is_empty() {
            let _ = writeln!(w, "  {{0, 0, 0, 0, 0, 0}} /* none */");
        }
        let singular = if kind == "args" { "arg" } else { "result" };
        for (i, s) in list.iter().enumerate() {
            let text = Shape::Array(s.clone()).to_text(true);
            let _ = writeln!(
                w,
                "  {{\"{}\", {}, {}, {name}_{singular}{i}_dims, \"{text}\", {}}},",
                s.element_type.name(),
                s.element_type.byte_size(),
                s.rank(),
                buffer_bytes(s)?
            );
        }
        let _ = writeln!(w, "}};\n");
    }
    let _ = writeln!(w, "#ifdef __cplusplus\n}}\n#endif\n");
    let _ = writeln!(w, "#endif /* HLOJIT_AOT_{upper}_H_ */");
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aot_code_references_the_runtime_identity_and_jit_code_does_not() {
        let module = crate::hlo::text::parse_module("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] negate(x)\n}\n").unwrap();
        let options = CompileOptions::default();
        let prepared = prepare(&module, &options).unwrap();
        let ir = |for_jit| String::from_utf8(compile_to(&prepared, "entry", &options, OutputKind::LlvmIr, for_jit).unwrap()).unwrap();
        let symbol = hlojit_runtime::abi_identity::ABI_SYMBOL;
        let aot = ir(false);
        assert!(aot.contains(&format!("load volatile i8, ptr @{symbol}")), "{aot}");
        assert!(aot.contains(&format!("@{symbol} = external global i8")), "{aot}");
        assert!(!ir(true).contains("hlojit_rt_abi_"), "the JIT's code runs against its own runtime");
    }

    #[test]
    fn c_identifiers() {
        assert!(is_c_identifier("model_v2"));
        assert!(is_c_identifier("_x"));
        assert!(!is_c_identifier("2model"));
        assert!(!is_c_identifier("my-model"));
        assert!(!is_c_identifier(""));
    }
}
