//! Layout assignment: every value gets one physical layout, and values that cross a
//! computation boundary are laid out as both sides expect.
//!
//! # What binds (XLA's rule)
//!
//! Before layout assignment only the entry computation layout binds: the entry's parameters
//! arrive, and its result leaves, in the layouts of `entry_computation_layout` (the
//! parameters' and root's own layouts when the header has none). Layouts printed on other
//! instructions and on non-entry computations are hints. Two more kinds of layout are facts:
//! a custom call with `operand_layout_constraints` reads its operands in those layouts and
//! writes its result in the layout printed on it; a custom call without them reads row-major
//! operands (XLA:CPU's convention, and what the back end hands the target).
//!
//! # Values
//!
//! A value is one array leaf of a buffer. Instructions that only pass buffers on — `tuple`,
//! `get-tuple-element`, `opt-barrier`, `add-dependency` — hold the same values as their
//! operands, so they always show their operands' layouts. A `while` loop's state is one value
//! per leaf shared by the while's result, the body's parameter and the condition's parameter:
//! the body updates the state in place, and the condition reads it there.
//!
//! Where a value flows into a buffer of another value a layout conversion is possible, and a
//! `copy` is inserted when the two layouts differ:
//! - a `while` operand into the loop state (in the caller), and the body's root into the state
//!   (in the body);
//! - a `call`, `conditional` or `fusion` operand into the callee's parameter (in the caller),
//!   and the callee's root into the instruction's result (in the callee);
//! - a custom call's operand into the layout the target reads (in the caller);
//! - the entry's root into the entry result layout (in the entry).
//!
//! Computations applied to scalars (the `to_apply` of reduce, reduce-window, sort, map,
//! scatter, select-and-scatter, all-reduce, reduce-scatter) have rank-0 parameters and roots,
//! whose only layout is `{}`: they always agree with their callers. Computations a custom call
//! names in `called_computations` are the target's business; they keep their own layouts.
//!
//! # Who decides a value's layout
//!
//! Callees decide first, as in XLA, and callers adapt with copies:
//! 1. facts (entry parameters, results of layout-constrained custom calls);
//! 2. the layouts a called computation declares for its parameters; for a loop state, the
//!    body parameter's layout (the body is where the loop spends its time), then the
//!    condition's, then the one printed on the while;
//! 3. a `call` or `fusion` result is laid out as its callee's root, a `conditional` result as
//!    the root of its largest branch (XLA's choice: the branch with the most instructions);
//! 4. any other value keeps its printed layout unless that costs a copy: a value that flows
//!    into a buffer with a decided layout takes that layout instead (if several, its own
//!    layout when one of them is it, else the first in program order). This is how a
//!    `transpose` printed `{2,0,1}` that only feeds a loop whose body declares `{2,1,0}` is
//!    computed in `{2,1,0}` directly, with no copy.
//!
//! # Modules already laid out
//!
//! A module after XLA's layout assignment (every `optimized.hlo`) is consistent: each value's
//! holders print one layout and every flow above joins equal layouts. Then every rule picks the
//! printed layout, and the pass changes nothing. `bitcast` reinterprets bytes, so it only
//! appears after layout assignment and depends on the exact layouts around it: in a module with
//! a bitcast, every printed layout is kept (rule 4 takes no other layout) and only copies are
//! added where a flow joins different layouts.
//!
//! The back end relies on the result: a `while` runs its body and condition on the loop state
//! in the state's layout, a `call` or `conditional` hands its operands' buffers to the callee as
//! they are, and a fusion's parameters are its operands' buffers.

use crate::analysis::custom_calls::is_builtin_custom_call;
use crate::error::{Error, Result};
use crate::hlo::{CompId, Computation, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::{ArrayShape, Layout, Shape};
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// Assigns layouts and inserts the copies they need; returns whether anything changed.
pub fn run(module: &mut Module) -> Result<bool> {
    let flows = Flows::build(module)?;
    let layouts = Solver::new(&flows).solve();
    let mut changed = write_layouts(module, &flows, &layouts)?;
    changed |= insert_copies(module, &flows, &layouts);
    Ok(changed)
}

/// How a value's layout is decided (see the module notes), for the leaf that defines it.
#[derive(Clone, Debug)]
enum Role {
    /// A fact.
    Fixed(Layout),
    /// Declared by a called computation or a loop; lower ranks win.
    Declared(u8),
    /// Laid out as another leaf (a callee's root).
    Derived(usize),
    /// An ordinary instruction's result: its printed layout is a hint.
    Free,
    /// Passes on an operand's value.
    Alias,
}

/// Where a copy goes when a flow joins different layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Site {
    /// Operand `operand` of instruction `inst` of computation `comp`.
    Operand {
        comp: CompId,
        inst: InstrId,
        operand: usize,
    },
    /// The root of computation `comp`.
    Root(CompId),
}

/// The layout a flow needs at its destination.
#[derive(Clone, Debug)]
enum Target {
    /// The layout of another value (the leaf's).
    Leaf(usize),
    /// A fixed layout.
    Layout(Layout),
}

/// A value flowing into a buffer that may need another layout.
#[derive(Clone, Debug)]
struct Flow {
    /// The leaf carrying the value at the site.
    from: usize,
    to: Target,
    at: Site,
    /// The destination is laid out as this very value (a callee root into its call's result):
    /// it never needs a copy and tells the value nothing.
    identity: bool,
}

/// Every array leaf of the reachable computations, their roles, which leaves hold the same
/// value, and the flows between values.
struct Flows {
    /// First leaf of each instruction, by computation and instruction (empty for
    /// computations nothing calls).
    first: Vec<Vec<usize>>,
    /// The printed shape of each leaf.
    printed: Vec<ArrayShape>,
    roles: Vec<Role>,
    /// Union-find parents while building: leaves with the same root hold the same value.
    parent: Vec<usize>,
    /// Once built, the leaf representing each leaf's value.
    value: Vec<usize>,
    flows: Vec<Flow>,
    /// Printed layouts are kept (the module has a bitcast).
    keep_printed: bool,
}

impl Flows {
    fn build(module: &Module) -> Result<Flows> {
        let order = module.computation_post_order();
        let mut first = vec![Vec::new(); module.computations.len()];
        let mut printed = Vec::new();
        for &c in &order {
            let comp = module.computation(c);
            first[c.index()] = comp
                .instructions
                .iter()
                .map(|inst| {
                    let start = printed.len();
                    printed.extend(inst.shape.array_leaves().into_iter().cloned());
                    start
                })
                .collect();
        }
        let n = printed.len();
        let keep_printed = order.iter().any(|&c| {
            module
                .computation(c)
                .instructions
                .iter()
                .any(|i| i.opcode == Opcode::Bitcast)
        });
        let mut f = Flows {
            first,
            printed,
            roles: vec![Role::Free; n],
            parent: (0..n).collect(),
            value: Vec::new(),
            flows: Vec::new(),
            keep_printed,
        };
        let conditions: HashSet<CompId> = order
            .iter()
            .flat_map(|&c| {
                module
                    .computation(c)
                    .instructions
                    .iter()
                    .filter_map(Instruction::while_condition)
            })
            .collect();
        for &c in &order {
            let comp = module.computation(c);
            for id in comp.ids() {
                f.add_instruction(module, c, id, &conditions)?;
            }
        }
        f.add_entry(module)?;
        f.value = (0..n).map(|l| f.find(l)).collect();
        Ok(f)
    }

    fn leaves(&self, c: CompId, id: InstrId, shape: &Shape) -> Range<usize> {
        let start = self.first[c.index()][id.index()];
        start..start + shape.array_leaves().len()
    }

    fn inst_leaves(&self, module: &Module, c: CompId, id: InstrId) -> Range<usize> {
        self.leaves(c, id, &module.computation(c).get(id).shape)
    }

    fn root_leaves(&self, module: &Module, c: CompId) -> Range<usize> {
        self.inst_leaves(module, c, module.computation(c).root)
    }

    /// The leaves of each parameter of `c`, by parameter number.
    fn param_leaves(&self, module: &Module, c: CompId) -> Vec<Range<usize>> {
        module
            .computation(c)
            .parameters()
            .into_iter()
            .map(|p| self.inst_leaves(module, c, p))
            .collect()
    }

    fn add_instruction(&mut self, module: &Module, c: CompId, id: InstrId, conditions: &HashSet<CompId>) -> Result<()> {
        let comp = module.computation(c);
        let inst = comp.get(id);
        let own = self.inst_leaves(module, c, id);
        let operands: Vec<Range<usize>> = inst.operands.iter().map(|&o| self.inst_leaves(module, c, o)).collect();
        let at = |operand: usize| Site::Operand {
            comp: c,
            inst: id,
            operand,
        };
        use Opcode::*;
        match inst.opcode {
            Parameter if c == module.entry => {} // see add_entry
            Parameter => {
                let rank = if conditions.contains(&c) { 1 } else { 0 };
                own.for_each(|l| self.roles[l] = Role::Declared(rank));
            }
            Tuple => self.alias(own, operands.into_iter().flatten().collect()),
            GetTupleElement => {
                let index = usize::try_from(inst.attrs.tuple_index.unwrap_or(0)).unwrap_or(0);
                let elements = comp.get(inst.operands[0]).shape.tuple_elements().unwrap_or(&[]);
                let skip: usize = elements.iter().take(index).map(|e| e.array_leaves().len()).sum();
                self.alias(own, operands.into_iter().flatten().skip(skip).collect());
            }
            OptimizationBarrier | AddDependency => {
                self.alias(own, operands.into_iter().next().into_iter().flatten().collect())
            }
            While => {
                let (Some(cond), Some(body)) = (inst.while_condition(), inst.while_body()) else {
                    return Ok(());
                };
                own.clone().for_each(|l| self.roles[l] = Role::Declared(2));
                for callee in [body, cond] {
                    let state = self.param_leaves(module, callee).into_iter().next();
                    self.alias(own.clone(), state.into_iter().flatten().collect());
                }
                let state: Vec<usize> = own.collect();
                self.flow_into(operands.first().cloned(), &state, at(0));
                self.flow_into(Some(self.root_leaves(module, body)), &state, Site::Root(body));
            }
            Call | Fusion | Conditional => {
                for (k, &callee) in inst.called.iter().enumerate() {
                    // A conditional's operand 0 selects the branch, operand k + 1 is branch k's
                    // parameter; a call's or fusion's operand i is parameter i.
                    let first_operand = if inst.opcode == Conditional { k + 1 } else { 0 };
                    for (i, params) in self.param_leaves(module, callee).into_iter().enumerate() {
                        let operand = first_operand + i;
                        self.flow_into(operands.get(operand).cloned(), &params.collect::<Vec<_>>(), at(operand));
                    }
                }
                let decider = match inst.opcode {
                    Conditional => largest(module, &inst.called),
                    _ => inst.called.first().copied(),
                };
                let Some(decider) = decider else { return Ok(()) };
                for (l, s) in own.clone().zip(self.root_leaves(module, decider)) {
                    self.roles[l] = Role::Derived(s);
                }
                let result: Vec<usize> = own.collect();
                for &callee in &inst.called {
                    let start = self.flows.len();
                    self.flow_into(Some(self.root_leaves(module, callee)), &result, Site::Root(callee));
                    if callee == decider {
                        self.flows[start..].iter_mut().for_each(|f| f.identity = true);
                    }
                }
            }
            CustomCall if !is_builtin_custom_call(inst) => {
                let constraints = inst.attrs.operand_layout_constraints.as_ref();
                if constraints.is_some() {
                    for l in own {
                        self.roles[l] = Role::Fixed(self.printed[l].layout_or_default());
                    }
                }
                for (i, from) in operands.into_iter().enumerate() {
                    let wanted: Vec<Layout> = match constraints.and_then(|cs| cs.get(i)) {
                        Some(constraint) => constraint
                            .array_leaves()
                            .iter()
                            .map(|a| a.layout_or_default())
                            .collect(),
                        None => from
                            .clone()
                            .map(|l| Layout::row_major(self.printed[l].rank()))
                            .collect(),
                    };
                    // A constraint of the wrong arity is the back end's to report.
                    if wanted.len() == from.len() {
                        for (l, layout) in from.zip(wanted) {
                            self.flows.push(Flow {
                                from: l,
                                to: Target::Layout(layout),
                                at: at(i),
                                identity: false,
                            });
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Flows of `from`'s leaves into the values `to`, leaf by leaf.
    fn flow_into(&mut self, from: Option<Range<usize>>, to: &[usize], at: Site) {
        let Some(from) = from else { return };
        if from.len() != to.len() {
            return; // shapes the verifier rejects
        }
        for (f, &t) in from.zip(to) {
            self.flows.push(Flow {
                from: f,
                to: Target::Leaf(t),
                at,
                identity: false,
            });
        }
    }

    /// `holders` pass on the values of `sources`, leaf by leaf.
    fn alias(&mut self, holders: Range<usize>, sources: Vec<usize>) {
        for (h, s) in holders.zip(sources) {
            if matches!(self.roles[h], Role::Free) {
                self.roles[h] = Role::Alias;
            }
            self.union(h, s);
        }
    }

    /// Entry parameters are facts; the entry root flows into the entry result layout.
    fn add_entry(&mut self, module: &Module) -> Result<()> {
        let entry = module.entry;
        let comp = module.entry_computation();
        for (i, (&p, shape)) in comp
            .parameters()
            .iter()
            .zip(module.entry_parameter_shapes())
            .enumerate()
        {
            let inst = comp.get(p);
            if !inst.shape.compatible(&shape) {
                return Err(Error::verify(
                    &comp.name,
                    &inst.name,
                    format!(
                        "entry_computation_layout gives parameter {i} the shape {shape}, the parameter is {}",
                        inst.shape
                    ),
                ));
            }
            for (l, a) in self.inst_leaves(module, entry, p).zip(shape.array_leaves()) {
                self.roles[l] = Role::Fixed(a.layout_or_default());
            }
        }
        let result = module.entry_result_shape();
        let root = self.root_leaves(module, entry);
        if result.array_leaves().len() == root.len() {
            for (l, a) in root.zip(result.array_leaves()) {
                self.flows.push(Flow {
                    from: l,
                    to: Target::Layout(a.layout_or_default()),
                    at: Site::Root(entry),
                    identity: false,
                });
            }
        }
        Ok(())
    }

    /// The leaf representing `l`'s value (path halving keeps the chains short).
    fn find(&mut self, mut l: usize) -> usize {
        while self.parent[l] != l {
            self.parent[l] = self.parent[self.parent[l]];
            l = self.parent[l];
        }
        l
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            // The lower leaf (earlier in callee-first order) represents the value.
            self.parent[ra.max(rb)] = ra.min(rb);
        }
    }
}

/// The branch with the most instructions (the first of equals).
fn largest(module: &Module, branches: &[CompId]) -> Option<CompId> {
    let mut best: Option<CompId> = None;
    for &b in branches {
        if best.is_none_or(|x| module.computation(b).instructions.len() > module.computation(x).instructions.len()) {
            best = Some(b);
        }
    }
    best
}

/// What is known about one value: its holders' roles and the flows out of it.
#[derive(Default)]
struct Value {
    fixed: Option<Layout>,
    declared: Option<(u8, Layout)>,
    derived: Option<usize>,
    /// The printed layout of the instruction that computes it.
    hint: Option<Layout>,
    /// Destinations of the flows out of the value (identities left out), in program order.
    needs: Vec<Target>,
}

enum State {
    Deciding,
    Decided(Layout),
}

/// Decides each value's layout by the rules of the module notes.
struct Solver<'f> {
    flows: &'f Flows,
    values: HashMap<usize, Value>,
    state: HashMap<usize, State>,
}

impl<'f> Solver<'f> {
    fn new(flows: &'f Flows) -> Solver<'f> {
        let mut values: HashMap<usize, Value> = HashMap::new();
        for (l, role) in flows.roles.iter().enumerate() {
            let v = values.entry(flows.value[l]).or_default();
            let printed = flows.printed[l].layout_or_default();
            match role {
                Role::Fixed(layout) => {
                    v.fixed.get_or_insert(layout.clone());
                }
                Role::Declared(rank) => {
                    if v.declared.as_ref().is_none_or(|(r, _)| rank < r) {
                        v.declared = Some((*rank, printed));
                    }
                }
                Role::Derived(source) => v.derived = Some(*source),
                Role::Free => v.hint = Some(printed),
                Role::Alias => {
                    v.hint.get_or_insert(printed);
                }
            }
        }
        for flow in flows.flows.iter().filter(|f| !f.identity) {
            values
                .entry(flows.value[flow.from])
                .or_default()
                .needs
                .push(flow.to.clone());
        }
        Solver {
            flows,
            values,
            state: HashMap::new(),
        }
    }

    /// The layout of every leaf.
    fn solve(mut self) -> Vec<Layout> {
        (0..self.flows.printed.len())
            .map(|l| {
                self.layout(l)
                    .unwrap_or_else(|| self.flows.printed[l].layout_or_default())
            })
            .collect()
    }

    fn target(&mut self, t: &Target) -> Option<Layout> {
        match t {
            Target::Leaf(l) => self.layout(*l),
            Target::Layout(layout) => Some(layout.clone()),
        }
    }

    /// The layout of leaf `l`'s value; `None` while it is being decided (a cycle of flows).
    fn layout(&mut self, l: usize) -> Option<Layout> {
        let v = self.flows.value[l];
        match self.state.get(&v) {
            Some(State::Decided(layout)) => return Some(layout.clone()),
            Some(State::Deciding) => return None,
            _ => {}
        }
        self.state.insert(v, State::Deciding);
        let value = &self.values[&v];
        let hint = value
            .hint
            .clone()
            .unwrap_or_else(|| self.flows.printed[l].layout_or_default());
        let (fixed, declared, derived) = (value.fixed.clone(), value.declared.clone(), value.derived);
        let layout = if let Some(fixed) = fixed {
            fixed
        } else if let Some((_, declared)) = declared {
            declared
        } else if let Some(source) = derived {
            self.layout(source).unwrap_or(hint)
        } else if self.flows.keep_printed || value.needs.is_empty() {
            hint
        } else {
            let needs = value.needs.clone();
            let wanted: Vec<Layout> = needs.iter().filter_map(|t| self.target(t)).collect();
            if wanted.contains(&hint) {
                hint
            } else {
                wanted.into_iter().next().unwrap_or(hint)
            }
        };
        self.state.insert(v, State::Decided(layout.clone()));
        Some(layout)
    }
}

/// Gives every instruction's leaves their values' layouts; returns whether any changed.
fn write_layouts(module: &mut Module, flows: &Flows, layouts: &[Layout]) -> Result<bool> {
    let mut changed = false;
    for c in module.computation_post_order() {
        let Computation { name, instructions, .. } = module.computation_mut(c);
        for (i, inst) in instructions.iter_mut().enumerate() {
            let first = flows.first[c.index()][i];
            let mut k = 0;
            let mut bad = None;
            for_each_leaf_mut(&mut inst.shape, &mut |a| {
                let layout = &layouts[first + k];
                k += 1;
                if a.layout_or_default() == *layout {
                    return;
                }
                if layout.minor_to_major.len() != a.rank() {
                    bad = Some(format!("cannot give {a} the layout {layout} of the value it holds"));
                    return;
                }
                a.layout = Some(layout.clone());
                changed = true;
            });
            if let Some(message) = bad {
                return Err(Error::verify(name, &inst.name, message));
            }
        }
    }
    Ok(changed)
}

fn for_each_leaf_mut(shape: &mut Shape, f: &mut impl FnMut(&mut ArrayShape)) {
    match shape {
        Shape::Array(a) => f(a),
        Shape::Tuple(elements) => elements.iter_mut().for_each(|e| for_each_leaf_mut(e, f)),
        Shape::Token | Shape::Opaque => {}
    }
}

/// Inserts a copy wherever a flow joins different layouts; returns whether it inserted any.
fn insert_copies(module: &mut Module, flows: &Flows, layouts: &[Layout]) -> bool {
    // Each site's leaves that need another layout: (leaf position at the site, layout).
    let mut sites: Vec<(Site, Vec<(usize, Layout)>)> = Vec::new();
    let mut site_index: HashMap<Site, usize> = HashMap::new();
    for flow in &flows.flows {
        let want = match &flow.to {
            Target::Leaf(l) => &layouts[*l],
            Target::Layout(layout) => layout,
        };
        if layouts[flow.from] == *want {
            continue;
        }
        let (comp, holder) = match flow.at {
            Site::Operand { comp, inst, operand } => (comp, module.computation(comp).get(inst).operands[operand]),
            Site::Root(comp) => (comp, module.computation(comp).root),
        };
        let position = flow.from - flows.first[comp.index()][holder.index()];
        let i = *site_index.entry(flow.at).or_insert_with(|| {
            sites.push((flow.at, Vec::new()));
            sites.len() - 1
        });
        sites[i].1.push((position, want.clone()));
    }
    if sites.is_empty() {
        return false;
    }
    let mut names = Names::of(module);
    let mut made: HashMap<(CompId, InstrId, Shape), InstrId> = HashMap::new();
    let mut touched = HashSet::new();
    for (site, leaves) in sites {
        let comp_id = match site {
            Site::Operand { comp, .. } | Site::Root(comp) => comp,
        };
        let comp = module.computation_mut(comp_id);
        let value = match site {
            Site::Operand { inst, operand, .. } => comp.get(inst).operands[operand],
            Site::Root(_) => comp.root,
        };
        let mut wanted = comp.get(value).shape.clone();
        let mut k = 0;
        for_each_leaf_mut(&mut wanted, &mut |a| {
            if let Some((_, layout)) = leaves.iter().find(|(p, _)| *p == k) {
                a.layout = Some(layout.clone());
            }
            k += 1;
        });
        let key = (comp_id, value, wanted.clone());
        let converted = match made.get(&key) {
            Some(&id) => id,
            None => {
                let id = convert(comp, value, &wanted, &mut names);
                made.insert(key, id);
                id
            }
        };
        match site {
            Site::Operand { inst, operand, .. } => comp.get_mut(inst).operands[operand] = converted,
            Site::Root(_) => comp.root = converted,
        }
        touched.insert(comp_id);
    }
    for c in touched {
        module.computation_mut(c).compact();
    }
    true
}

/// `value` in the layouts of `wanted` (same structure and dimensions): the value itself where
/// the layouts agree, a copy of each array leaf where they do not, tuples rebuilt around them.
fn convert(comp: &mut Computation, value: InstrId, wanted: &Shape, names: &mut Names) -> InstrId {
    let shape = comp.get(value).shape.clone();
    if same_layouts(&shape, wanted) {
        return value;
    }
    match (&shape, wanted) {
        (Shape::Tuple(elements), Shape::Tuple(wanted_elements)) => {
            let source = comp.get(value);
            let parts: Vec<InstrId> = if source.opcode == Opcode::Tuple {
                source.operands.clone()
            } else {
                let base = source.name.clone();
                (0..elements.len())
                    .map(|i| {
                        let name = names.fresh(format!("{base}.{i}"));
                        let mut gte = Instruction::new(name, Opcode::GetTupleElement, elements[i].clone(), vec![value]);
                        gte.attrs.tuple_index = Some(i as i64);
                        comp.add(gte)
                    })
                    .collect()
            };
            let parts: Vec<InstrId> = parts
                .into_iter()
                .zip(wanted_elements)
                .map(|(p, w)| convert(comp, p, w, names))
                .collect();
            let shapes = parts.iter().map(|&p| comp.get(p).shape.clone()).collect();
            let name = names.fresh(format!("{}.relayout", comp.get(value).name));
            comp.add(Instruction::new(name, Opcode::Tuple, Shape::Tuple(shapes), parts))
        }
        _ => {
            let name = names.fresh(format!("{}.copy", comp.get(value).name));
            comp.add(Instruction::new(name, Opcode::Copy, wanted.clone(), vec![value]))
        }
    }
}

/// Whether two shapes of the same structure have the same layout at every array leaf.
fn same_layouts(a: &Shape, b: &Shape) -> bool {
    let (la, lb) = (a.array_leaves(), b.array_leaves());
    la.len() == lb.len()
        && la
            .iter()
            .zip(&lb)
            .all(|(x, y)| x.layout_or_default() == y.layout_or_default())
}

/// Instruction names not yet used in the module.
struct Names(HashSet<String>);

impl Names {
    fn of(module: &Module) -> Names {
        Names(
            module
                .computations
                .iter()
                .flat_map(|c| c.instructions.iter().map(|i| i.name.clone()))
                .collect(),
        )
    }

    /// `name`, or `name.N` with the first free N from 2 when it is taken.
    fn fresh(&mut self, name: String) -> String {
        let mut candidate = name.clone();
        let mut n = 1;
        while self.0.contains(&candidate) {
            n += 1;
            candidate = format!("{name}.{n}");
        }
        self.0.insert(candidate.clone());
        candidate
    }
}


/// Gives every value one physical layout.
pub struct LayoutAssignment;

impl super::pass::Pass for LayoutAssignment {
    fn name(&self) -> &'static str {
        "layout-assignment"
    }

    fn run(&self, module: &mut crate::hlo::Module) -> crate::error::Result<bool> {
        run(module)
    }
}

#[cfg(test)]
#[path = "layout_assignment_tests.rs"]
mod tests;
