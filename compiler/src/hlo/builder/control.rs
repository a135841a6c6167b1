//! Structure and control flow: tuples, calls, loops, conditionals, map, sort, top-k, custom
//! calls and optimization barriers.

use super::{build_error, Builder, Op, SubComputation};
use crate::error::Result;
use crate::hlo::attributes::{Attributes, BackendConfig, CustomCallApiVersion};
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ElementType, Shape};
use std::panic::Location;

/// Settings of a [`Builder::custom_call`] beyond its target, operands and result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CustomCallOptions {
    /// Opaque data for the target: `Quoted` for a string, `Braced` for a typed-FFI dictionary.
    pub backend_config: Option<BackendConfig>,
    /// The call must run even when its result is unused.
    pub has_side_effect: bool,
    /// The target's calling convention (absent means the original one).
    pub api_version: Option<CustomCallApiVersion>,
    /// The layouts the target expects its operands in, one shape per operand.
    pub operand_layouts: Option<Vec<Shape>>,
}

impl Builder {
    /// A tuple of `elements` (arrays, tuples or tokens).
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// let b = Builder::new("m");
    /// let t = b.tuple(&[&b.constant_r0(1i32)?, &b.constant_r0(2.0f32)?])?;
    /// assert_eq!(t.shape().to_string(), "(s32[], f32[])");
    /// assert_eq!(b.get_tuple_element(&t, 1)?.shape().to_string(), "f32[]");
    /// assert!(b.get_tuple_element(&t, 2).is_err());
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn tuple(&self, elements: &[&Op]) -> Result<Op> {
        self.emit(Location::caller(), Opcode::Tuple, elements, Attributes::default(), &[], None)
    }

    /// Element `index` of a tuple.
    #[track_caller]
    pub fn get_tuple_element(&self, tuple: &Op, index: i64) -> Result<Op> {
        let attrs = Attributes { tuple_index: Some(index), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::GetTupleElement, &[tuple], attrs, &[], None)
    }

    /// Calls a computation made with [`Builder::computation`] on `arguments`.
    #[track_caller]
    pub fn call(&self, computation: &SubComputation, arguments: &[&Op]) -> Result<Op> {
        let at = Location::caller();
        let id = self.check_sub(at, Opcode::Call, computation)?;
        self.emit(at, Opcode::Call, arguments, Attributes::default(), &[id], None)
    }

    /// A call that stands for a named higher-level op (XLA's `CompositeCall`): `name` such as
    /// `"my.softmax"`, `attributes` in MLIR dictionary syntax (`"{}"` for none) and a
    /// `version`. Compilers that do not know the composite run its computation.
    #[track_caller]
    pub fn composite_call(
        &self,
        computation: &SubComputation,
        arguments: &[&Op],
        name: &str,
        attributes: &str,
        version: i64,
    ) -> Result<Op> {
        let at = Location::caller();
        let id = self.check_sub(at, Opcode::Call, computation)?;
        if name.is_empty() || name.contains(['"', '\\']) {
            return Err(build_error(
                at,
                format!("call: composite name {name:?} must be non-empty, without quotes or backslashes"),
            ));
        }
        if !attributes.starts_with('{') || !attributes.ends_with('}') {
            return Err(build_error(
                at,
                format!("call: composite attributes {attributes:?} must be a braced dictionary"),
            ));
        }
        let mut attrs = Attributes { is_composite: true, ..Attributes::default() };
        attrs.set_raw(
            "frontend_attributes",
            format!("{{composite.attributes={attributes},composite.name=\"{name}\",composite.version=\"{version}\"}}"),
        );
        self.emit(at, Opcode::Call, arguments, attrs, &[id], None)
    }

    /// A loop: while `condition(state)` (a `pred[]`) holds, `state = body(state)`; starts from
    /// `init` and returns the final state. Several loop variables travel as a tuple.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::ElementType::S32;
    /// // Doubles 1 until it reaches 100.
    /// let b = Builder::new("m");
    /// let x = b.while_loop(
    ///     &b.constant_r0(1i32)?,
    ///     |c, x| c.lt(x, &c.constant_r0(100i32)?),
    ///     |c, x| c.mul(x, &c.constant_r0(2i32)?),
    /// )?;
    /// assert_eq!(x.shape().to_string(), "s32[]");
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn while_loop(
        &self,
        init: &Op,
        condition: impl FnOnce(&Builder, &Op) -> Result<Op>,
        body: impl FnOnce(&Builder, &Op) -> Result<Op>,
    ) -> Result<Op> {
        let at = Location::caller();
        self.check_operands(at, Opcode::While, &[init])?;
        let state = [init.shape().clone()];
        let condition = self.region(at, "while_condition", &state, |c, p| condition(c, &p[0]))?;
        let body = self.region(at, "while_body", &state, |c, p| body(c, &p[0]))?;
        self.emit(at, Opcode::While, &[init], Attributes::default(), &[condition, body], None)
    }

    /// `pred ? true_branch(true_operand) : false_branch(false_operand)`, running only the
    /// branch taken; both branches return the same shape.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::{F32, Pred}, Shape};
    /// let b = Builder::new("m");
    /// let p = b.parameter(0, Shape::scalar(Pred), "p")?;
    /// let x = b.parameter(1, Shape::array(F32, [3]), "x")?;
    /// let y = b.conditional(&p, &x, |c, x| c.exp(x), &x, |c, x| c.neg(x))?;
    /// assert_eq!(y.dims(), &[3]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn conditional(
        &self,
        pred: &Op,
        true_operand: &Op,
        true_branch: impl FnOnce(&Builder, &Op) -> Result<Op>,
        false_operand: &Op,
        false_branch: impl FnOnce(&Builder, &Op) -> Result<Op>,
    ) -> Result<Op> {
        let at = Location::caller();
        self.check_operands(at, Opcode::Conditional, &[pred, true_operand, false_operand])?;
        if pred.shape() != &Shape::scalar(ElementType::Pred) {
            return Err(build_error(
                at,
                format!("conditional: the predicate must be pred[], got {}", pred.shape().to_text(false)),
            ));
        }
        let on_true = self.region(at, "true_branch", &[true_operand.shape().clone()], |c, p| true_branch(c, &p[0]))?;
        let on_false =
            self.region(at, "false_branch", &[false_operand.shape().clone()], |c, p| false_branch(c, &p[0]))?;
        self.emit(
            at,
            Opcode::Conditional,
            &[pred, true_operand, false_operand],
            Attributes::default(),
            &[on_true, on_false],
            None,
        )
    }

    /// Runs branch `index` (an `s32[]`; out-of-range values run the last branch) on its
    /// operand: `branch(k, builder, operand)` builds branch `k` for each `k` in
    /// `0..operands.len()`; all branches return the same shape.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::{F32, S32}, Shape};
    /// let b = Builder::new("m");
    /// let i = b.parameter(0, Shape::scalar(S32), "i")?;
    /// let x = b.parameter(1, Shape::scalar(F32), "x")?;
    /// let y = b.conditional_indexed(&i, &[&x, &x, &x], |k, c, x| match k {
    ///     0 => c.sin(x),
    ///     1 => c.cos(x),
    ///     _ => c.tanh(x),
    /// })?;
    /// assert_eq!(y.shape().to_string(), "f32[]");
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn conditional_indexed(
        &self,
        index: &Op,
        operands: &[&Op],
        mut branch: impl FnMut(usize, &Builder, &Op) -> Result<Op>,
    ) -> Result<Op> {
        let at = Location::caller();
        let mut all = vec![index];
        all.extend_from_slice(operands);
        self.check_operands(at, Opcode::Conditional, &all)?;
        if index.shape() != &Shape::scalar(ElementType::S32) {
            return Err(build_error(
                at,
                format!("conditional: the branch index must be s32[], got {}", index.shape().to_text(false)),
            ));
        }
        if operands.is_empty() {
            return Err(build_error(at, "conditional: needs at least one branch"));
        }
        let mut branches = Vec::with_capacity(operands.len());
        for (k, operand) in operands.iter().enumerate() {
            let shape = [operand.shape().clone()];
            branches.push(self.region(at, &format!("branch_{k}"), &shape, |c, p| branch(k, c, &p[0]))?);
        }
        self.emit(at, Opcode::Conditional, &all, Attributes::default(), &branches, None)
    }

    /// Applies a scalar function elementwise to same-shaped `operands`: `f` gets one scalar per
    /// operand and returns a scalar.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let x = b.parameter(0, Shape::array(F32, [4]), "x")?;
    /// let y = b.parameter(1, Shape::array(F32, [4]), "y")?;
    /// let fma = b.map(&[&x, &y], |c, p| c.add(&c.mul(&p[0], &p[1])?, &p[0]))?;
    /// assert_eq!(fma.dims(), &[4]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn map(&self, operands: &[&Op], f: impl FnOnce(&Builder, &[Op]) -> Result<Op>) -> Result<Op> {
        let at = Location::caller();
        self.check_operands(at, Opcode::Map, operands)?;
        let params = self.element_scalars(at, Opcode::Map, "operand", operands)?;
        let region = self.region(at, "mapped", &params, f)?;
        let rank = operands.first().map_or(0, |o| o.rank());
        let attrs = Attributes { dimensions: Some((0..rank as i64).collect()), ..Attributes::default() };
        self.emit(at, Opcode::Map, operands, attrs, &[region], None)
    }

    /// Sorts same-shaped `operands` together along `dimension`. The comparator gets the
    /// elements of two positions interleaved, `p[2i]` and `p[2i + 1]` from operand `i`, and
    /// returns `pred[]`: true when the first position goes first. One operand gives an array,
    /// several a tuple.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let x = b.parameter(0, Shape::array(F32, [2, 5]), "x")?;
    /// let descending = b.sort(&[&x], 1, true, |c, p| c.gt(&p[0], &p[1]))?;
    /// assert_eq!(descending.dims(), &[2, 5]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn sort(
        &self,
        operands: &[&Op],
        dimension: i64,
        is_stable: bool,
        comparator: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        let at = Location::caller();
        self.check_operands(at, Opcode::Sort, operands)?;
        let scalars = self.element_scalars(at, Opcode::Sort, "operand", operands)?;
        let params: Vec<Shape> = scalars.iter().flat_map(|s| [s.clone(), s.clone()]).collect();
        let region = self.region(at, "comparator", &params, comparator)?;
        let attrs = Attributes { dimensions: Some(vec![dimension]), is_stable, ..Attributes::default() };
        self.emit(at, Opcode::Sort, operands, attrs, &[region], None)
    }

    /// The `k` largest (or smallest) elements along the last dimension, sorted, with their
    /// `s32` indices: a tuple `(values, indices)`.
    #[track_caller]
    pub fn top_k(&self, operand: &Op, k: i64, largest: bool) -> Result<Op> {
        let attrs = Attributes { k: Some(k), largest: Some(largest), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::TopK, &[operand], attrs, &[], None)
    }

    /// Calls the external function `target` on `operands`, producing `result_shape`.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::{Builder, CustomCallOptions};
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let x = b.parameter(0, Shape::array(F32, [4]), "x")?;
    /// let y = b.custom_call("my_kernel", &[&x], Shape::array(F32, [4]), &CustomCallOptions::default())?;
    /// assert!(b.build(&y)?.to_string().contains("custom_call_target=\"my_kernel\""));
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn custom_call(
        &self,
        target: &str,
        operands: &[&Op],
        result_shape: Shape,
        options: &CustomCallOptions,
    ) -> Result<Op> {
        let at = Location::caller();
        if target.is_empty() {
            return Err(build_error(at, "custom-call: the target name is empty"));
        }
        let mut attrs = Attributes {
            custom_call_target: Some(target.to_string()),
            backend_config: options.backend_config.clone(),
            custom_call_has_side_effect: options.has_side_effect,
            api_version: options.api_version,
            operand_layout_constraints: options.operand_layouts.clone(),
            ..Attributes::default()
        };
        attrs
            .decode_ffi_attributes()
            .map_err(|m| build_error(at, &format!("custom-call {target}: backend_config: {m}")))?;
        self.emit(at, Opcode::CustomCall, operands, attrs, &[], Some(&result_shape))
    }

    /// The value unchanged, but no optimization moves computations across it.
    #[track_caller]
    pub fn optimization_barrier(&self, operand: &Op) -> Result<Op> {
        self.emit(Location::caller(), Opcode::OptimizationBarrier, &[operand], Attributes::default(), &[], None)
    }
}
