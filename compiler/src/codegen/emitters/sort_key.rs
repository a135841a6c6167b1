//! Recognising sort comparators that are "less than (or greater than) on a key": the root is
//! `compare(f(lhs_m), f(rhs_m))` with direction LT or GT, where `f` is the same expression
//! applied to the lhs and rhs parameters of one operand `m`, and the comparison is a strict
//! total order on f's values (integers, or floats compared with TOTALORDER). JAX's comparators
//! look like this (`jnp.sort`, `argsort`, `top_k`: a NaN-canonicalising f and TOTALORDER, or
//! after XLA's optimizations an integer compare of the float's bits). Such a sort is a stable
//! sort by an unsigned integer key, which the runtime does by radix sort instead of calling
//! the comparator O(n log n) times; anything else keeps the generic comparator path.

use crate::hlo::{CompId, ComparisonDirection, ComparisonType, Computation, InstrId, Module, Opcode};
use hlojit_runtime::ElementType;
use std::collections::BTreeSet;

/// How a key value orders, after the key expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// Two's-complement integers of this type.
    Signed(ElementType),
    /// Unsigned integers (and pred) of this type.
    Unsigned(ElementType),
    /// Floats of this type in the total order of their bits: -NaN < -inf < ... < -0 < +0 <
    /// ... < +inf < +NaN.
    FloatTotal(ElementType),
}

impl KeyKind {
    /// The order of values of element type `t` as `compare` with comparison type `ty` (or the
    /// type's default) sees them; None where it is not a strict total order.
    pub fn of(t: ElementType, ty: Option<ComparisonType>) -> Option<KeyKind> {
        match ty {
            Some(ComparisonType::TotalOrder) if t.is_floating() && !t.is_complex() => Some(KeyKind::FloatTotal(t)),
            Some(ComparisonType::Unsigned) if t.is_int() || t.is_pred() => Some(KeyKind::Unsigned(t)),
            Some(ComparisonType::Signed) if t.is_int() => Some(KeyKind::Signed(t)),
            None if t.is_signed_int() => Some(KeyKind::Signed(t)),
            None if t.is_unsigned_int() || t.is_pred() => Some(KeyKind::Unsigned(t)),
            _ => None,
        }
    }

    pub fn element_type(self) -> ElementType {
        match self {
            KeyKind::Signed(t) | KeyKind::Unsigned(t) | KeyKind::FloatTotal(t) => t,
        }
    }

    /// Bits of the unsigned key this order maps to.
    pub fn bits(self) -> u32 {
        self.element_type().bit_width().max(1)
    }
}

/// A comparator recognised as an order on a key of one operand.
#[derive(Clone, Debug)]
pub struct KeyOrder {
    /// The operand whose elements give the key.
    pub operand: usize,
    /// The comparator's instruction computing the key of the lhs element (its parameter
    /// `2 * operand`), or None when the key is the element itself.
    pub key: Option<InstrId>,
    pub kind: KeyKind,
    /// Larger keys first.
    pub descending: bool,
}

/// Recognises comparator `comp` of a sort with `operands` operands.
pub fn recognize(module: &Module, comp: CompId, operands: usize) -> Option<KeyOrder> {
    let c = module.computation(comp);
    let root = c.root_instruction();
    if root.opcode != Opcode::Compare || root.operands.len() != 2 {
        return None;
    }
    let greater = match root.attrs.direction? {
        ComparisonDirection::Lt => false,
        ComparisonDirection::Gt => true,
        _ => return None,
    };
    let (a, b) = (root.operands[0], root.operands[1]);
    let pa = single_parameter(c, a)?;
    let pb = single_parameter(c, b)?;
    let m = pa.min(pb) / 2;
    if m >= operands || pa / 2 != pb / 2 || pa == pb {
        return None;
    }
    // compare(f(lhs), f(rhs)): lhs first when f(lhs) < f(rhs) for LT; swapped operands flip it.
    let (lhs_key, descending) = if pa % 2 == 0 { (a, greater) } else { (b, !greater) };
    if !equivalent(c, a, b, pa, pb) {
        return None;
    }
    let t = c.get(a).shape.element_type()?;
    let kind = KeyKind::of(t, root.attrs.comparison_type)?;
    let key = (c.get(lhs_key).opcode != Opcode::Parameter).then_some(lhs_key);
    Some(KeyOrder { operand: m, key, kind, descending })
}

/// The parameter number `id` depends on, if it depends on exactly one.
fn single_parameter(c: &Computation, id: InstrId) -> Option<usize> {
    let mut params = BTreeSet::new();
    let mut stack = vec![id];
    let mut seen = BTreeSet::new();
    while let Some(x) = stack.pop() {
        if !seen.insert(x) {
            continue;
        }
        let inst = c.get(x);
        if inst.opcode == Opcode::Parameter {
            params.insert(inst.attrs.parameter_number? as usize);
        }
        // Called computations (a map, say) could hide anything: not a plain key expression.
        if !inst.called.is_empty() {
            return None;
        }
        stack.extend(inst.operands.iter().copied());
    }
    match params.len() {
        1 => params.into_iter().next(),
        _ => None,
    }
}

/// Whether `a` computes from parameter `pa` exactly what `b` computes from parameter `pb`.
fn equivalent(c: &Computation, a: InstrId, b: InstrId, pa: usize, pb: usize) -> bool {
    if a == b {
        return true;
    }
    let (x, y) = (c.get(a), c.get(b));
    if x.opcode != y.opcode || x.shape != y.shape || x.operands.len() != y.operands.len() || x.called != y.called {
        return false;
    }
    if x.opcode == Opcode::Parameter {
        return x.attrs.parameter_number == Some(pa as i64) && y.attrs.parameter_number == Some(pb as i64);
    }
    // Attributes other than the ones kept verbatim (metadata and the like) must agree.
    let mut ax = x.attrs.clone();
    let mut ay = y.attrs.clone();
    ax.other.clear();
    ay.other.clear();
    ax == ay && x.operands.iter().zip(&y.operands).all(|(&p, &q)| equivalent(c, p, q, pa, pb))
}
