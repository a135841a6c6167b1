//! An HLO module: computations, the entry, and module-level attributes.

use super::computation::Computation;
use super::instruction::CompId;
use super::opcode::Opcode;
use hlojit_runtime::Shape;

/// `entry_computation_layout={(params)->result}`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramShape {
    /// The entry parameters' shapes with the layouts callers pass them in.
    pub parameters: Vec<Shape>,
    /// The result's shape with the layout callers receive it in.
    pub result: Shape,
}

/// Whether an `input_output_alias` entry is a permission or a requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AliasKind {
    /// `may-alias` (the default): the output may reuse the parameter's buffer if the caller
    /// donates it; otherwise the output gets its own memory.
    MayAlias,
    /// `must-alias`: the caller must donate the parameter's buffer.
    MustAlias,
}

/// One entry of `input_output_alias`: output at `output_index` may reuse (or must reuse) the
/// buffer of parameter `parameter` at `parameter_index`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AliasEntry {
    /// Tuple index path of the output within the result (`{}` for a non-tuple result, `{1}`
    /// for its second element).
    pub output_index: Vec<i64>,
    /// The parameter number.
    pub parameter: i64,
    /// Tuple index path within that parameter (`{}` for an array parameter).
    pub parameter_index: Vec<i64>,
    /// May or must alias.
    pub kind: AliasKind,
}

/// An HLO module: what `HloModule name, ...` and the computations after it describe, as
/// parsed from text or built with the builder.
///
/// Computations live in an arena addressed by [`CompId`]; instructions refer to called
/// computations by id.
///
/// ```rust
/// use hlojit_compiler::hlo::text::parse_module;
/// use hlojit_compiler::hlo::Opcode;
/// # fn main() -> Result<(), hlojit_compiler::Error> {
/// let m = parse_module(
///     "HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
///
///      add {
///        a = f32[] parameter(0)
///        b = f32[] parameter(1)
///        ROOT s = f32[] add(a, b)
///      }
///
///      ENTRY e {
///        x = f32[4] parameter(0)
///        z = f32[] constant(0)
///        ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=add
///      }",
/// )?;
/// assert_eq!(m.name, "m");
/// assert_eq!(m.entry_computation().name, "e");
/// assert_eq!(m.entry_parameter_shapes()[0].to_string(), "f32[4]{0}"); // default layout filled in
/// assert_eq!(m.entry_result_shape().to_string(), "f32[]");
/// let add = m.find_computation("add").unwrap();
/// assert_eq!(m.computation_post_order(), vec![add, m.entry]); // callees first
/// assert!(m.opcodes().contains(&Opcode::Reduce));
/// assert_eq!(m.input_output_alias.len(), 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    /// The name after `HloModule`.
    pub name: String,
    /// Every computation, addressed by [`CompId`] (the entry among them).
    pub computations: Vec<Computation>,
    /// The `ENTRY` computation.
    pub entry: CompId,
    /// `entry_computation_layout=`, when the text gives one: the layouts of the entry's
    /// parameters and result at the module's boundary.
    pub entry_layout: Option<ProgramShape>,
    /// `input_output_alias=`: results that may or must reuse a parameter's buffer.
    pub input_output_alias: Vec<AliasEntry>,
    /// Other header attributes (`is_scheduled=true`, `replica_count=4`, ...), verbatim.
    pub header_attributes: Vec<(String, String)>,
    /// Sections after the header (`FileNames`, `FunctionNames`, `FileLocations`, `StackFrames`),
    /// each kept verbatim: its title and its lines.
    pub debug_sections: Vec<(String, Vec<String>)>,
}

impl Module {
    /// An empty module. Add computations with [`Module::add_computation`] and set
    /// [`Module::entry`] (it starts as `CompId(0)`).
    pub fn new(name: impl Into<String>) -> Module {
        Module {
            name: name.into(),
            computations: Vec::new(),
            entry: CompId(0),
            entry_layout: None,
            input_output_alias: Vec::new(),
            header_attributes: Vec::new(),
            debug_sections: Vec::new(),
        }
    }

    /// The computation `id`.
    ///
    /// # Panics
    /// When `id` is not a computation of this module.
    pub fn computation(&self, id: CompId) -> &Computation {
        &self.computations[id.index()]
    }

    /// The computation `id`, mutably; panics as [`Module::computation`].
    pub fn computation_mut(&mut self, id: CompId) -> &mut Computation {
        &mut self.computations[id.index()]
    }

    /// The `ENTRY` computation.
    pub fn entry_computation(&self) -> &Computation {
        self.computation(self.entry)
    }

    /// Appends a computation and returns its id (ids are never reused).
    pub fn add_computation(&mut self, computation: Computation) -> CompId {
        self.computations.push(computation);
        CompId(self.computations.len() as u32 - 1)
    }

    /// The ids of all computations, in arena order.
    pub fn comp_ids(&self) -> impl Iterator<Item = CompId> {
        (0..self.computations.len() as u32).map(CompId)
    }

    /// The computation called `name`, if any.
    pub fn find_computation(&self, name: &str) -> Option<CompId> {
        self.comp_ids().find(|&c| self.computation(c).name == name)
    }

    /// The verbatim value of an uninterpreted header attribute (`replica_count`, say).
    pub fn header_attribute(&self, key: &str) -> Option<&str> {
        self.header_attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The entry's parameter shapes with their entry layouts (from `entry_computation_layout`
    /// when given, else from the parameter instructions).
    pub fn entry_parameter_shapes(&self) -> Vec<Shape> {
        match &self.entry_layout {
            Some(layout) => layout.parameters.clone(),
            None => self.entry_computation().parameter_shapes(),
        }
        .iter()
        .map(Shape::with_default_layouts)
        .collect()
    }

    /// The entry's result shape with its entry layout.
    pub fn entry_result_shape(&self) -> Shape {
        match &self.entry_layout {
            Some(layout) => layout.result.clone(),
            None => self.entry_computation().result_shape().clone(),
        }
        .with_default_layouts()
    }

    /// `input_output_alias` as (result leaf, parameter leaf, kind) over the flattened entry
    /// result and parameters.
    pub fn alias_leaf_pairs(&self) -> Vec<(usize, usize, AliasKind)> {
        let result = self.entry_result_shape();
        let params = self.entry_parameter_shapes();
        let param_base: Vec<usize> = params
            .iter()
            .scan(0usize, |acc, p| {
                let base = *acc;
                *acc += p.array_leaves().len();
                Some(base)
            })
            .collect();
        self.input_output_alias
            .iter()
            .filter_map(|a| {
                let k = result.leaf_offset(&a.output_index)?;
                let p = usize::try_from(a.parameter).ok()?;
                let j = param_base.get(p)? + params.get(p)?.leaf_offset(&a.parameter_index)?;
                Some((k, j, a.kind))
            })
            .collect()
    }

    /// Computations in an order where every computation comes after the ones it calls; the
    /// entry last. Computations nothing reaches are left out.
    pub fn computation_post_order(&self) -> Vec<CompId> {
        let mut order = Vec::new();
        let mut state = vec![0u8; self.computations.len()]; // 0 new, 1 in progress, 2 done
        fn visit(m: &Module, c: CompId, state: &mut [u8], order: &mut Vec<CompId>) {
            if state[c.index()] != 0 {
                return;
            }
            state[c.index()] = 1;
            for inst in &m.computation(c).instructions {
                for &callee in &inst.called {
                    visit(m, callee, state, order);
                }
            }
            state[c.index()] = 2;
            order.push(c);
        }
        visit(self, self.entry, &mut state, &mut order);
        order
    }

    /// How many instructions across the module call each computation.
    pub fn caller_counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.computations.len()];
        for comp in &self.computations {
            for inst in &comp.instructions {
                for &c in &inst.called {
                    counts[c.index()] += 1;
                }
            }
        }
        counts
    }

    /// Every opcode used anywhere in the module.
    pub fn opcodes(&self) -> Vec<Opcode> {
        let mut ops: Vec<Opcode> = self.computations.iter().flat_map(|c| c.instructions.iter().map(|i| i.opcode)).collect();
        ops.sort();
        ops.dedup();
        ops
    }
}
