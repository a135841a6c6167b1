//! The LLVM module being built and the small helpers every emitter uses: constants, blocks,
//! loops, intrinsics and runtime declarations.

use crate::error::{Error, Result};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::{Builder, BuilderError};
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::{Linkage, Module};
use inkwell::types::{BasicMetadataTypeEnum, BasicTypeEnum, FunctionType, IntType, PointerType};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::AddressSpace;

impl From<BuilderError> for Error {
    fn from(e: BuilderError) -> Error {
        Error::Llvm(format!("IR builder: {e}"))
    }
}

/// One LLVM module under construction.
pub struct Codegen<'ctx> {
    pub llvm: &'ctx Context,
    pub module: Module<'ctx>,
    pub b: Builder<'ctx>,
    /// Whether to emit x86 MXCSR control (flush-to-zero) in entry points.
    pub x86: bool,
    /// Bytes in the target's widest SIMD register (16 unless the target says more); the
    /// GEMM micro-kernels size their register tiles by it.
    pub simd_bytes: u32,
    /// Whether the target has AVX512_BF16 (dot products of bf16 pairs into f32).
    pub avx512_bf16: bool,
    /// Whether the target has AVX512-VNNI and AVX-512BW (s8 dot products of byte quads).
    pub avx512_vnni: bool,
    /// Whether the target has AMX tiles with bf16 (`amx-tile`, `amx-bf16`) and s8
    /// (`amx-int8`) products: the runtime's AMX GEMMs are then called (they check the CPU
    /// and fall back to the AVX-512 kernels).
    pub amx_bf16: bool,
    pub amx_int8: bool,
    /// Time every kernel call (a profiling build, see `hlojit_runtime::profile`).
    pub profile: bool,
    /// Whether the target has FMA (with AVX2: the runtime's precompiled AVX2 GEMM applies).
    pub fma: bool,
    /// Whether the target has AVX2 (the runtime's AVX2 GEMMs are compiled for it: a CPU with
    /// AVX and FMA but not AVX2, such as AMD's Piledriver, cannot run them).
    pub avx2: bool,
    /// The target CPU's LLVM name (`znver4`, `skylake-avx512`, ...): its tuning decides the
    /// vector width LLVM's loop vectorizer picks (see `emitters/row_isa.rs`).
    pub cpu: String,
    /// Whether the code goes to the system linker (an AOT object) rather than the JIT: built-in
    /// custom-call targets then get weak definitions (`custom_call/builtin_definition.rs`).
    pub for_linker: bool,
    /// Scratch the kernels being generated hold (see `scratch.rs`).
    pub scratch: std::cell::RefCell<super::scratch::ScratchState<'ctx>>,
    /// The access group of independent kernel loops (see `independent_loops.rs`), made once.
    pub access_group: std::cell::Cell<Option<inkwell::values::MetadataValue<'ctx>>>,
    /// Whether a dot's or convolution's arithmetic was generated into this module rather than
    /// handed to the runtime's precompiled kernels ([`Codegen::mark_generated_product`]): it
    /// then wants LLVM's full pipeline (`backend::optimization`).
    pub generated_products: std::cell::Cell<bool>,
}

impl<'ctx> Codegen<'ctx> {
    pub fn new(llvm: &'ctx Context, name: &str, x86: bool) -> Codegen<'ctx> {
        Codegen {
            llvm,
            module: llvm.create_module(name),
            b: llvm.create_builder(),
            x86,
            simd_bytes: 16,
            avx512_bf16: false,
            avx512_vnni: false,
            amx_bf16: false,
            amx_int8: false,
            profile: false,
            fma: false,
            avx2: false,
            cpu: String::new(),
            for_linker: false,
            scratch: Default::default(),
            access_group: Default::default(),
            generated_products: Default::default(),
        }
    }

    /// Records that a dot's or convolution's arithmetic is generated here (see
    /// [`Codegen::generated_products`]).
    pub fn mark_generated_product(&self) {
        self.generated_products.set(true);
    }

    pub fn i1(&self) -> IntType<'ctx> {
        self.llvm.bool_type()
    }

    pub fn i8(&self) -> IntType<'ctx> {
        self.llvm.i8_type()
    }

    pub fn i32(&self) -> IntType<'ctx> {
        self.llvm.i32_type()
    }

    pub fn i64(&self) -> IntType<'ctx> {
        self.llvm.i64_type()
    }

    /// An integer type of any width (`bits` > 0).
    pub fn int_type(&self, bits: u32) -> IntType<'ctx> {
        let width = std::num::NonZeroU32::new(bits.max(1)).expect("non-zero");
        self.llvm.custom_width_int_type(width).expect("LLVM supports this integer width")
    }

    pub fn ptr(&self) -> PointerType<'ctx> {
        self.llvm.ptr_type(AddressSpace::default())
    }

    pub fn const_i64(&self, v: i64) -> IntValue<'ctx> {
        self.i64().const_int(v as u64, true)
    }

    pub fn const_i32(&self, v: i32) -> IntValue<'ctx> {
        self.i32().const_int(v as u64, true)
    }

    pub fn const_bool(&self, v: bool) -> IntValue<'ctx> {
        self.i1().const_int(v as u64, false)
    }

    pub fn function(&self) -> FunctionValue<'ctx> {
        self.b
            .get_insert_block()
            .and_then(|bb| bb.get_parent())
            .expect("builder is positioned inside a function")
    }

    pub fn block(&self, name: &str) -> BasicBlock<'ctx> {
        self.llvm.append_basic_block(self.function(), name)
    }

    /// Adds a function with internal linkage (or external when `exported`), with the
    /// attributes every generated function gets.
    pub fn add_function(&self, name: &str, ty: FunctionType<'ctx>, exported: bool) -> FunctionValue<'ctx> {
        let linkage = if exported { Linkage::External } else { Linkage::Internal };
        let f = self.module.add_function(name, ty, Some(linkage));
        // XLA:CPU flushes subnormals of f32/f64 arithmetic (FTZ/DAZ); tell LLVM so that constant
        // folding agrees with what the hardware does under the MXCSR we set.
        f.add_attribute(AttributeLoc::Function, self.llvm.create_string_attribute("denormal-fp-math", "preserve-sign,preserve-sign"));
        f.add_attribute(AttributeLoc::Function, self.enum_attr("nounwind"));
        f
    }

    pub fn enum_attr(&self, name: &str) -> Attribute {
        let kind = Attribute::get_named_enum_kind_id(name);
        self.llvm.create_enum_attribute(kind, 0)
    }

    /// Declares (once) a function defined outside this module's code, libm's or a kernel's;
    /// runtime functions are declared through [`crate::codegen::runtime_abi`]. An earlier
    /// declaration of another type (a custom-call target of the same name) is an error rather
    /// than a call with the wrong arguments.
    pub fn external(&self, name: &str, ty: FunctionType<'ctx>) -> Result<FunctionValue<'ctx>> {
        match self.module.get_function(name) {
            Some(f) if f.get_type() == ty => Ok(f),
            Some(_) => Err(Error::Unsupported(format!("function '{name}' is declared with two different types"))),
            None => Ok(self.module.add_function(name, ty, Some(Linkage::External))),
        }
    }

    /// An overloaded LLVM intrinsic for the given types.
    pub fn intrinsic(&self, name: &str, types: &[BasicTypeEnum<'ctx>]) -> Result<FunctionValue<'ctx>> {
        Intrinsic::find(name)
            .and_then(|i| i.get_declaration(&self.module, types))
            .ok_or_else(|| Error::Llvm(format!("intrinsic {name} for {types:?} is not available")))
    }

    /// Calls an intrinsic and returns its value.
    pub fn call_intrinsic(
        &self,
        name: &str,
        types: &[BasicTypeEnum<'ctx>],
        args: &[BasicMetadataValueEnum<'ctx>],
    ) -> Result<BasicValueEnum<'ctx>> {
        let f = self.intrinsic(name, types)?;
        self.call(f, args)
    }

    /// Calls a function returning a value.
    pub fn call(&self, f: FunctionValue<'ctx>, args: &[BasicMetadataValueEnum<'ctx>]) -> Result<BasicValueEnum<'ctx>> {
        self.b
            .build_call(f, args, "")?
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| Error::Llvm(format!("{} returns void", f.get_name().to_string_lossy())))
    }

    /// Calls a function for its effect.
    pub fn call_void(&self, f: FunctionValue<'ctx>, args: &[BasicMetadataValueEnum<'ctx>]) -> Result<()> {
        self.b.build_call(f, args, "")?;
        Ok(())
    }

    pub fn fn_type(&self, ret: Option<BasicTypeEnum<'ctx>>, params: &[BasicMetadataTypeEnum<'ctx>]) -> FunctionType<'ctx> {
        match ret {
            Some(r) => {
                use inkwell::types::BasicType;
                r.fn_type(params, false)
            }
            None => self.llvm.void_type().fn_type(params, false),
        }
    }

    /// Pointer to element `index` of an array of `elem` at `base`.
    pub fn gep(&self, elem: BasicTypeEnum<'ctx>, base: PointerValue<'ctx>, index: IntValue<'ctx>) -> Result<PointerValue<'ctx>> {
        // SAFETY (LLVM-level): indices come from in-bounds loop nests and clamped dynamic indices.
        Ok(unsafe { self.b.build_in_bounds_gep(elem, base, &[index], "")? })
    }

    /// Pointer `bytes` bytes past `base`.
    pub fn byte_offset(&self, base: PointerValue<'ctx>, bytes: i64) -> Result<PointerValue<'ctx>> {
        if bytes == 0 {
            return Ok(base);
        }
        self.gep(self.i8().into(), base, self.const_i64(bytes))
    }

    /// Emits `if cond { then() }`.
    pub fn if_then(&self, name: &str, cond: IntValue<'ctx>, then: impl FnOnce() -> Result<()>) -> Result<()> {
        let then_bb = self.block(&format!("{name}.then"));
        let done = self.block(&format!("{name}.done"));
        self.b.build_conditional_branch(cond, then_bb, done)?;
        self.b.position_at_end(then_bb);
        then()?;
        self.b.build_unconditional_branch(done)?;
        self.b.position_at_end(done);
        Ok(())
    }

    /// Emits `cond ? then() : otherwise()` with real control flow, so that the untaken side
    /// (say, a load at an out-of-bounds index) never runs.
    pub fn if_else_value(
        &self,
        name: &str,
        cond: IntValue<'ctx>,
        then: impl FnOnce() -> Result<BasicValueEnum<'ctx>>,
        otherwise: impl FnOnce() -> Result<BasicValueEnum<'ctx>>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let then_bb = self.block(&format!("{name}.then"));
        let else_bb = self.block(&format!("{name}.else"));
        let done = self.block(&format!("{name}.done"));
        self.b.build_conditional_branch(cond, then_bb, else_bb)?;
        self.b.position_at_end(then_bb);
        let a = then()?;
        let a_end = self.b.get_insert_block().expect("positioned");
        self.b.build_unconditional_branch(done)?;
        self.b.position_at_end(else_bb);
        let c = otherwise()?;
        let c_end = self.b.get_insert_block().expect("positioned");
        self.b.build_unconditional_branch(done)?;
        self.b.position_at_end(done);
        let phi = self.b.build_phi(a.get_type(), name)?;
        phi.add_incoming(&[(&a, a_end), (&c, c_end)]);
        Ok(phi.as_basic_value())
    }

    /// A stack slot in the function's entry block (so that LLVM promotes it to a register).
    pub fn entry_alloca(&self, ty: BasicTypeEnum<'ctx>, name: &str) -> Result<PointerValue<'ctx>> {
        let f = self.function();
        let entry = f.get_first_basic_block().expect("function has an entry block");
        let tmp = self.llvm.create_builder();
        match entry.get_first_instruction() {
            Some(first) => tmp.position_before(&first),
            None => tmp.position_at_end(entry),
        }
        Ok(tmp.build_alloca(ty, name)?)
    }

    /// Clamps `v` into `[lo, hi]` (signed).
    pub fn clamp_i64(&self, v: IntValue<'ctx>, lo: IntValue<'ctx>, hi: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        let smax = self.call_intrinsic("llvm.smax", &[self.i64().into()], &[v.into(), lo.into()])?.into_int_value();
        Ok(self.call_intrinsic("llvm.smin", &[self.i64().into()], &[smax.into(), hi.into()])?.into_int_value())
    }
}
