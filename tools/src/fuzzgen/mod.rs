//! A generator of random well-typed HLO modules, in the style of cranelift's fuzzgen: a
//! program is a pool of values that every new instruction draws its operands from, so chains
//! of elementwise ops (what fusion sees), data movement, reductions, dots, sorts and control
//! flow mix freely. Programs only use behaviour XLA defines (see `conformance/README.md`,
//! "XLA:CPU behaviour captured by the expected outputs"): integer division by zero and
//! out-of-range shifts are defined there; float→int converts saturate; sorts are stable with
//! a total order. Values whose floats carry rounding differences that XLA leaves open
//! (transcendentals, reductions, dots, bf16/f16 arithmetic) are marked `approx` and never feed
//! a discontinuous op (compare, floor, float→int, sort keys with payloads), so that a
//! last-bit difference cannot become a different integer or branch.
//!
//! One file per concern: `types` (element types, shapes, layouts, literals), `elementwise`,
//! `movement` (broadcast, reshape, slices, gather, ...), `reduce` (reduce, reduce-window,
//! dot, sort, arg-reductions), `windows` (convolution, select-and-scatter), `control` (call,
//! conditional, while, scan), `inputs` (argument values).

mod control;
mod elementwise;
mod inputs;
mod movement;
mod reduce;
pub mod types;
mod windows;

use hlojit_runtime::{ArrayLiteral, ElementType as T};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use types::{pick_layout, scalar_literal, shape_text};

/// The generator's RNG: a fixed algorithm, so a seed names the same program on every machine
/// and with every version of `rand`.
pub type Rng8 = ChaCha8Rng;

/// A generated program: HLO text and the arguments to run it on.
pub struct Program {
    pub text: String,
    pub inputs: Vec<ArrayLiteral>,
    /// The narrowest float type the program computes in, if narrower than f64: XLA may keep
    /// such intermediates in f32 (folding `convert(bf16 dot)` into an f32 dot, say), and an
    /// f64 result converted from an f32 approximation (expm1, say, which differs from XLA's
    /// in the last bit) is only as close as f32, so results get that type's tolerance.
    pub low_precision: Option<T>,
}

/// Generates the program of `seed`.
pub fn generate(seed: u64) -> Program {
    use rand::SeedableRng;
    let mut g = Gen { rng: Rng8::seed_from_u64(seed), computations: Vec::new(), next_comp: 0 };
    let mut entry = Comp::new(true);
    let n_params = g.rng.gen_range(1..=3);
    for _ in 0..n_params {
        let t = types::pick_type(&mut g.rng);
        let dims = types::pick_dims(&mut g.rng);
        entry.parameter(&mut g.rng, t, &dims);
    }
    let n_ops = g.rng.gen_range(4..=14);
    for _ in 0..n_ops {
        g.step(&mut entry, 2);
    }
    let root = g.results(&mut entry);
    let mut text = format!("HloModule fuzz_{seed}\n\n");
    for c in &g.computations {
        text.push_str(c);
        text.push('\n');
    }
    text.push_str(&entry.finish("main", &root, true));
    let mut irng = Rng8::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
    let inputs = entry.params.iter().map(|v| inputs::random_array(&mut irng, v.ty, &v.dims)).collect();
    let low_precision = if text.contains("bf16[") {
        Some(T::BF16)
    } else if text.contains("f16[") {
        Some(T::F16)
    } else if text.contains("f32[") || text.contains("c64[") {
        Some(T::F32)
    } else {
        None
    };
    Program { text, inputs, low_precision }
}

/// A value of the computation being generated.
#[derive(Clone, Debug)]
pub struct Value {
    pub name: String,
    pub ty: T,
    pub dims: Vec<i64>,
    /// Floats that may differ in the last bits between correct implementations.
    pub approx: bool,
}

impl Value {
    pub fn count(&self) -> i64 {
        self.dims.iter().product()
    }
}

/// A computation under construction.
pub struct Comp {
    lines: Vec<String>,
    pub values: Vec<Value>,
    pub params: Vec<Value>,
    /// The entry may grow new parameters when an op needs an operand of a shape nobody has;
    /// sub-computations have fixed signatures.
    may_add_params: bool,
    counter: usize,
    /// Values computed from constants alone, which XLA folds at compile time.
    constants: std::collections::HashSet<String>,
    /// Values made by `power` (see `elementwise::unary_or_binary`).
    pub powers: std::collections::HashSet<String>,
    /// Values made by `dynamic-slice`, rearranged or not (see `movement::dynamic_slice`).
    pub dynamic_slices: std::collections::HashSet<String>,
}

impl Comp {
    pub fn new(may_add_params: bool) -> Comp {
        Comp { lines: Vec::new(), values: Vec::new(), params: Vec::new(), may_add_params, counter: 0, constants: Default::default(), powers: Default::default(), dynamic_slices: Default::default() }
    }

    /// Adds `name = SHAPE op` and returns the new value.
    pub fn emit(&mut self, rng: &mut impl Rng, ty: T, dims: &[i64], op: &str, approx: bool) -> Value {
        let name = format!("v{}", self.counter);
        self.counter += 1;
        let layout = pick_layout(rng, dims.len());
        self.lines.push(format!("  {name} = {} {op}", shape_text(ty, dims, layout.as_deref())));
        // XLA's reshape mover sinks transposes and reshapes below elementwise ops, so a
        // divisor that is a rearranged power meets the `A / pow(B, C)` rewrite too (program
        // 9801157: u8 transpose(pow(x, x)) / transpose(pow(x, x)) became pow(x, x) * pow(x, -x),
        // 0 where a division gives 1 or 255): rearrangements of powers count as powers.
        let operand_of = |ops: &[&str]| ops.iter().find_map(|k| op.strip_prefix(k)).and_then(|rest| rest.split([')', ',']).next());
        const REARRANGEMENTS: [&str; 4] = ["transpose(", "reshape(", "copy(", "bitcast("];
        if op.starts_with("power(") || operand_of(&REARRANGEMENTS).is_some_and(|o| self.powers.contains(o)) {
            self.powers.insert(name.clone());
        }
        if op.starts_with("dynamic-slice(") || operand_of(&[&REARRANGEMENTS[..], &["reverse("]].concat()).is_some_and(|o| self.dynamic_slices.contains(o)) {
            self.dynamic_slices.insert(name.clone());
        }
        if self.folds(op) {
            self.constants.insert(name.clone());
        }
        let v = Value { name, ty, dims: dims.to_vec(), approx: approx && (ty.is_float() || ty.is_complex()) };
        self.values.push(v.clone());
        v
    }

    /// Whether XLA's constant folder evaluates `op` (all its operands are constants).
    fn folds(&self, op: &str) -> bool {
        if op.starts_with("parameter(") {
            // A sub-computation's parameters may be constants in the caller: XLA inlines
            // calls and branches and folds them.
            return !self.may_add_params;
        }
        // Ops with computations fold too: XLA inlines calls, resolves conditionals whose
        // predicate is constant, unrolls short whiles and evaluates reduces and sorts of
        // constants (a count-leading-zeros of a conditional's constant result was folded).
        let head = op.split("), ").next().unwrap_or(op);
        // A value compared with itself: XLA's simplifier replaces such a compare by a constant
        // (`compare(x, x), direction=NE, type=TOTALORDER` is false), and values derived from it
        // then fold like constants (program 5002441: atan2 of them).
        if let Some(args) = head.strip_prefix("compare(") {
            let mut names = args.split(", ");
            if let (Some(a), Some(b)) = (names.next(), names.next()) {
                if a == b.trim_end_matches(')') {
                    return true;
                }
            }
        }
        let names: Vec<&str> = head.split(|ch: char| !ch.is_ascii_alphanumeric()).filter(|w| w.starts_with('v') && w[1..].parse::<u32>().is_ok()).collect();
        // A select on a constant predicate is the branch it picks, which XLA's simplifier
        // then folds when that branch is a constant (program 12200227: a count-leading-zeros
        // of `select(compare(x, x), constant(-2), x)`). Either branch may be the one.
        if let (true, [pred, on_true, on_false]) = (head.starts_with("select("), names.as_slice()) {
            if self.constants.contains(*pred) && (self.constants.contains(*on_true) || self.constants.contains(*on_false)) {
                return true;
            }
        }
        names.iter().all(|w| self.constants.contains(*w))
    }

    /// Whether `v` is computed from constants alone (XLA evaluates it while compiling).
    pub fn is_constant(&self, v: &Value) -> bool {
        self.constants.contains(&v.name)
    }

    /// Adds a parameter (entry parameters keep default layouts half of the time).
    pub fn parameter(&mut self, rng: &mut impl Rng, ty: T, dims: &[i64]) -> Value {
        let op = format!("parameter({})", self.params.len());
        let v = self.emit(rng, ty, dims, &op, false);
        self.params.push(v.clone());
        v
    }

    /// A tuple-typed instruction (no layouts printed on its elements).
    pub fn emit_tuple_op(&mut self, shapes: &[(T, Vec<i64>)], op: &str) -> String {
        let name = format!("v{}", self.counter);
        self.counter += 1;
        let s: Vec<String> = shapes.iter().map(|(t, d)| shape_text(*t, d, None)).collect();
        self.lines.push(format!("  {name} = ({}) {op}", s.join(", ")));
        if self.folds(op) {
            self.constants.insert(name.clone());
        }
        name
    }

    pub fn constant(&mut self, rng: &mut impl Rng, ty: T, v: i64) -> Value {
        self.emit(rng, ty, &[], &format!("constant({})", scalar_literal(ty, v)), false)
    }

    /// The computation's text with `root` as its ROOT (a tuple when there are several).
    pub fn finish(&self, name: &str, root: &[Value], entry: bool) -> String {
        let mut s = format!("{}{name} {{\n", if entry { "ENTRY " } else { "" });
        for l in &self.lines {
            s.push_str(l);
            s.push('\n');
        }
        if root.len() == 1 {
            let r = &root[0];
            s.push_str(&format!("  ROOT out = {} copy({})\n", shape_text(r.ty, &r.dims, None), r.name));
        } else {
            let shapes: Vec<String> = root.iter().map(|r| shape_text(r.ty, &r.dims, None)).collect();
            let names: Vec<&str> = root.iter().map(|r| r.name.as_str()).collect();
            s.push_str(&format!("  ROOT out = ({}) tuple({})\n", shapes.join(", "), names.join(", ")));
        }
        s.push_str("}\n");
        s
    }
}

/// The generator's state: the RNG and the sub-computations made so far.
pub struct Gen {
    pub rng: Rng8,
    computations: Vec<String>,
    next_comp: usize,
}

impl Gen {
    /// Adds one instruction (or a few that belong together) from a random op family;
    /// `depth` bounds nesting of control flow.
    pub fn step(&mut self, c: &mut Comp, depth: u32) {
        let family = self.rng.gen_range(0..100);
        let made = match family {
            0..=26 => elementwise::unary_or_binary(self, c),
            27..=33 => elementwise::compare_select(self, c),
            34..=37 => elementwise::convert(self, c),
            38 => elementwise::narrow_round_trip(self, c),
            39..=40 => elementwise::clamp(self, c),
            41 => elementwise::map(self, c),
            42 => elementwise::reduce_precision(self, c),
            43 => elementwise::complex(self, c),
            44..=60 => movement::any(self, c),
            61..=70 => reduce::reduce(self, c),
            71..=72 => reduce::arg_reduce(self, c),
            73..=75 => reduce::reduce_window(self, c),
            76..=79 => reduce::dot(self, c),
            80..=82 => windows::convolution(self, c),
            83..=84 => windows::select_and_scatter(self, c),
            85..=87 => reduce::sort(self, c),
            _ if depth > 0 => control::any(self, c, depth - 1),
            _ => elementwise::unary_or_binary(self, c),
        };
        let _ = made;
    }

    /// A name for a new sub-computation.
    pub fn comp_name(&mut self, kind: &str) -> String {
        self.next_comp += 1;
        format!("{kind}_{}", self.next_comp)
    }

    pub fn add_computation(&mut self, text: String) {
        self.computations.push(text);
    }

    /// A scalar binary computation `kind` (add, maximum, and, ...) over `t`.
    pub fn reducer(&mut self, t: T, kinds: &[&str]) -> String {
        let name = self.comp_name("red");
        let s = shape_text(t, &[], None);
        let body = kinds
            .iter()
            .enumerate()
            .map(|(i, k)| format!("  r{i} = {s} {k}(a, b)\n"))
            .collect::<String>();
        let _ = body;
        let k = kinds[0];
        self.add_computation(format!(
            "{name} {{\n  a = {s} parameter(0)\n  b = {s} parameter(1)\n  ROOT r = {s} {k}(a, b)\n}}\n"
        ));
        name
    }

    /// A random existing value (any), preferring recent ones so that chains form.
    pub fn any_value(&mut self, c: &Comp) -> Option<Value> {
        if c.values.is_empty() {
            return None;
        }
        let n = c.values.len();
        let i = if self.rng.gen_bool(0.6) { n - 1 - self.rng.gen_range(0..n.min(3)) } else { self.rng.gen_range(0..n) };
        Some(c.values[i].clone())
    }

    /// A random value satisfying `pred`, if any.
    pub fn value_where(&mut self, c: &Comp, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        let cands: Vec<&Value> = c.values.iter().filter(|v| pred(v)).collect();
        // Prefer the latest matches (chains) but not always.
        if cands.is_empty() {
            return None;
        }
        let n = cands.len();
        let i = if self.rng.gen_bool(0.5) { n - 1 } else { self.rng.gen_range(0..n) };
        Some(cands[i].clone())
    }

    /// A value of exactly type `t` and `dims`: an existing one, a convert or reshape of one,
    /// a new entry parameter, or element 0 of some value broadcast. `exact` asks for a value
    /// that is not `approx`.
    pub fn coerce(&mut self, c: &mut Comp, t: T, dims: &[i64], exact: bool) -> Value {
        let ok = |v: &Value| !exact || !v.approx;
        if let Some(v) = self.value_where(c, |v| v.ty == t && v.dims == dims && ok(v)) {
            if self.rng.gen_bool(0.8) {
                return v;
            }
        }
        let r = self.rng.gen_range(0..4);
        if r == 0 {
            let count: i64 = dims.iter().product();
            if let Some(v) = self.value_where(c, |v| v.ty == t && v.count() == count && ok(v)) {
                return c.emit(&mut self.rng, t, dims, &format!("reshape({})", v.name), v.approx);
            }
        }
        if r == 1 {
            if let Some(v) = self.value_where(c, |v| v.dims == dims && elementwise::convertible(v, t) && ok(v)) {
                return elementwise::emit_convert(self, c, &v, t);
            }
        }
        if c.may_add_params && c.params.len() < 6 && r != 3 {
            return c.parameter(&mut self.rng, t, dims);
        }
        let scalar = self.scalar_of(c, t, exact);
        if dims.is_empty() {
            return scalar;
        }
        c.emit(&mut self.rng, t, dims, &format!("broadcast({}), dimensions={{}}", scalar.name), scalar.approx)
    }

    /// A scalar of type `t` computed from element 0 of some value (or a constant).
    pub fn scalar_of(&mut self, c: &mut Comp, t: T, exact: bool) -> Value {
        let src = self.value_where(c, |v| elementwise::convertible(v, t) && (!exact || !v.approx));
        let Some(src) = src.filter(|_| self.rng.gen_bool(0.8)) else {
            let k = self.rng.gen_range(-3..=5);
            return c.constant(&mut self.rng, t, k);
        };
        let mut v = src.clone();
        if !v.dims.is_empty() {
            let ones = vec![1i64; v.dims.len()];
            let sl: Vec<String> = v.dims.iter().map(|_| "[0:1]".to_string()).collect();
            v = c.emit(&mut self.rng, v.ty, &ones, &format!("slice({}), slice={{{}}}", v.name, sl.join(", ")), v.approx);
            v = c.emit(&mut self.rng, v.ty, &[], &format!("reshape({})", v.name), v.approx);
        }
        if v.ty != t {
            v = elementwise::emit_convert(self, c, &v, t);
        }
        v
    }

    /// The entry's results: one to three values, the latest ones most likely.
    fn results(&mut self, c: &mut Comp) -> Vec<Value> {
        let n = self.rng.gen_range(1..=3).min(c.values.len());
        let mut out: Vec<Value> = Vec::new();
        let last = c.values.last().unwrap().clone();
        out.push(last);
        while out.len() < n {
            let v = self.any_value(c).unwrap();
            if !out.iter().any(|o| o.name == v.name) {
                out.push(v);
            } else if self.rng.gen_bool(0.3) {
                break;
            }
        }
        out.shuffle(&mut self.rng);
        out
    }
}
