//! A small HLO builder for expander passes: appends instructions to one computation of a
//! module with their shapes worked out, so that an expansion reads like the formula it
//! implements. Every instruction it adds goes through shape inference, so an expansion that
//! builds an ill-typed instruction fails where it builds it, naming it, instead of surfacing
//! later as a verifier error or a miscompile.

use crate::error::{Error, Result};
use crate::hlo::shape_inference::{infer_shape, signature};
use crate::hlo::{CompId, Computation, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::{ArrayLiteral, ArrayShape, ElementType, Literal, Shape};

/// Appends instructions to computation `comp` of `module`, naming them `<prefix>.<n>`.
pub struct Builder<'m> {
    /// The module being expanded (also for adding scalar computations).
    pub module: &'m mut Module,
    /// The computation instructions are appended to.
    pub comp: CompId,
    prefix: String,
    count: usize,
}

impl<'m> Builder<'m> {
    /// A builder appending to `comp`, naming instructions `<prefix>.1`, `<prefix>.2`, ...
    /// (the prefix should be unique in the module, say the expanded instruction's name).
    pub fn new(module: &'m mut Module, comp: CompId, prefix: impl Into<String>) -> Self {
        Builder { module, comp, prefix: prefix.into(), count: 0 }
    }

    fn computation(&mut self) -> &mut Computation {
        self.module.computation_mut(self.comp)
    }

    /// The shape of instruction `id` of the computation.
    pub fn shape(&self, id: InstrId) -> &Shape {
        &self.module.computation(self.comp).get(id).shape
    }

    /// The array shape of instruction `id`; [`Error::Unsupported`] for a tuple or token.
    pub fn array(&self, id: InstrId) -> Result<&ArrayShape> {
        let inst = self.module.computation(self.comp).get(id);
        inst.shape
            .as_array()
            .ok_or_else(|| Error::Unsupported(format!("{}: expected an array, found {}", inst.name, inst.shape)))
    }

    /// The element type of an array instruction (errors as [`Builder::array`]).
    pub fn element_type(&self, id: InstrId) -> Result<ElementType> {
        Ok(self.array(id)?.element_type)
    }

    /// The dimensions of an array instruction (errors as [`Builder::array`]).
    pub fn dims(&self, id: InstrId) -> Result<Vec<i64>> {
        Ok(self.array(id)?.dims.clone())
    }

    /// Adds an instruction (renamed to a fresh name) and returns its id; its shape must be the
    /// one shape inference gives its operands and attributes (layouts aside).
    pub fn add(&mut self, mut inst: Instruction) -> Result<InstrId> {
        self.count += 1;
        inst.name = format!("{}.{}", self.prefix, self.count);
        self.check_shape(&inst)?;
        Ok(self.computation().add(inst))
    }

    fn check_shape(&self, inst: &Instruction) -> Result<()> {
        let comp = self.module.computation(self.comp);
        let operands: Vec<&Shape> = inst.operands.iter().map(|&o| &comp.get(o).shape).collect();
        let signatures: Vec<_> = inst.called.iter().map(|&c| signature(self.module.computation(c))).collect();
        let called: Vec<_> = signatures.iter().collect();
        let expansion_bug = |why: String| Error::Internal(format!("expansion built {} {}: {why}", inst.opcode, inst.name));
        let inferred = infer_shape(inst.opcode, &operands, &inst.attrs, &called, Some(&inst.shape)).map_err(expansion_bug)?;
        if !inferred.compatible(&inst.shape) {
            return Err(expansion_bug(format!("its shape is {} but its operands give {inferred}", inst.shape)));
        }
        Ok(())
    }

    /// Adds `opcode(operands)` with result `shape`.
    pub fn op(&mut self, opcode: Opcode, shape: Shape, operands: Vec<InstrId>) -> Result<InstrId> {
        self.add(Instruction::new("", opcode, shape, operands))
    }

    /// A `constant` holding `literal`.
    pub fn constant(&mut self, literal: ArrayLiteral) -> Result<InstrId> {
        let shape = Shape::Array(literal.shape());
        let mut inst = Instruction::new("", Opcode::Constant, shape, Vec::new());
        inst.attrs.literal = Some(Literal::Array(literal));
        self.add(inst)
    }

    /// A scalar constant of type `t` holding `v` converted as XLA converts.
    pub fn scalar(&mut self, t: ElementType, v: f64) -> Result<InstrId> {
        let lit = ArrayLiteral::from_f64s(t, &[], &[v]).map_err(|e| Error::Internal(e.to_string()))?;
        self.constant(lit)
    }

    /// `broadcast(operand)` to `dims`, operand dimension i going to `dimensions[i]`.
    pub fn broadcast(&mut self, operand: InstrId, dims: &[i64], dimensions: Vec<i64>) -> Result<InstrId> {
        let t = self.element_type(operand)?;
        let mut inst = Instruction::new("", Opcode::Broadcast, Shape::array(t, dims.to_vec()), vec![operand]);
        inst.attrs.dimensions = Some(dimensions);
        self.add(inst)
    }

    /// An elementwise unary op whose result has the operand's shape.
    pub fn unary(&mut self, opcode: Opcode, a: InstrId) -> Result<InstrId> {
        let shape = self.plain(a)?;
        self.op(opcode, shape, vec![a])
    }

    /// An elementwise binary op whose result has the first operand's shape.
    pub fn binary(&mut self, opcode: Opcode, a: InstrId, b: InstrId) -> Result<InstrId> {
        let shape = self.plain(a)?;
        self.op(opcode, shape, vec![a, b])
    }

    /// `convert(a)` to element type `t`.
    pub fn convert(&mut self, a: InstrId, t: ElementType) -> Result<InstrId> {
        let dims = self.dims(a)?;
        self.op(Opcode::Convert, Shape::array(t, dims), vec![a])
    }

    /// `reduce(operand, init)` over `dimensions` with the scalar computation `reducer`.
    pub fn reduce(
        &mut self,
        operand: InstrId,
        init: InstrId,
        dimensions: Vec<i64>,
        reducer: CompId,
    ) -> Result<InstrId> {
        let a = self.array(operand)?;
        let dims: Vec<i64> =
            a.dims.iter().enumerate().filter(|(i, _)| !dimensions.contains(&(*i as i64))).map(|(_, &d)| d).collect();
        let mut inst = Instruction::new("", Opcode::Reduce, Shape::array(a.element_type, dims), vec![operand, init]);
        inst.attrs.dimensions = Some(dimensions);
        inst.called = vec![reducer];
        self.add(inst)
    }

    /// `tuple(elements...)`, its shape the tuple of the elements' shapes.
    pub fn tuple(&mut self, elements: Vec<InstrId>) -> Result<InstrId> {
        let shapes = elements.iter().map(|&e| self.shape(e).clone()).collect();
        self.op(Opcode::Tuple, Shape::Tuple(shapes), elements)
    }

    /// The operand's array shape without a layout (new instructions take default layouts).
    fn plain(&self, a: InstrId) -> Result<Shape> {
        let s = self.array(a)?;
        Ok(Shape::array(s.element_type, s.dims.clone()))
    }
}

/// The scalar computation `(x, y) -> op(x, y)` on element type `t`, added to the module once.
pub fn scalar_binary_computation(module: &mut Module, op: Opcode, t: ElementType) -> CompId {
    let name = format!("expand.{}.{}", op.name(), t);
    if let Some(c) = module.find_computation(&name) {
        return c;
    }
    let mut comp = Computation::new(name);
    let scalar = Shape::scalar(t);
    let mut x = Instruction::new("x", Opcode::Parameter, scalar.clone(), Vec::new());
    x.attrs.parameter_number = Some(0);
    let mut y = Instruction::new("y", Opcode::Parameter, scalar.clone(), Vec::new());
    y.attrs.parameter_number = Some(1);
    let x = comp.add(x);
    let y = comp.add(y);
    comp.root = comp.add(Instruction::new("r", op, scalar, vec![x, y]));
    module.add_computation(comp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlojit_runtime::ElementType::{F32, S32};

    fn module() -> Module {
        crate::hlo::text::parse_module("HloModule m\nENTRY e {\n  ROOT x = f32[4] parameter(0)\n}\n").unwrap()
    }

    #[test]
    fn a_well_typed_expansion_builds() {
        let mut m = module();
        let c = m.entry;
        let mut b = Builder::new(&mut m, c, "t");
        let x = b.module.computation(c).root;
        let e = b.unary(Opcode::Exp, x).unwrap();
        assert!(b.binary(Opcode::Add, x, e).is_ok());
    }

    #[test]
    fn an_ill_typed_expansion_fails_where_it_is_built() {
        let mut m = module();
        let c = m.entry;
        let mut b = Builder::new(&mut m, c, "t");
        let x = b.module.computation(c).root;
        let wrong_type = b.op(Opcode::Negate, Shape::array(S32, vec![4]), vec![x]).unwrap_err().to_string();
        assert!(wrong_type.contains("expansion built negate t.1"), "{wrong_type}");
        let i = b.op(Opcode::Convert, Shape::array(S32, vec![4]), vec![x]).unwrap();
        let mismatched = b.binary(Opcode::Add, x, i).unwrap_err().to_string();
        assert!(mismatched.contains("add t.3"), "{mismatched}");
        assert!(b.op(Opcode::Reshape, Shape::array(F32, vec![3]), vec![x]).is_err());
    }
}
