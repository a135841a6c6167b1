//! Which while loops XLA:CPU compiles as one "small call" kernel (its
//! `SmallWhileLoopHoistingPass`, xla/service/cpu/small_while_loop_hoisting_pass.cc): a loop
//! whose body and condition contain no custom-call, infeed, outfeed or collective (at any
//! depth), and whose `HloCostAnalysis` bytes accessed — one iteration: the body's plus the
//! condition's — is below 1024 (`SmallWhileLoopByteThreshold`'s default). Such a loop is
//! emitted by the elemental IR emitter; any other loop runs its body as a thunk sequence, where
//! a convolution may run on Eigen (see conv_taps.rs).
//!
//! The byte count follows `HloCostAnalysis`: an instruction accesses its operands and its
//! result; parameters, get-tuple-element, constants and bitcasts access nothing; a tuple writes
//! one 8-byte pointer per element; a nested while counts one iteration of its body and
//! condition, a call its callee, a conditional its largest branch. XLA counts the HLO after its
//! fusion and copy insertion, which hlojit does not reproduce here: the count is taken on the
//! module as given, plus the copy XLA inserts for a value that the body's root tuple holds
//! twice. An elementwise chain that XLA fuses into one kernel counts each op's operands here,
//! so a loop whose count is near 1 kB may be judged differently from XLA.
//! Measured (tests/filetests/conv/xla_taps_small_while.hlo): a loop whose body is one
//! `f32[1,N,1]` convolution fed back into the state, its root holding the result twice, counts
//! 16N + 73 bytes; XLA hoists it for N <= 59 and not for N >= 60.

use crate::hlo::{CompId, Computation, InstrId, Module, Opcode};
use hlojit_runtime::Shape;

/// `SmallWhileLoopByteThreshold`'s default.
pub const SMALL_WHILE_LOOP_BYTES: i64 = 1024;

/// Bytes of one pointer in a tuple's index table.
const TUPLE_POINTER_BYTES: i64 = 8;

/// Whether XLA:CPU hoists the while loop `id` of computation `comp` into a small-call kernel.
pub fn is_small(module: &Module, comp: CompId, id: InstrId) -> bool {
    let inst = module.computation(comp).get(id);
    let (Some(body), Some(cond)) = (inst.while_body(), inst.while_condition()) else { return false };
    if unavailable(module, body, 0) || unavailable(module, cond, 0) {
        return false;
    }
    loop_bytes(module, body, cond, 0) < SMALL_WHILE_LOOP_BYTES
}

/// Nesting deeper than this is treated as unknown (not small); modules are finite DAGs of
/// computations, the bound only keeps a malformed cycle from recursing forever.
const MAX_DEPTH: usize = 64;

/// Whether `c` (or anything it calls) holds an instruction the small-call kernel cannot run.
fn unavailable(module: &Module, c: CompId, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    let comp = module.computation(c);
    comp.ids().any(|id| {
        let inst = comp.get(id);
        matches!(inst.opcode, Opcode::CustomCall | Opcode::Infeed | Opcode::Outfeed)
            || inst.opcode.is_collective()
            || inst.called.iter().any(|&callee| unavailable(module, callee, depth + 1))
    })
}

/// One iteration's bytes: the body's and the condition's.
fn loop_bytes(module: &Module, body: CompId, cond: CompId, depth: usize) -> i64 {
    computation_bytes(module, body, depth).saturating_add(computation_bytes(module, cond, depth))
}

fn computation_bytes(module: &Module, c: CompId, depth: usize) -> i64 {
    if depth > MAX_DEPTH {
        return i64::MAX;
    }
    let comp = module.computation(c);
    let mut total: i64 = comp.ids().map(|id| instruction_bytes(module, comp, id, depth)).fold(0, i64::saturating_add);
    // Copy insertion: a value the root tuple holds more than once gets a copy per repeat.
    let r = comp.root_instruction();
    if r.opcode == Opcode::Tuple {
        for (i, &op) in r.operands.iter().enumerate() {
            if r.operands[..i].contains(&op) {
                total = total.saturating_add(shape_bytes(&comp.get(op).shape).saturating_mul(2));
            }
        }
    }
    total
}

fn instruction_bytes(module: &Module, comp: &Computation, id: InstrId, depth: usize) -> i64 {
    let inst = comp.get(id);
    match inst.opcode {
        Opcode::Parameter | Opcode::GetTupleElement | Opcode::Constant | Opcode::Bitcast => 0,
        Opcode::Tuple => TUPLE_POINTER_BYTES.saturating_mul(inst.operands.len() as i64),
        Opcode::While => match (inst.while_body(), inst.while_condition()) {
            (Some(b), Some(c)) => loop_bytes(module, b, c, depth + 1),
            _ => 0,
        },
        Opcode::Call => inst.called.iter().map(|&c| computation_bytes(module, c, depth + 1)).fold(0, i64::saturating_add),
        Opcode::Conditional => inst.branch_computations().iter().map(|&c| computation_bytes(module, c, depth + 1)).max().unwrap_or(0),
        _ => inst
            .operands
            .iter()
            .map(|&o| shape_bytes(&comp.get(o).shape))
            .fold(shape_bytes(&inst.shape), i64::saturating_add),
    }
}

/// Bytes of an array (sub-byte types rounded up per element as XLA:CPU stores them), or of a
/// tuple's pointer table.
fn shape_bytes(shape: &Shape) -> i64 {
    if let Some(a) = shape.as_array() {
        return a.element_count().saturating_mul(a.element_type.byte_size().max(1) as i64);
    }
    shape
        .tuple_elements()
        .map(|e| TUPLE_POINTER_BYTES.saturating_mul(e.len() as i64))
        .unwrap_or(0)
}
