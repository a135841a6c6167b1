//! The runtime's bf16 pair GEMM (`hlojit_rt_gemm_bf16_pairs_avx512`) against the generated
//! `vdpbf16ps` kernel it replaces: the same bits on every element (the generated kernel is the
//! one the conformance corpus checked against XLA), for odd depths, edge tiles, several k
//! blocks, every tile the blocking picks, transposed, column-major and strided operands, and
//! one to three threads. The inputs hold what `vdpbf16ps` treats specially: subnormals (flushed),
//! infinities, NaNs, and products whose pair sums round and overflow.

use super::precompiled::GENERATED_GEMM_VARIABLE;
use crate::executable::Executable;
use crate::hlo::text::parse_module;
use crate::pipeline::{compile_to, prepare, CompileOptions, OutputKind};
use hlojit_runtime::{ArrayLiteral, ElementType, Literal};

const SYMBOL: &str = "hlojit_rt_gemm_bf16_pairs_avx512";

/// Serializes the tests that set the variable, and the ones that check which path a dot takes.
pub(crate) static GEMM_VARIABLE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn host_multiplies_pairs() -> bool {
    hlojit_runtime::kernels::gemm::host_multiplies_bf16_pairs()
}

/// bf16 bits of `dims` for a dot of depth `k`: mostly values in (-2, 2); one element in 40
/// a finite special (subnormals, which `vdpbf16ps` flushes; 2^100, whose square overflows a
/// pair sum; 1 + 2^-7 and 2^-9, which round once the pair is summed); and about one in 16k an
/// infinity or NaN, so that a few results are not finite and most are.
fn bf16_inputs(dims: &[i64], k: i64, seed: u64) -> ArrayLiteral {
    let n = dims.iter().product::<i64>() as usize;
    let finite: [u16; 5] = [0x0011, 0x8021, 0x7180, 0x3f81, 0x3b00];
    let other: [u16; 4] = [0x7f80, 0xff80, 0x7fc0, 0xffc1];
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let bits: Vec<u16> = (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = s >> 24;
            if r % (16 * k as u64) == 1 {
                other[(r / 7 % other.len() as u64) as usize]
            } else if r % 40 == 0 {
                finite[(r / 40 % finite.len() as u64) as usize]
            } else {
                let x = ((r % (1 << 20)) as f32 / (1 << 19) as f32 - 1.0) * 2.0;
                (x.to_bits() >> 16) as u16
            }
        })
        .collect();
    let bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
    ArrayLiteral::from_bytes(ElementType::BF16, dims, &bytes).expect("literal")
}

/// Compiles `hlo` for the host (runtime kernel allowed or not), returns its LLVM IR and the
/// bits of the result on `args`, run on a pool of `threads` threads.
fn compile_and_run(hlo: &str, generated: bool, args: &[ArrayLiteral], threads: usize) -> (String, Vec<u32>) {
    compile_and_run_for(hlo, &CompileOptions::default(), generated, args, threads)
}

/// [`compile_and_run`] for the target of `options` (which the host must run).
pub(crate) fn compile_and_run_for(hlo: &str, options: &CompileOptions, generated: bool, args: &[ArrayLiteral], threads: usize) -> (String, Vec<u32>) {
    let (ir, exe) = {
        let _guard = GEMM_VARIABLE.lock().unwrap_or_else(|e| e.into_inner());
        if generated {
            std::env::set_var(GENERATED_GEMM_VARIABLE, "1");
        }
        let module = parse_module(hlo).expect("test module parses");
        let ir = prepare(&module, options).and_then(|p| compile_to(&p, "t", options, OutputKind::LlvmIr, true));
        let exe = Executable::compile(&module, options);
        std::env::remove_var(GENERATED_GEMM_VARIABLE);
        (String::from_utf8_lossy(&ir.expect("compiles to IR")).into_owned(), exe.expect("compiles"))
    };
    let args: Vec<Literal> = args.iter().map(|a| Literal::from(a.clone())).collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
    let out = pool.install(|| exe.run_literals(&args)).expect("runs");
    let out = out.as_array().expect("array result");
    let bits = out.bytes().chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    (ir, bits)
}

/// `dot(a, b)` of bf16 parameters `a_shape` and `b_shape` (HLO shapes with layouts) into f32
/// `out_shape`, with the dimension numbers `dnums`.
fn dot_module(a_shape: &str, b_shape: &str, out_shape: &str, dnums: &str) -> String {
    format!(
        "HloModule t, entry_computation_layout={{(bf16{a_shape}, bf16{b_shape})->f32{out_shape}}}\n\
         ENTRY e {{ a = bf16{a_shape} parameter(0) b = bf16{b_shape} parameter(1)\n\
         ROOT d = f32{out_shape} dot(a, b), {dnums} }}"
    )
}

/// Logical dimensions of an HLO shape such as `[3,70,300]{2,1,0}`.
fn dims_of(shape: &str) -> Vec<i64> {
    let inner = &shape[1..shape.find(']').expect("dims")];
    inner.split(',').map(|d| d.trim().parse().expect("dim")).collect()
}

/// Both paths on one dot, on 1, 2 and 3 threads: every element the same bits. Returns how
/// many results are infinite or NaN.
fn same_bits(a_shape: &str, b_shape: &str, out_shape: &str, dnums: &str, k: i64) -> usize {
    let hlo = dot_module(a_shape, b_shape, out_shape, dnums);
    let args = [bf16_inputs(&dims_of(a_shape), k, 1), bf16_inputs(&dims_of(b_shape), k, 2)];
    let (ir, generated) = compile_and_run(&hlo, true, &args, 1);
    assert!(ir.contains("llvm.x86.avx512bf16.dpbf16ps.512") && !ir.contains(SYMBOL), "{hlo}: the generated pair kernel when forced");
    for threads in [1, 2, 3] {
        let (ir, precompiled) = compile_and_run(&hlo, false, &args, threads);
        assert!(ir.contains(SYMBOL), "{hlo}: the runtime's pair kernel");
        let differ: Vec<usize> = (0..generated.len()).filter(|&i| generated[i] != precompiled[i]).collect();
        assert!(differ.is_empty(), "{hlo} on {threads} threads: {} of {} elements differ, first at {}", differ.len(), generated.len(), differ[0]);
    }
    let finite = generated.iter().filter(|&&b| f32::from_bits(b).is_finite()).count();
    assert!(finite > generated.len() / 2, "{hlo}: most results finite");
    generated.len() - finite
}

const MATMUL: &str = "lhs_contracting_dims={1}, rhs_contracting_dims={0}";

#[test]
fn pair_kernel_matches_the_generated_one_on_matmuls() {
    if !host_multiplies_pairs() {
        return;
    }
    let mut specials = 0;
    // Odd k (the last pair half zero) in three k blocks, edge rows and columns (12 x 2 tile).
    specials += same_bits("[70,2101]{1,0}", "[2101,90]{1,0}", "[70,90]{1,0}", MATMUL, 2101);
    // The other tiles: 12 x 1 (n = 10), 9 x 3 (n = 48), 6 x 4 (n = 64); k = 1 (half a pair).
    specials += same_bits("[100,301]{1,0}", "[301,10]{1,0}", "[100,10]{1,0}", MATMUL, 301);
    specials += same_bits("[45,300]{1,0}", "[300,48]{1,0}", "[45,48]{1,0}", MATMUL, 300);
    specials += same_bits("[37,515]{1,0}", "[515,64]{1,0}", "[37,64]{1,0}", MATMUL, 515);
    specials += same_bits("[200,1]{1,0}", "[1,150]{1,0}", "[200,150]{1,0}", MATMUL, 1);
    // Big enough for the threads to split row blocks and panels.
    specials += same_bits("[256,512]{1,0}", "[512,384]{1,0}", "[256,384]{1,0}", MATMUL, 512);
    assert!(specials > 0, "some results infinite or NaN");
}

#[test]
fn pair_kernel_matches_the_generated_one_on_transposed_and_strided_operands() {
    if !host_multiplies_pairs() {
        return;
    }
    let mut specials = 0;
    // B transposed (contracting its minor dimension), A column-major.
    specials += same_bits("[70,301]{1,0}", "[90,301]{1,0}", "[70,90]{1,0}", "lhs_contracting_dims={1}, rhs_contracting_dims={1}", 301);
    specials += same_bits("[70,300]{0,1}", "[300,90]{1,0}", "[70,90]{1,0}", MATMUL, 300);
    // A read through its transposed layout: contracting dimension 0.
    specials += same_bits("[301,70]{1,0}", "[301,90]{0,1}", "[70,90]{1,0}", "lhs_contracting_dims={0}, rhs_contracting_dims={0}", 301);
    // Batched, the batch dimension of B in the middle (strided batch and rows).
    specials += same_bits(
        "[3,70,257]{2,1,0}",
        "[257,3,50]{2,1,0}",
        "[3,70,50]{2,1,0}",
        "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}",
        257,
    );
    assert!(specials > 0, "some results infinite or NaN");
}
