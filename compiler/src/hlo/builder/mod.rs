//! Building HLO modules from Rust, in the spirit of XLA's `XlaBuilder`.
//!
//! A [`Builder`] makes one computation; every op method appends an instruction and returns an
//! [`Op`] handle that knows its shape. Shapes are inferred with [`crate::hlo::shape_inference`]
//! (the rules the verifier checks), so a wrong rank, mismatched dimensions or bad dimension
//! numbers fail at the call that made them, as an [`Error::Build`] naming the Rust call site and
//! the op. [`Builder::build`] turns the computation into a [`Module`] that verifies, prints as
//! HLO text ([`crate::hlo::text::print_module`]) and compiles.
//!
//! ```
//! use hlojit_compiler::hlo::builder::Builder;
//! use hlojit_runtime::{ElementType::F32, Shape};
//!
//! let b = Builder::new("affine");
//! let x = b.parameter(0, Shape::array(F32, [8, 32]), "x")?;
//! let w = b.parameter(1, Shape::array(F32, [32, 4]), "w")?;
//! let bias = b.parameter(2, Shape::array(F32, [4]), "bias")?;
//! let y = b.dot(&x, &w)?;
//! // The bias vector matches dimension 1 of the 8x4 product (seed 002's "InDim" broadcast).
//! let z = b.add_in_dim(&y, &bias, &[1])?;
//! assert_eq!(z.dims(), &[8, 4]);
//! let module = b.build(&z)?;
//! assert!(module.to_string().contains("dot("));
//! # Ok::<(), hlojit_compiler::Error>(())
//! ```
//!
//! Every op returns a `Result`: errors surface with `?` where they happen, and an `Op` always
//! has a real shape (XLA's builder records the first error and reports it at `Build`, which
//! leaves every later op with an unknown shape). Ops that call computations (reduce, sort,
//! map, scatter, while, conditional, ...) take Rust closures that build them with a nested
//! builder: `b.reduce(&x, &zero, &[1], |r, p| r.add(&p[0], &p[1]))`.
//!
//! Binary and comparison ops broadcast as seed 002 prescribes (see [`broadcast`]); `expand`
//! and `repeat` follow seed 003 (see [`expand`]).

#![warn(missing_docs)]

mod batch_norm;
pub mod broadcast;
mod collectives;
mod constant;
mod control;
mod elementwise;
pub mod expand;
mod gather_scatter;
mod linalg;
mod reduce;
mod rng_io;
mod shape_ops;

#[cfg(test)]
mod tests;

pub use control::CustomCallOptions;

use crate::error::{Error, Result};
use crate::hlo::attributes::Attributes;
use crate::hlo::computation::Computation;
use crate::hlo::instruction::{CompId, InstrId, Instruction};
use crate::hlo::module::{AliasEntry, AliasKind, Module, ProgramShape};
use crate::hlo::opcode::Opcode;
use crate::hlo::shape_inference::{infer_shape, signature};
use hlojit_runtime::{ElementType, Shape};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::panic::Location;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The Rust call site an error is reported at.
type At = &'static Location<'static>;

/// Identifies builders (and so the computation an [`Op`] belongs to) across the process.
static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

fn next_key() -> u64 {
    NEXT_KEY.fetch_add(1, Ordering::Relaxed)
}

fn build_error(at: At, message: impl Into<String>) -> Error {
    Error::Build { location: format!("{}:{}:{}", at.file(), at.line(), at.column()), message: message.into() }
}

/// A handle to an instruction made by a [`Builder`]: pass it to later ops of the same
/// builder. It carries the instruction's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    id: InstrId,
    owner: u64,
    name: Rc<str>,
    shape: Shape,
}

impl Op {
    /// The result shape (arrays carry no layout unless one was given to a parameter).
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The element type of an array result; `None` for tuples and tokens.
    pub fn element_type(&self) -> Option<ElementType> {
        self.shape.element_type()
    }

    /// The dimension sizes of an array result (empty for scalars, tuples and tokens).
    pub fn dims(&self) -> &[i64] {
        self.shape.dims()
    }

    /// The number of dimensions of an array result.
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    /// The instruction's name in the printed HLO (without `%`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The instruction's id in its computation.
    pub fn id(&self) -> InstrId {
        self.id
    }
}

/// A computation made with [`Builder::computation`], for [`Builder::call`] and
/// [`Builder::composite_call`].
#[derive(Clone, Debug, PartialEq)]
pub struct SubComputation {
    id: CompId,
    module: u64,
    name: String,
    signature: ProgramShape,
}

impl SubComputation {
    /// The computation's name in the printed HLO.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Parameter shapes and result shape.
    pub fn signature(&self) -> &ProgramShape {
        &self.signature
    }
}

/// State the builders of one module share: finished sub-computations and the names in use.
struct Shared {
    key: u64,
    module_name: String,
    computations: RefCell<Vec<Computation>>,
    names: RefCell<HashSet<String>>,
    counter: Cell<u64>,
}

impl Shared {
    /// `base.N` with a module-wide N, XLA's naming style; never a name already in use.
    fn fresh_name(&self, base: &str) -> String {
        let mut names = self.names.borrow_mut();
        loop {
            let n = self.counter.get();
            self.counter.set(n + 1);
            let name = format!("{base}.{n}");
            if names.insert(name.clone()) {
                return name;
            }
        }
    }

    /// `wanted` itself when free, else a fresh variant of it.
    fn claim_name(&self, wanted: &str) -> String {
        if self.names.borrow_mut().insert(wanted.to_string()) {
            return wanted.to_string();
        }
        self.fresh_name(wanted)
    }

    fn signature(&self, id: CompId) -> ProgramShape {
        signature(&self.computations.borrow()[id.index()])
    }
}

/// A name HLO text accepts: `[A-Za-z_][A-Za-z0-9_.-]*`, other characters replaced by `_`.
fn sanitize(name: &str) -> String {
    let mut out: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') { c } else { '_' }).collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        out.insert(0, '_');
    }
    out
}

/// An `input_output_alias` entry waiting for [`Builder::build`] to check it against the root.
struct PendingAlias {
    entry: AliasEntry,
    at: At,
}

/// Builds one HLO computation; the top-level builder ([`Builder::new`]) builds the entry and
/// the module, nested builders (handed to closures) build called computations.
///
/// Ops take `&self`, so a builder needs no `mut` binding and closures for sub-computations
/// can run while the caller's builder is borrowed.
pub struct Builder {
    shared: Rc<Shared>,
    key: u64,
    is_entry: bool,
    comp: RefCell<Computation>,
    parameter_numbers: RefCell<HashSet<i64>>,
    aliases: RefCell<Vec<PendingAlias>>,
    misuse: RefCell<Option<Error>>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder").field("computation", &self.comp.borrow().name).finish_non_exhaustive()
    }
}

impl Builder {
    /// A builder for a module named `name` (sanitized to an HLO identifier); its entry
    /// computation takes the same name.
    pub fn new(name: &str) -> Builder {
        let module_name = sanitize(name);
        let shared = Rc::new(Shared {
            key: next_key(),
            module_name: module_name.clone(),
            computations: RefCell::new(Vec::new()),
            names: RefCell::new(HashSet::new()),
            counter: Cell::new(1),
        });
        let comp_name = shared.claim_name(&module_name);
        Builder::with_shared(shared, comp_name, true)
    }

    fn with_shared(shared: Rc<Shared>, comp_name: String, is_entry: bool) -> Builder {
        Builder {
            shared,
            key: next_key(),
            is_entry,
            comp: RefCell::new(Computation::new(comp_name)),
            parameter_numbers: RefCell::new(HashSet::new()),
            aliases: RefCell::new(Vec::new()),
            misuse: RefCell::new(None),
        }
    }

    /// The name of the computation being built.
    pub fn name(&self) -> String {
        self.comp.borrow().name.clone()
    }

    /// Declares parameter `number` of `shape`, printed as `%name` (sanitized; made unique if
    /// taken). Parameters must end up numbered `0..N`; a layout on `shape` is kept (it becomes
    /// the entry's parameter layout).
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::S32, Shape};
    /// let b = Builder::new("m");
    /// let x = b.parameter(0, Shape::array(S32, [3]), "x")?;
    /// assert!(b.parameter(0, Shape::array(S32, [3]), "y").is_err()); // number 0 is taken
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn parameter(&self, number: i64, shape: Shape, name: &str) -> Result<Op> {
        let at = Location::caller();
        if number < 0 {
            return Err(build_error(at, format!("parameter: number {number} is negative")));
        }
        if !self.parameter_numbers.borrow_mut().insert(number) {
            return Err(build_error(at, format!("parameter: number {number} is already declared")));
        }
        let name = self.shared.claim_name(&sanitize(if name.is_empty() { "parameter" } else { name }));
        let attrs = Attributes { parameter_number: Some(number), ..Attributes::default() };
        let mut shape = shape;
        if let Shape::Array(a) = &mut shape {
            // Hand-made shapes may leave the dynamic flags short.
            a.dynamic.resize(a.dims.len(), false);
        }
        let result = self.emit_named(at, Some(name.clone()), Opcode::Parameter, &[], attrs, &[], Some(&shape));
        match result {
            Ok(mut op) => {
                // The declared shape, layout included (inference drops layouts).
                self.comp.borrow_mut().get_mut(op.id).shape = shape.clone();
                op.shape = shape;
                Ok(op)
            }
            Err(e) => {
                self.parameter_numbers.borrow_mut().remove(&number);
                Err(e)
            }
        }
    }

    /// Builds a computation to call with [`Builder::call`]: `body` gets a nested builder and
    /// one parameter op per shape in `parameters`, and returns the root.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let square = b.computation("square", &[Shape::array(F32, [2])], |c, p| c.mul(&p[0], &p[0]))?;
    /// let x = b.parameter(0, Shape::array(F32, [2]), "x")?;
    /// let y = b.call(&square, &[&x])?;
    /// assert_eq!(y.dims(), &[2]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn computation(
        &self,
        name: &str,
        parameters: &[Shape],
        body: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<SubComputation> {
        let at = Location::caller();
        let id = self.region(at, &sanitize(name), parameters, body)?;
        let comps = self.shared.computations.borrow();
        let comp = &comps[id.index()];
        Ok(SubComputation { id, module: self.shared.key, name: comp.name.clone(), signature: signature(comp) })
    }

    /// Records an `input_output_alias` entry of the module: output `output_index` (a tuple
    /// index path into the root, `&[]` for an array root) may share (or, with
    /// [`AliasKind::MustAlias`], must share) the buffer of parameter `parameter` at
    /// `parameter_index`. Checked by [`Builder::build`] against the root: both ends must exist
    /// and have equal shapes, and no output may be aliased twice.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::{builder::Builder, AliasKind};
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("update");
    /// let state = b.parameter(0, Shape::array(F32, [4]), "state")?;
    /// let next = b.add(&state, &b.scalar(F32, 1.0)?)?;
    /// b.set_input_output_alias(&[], 0, &[], AliasKind::MayAlias);
    /// let m = b.build(&next)?;
    /// assert!(m.to_string().contains("input_output_alias={ {}: (0, {}, may-alias) }"));
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn set_input_output_alias(
        &self,
        output_index: &[i64],
        parameter: i64,
        parameter_index: &[i64],
        kind: AliasKind,
    ) {
        let at = Location::caller();
        if !self.is_entry {
            self.misuse.borrow_mut().get_or_insert_with(|| {
                build_error(at, "set_input_output_alias: aliases belong to the entry computation, not to a nested one")
            });
            return;
        }
        let entry = AliasEntry {
            output_index: output_index.to_vec(),
            parameter,
            parameter_index: parameter_index.to_vec(),
            kind,
        };
        self.aliases.borrow_mut().push(PendingAlias { entry, at });
    }

    /// Makes the module with `root` as the entry's result. Computations no op calls are left
    /// out; the module is verified before it is returned. The builder stays usable: building
    /// again after more ops gives a module with those ops too.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let x = b.parameter(0, Shape::array(F32, [2, 3]), "x")?;
    /// let y = b.neg(&x)?;
    /// let module = b.build(&y)?;
    /// let text = module.to_string();
    /// assert!(text.starts_with("HloModule m"));
    /// assert!(text.contains("ROOT %negate.1 = f32[2,3] negate(%x)"));
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn build(&self, root: &Op) -> Result<Module> {
        let at = Location::caller();
        let entry = self.finish(at, "the entry computation", root)?;
        let mut module = Module::new(self.shared.module_name.clone());
        module.computations = self.shared.computations.borrow().clone();
        module.entry = module.add_computation(entry);
        drop_uncalled_computations(&mut module);
        let root_shape = module.entry_computation().result_shape().clone();
        let params = module.entry_computation().parameter_shapes();
        let mut aliased_outputs = HashSet::new();
        for PendingAlias { entry, at } in self.aliases.borrow().iter() {
            let (entry, at) = (entry.clone(), *at);
            check_alias(&entry, &root_shape, &params)
                .map_err(|m| build_error(at, format!("set_input_output_alias: {m}")))?;
            if !aliased_outputs.insert(entry.output_index.clone()) {
                return Err(build_error(
                    at,
                    format!("set_input_output_alias: output {} is already aliased", index_text(&entry.output_index)),
                ));
            }
            module.input_output_alias.push(entry);
        }
        crate::hlo::verify_module(&module)
            .map_err(|e| build_error(at, format!("build: the built module does not verify: {e}")))?;
        Ok(module)
    }

    /// Checks the computation's root and parameters and returns it.
    fn finish(&self, at: At, what: &str, root: &Op) -> Result<Computation> {
        if let Some(e) = self.misuse.borrow().clone() {
            return Err(e);
        }
        if root.owner != self.key {
            return Err(build_error(
                at,
                format!(
                    "{what} must return an op made by its own builder, but %{} belongs to another computation",
                    root.name
                ),
            ));
        }
        let mut numbers: Vec<i64> = self.parameter_numbers.borrow().iter().copied().collect();
        numbers.sort_unstable();
        if numbers.iter().enumerate().any(|(i, &n)| n != i as i64) {
            return Err(build_error(
                at,
                format!("{what}: parameters are numbered {numbers:?}; they must be numbered 0..N without gaps"),
            ));
        }
        let mut comp = self.comp.borrow().clone();
        comp.root = root.id;
        Ok(comp)
    }

    /// Builds a called computation with a nested builder: one parameter per shape in
    /// `parameters`, root returned by `body`.
    fn region(
        &self,
        at: At,
        hint: &str,
        parameters: &[Shape],
        body: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<CompId> {
        let name = self.shared.fresh_name(hint);
        let child = Builder::with_shared(self.shared.clone(), name, false);
        let params = parameters
            .iter()
            .enumerate()
            .map(|(i, s)| child.parameter_at(at, i as i64, s.clone(), &format!("Arg_{i}")))
            .collect::<Result<Vec<Op>>>()?;
        let root = body(&child, &params)?;
        let comp = child.finish(at, &format!("the {hint} computation"), &root)?;
        let mut comps = self.shared.computations.borrow_mut();
        comps.push(comp);
        Ok(CompId(comps.len() as u32 - 1))
    }

    fn parameter_at(&self, at: At, number: i64, shape: Shape, base: &str) -> Result<Op> {
        self.parameter_numbers.borrow_mut().insert(number);
        let name = self.shared.fresh_name(base);
        let attrs = Attributes { parameter_number: Some(number), ..Attributes::default() };
        self.emit_named(at, Some(name), Opcode::Parameter, &[], attrs, &[], Some(&shape))
    }

    /// Checks that a sub-computation handle belongs to this module.
    fn check_sub(&self, at: At, op: Opcode, sub: &SubComputation) -> Result<CompId> {
        if sub.module != self.shared.key {
            return Err(build_error(at, format!("{op}: computation %{} belongs to another module", sub.name)));
        }
        Ok(sub.id)
    }

    /// Appends an instruction whose shape is inferred from its operands, attributes and called
    /// computations (`declared` for ops whose result is not derivable).
    fn emit(
        &self,
        at: At,
        opcode: Opcode,
        operands: &[&Op],
        attrs: Attributes,
        called: &[CompId],
        declared: Option<&Shape>,
    ) -> Result<Op> {
        self.emit_named(at, None, opcode, operands, attrs, called, declared)
    }

    #[allow(clippy::too_many_arguments)]
    fn emit_named(
        &self,
        at: At,
        name: Option<String>,
        opcode: Opcode,
        operands: &[&Op],
        attrs: Attributes,
        called: &[CompId],
        declared: Option<&Shape>,
    ) -> Result<Op> {
        self.check_operands(at, opcode, operands)?;
        let signatures: Vec<ProgramShape> = called.iter().map(|&c| self.shared.signature(c)).collect();
        let signature_refs: Vec<&ProgramShape> = signatures.iter().collect();
        let shapes: Vec<&Shape> = operands.iter().map(|o| &o.shape).collect();
        let shape = infer_shape(opcode, &shapes, &attrs, &signature_refs, declared).map_err(|m| build_error(at, m))?;
        let name = name.unwrap_or_else(|| self.shared.fresh_name(opcode.name()));
        let mut inst = Instruction::new(name.clone(), opcode, shape.clone(), operands.iter().map(|o| o.id).collect());
        inst.called = called.to_vec();
        inst.attrs = attrs;
        let id = self.comp.borrow_mut().add(inst);
        Ok(Op { id, owner: self.key, name: name.into(), shape })
    }

    /// Operands must come from this builder: an op of another computation is not in scope.
    fn check_operands(&self, at: At, opcode: impl std::fmt::Display, operands: &[&Op]) -> Result<()> {
        for (i, o) in operands.iter().enumerate() {
            if o.owner != self.key {
                return Err(build_error(
                    at,
                    format!(
                        "{opcode}: operand {i} (%{}) belongs to another computation than %{}; ops can only use ops of their own builder",
                        o.name,
                        self.comp.borrow().name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The array shape of an operand, or an error naming the op.
    fn array_operand<'a>(
        &self,
        at: At,
        op: impl std::fmt::Display,
        what: &str,
        x: &'a Op,
    ) -> Result<&'a hlojit_runtime::ArrayShape> {
        x.shape
            .as_array()
            .ok_or_else(|| build_error(at, format!("{op}: {what} must be an array, got {}", x.shape.to_text(false))))
    }
}

/// Removes computations no instruction reachable from the entry calls (left behind by ops
/// whose construction failed after their closures ran), renumbering the rest.
fn drop_uncalled_computations(module: &mut Module) {
    let reachable: HashSet<CompId> = module.computation_post_order().into_iter().collect();
    if reachable.len() == module.computations.len() {
        return;
    }
    let mut map = HashMap::new();
    let old = std::mem::take(&mut module.computations);
    for (i, comp) in old.into_iter().enumerate() {
        if reachable.contains(&CompId(i as u32)) {
            map.insert(CompId(i as u32), CompId(module.computations.len() as u32));
            module.computations.push(comp);
        }
    }
    for comp in &mut module.computations {
        for inst in &mut comp.instructions {
            for c in &mut inst.called {
                *c = map[c];
            }
        }
    }
    module.entry = map[&module.entry];
}

fn index_text(index: &[i64]) -> String {
    format!("{{{}}}", index.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
}

fn subshape<'a>(shape: &'a Shape, index: &[i64]) -> Option<&'a Shape> {
    let path: Option<Vec<usize>> = index.iter().map(|&i| usize::try_from(i).ok()).collect();
    shape.subshape(&path?)
}

/// An alias names an existing output and parameter piece of equal shapes.
fn check_alias(entry: &AliasEntry, root: &Shape, params: &[Shape]) -> std::result::Result<(), String> {
    let output = subshape(root, &entry.output_index)
        .ok_or_else(|| format!("output {} does not exist in the result {}", index_text(&entry.output_index), root))?;
    let param = usize::try_from(entry.parameter)
        .ok()
        .and_then(|p| params.get(p))
        .ok_or_else(|| format!("parameter {} does not exist ({} parameters)", entry.parameter, params.len()))?;
    let input = subshape(param, &entry.parameter_index).ok_or_else(|| {
        format!(
            "index {} does not exist in parameter {} of shape {}",
            index_text(&entry.parameter_index),
            entry.parameter,
            param
        )
    })?;
    if !output.is_array() {
        return Err(format!("output {} is {}, not an array", index_text(&entry.output_index), output));
    }
    if !output.compatible(input) {
        return Err(format!(
            "output {} is {} but parameter {} at {} is {}; aliased buffers must have equal shapes",
            index_text(&entry.output_index),
            output.to_text(false),
            entry.parameter,
            index_text(&entry.parameter_index),
            input.to_text(false)
        ));
    }
    Ok(())
}
