//! Modules that need no machine code. A kernel that runs a precompiled GEMM or convolution
//! only fills a descriptor and calls the runtime (`emitters/gemm/precompiled*.rs`); a module
//! made of such kernels alone (a matmul, a batched matmul, a convolution) would still pay
//! LLVM's fixed cost — its optimization pipeline and code generator, ~5 ms for two tiny
//! functions, where XLA:CPU takes ~9 ms for the whole compile. Like XLA:CPU's thunks for
//! library calls, such a module runs as a program of runtime calls instead.
//!
//! The program is read off the kernels' own generated (unoptimized) IR, not rebuilt beside the
//! emitters: a kernel qualifies when its body is straight-line code that loads buffer
//! addresses from the table, stores constants and those addresses into stack descriptors and
//! passes descriptors to `hlojit_rt_*` functions — nothing else. Whatever the emitters decide,
//! the calls replayed are exactly the ones the code would make, with the same descriptors.

use crate::codegen::function::KernelInfo;
use crate::codegen::plan::{step_of, LoweringPlan, Step};
use crate::hlo::Module;
use crate::passes::buffer_assignment::{Allocation, BufferAssignment};
use llvm_sys::core::*;
use llvm_sys::prelude::LLVMValueRef;
use llvm_sys::{LLVMOpcode, LLVMTypeKind};
use std::collections::HashMap;

/// One descriptor field: a constant, or the address of a buffer (by its table slot while
/// reading the IR, by parameter or result leaf or place in the temporary arena in the program).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Const(i64),
    Slot(usize),
    Parameter(usize),
    Result(usize),
    /// `size` bytes at `offset` in the arena of temporaries, allocated for each run.
    Temp { offset: i64, size: i64 },
}

/// One runtime call: the function's name and its descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub function: String,
    pub fields: Vec<Field>,
}

/// What a value of the kernel means while its IR is read.
#[derive(Clone, Copy)]
enum Sym {
    /// Address of table entry `k`.
    TableEntry(usize),
    /// The buffer address table entry `k` holds (as a pointer or an integer).
    Buffer(usize),
    /// Address of field `field` of descriptor `desc`.
    Desc { desc: usize, field: usize },
}

/// The runtime calls a kernel function makes, if it makes nothing but such calls.
pub fn kernel_calls(function: inkwell::values::FunctionValue) -> Option<Vec<Call>> {
    use inkwell::values::AsValueRef;
    let f = function.as_value_ref();
    // SAFETY: read-only walks of a function the caller owns; every value asked about is an
    // instruction or operand of it, and each accessor is used on the kind it is for.
    unsafe {
        if LLVMCountBasicBlocks(f) != 1 || LLVMCountParams(f) < 1 {
            return None;
        }
        let table = LLVMGetParam(f, 0);
        let mut syms: HashMap<LLVMValueRef, Sym> = HashMap::new();
        let mut descs: Vec<Vec<Option<Field>>> = Vec::new();
        let mut calls = Vec::new();
        let mut i = LLVMGetFirstInstruction(LLVMGetFirstBasicBlock(f));
        while !i.is_null() {
            let operand = |n: u32| LLVMGetOperand(i, n);
            let constant = |v: LLVMValueRef| (!LLVMIsAConstantInt(v).is_null()).then(|| LLVMConstIntGetSExtValue(v));
            let eight_bytes = |t| match LLVMGetTypeKind(t) {
                LLVMTypeKind::LLVMPointerTypeKind => LLVMGetPointerAddressSpace(t) == 0,
                LLVMTypeKind::LLVMIntegerTypeKind => LLVMGetIntTypeWidth(t) == 64,
                _ => false,
            };
            match LLVMGetInstructionOpcode(i) {
                LLVMOpcode::LLVMAlloca => {
                    let t = LLVMGetAllocatedType(i);
                    if LLVMGetTypeKind(t) != LLVMTypeKind::LLVMArrayTypeKind || !eight_bytes(LLVMGetElementType(t)) || LLVMGetTypeKind(LLVMGetElementType(t)) != LLVMTypeKind::LLVMIntegerTypeKind {
                        return None;
                    }
                    if constant(operand(0)) != Some(1) {
                        return None;
                    }
                    syms.insert(i, Sym::Desc { desc: descs.len(), field: 0 });
                    descs.push(vec![None; LLVMGetArrayLength2(t) as usize]);
                }
                LLVMOpcode::LLVMGetElementPtr => {
                    if LLVMGetNumOperands(i) != 2 || !eight_bytes(LLVMGetGEPSourceElementType(i)) {
                        return None;
                    }
                    let step = usize::try_from(constant(operand(1))?).ok()?;
                    let sym = match (operand(0) == table, syms.get(&operand(0))) {
                        (true, _) => Sym::TableEntry(step),
                        (false, Some(Sym::Desc { desc, field })) => Sym::Desc { desc: *desc, field: field + step },
                        _ => return None,
                    };
                    syms.insert(i, sym);
                }
                LLVMOpcode::LLVMLoad => match (syms.get(&operand(0)), LLVMGetTypeKind(LLVMTypeOf(i))) {
                    (Some(Sym::TableEntry(k)), LLVMTypeKind::LLVMPointerTypeKind) => {
                        syms.insert(i, Sym::Buffer(*k));
                    }
                    _ => return None,
                },
                LLVMOpcode::LLVMPtrToInt => match syms.get(&operand(0)) {
                    Some(Sym::Buffer(k)) if eight_bytes(LLVMTypeOf(i)) => {
                        syms.insert(i, Sym::Buffer(*k));
                    }
                    _ => return None,
                },
                LLVMOpcode::LLVMStore => {
                    let Some(Sym::Desc { desc, field }) = syms.get(&operand(1)).copied() else { return None };
                    let value = operand(0);
                    if LLVMGetTypeKind(LLVMTypeOf(value)) != LLVMTypeKind::LLVMIntegerTypeKind || LLVMGetIntTypeWidth(LLVMTypeOf(value)) != 64 {
                        return None;
                    }
                    let v = match (constant(value), syms.get(&value)) {
                        (Some(c), _) => Field::Const(c),
                        (None, Some(Sym::Buffer(k))) => Field::Slot(*k),
                        _ => return None,
                    };
                    *descs.get_mut(desc)?.get_mut(field)? = Some(v);
                }
                LLVMOpcode::LLVMCall => {
                    // One argument (a whole descriptor), then the callee.
                    let callee = LLVMGetCalledValue(i);
                    if LLVMGetNumOperands(i) != 2 || LLVMIsAFunction(callee).is_null() {
                        return None;
                    }
                    let mut len = 0;
                    let name = std::str::from_utf8(std::slice::from_raw_parts(LLVMGetValueName2(callee, &mut len) as *const u8, len)).ok()?;
                    let Some(Sym::Desc { desc, field: 0 }) = syms.get(&operand(0)).copied() else { return None };
                    // Its status unused: the caller asks `hlojit_rt_take_failure` (as the entry does).
                    if !name.starts_with("hlojit_rt_") || !LLVMGetFirstUse(i).is_null() {
                        return None;
                    }
                    let fields = descs[desc].iter().copied().collect::<Option<Vec<Field>>>()?;
                    calls.push(Call { function: name.to_string(), fields });
                }
                LLVMOpcode::LLVMRet if LLVMGetNumOperands(i) == 0 => {}
                _ => return None,
            }
            i = LLVMGetNextInstruction(i);
        }
        Some(calls)
    }
}

/// The calls the entry makes when the whole module is runtime calls: one function (no loops,
/// conditionals or calls), every buffer a parameter, a result or a temporary (no constants or
/// result copies), every step a kernel run on the calling thread whose body is only runtime
/// calls. `kernels` are the module's kernels with the calls each makes (`None`: other code).
pub fn entry_calls(module: &Module, plan: &LoweringPlan, kernels: &[(KernelInfo, Option<Vec<Call>>)]) -> Option<Vec<Call>> {
    let [fp] = plan.functions.as_slice() else { return None };
    let a = &fp.assignment;
    if !a.result_copies.is_empty() {
        return None;
    }
    let comp = module.computation(fp.comp);
    let mut calls = Vec::new();
    for &id in &fp.schedule {
        match step_of(comp, id) {
            Step::None => {}
            Step::Kernel => {
                let (info, kernel_calls) = kernels.get(*fp.kernels.get(&id)?)?;
                if info.parallel_split().is_some() {
                    return None;
                }
                for call in kernel_calls.as_ref()? {
                    let fields = call.fields.iter().map(|f| buffer_field(a, *f)).collect::<Option<Vec<Field>>>()?;
                    calls.push(Call { function: call.function.clone(), fields });
                }
            }
            _ => return None,
        }
    }
    Some(calls)
}

/// A field with its table slot named by the parameter or result leaf it is.
fn buffer_field(a: &BufferAssignment, f: Field) -> Option<Field> {
    let Field::Slot(mut s) = f else { return Some(f) };
    for _ in 0..=a.slots.len() {
        match a.slots.get(s)?.allocation {
            Allocation::Parameter(n) => return Some(Field::Parameter(n)),
            Allocation::Result(n) => return Some(Field::Result(n)),
            Allocation::Alias(t) => s = t,
            Allocation::Temp { offset, size } => return Some(Field::Temp { offset, size }),
            Allocation::Constant(_) => return None,
        }
    }
    None
}

/// A runtime function taking a descriptor; non-zero when it recorded a failure.
type DescriptorFn = unsafe extern "C" fn(*const i64) -> i32;

/// The entry of a module of runtime calls, as the generated entry would run them: under the
/// entry's floating-point mode (flush-to-zero and denormals-are-zero, XLA:CPU's), each call's
/// failure collected before the next.
pub fn program(calls: &[Call]) -> Option<hlojit_runtime::executor::EntryProgram> {
    let symbols = hlojit_runtime::symbols::runtime_symbols();
    /// A field as a run fills it in.
    enum Arg {
        Const(i64),
        Parameter(usize),
        Result(usize),
        Temp(i64),
    }
    // The arena the generated entry would allocate: up to the end of the last temporary.
    let arena_bytes = calls.iter().flat_map(|c| &c.fields).filter_map(|f| match *f {
        Field::Temp { offset, size } => Some(offset.checked_add(size)?),
        _ => None,
    });
    let arena_bytes = arena_bytes.max().unwrap_or(0);
    let mut resolved: Vec<(DescriptorFn, Vec<Arg>)> = Vec::with_capacity(calls.len());
    for call in calls {
        let args = call
            .fields
            .iter()
            .map(|f| match *f {
                Field::Const(c) => Some(Arg::Const(c)),
                Field::Parameter(n) => Some(Arg::Parameter(n)),
                Field::Result(n) => Some(Arg::Result(n)),
                Field::Temp { offset, .. } => Some(Arg::Temp(offset)),
                Field::Slot(_) => None,
            })
            .collect::<Option<Vec<Arg>>>()?;
        let &(_, address) = symbols.iter().find(|(n, _)| *n == call.function)?;
        // SAFETY: the generated code called this runtime function with one descriptor pointer
        // and an i32 result (checked when the IR was read).
        let f = unsafe { std::mem::transmute::<usize, DescriptorFn>(address) };
        resolved.push((f, args));
    }
    Some(std::sync::Arc::new(move |params: *const *const u8, results: *const *mut u8| {
        let _mode = FlushDenormals::enter();
        let arena = Arena::new(arena_bytes);
        if arena.base.is_null() {
            // hlojit_rt_alloc recorded the failure with the size, as in the generated entry.
            return 1;
        }
        let mut desc: Vec<i64> = Vec::new();
        for (f, args) in &resolved {
            desc.clear();
            // SAFETY: the executor passes tables with one pointer per parameter and result leaf.
            desc.extend(args.iter().map(|arg| unsafe {
                match *arg {
                    Arg::Const(c) => c,
                    Arg::Parameter(n) => *params.add(n) as i64,
                    Arg::Result(n) => *results.add(n) as i64,
                    Arg::Temp(offset) => arena.base as i64 + offset,
                }
            }));
            // SAFETY: the descriptor is the one the kernel would have built for this call.
            unsafe { f(desc.as_ptr()) };
            let status = hlojit_runtime::symbols::hlojit_rt_take_failure();
            if status != 0 {
                return status;
            }
        }
        0
    }))
}

/// The arena of temporaries for one run, from the runtime's allocator (as the generated
/// entry's `hlojit_rt_alloc`), freed when the run ends.
struct Arena {
    base: *mut u8,
    bytes: i64,
}

impl Arena {
    fn new(bytes: i64) -> Arena {
        Arena { base: hlojit_runtime::symbols::hlojit_rt_alloc(bytes), bytes }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        if self.bytes > 0 && !self.base.is_null() {
            // SAFETY: allocated by hlojit_rt_alloc with this size, no longer used.
            unsafe { hlojit_runtime::symbols::hlojit_rt_free(self.base, self.bytes) };
        }
    }
}

/// The entry's floating-point mode for the calls, the caller's back afterwards (as the
/// generated entry's `stmxcsr` / `ldmxcsr` do).
struct FlushDenormals {
    #[cfg(target_arch = "x86_64")]
    saved: u32,
}

impl FlushDenormals {
    /// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6).
    #[cfg(target_arch = "x86_64")]
    const BITS: u32 = 0x8040;

    fn enter() -> FlushDenormals {
        #[cfg(target_arch = "x86_64")]
        {
            let saved = mxcsr();
            set_mxcsr(saved | Self::BITS);
            FlushDenormals { saved }
        }
        #[cfg(not(target_arch = "x86_64"))]
        FlushDenormals {}
    }
}

impl Drop for FlushDenormals {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        set_mxcsr(self.saved);
    }
}

#[cfg(target_arch = "x86_64")]
fn mxcsr() -> u32 {
    let mut v: u32 = 0;
    // SAFETY: stmxcsr stores the 32-bit control register to the given address.
    unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut v, options(nostack)) };
    v
}

#[cfg(target_arch = "x86_64")]
fn set_mxcsr(v: u32) {
    // SAFETY: ldmxcsr loads a valid control word (the saved one with two mode bits set).
    unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &v, options(nostack)) };
}

#[cfg(test)]
#[path = "library_program_tests.rs"]
mod tests;
