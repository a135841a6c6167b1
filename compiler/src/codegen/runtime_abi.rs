//! The runtime functions generated code calls, each declared once with its LLVM signature.
//!
//! The runtime defines them (`hlojit_runtime::symbols::runtime_symbols` lists them for the JIT;
//! an AOT object links them from the runtime library). A signature written at each call site
//! could drift from the definition without any error until a call passed garbage, so every call
//! site declares its callee through [`RuntimeFunction`], and the tests below check each entry
//! against the Rust definition in the runtime.

use crate::codegen::context::Codegen;
use crate::error::{Error, Result};
use inkwell::module::Linkage;
use inkwell::types::{BasicMetadataTypeEnum, BasicTypeEnum};
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use inkwell::values::FunctionValue;

/// The type of an argument or result at the C ABI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbiType {
    I32,
    I64,
    Ptr,
}

/// A function of the runtime that generated code calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeFunction {
    Alloc,
    Free,
    ParallelFor,
    NumThreads,
    TakeFailure,
    SortPackedKeys,
    SortWideKeys,
    SortByComparator,
    SortUnstableByComparator,
    Fft,
    RngGetAndUpdateState,
    CustomCallStatus,
    FfiCall,
    /// A built-in custom-call target by name, from an AOT object's weak definition of it.
    BuiltinTargetCall,
    ReplicaId,
    PartitionId,
    CollectiveEnter,
    CollectiveLeave,
    /// An all-reduce the communicator may run with a built-in reduction.
    CollectiveReduceBuiltin,
    Transfer,
    PollInterrupt,
    /// Profiling builds: the clock before a kernel, and recording its time after it.
    ProfileNow,
    ProfileRecord,
    GemmF32Avx512,
    GemmF32Avx2,
    /// The same GEMMs with bf16 operands (widened to f32 while packing).
    GemmBf16Avx512,
    GemmBf16Avx2,
    /// bf16 operands multiplied as pairs with AVX512-BF16 (`vdpbf16ps`).
    GemmBf16PairsAvx512,
    /// s8 operands, s32 result (AVX2 `vpmaddwd` on i16 pairs).
    GemmS8Avx2,
    /// s8 operands, s32 result (AVX512-VNNI `vpdpbusd` on quads of bytes).
    GemmS8VnniAvx512,
    /// The same bf16 pair and s8 quad GEMMs on AMX tiles where the process may use them
    /// (the AVX-512 kernels above otherwise, with the descriptor's blocking).
    GemmBf16Amx,
    GemmS8Amx,
    /// f32 convolutions (GEMM lowering or depthwise), precompiled per instruction set.
    ConvF32Avx512,
    ConvF32Avx2,
    /// Softmax over the rows of a row-major f32 array (8 or 16 lanes), see `emitters/softmax_rows.rs`.
    SoftmaxRowsF32Avx2,
    SoftmaxRowsF32Avx512,
    /// Row sums and maxima of f32 arrays, see `emitters/reduce/precompiled.rs`.
    RowReduceF32Avx2,
    RowReduceF32Avx512,
    /// Layer normalization of the rows of a row-major f32 array, see `emitters/layernorm_rows.rs`.
    LayernormRowsF32Avx2,
    LayernormRowsF32Avx512,
    /// Dots with few result rows as strips (8 or 16 lanes), see `emitters/dot_strips.rs`.
    DotStripsF32Avx2,
    DotStripsF32Avx512,
    /// Whole sorts by a 32-bit key, see `emitters/sort_rows.rs`.
    SortRows,
}

/// The process-wide flag generated loops poll (a `u32` the runtime sets; not a function).
pub const INTERRUPT_FLAG: &str = "hlojit_rt_interrupt_requested";

impl RuntimeFunction {
    pub const ALL: [RuntimeFunction; 43] = [
        RuntimeFunction::Alloc,
        RuntimeFunction::Free,
        RuntimeFunction::ParallelFor,
        RuntimeFunction::NumThreads,
        RuntimeFunction::TakeFailure,
        RuntimeFunction::SortPackedKeys,
        RuntimeFunction::SortWideKeys,
        RuntimeFunction::SortByComparator,
        RuntimeFunction::SortUnstableByComparator,
        RuntimeFunction::Fft,
        RuntimeFunction::RngGetAndUpdateState,
        RuntimeFunction::CustomCallStatus,
        RuntimeFunction::FfiCall,
        RuntimeFunction::BuiltinTargetCall,
        RuntimeFunction::ReplicaId,
        RuntimeFunction::PartitionId,
        RuntimeFunction::CollectiveEnter,
        RuntimeFunction::CollectiveLeave,
        RuntimeFunction::CollectiveReduceBuiltin,
        RuntimeFunction::Transfer,
        RuntimeFunction::PollInterrupt,
        RuntimeFunction::ProfileNow,
        RuntimeFunction::ProfileRecord,
        RuntimeFunction::GemmF32Avx512,
        RuntimeFunction::GemmF32Avx2,
        RuntimeFunction::GemmBf16Avx512,
        RuntimeFunction::GemmBf16Avx2,
        RuntimeFunction::GemmBf16PairsAvx512,
        RuntimeFunction::GemmS8Avx2,
        RuntimeFunction::GemmS8VnniAvx512,
        RuntimeFunction::GemmBf16Amx,
        RuntimeFunction::GemmS8Amx,
        RuntimeFunction::ConvF32Avx512,
        RuntimeFunction::ConvF32Avx2,
        RuntimeFunction::SoftmaxRowsF32Avx2,
        RuntimeFunction::SoftmaxRowsF32Avx512,
        RuntimeFunction::RowReduceF32Avx2,
        RuntimeFunction::RowReduceF32Avx512,
        RuntimeFunction::LayernormRowsF32Avx2,
        RuntimeFunction::LayernormRowsF32Avx512,
        RuntimeFunction::DotStripsF32Avx2,
        RuntimeFunction::DotStripsF32Avx512,
        RuntimeFunction::SortRows,
    ];

    /// The exported symbol.
    pub fn name(self) -> &'static str {
        match self {
            RuntimeFunction::Alloc => "hlojit_rt_alloc",
            RuntimeFunction::Free => "hlojit_rt_free",
            RuntimeFunction::ParallelFor => "hlojit_rt_parallel_for",
            RuntimeFunction::NumThreads => "hlojit_rt_num_threads",
            RuntimeFunction::TakeFailure => "hlojit_rt_take_failure",
            RuntimeFunction::SortPackedKeys => "hlojit_rt_sort_packed_keys",
            RuntimeFunction::SortWideKeys => "hlojit_rt_sort_wide_keys",
            RuntimeFunction::SortByComparator => "hlojit_rt_sort_by_comparator",
            RuntimeFunction::SortUnstableByComparator => "hlojit_rt_sort_unstable_by_comparator",
            RuntimeFunction::Fft => "hlojit_rt_fft",
            RuntimeFunction::RngGetAndUpdateState => "hlojit_rt_rng_get_and_update_state",
            RuntimeFunction::CustomCallStatus => "hlojit_rt_custom_call_status",
            RuntimeFunction::FfiCall => "hlojit_rt_ffi_call",
            RuntimeFunction::BuiltinTargetCall => "hlojit_rt_builtin_target_call",
            RuntimeFunction::ReplicaId => "hlojit_rt_replica_id",
            RuntimeFunction::PartitionId => "hlojit_rt_partition_id",
            RuntimeFunction::CollectiveEnter => "hlojit_rt_collective_enter",
            RuntimeFunction::CollectiveLeave => "hlojit_rt_collective_leave",
            RuntimeFunction::CollectiveReduceBuiltin => "hlojit_rt_collective_reduce_builtin",
            RuntimeFunction::Transfer => "hlojit_rt_transfer",
            RuntimeFunction::PollInterrupt => "hlojit_rt_poll_interrupt",
            RuntimeFunction::ProfileNow => "hlojit_rt_profile_now",
            RuntimeFunction::ProfileRecord => "hlojit_rt_profile_record",
            RuntimeFunction::GemmF32Avx512 => "hlojit_rt_gemm_f32_avx512",
            RuntimeFunction::GemmF32Avx2 => "hlojit_rt_gemm_f32_avx2",
            RuntimeFunction::GemmBf16Avx512 => "hlojit_rt_gemm_bf16_avx512",
            RuntimeFunction::GemmBf16Avx2 => "hlojit_rt_gemm_bf16_avx2",
            RuntimeFunction::GemmBf16PairsAvx512 => "hlojit_rt_gemm_bf16_pairs_avx512",
            RuntimeFunction::GemmS8Avx2 => "hlojit_rt_gemm_s8_avx2",
            RuntimeFunction::GemmS8VnniAvx512 => "hlojit_rt_gemm_s8_vnni_avx512",
            RuntimeFunction::GemmBf16Amx => "hlojit_rt_gemm_bf16_amx",
            RuntimeFunction::GemmS8Amx => "hlojit_rt_gemm_s8_amx",
            RuntimeFunction::ConvF32Avx512 => "hlojit_rt_conv_f32_avx512",
            RuntimeFunction::ConvF32Avx2 => "hlojit_rt_conv_f32_avx2",
            RuntimeFunction::SoftmaxRowsF32Avx2 => "hlojit_rt_softmax_rows_f32_avx2",
            RuntimeFunction::SoftmaxRowsF32Avx512 => "hlojit_rt_softmax_rows_f32_avx512",
            RuntimeFunction::RowReduceF32Avx2 => "hlojit_rt_row_reduce_f32_avx2",
            RuntimeFunction::RowReduceF32Avx512 => "hlojit_rt_row_reduce_f32_avx512",
            RuntimeFunction::LayernormRowsF32Avx2 => "hlojit_rt_layernorm_rows_f32_avx2",
            RuntimeFunction::LayernormRowsF32Avx512 => "hlojit_rt_layernorm_rows_f32_avx512",
            RuntimeFunction::DotStripsF32Avx2 => "hlojit_rt_dot_strips_f32_avx2",
            RuntimeFunction::DotStripsF32Avx512 => "hlojit_rt_dot_strips_f32_avx512",
            RuntimeFunction::SortRows => "hlojit_rt_sort_rows",
        }
    }

    /// The result (`None`: void) and the parameters.
    pub fn signature(self) -> (Option<AbiType>, &'static [AbiType]) {
        use AbiType::{Ptr, I32, I64};
        match self {
            RuntimeFunction::Alloc => (Some(Ptr), &[I64]),
            RuntimeFunction::Free => (None, &[Ptr, I64]),
            // (task, table, extent, min_chunk)
            RuntimeFunction::ParallelFor => (None, &[Ptr, Ptr, I64, I64]),
            RuntimeFunction::NumThreads => (Some(I64), &[]),
            RuntimeFunction::TakeFailure => (Some(I32), &[]),
            // (keys, tmp or perm, n, k)
            RuntimeFunction::SortPackedKeys | RuntimeFunction::SortWideKeys => {
                (None, &[Ptr, Ptr, I64, I64])
            }
            // (perm, n, comparator, ctx)
            RuntimeFunction::SortByComparator | RuntimeFunction::SortUnstableByComparator => (None, &[Ptr, I64, Ptr, Ptr]),
            // (input, output, fft_type, double, batch, rank, lengths)
            RuntimeFunction::Fft => (Some(I32), &[Ptr, Ptr, I32, I32, I64, I64, Ptr]),
            RuntimeFunction::RngGetAndUpdateState => (None, &[I64, Ptr]),
            // (target, unified, out, ins, opaque, opaque_len, name)
            RuntimeFunction::CustomCallStatus => (Some(I32), &[Ptr, I32, Ptr, Ptr, Ptr, I64, Ptr]),
            // (handler, descriptor, descriptor_len, args, rets)
            RuntimeFunction::FfiCall => (Some(I32), &[Ptr, Ptr, I64, Ptr, Ptr]),
            // (name, frame) -> error
            RuntimeFunction::BuiltinTargetCall => (Some(Ptr), &[Ptr, Ptr]),
            RuntimeFunction::ReplicaId | RuntimeFunction::PartitionId => (Some(I32), &[]),
            // (op, devices, groups, stride, leaves, mine, sizes, peers, rank, size)
            RuntimeFunction::CollectiveEnter => {
                (Some(I32), &[I64, I64, Ptr, I64, I64, Ptr, Ptr, Ptr, Ptr, Ptr])
            }
            RuntimeFunction::CollectiveLeave => (Some(I32), &[]),
            // (op, devices, groups, stride, leaves, inputs, outputs, sizes, reduction, element)
            RuntimeFunction::CollectiveReduceBuiltin => (Some(I32), &[I64, I64, Ptr, I64, I64, Ptr, Ptr, Ptr, I32, I32]),
            // (kind, channel, peers, devices, table, table_len, leaves, buffers, name)
            RuntimeFunction::Transfer => (Some(I32), &[I32, I64, Ptr, I64, Ptr, I64, I64, Ptr, Ptr]),
            RuntimeFunction::PollInterrupt => (Some(I32), &[]),
            RuntimeFunction::ProfileNow => (Some(I64), &[]),
            RuntimeFunction::ProfileRecord => (None, &[I64, I64]),
            // (descriptor: hlojit_runtime::kernels::gemm::GemmF32)
            RuntimeFunction::GemmF32Avx512 | RuntimeFunction::GemmF32Avx2 | RuntimeFunction::GemmBf16Avx512 | RuntimeFunction::GemmBf16Avx2 | RuntimeFunction::GemmBf16PairsAvx512 | RuntimeFunction::GemmS8Avx2 | RuntimeFunction::GemmS8VnniAvx512 | RuntimeFunction::GemmBf16Amx | RuntimeFunction::GemmS8Amx => (Some(I32), &[Ptr]),
            // (descriptor: hlojit_runtime::kernels::conv::ConvF32)
            RuntimeFunction::ConvF32Avx512 | RuntimeFunction::ConvF32Avx2 | RuntimeFunction::SoftmaxRowsF32Avx2 | RuntimeFunction::RowReduceF32Avx2 | RuntimeFunction::LayernormRowsF32Avx2 => (Some(I32), &[Ptr]),
            // (descriptor: one of hlojit_runtime::kernels::rows's)
            RuntimeFunction::SoftmaxRowsF32Avx512 | RuntimeFunction::RowReduceF32Avx512 | RuntimeFunction::LayernormRowsF32Avx512 => (Some(I32), &[Ptr]),
            // (descriptor: hlojit_runtime::kernels::dot_strips::DotStripsF32, first unit, end unit)
            RuntimeFunction::DotStripsF32Avx2 | RuntimeFunction::DotStripsF32Avx512 => (None, &[Ptr, I64, I64]),
            // (descriptor: hlojit_runtime::kernels::sort_rows::SortRows)
            RuntimeFunction::SortRows => (Some(I32), &[Ptr]),
        }
    }
}

fn llvm_type<'ctx>(cg: &Codegen<'ctx>, t: AbiType) -> BasicTypeEnum<'ctx> {
    match t {
        AbiType::I32 => cg.i32().into(),
        AbiType::I64 => cg.i64().into(),
        AbiType::Ptr => cg.ptr().into(),
    }
}

impl<'ctx> Codegen<'ctx> {
    /// Calls the precompiled kernel `f` with a descriptor: `fields` (one `i64` each, in the
    /// order of the runtime's `#[repr(C)]` struct) stored in a stack array. Returns the status.
    pub fn call_with_descriptor(&self, f: RuntimeFunction, fields: &[IntValue<'ctx>], name: &str) -> Result<BasicValueEnum<'ctx>> {
        let desc = self.descriptor(fields, name)?;
        self.call(self.runtime(f)?, &[desc.into()])
    }

    /// A precompiled kernel's descriptor: `fields` (one `i64` each, in the order of the
    /// runtime's `#[repr(C)]` struct) stored in a stack array.
    pub fn descriptor(&self, fields: &[IntValue<'ctx>], name: &str) -> Result<PointerValue<'ctx>> {
        let desc = self.entry_alloca(self.i64().array_type(fields.len() as u32).into(), name)?;
        for (i, v) in fields.iter().enumerate() {
            self.b.build_store(self.gep(self.i64().into(), desc, self.const_i64(i as i64))?, *v)?;
        }
        Ok(desc)
    }

    /// The declaration of runtime function `f` in this module.
    pub fn runtime(&self, f: RuntimeFunction) -> Result<FunctionValue<'ctx>> {
        let (ret, params) = f.signature();
        let params: Vec<BasicMetadataTypeEnum<'ctx>> =
            params.iter().map(|&t| llvm_type(self, t).into()).collect();
        let ty = self.fn_type(ret.map(|t| llvm_type(self, t)), &params);
        match self.module.get_function(f.name()) {
            Some(existing) if existing.get_type() == ty => Ok(existing),
            // A custom-call target of the same name was declared first.
            Some(_) => Err(Error::Unsupported(format!(
                "'{}' is a function of the hlojit runtime and cannot be declared with another type",
                f.name()
            ))),
            None => {
                let function = self.module.add_function(f.name(), ty, Some(Linkage::External));
                self.describe_memory(f, function);
                Ok(function)
            }
        }
    }

    /// Tells LLVM what the temporary-memory functions do, as C's `malloc` and `free` are
    /// described: the block `hlojit_rt_alloc` returns is fresh (aliases nothing else) and
    /// `hlojit_rt_free` keeps no copy of the pointer the code could read through. With that,
    /// alias analysis knows a kernel's scratch row is disjoint from its buffers, so the loop
    /// vectorizer emits no runtime overlap checks and no scalar fallback loop for loops over
    /// it (softmax's row kernel: 238 -> 170 optimized instructions, less to compile).
    fn describe_memory(&self, f: RuntimeFunction, function: FunctionValue<'ctx>) {
        use inkwell::attributes::AttributeLoc;
        match f {
            RuntimeFunction::Alloc => function.add_attribute(AttributeLoc::Return, self.enum_attr("noalias")),
            RuntimeFunction::Free => function.add_attribute(AttributeLoc::Param(0), self.enum_attr("nocapture")),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlojit_runtime::collectives::entry_points as collectives;
    use hlojit_runtime::custom_call::{builtin_targets, call, status};
    use hlojit_runtime::kernels::{conv, fft, gemm, rng, sort};
    use hlojit_runtime::{executor, symbols};

    /// The C ABI type of a Rust parameter or result type.
    trait Abi {
        const TYPE: AbiType;
    }
    impl Abi for i32 {
        const TYPE: AbiType = AbiType::I32;
    }
    impl Abi for u32 {
        const TYPE: AbiType = AbiType::I32;
    }
    impl Abi for i64 {
        const TYPE: AbiType = AbiType::I64;
    }
    impl<T> Abi for *const T {
        const TYPE: AbiType = AbiType::Ptr;
    }
    impl<T> Abi for *mut T {
        const TYPE: AbiType = AbiType::Ptr;
    }
    impl Abi for symbols::KernelTask {
        const TYPE: AbiType = AbiType::Ptr;
    }
    impl Abi for sort::Comparator {
        const TYPE: AbiType = AbiType::Ptr;
    }

    trait AbiResult {
        const TYPE: Option<AbiType>;
    }
    impl AbiResult for () {
        const TYPE: Option<AbiType> = None;
    }
    impl<T: Abi> AbiResult for T {
        const TYPE: Option<AbiType> = Some(T::TYPE);
    }

    /// The signature of an `extern "C"` function pointer type.
    trait Signature {
        fn signature() -> (Option<AbiType>, Vec<AbiType>);
    }
    macro_rules! signature {
        ($($a:ident),*) => {
            impl<R: AbiResult, $($a: Abi),*> Signature for unsafe extern "C" fn($($a),*) -> R {
                fn signature() -> (Option<AbiType>, Vec<AbiType>) {
                    (R::TYPE, vec![$($a::TYPE),*])
                }
            }
        };
    }
    signature!();
    signature!(A);
    signature!(A, B);
    signature!(A, B, C);
    signature!(A, B, C, D);
    signature!(A, B, C, D, E);
    signature!(A, B, C, D, E, F);
    signature!(A, B, C, D, E, F, G);
    signature!(A, B, C, D, E, F, G, H, I);
    signature!(A, B, C, D, E, F, G, H, I, J);

    fn of<S: Signature>(_: S) -> (Option<AbiType>, Vec<AbiType>) {
        S::signature()
    }

    /// The Rust definition of each entry, as a function pointer: the `as` casts only compile
    /// when the written type is the definition's, and the test compares it with the table.
    fn definition(f: RuntimeFunction) -> (usize, (Option<AbiType>, Vec<AbiType>)) {
        type P = *mut u8;
        type C = *const u8;
        macro_rules! def {
            ($f:expr, $t:ty) => {{
                let p = $f as $t;
                (p as usize, of(p))
            }};
        }
        match f {
            RuntimeFunction::Alloc => {
                def!(symbols::hlojit_rt_alloc, unsafe extern "C" fn(i64) -> P)
            }
            RuntimeFunction::Free => def!(symbols::hlojit_rt_free, unsafe extern "C" fn(P, i64)),
            RuntimeFunction::ParallelFor => {
                def!(
                    symbols::hlojit_rt_parallel_for,
                    unsafe extern "C" fn(symbols::KernelTask, *const P, i64, i64)
                )
            }
            RuntimeFunction::NumThreads => def!(
                symbols::hlojit_rt_num_threads,
                unsafe extern "C" fn() -> i64
            ),
            RuntimeFunction::TakeFailure => def!(symbols::hlojit_rt_take_failure, unsafe extern "C" fn() -> i32),
            RuntimeFunction::SortPackedKeys => {
                def!(
                    sort::hlojit_rt_sort_packed_keys,
                    unsafe extern "C" fn(*mut u64, *mut u64, i64, i64)
                )
            }
            RuntimeFunction::SortWideKeys => {
                def!(
                    sort::hlojit_rt_sort_wide_keys,
                    unsafe extern "C" fn(*const u64, *mut i64, i64, i64)
                )
            }
            RuntimeFunction::SortByComparator => {
                def!(
                    sort::hlojit_rt_sort_by_comparator,
                    unsafe extern "C" fn(*mut i64, i64, sort::Comparator, C)
                )
            }
            RuntimeFunction::SortUnstableByComparator => {
                def!(
                    sort::hlojit_rt_sort_unstable_by_comparator,
                    unsafe extern "C" fn(*mut i64, i64, sort::Comparator, C)
                )
            }
            RuntimeFunction::Fft => {
                def!(
                    fft::hlojit_rt_fft,
                    unsafe extern "C" fn(C, P, i32, i32, i64, i64, *const i64) -> i32
                )
            }
            RuntimeFunction::RngGetAndUpdateState => {
                def!(
                    rng::hlojit_rt_rng_get_and_update_state,
                    unsafe extern "C" fn(i64, *mut u64)
                )
            }
            RuntimeFunction::CustomCallStatus => {
                use std::ffi::{c_char, c_void};
                def!(
                    status::hlojit_rt_custom_call_status,
                    unsafe extern "C" fn(
                        *const c_void,
                        i32,
                        *mut c_void,
                        *const *const c_void,
                        *const c_char,
                        i64,
                        *const c_char,
                    ) -> i32
                )
            }
            RuntimeFunction::BuiltinTargetCall => def!(
                builtin_targets::hlojit_rt_builtin_target_call,
                unsafe extern "C" fn(
                    *const std::ffi::c_char,
                    *mut hlojit_ffi::xla::XLA_FFI_CallFrame,
                ) -> *mut hlojit_ffi::xla::XLA_FFI_Error
            ),
            RuntimeFunction::FfiCall => {
                use std::ffi::c_void;
                def!(
                    call::hlojit_rt_ffi_call,
                    unsafe extern "C" fn(
                        *const c_void,
                        C,
                        i64,
                        *const *mut c_void,
                        *const *mut c_void,
                    ) -> i32
                )
            }
            RuntimeFunction::ReplicaId => def!(
                collectives::hlojit_rt_replica_id,
                unsafe extern "C" fn() -> u32
            ),
            RuntimeFunction::PartitionId => def!(
                collectives::hlojit_rt_partition_id,
                unsafe extern "C" fn() -> u32
            ),
            RuntimeFunction::CollectiveEnter => def!(
                collectives::hlojit_rt_collective_enter,
                unsafe extern "C" fn(
                    i64,
                    i64,
                    *const i64,
                    i64,
                    i64,
                    *const C,
                    *const i64,
                    *mut C,
                    *mut i64,
                    *mut i64,
                ) -> i32
            ),
            RuntimeFunction::CollectiveLeave => def!(
                collectives::hlojit_rt_collective_leave,
                unsafe extern "C" fn() -> i32
            ),
            RuntimeFunction::CollectiveReduceBuiltin => def!(
                collectives::hlojit_rt_collective_reduce_builtin,
                unsafe extern "C" fn(i64, i64, *const i64, i64, i64, *const C, *const P, *const i64, i32, i32) -> i32
            ),
            RuntimeFunction::Transfer => def!(
                hlojit_runtime::transfers::entry_points::hlojit_rt_transfer,
                unsafe extern "C" fn(i32, i64, *const i64, i64, *const i64, i64, i64, *const P, *const std::ffi::c_char) -> i32
            ),
            RuntimeFunction::PollInterrupt => def!(
                executor::hlojit_rt_poll_interrupt,
                unsafe extern "C" fn() -> i32
            ),
            RuntimeFunction::ProfileNow => def!(hlojit_runtime::profile::hlojit_rt_profile_now, unsafe extern "C" fn() -> i64),
            RuntimeFunction::ProfileRecord => def!(hlojit_runtime::profile::hlojit_rt_profile_record, unsafe extern "C" fn(i64, i64)),
            RuntimeFunction::GemmF32Avx512 => def!(gemm::hlojit_rt_gemm_f32_avx512, unsafe extern "C" fn(*const gemm::GemmF32) -> i32),
            RuntimeFunction::GemmF32Avx2 => def!(gemm::hlojit_rt_gemm_f32_avx2, unsafe extern "C" fn(*const gemm::GemmF32) -> i32),
            RuntimeFunction::GemmBf16Avx512 => def!(gemm::hlojit_rt_gemm_bf16_avx512, unsafe extern "C" fn(*const gemm::GemmF32) -> i32),
            RuntimeFunction::GemmBf16Avx2 => def!(gemm::hlojit_rt_gemm_bf16_avx2, unsafe extern "C" fn(*const gemm::GemmF32) -> i32),
            RuntimeFunction::GemmBf16PairsAvx512 => def!(gemm::hlojit_rt_gemm_bf16_pairs_avx512, unsafe extern "C" fn(*const gemm::GemmF32) -> i32),
            RuntimeFunction::GemmS8Avx2 => def!(gemm::hlojit_rt_gemm_s8_avx2, unsafe extern "C" fn(*const gemm::GemmF32) -> i32),
            RuntimeFunction::GemmS8VnniAvx512 => def!(gemm::hlojit_rt_gemm_s8_vnni_avx512, unsafe extern "C" fn(*const gemm::GemmF32) -> i32),
            RuntimeFunction::GemmBf16Amx => def!(gemm::hlojit_rt_gemm_bf16_amx, unsafe extern "C" fn(*const gemm::GemmF32) -> i32),
            RuntimeFunction::GemmS8Amx => def!(gemm::hlojit_rt_gemm_s8_amx, unsafe extern "C" fn(*const gemm::GemmF32) -> i32),
            RuntimeFunction::ConvF32Avx512 => def!(conv::hlojit_rt_conv_f32_avx512, unsafe extern "C" fn(*const conv::ConvF32) -> i32),
            RuntimeFunction::ConvF32Avx2 => def!(conv::hlojit_rt_conv_f32_avx2, unsafe extern "C" fn(*const conv::ConvF32) -> i32),
            RuntimeFunction::SoftmaxRowsF32Avx2 => def!(
                hlojit_runtime::kernels::rows::hlojit_rt_softmax_rows_f32_avx2,
                unsafe extern "C" fn(*const hlojit_runtime::kernels::rows::SoftmaxRowsF32) -> i32
            ),
            RuntimeFunction::SoftmaxRowsF32Avx512 => def!(
                hlojit_runtime::kernels::rows::hlojit_rt_softmax_rows_f32_avx512,
                unsafe extern "C" fn(*const hlojit_runtime::kernels::rows::SoftmaxRowsF32) -> i32
            ),
            RuntimeFunction::RowReduceF32Avx2 => def!(
                hlojit_runtime::kernels::rows::hlojit_rt_row_reduce_f32_avx2,
                unsafe extern "C" fn(*const hlojit_runtime::kernels::rows::RowReduceF32) -> i32
            ),
            RuntimeFunction::RowReduceF32Avx512 => def!(
                hlojit_runtime::kernels::rows::hlojit_rt_row_reduce_f32_avx512,
                unsafe extern "C" fn(*const hlojit_runtime::kernels::rows::RowReduceF32) -> i32
            ),
            RuntimeFunction::LayernormRowsF32Avx2 => def!(
                hlojit_runtime::kernels::rows::hlojit_rt_layernorm_rows_f32_avx2,
                unsafe extern "C" fn(*const hlojit_runtime::kernels::rows::LayernormRowsF32) -> i32
            ),
            RuntimeFunction::LayernormRowsF32Avx512 => def!(
                hlojit_runtime::kernels::rows::hlojit_rt_layernorm_rows_f32_avx512,
                unsafe extern "C" fn(*const hlojit_runtime::kernels::rows::LayernormRowsF32) -> i32
            ),
            RuntimeFunction::DotStripsF32Avx2 => def!(
                hlojit_runtime::kernels::dot_strips::hlojit_rt_dot_strips_f32_avx2,
                unsafe extern "C" fn(*const hlojit_runtime::kernels::dot_strips::DotStripsF32, i64, i64)
            ),
            RuntimeFunction::DotStripsF32Avx512 => def!(
                hlojit_runtime::kernels::dot_strips::hlojit_rt_dot_strips_f32_avx512,
                unsafe extern "C" fn(*const hlojit_runtime::kernels::dot_strips::DotStripsF32, i64, i64)
            ),
            RuntimeFunction::SortRows => def!(
                hlojit_runtime::kernels::sort_rows::hlojit_rt_sort_rows,
                unsafe extern "C" fn(*const hlojit_runtime::kernels::sort_rows::SortRows) -> i32
            ),
        }
    }

    #[test]
    fn every_entry_matches_the_runtime_definition_and_is_exported() {
        let exported = symbols::runtime_symbols();
        for f in RuntimeFunction::ALL {
            let (address, signature) = definition(f);
            let (ret, params) = f.signature();
            assert_eq!(
                signature,
                (ret, params.to_vec()),
                "{}: the table's signature is not the runtime's",
                f.name()
            );
            let listed = exported.iter().find(|(name, _)| *name == f.name());
            assert_eq!(
                listed.map(|&(_, a)| a),
                Some(address),
                "{} is not exported as the runtime's function",
                f.name()
            );
        }
        assert!(exported.iter().any(|(name, _)| *name == INTERRUPT_FLAG));
    }

    #[test]
    fn every_generated_call_target_of_the_runtime_is_in_the_table() {
        // The symbols generated code may reference: everything the runtime exports except the
        // entry points that only plugins and hosts call.
        let for_plugins = [
            "XlaCustomCallStatusSetSuccess",
            "XlaCustomCallStatusSetFailure",
            "hlojit_last_error",
            "XLA_FFI_GetApi",
        ];
        for (name, _) in symbols::runtime_symbols() {
            // Libcalls are called by LLVM's own lowering, not through the table.
            if for_plugins.contains(&name) || name == INTERRUPT_FLAG || hlojit_runtime::libcalls::NAMES.contains(&name) {
                continue;
            }
            assert!(
                RuntimeFunction::ALL.iter().any(|f| f.name() == name),
                "{name} is exported but not in the ABI table"
            );
        }
    }

    #[test]
    fn a_declaration_of_another_type_is_an_error() {
        let llvm = inkwell::context::Context::create();
        let cg = Codegen::new(&llvm, "m", false);
        cg.module.add_function(
            "hlojit_rt_alloc",
            cg.fn_type(None, &[]),
            Some(Linkage::External),
        );
        let e = cg.runtime(RuntimeFunction::Alloc).unwrap_err();
        assert!(e.to_string().contains("hlojit_rt_alloc"), "{e}");
        assert!(cg.runtime(RuntimeFunction::Free).is_ok());
        assert!(
            cg.runtime(RuntimeFunction::Free).is_ok(),
            "a second declaration reuses the first"
        );
    }
}
