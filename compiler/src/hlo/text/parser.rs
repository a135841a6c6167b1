//! The module, computation and instruction grammar:
//!
//! ```text
//! module      ::= 'HloModule' name (',' key '=' value)* debug_section* computation+
//! computation ::= ['ENTRY'] name [signature] '{' instruction+ '}' [',' key '=' value]*
//! instruction ::= ['ROOT'] name '=' shape opcode '(' operands ')' (',' key '=' value)*
//! ```
//!
//! Operands may be used before the line that defines them and computations before they are
//! defined: names are collected while reading and resolved at the end of each computation
//! (operands) and of the module (computations).

use super::attrs::{int_list, parse_attribute, CalledRefs, InstrAttrs, NameRef};
use crate::hlo::attribute_schema;
use super::cursor::{Cursor, PResult};
use super::literal_text::parse_literal;
use super::shape::parse_shape;
use crate::error::Error;
use crate::hlo::computation::Computation;
use crate::hlo::instruction::{CompId, InstrId, Instruction};
use crate::hlo::module::{AliasEntry, AliasKind, Module, ProgramShape};
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ElementType, Shape};
use std::collections::HashMap;

/// The debug sections XLA prints between the header and the computations.
const DEBUG_SECTIONS: &[&str] = &["FileNames", "FunctionNames", "FileLocations", "StackFrames"];

/// Parses a whole module.
pub fn parse_module(text: &str) -> Result<Module, Error> {
    Parser {
        c: Cursor::new(text),
        pending_calls: Vec::new(),
    }
    .module()
}

/// Parses a shape such as `f32[2,3]{0,1}` or `(s32[], pred[4])`; the whole text must be the shape.
pub fn parse_shape_text(text: &str) -> Result<Shape, Error> {
    let mut c = Cursor::new(text);
    let shape = parse_shape(&mut c, 0)?;
    if !c.at_end() {
        return Err(c.expected("end of shape"));
    }
    Ok(shape)
}

/// Computation names one instruction uses, in the order of its opcode's roles.
struct PendingCalls {
    comp: usize,
    instr: usize,
    refs: Vec<NameRef>,
}

/// A parameter as a computation's signature declares it: `p0: f32[2]`.
struct SignatureParameter {
    pos: usize,
    name: String,
    shape: Shape,
}

struct Parser<'a> {
    c: Cursor<'a>,
    pending_calls: Vec<PendingCalls>,
}

/// What a parsed instruction still needs resolved within its computation.
struct PendingOperands {
    /// Each operand's name and, if the text wrote it (`f32[2]{0} %x`), its declared shape.
    operands: Vec<(NameRef, Option<Shape>)>,
    control_predecessors: Vec<NameRef>,
}

impl<'a> Parser<'a> {
    fn module(mut self) -> PResult<Module> {
        let header_pos = {
            self.c.skip_trivia();
            self.c.pos()
        };
        match self.c.ident() {
            Some((_, "HloModule")) => {}
            _ => {
                self.c.set_pos(header_pos);
                return Err(self.c.expected("'HloModule' at the start of the module"));
            }
        }
        let (_, name) = self.c.expect_name("a module name after HloModule")?;
        let mut module = Module::new(name);
        self.header_attributes(&mut module)?;
        self.debug_sections(&mut module)?;

        let mut names: HashMap<String, usize> = HashMap::new();
        let mut entry: Option<(usize, usize)> = None;
        while !self.c.at_end() {
            let index = module.computations.len();
            let (computation, name_pos, entry_pos) = self.computation(index)?;
            if let Some(&previous) = names.get(&computation.name) {
                let first = module.computations[previous].name.clone();
                return Err(self
                    .c
                    .error_at(name_pos, format!("duplicate computation name '{first}'")));
            }
            if let Some(pos) = entry_pos {
                if let Some((_, first)) = entry {
                    return Err(self.c.error_at(
                        pos,
                        format!(
                            "a second ENTRY computation (the first is at {})",
                            self.c.position_text(first)
                        ),
                    ));
                }
                entry = Some((index, pos));
            }
            names.insert(computation.name.clone(), index);
            module.computations.push(computation);
        }
        if module.computations.is_empty() {
            return Err(self.c.expected("a computation"));
        }
        // Like XLA: without an ENTRY marker the last computation is the entry.
        module.entry = CompId(entry.map_or(module.computations.len() - 1, |(i, _)| i) as u32);

        for pending in std::mem::take(&mut self.pending_calls) {
            let mut called = Vec::with_capacity(pending.refs.len());
            for r in &pending.refs {
                match names.get(&r.name) {
                    Some(&id) => called.push(CompId(id as u32)),
                    None => {
                        return Err(self
                            .c
                            .error_at(r.pos, format!("unknown computation '{}'", r.name)))
                    }
                }
            }
            module.computations[pending.comp].instructions[pending.instr].called = called;
        }
        Ok(module)
    }

    /// `, key=value` pairs after the module name.
    fn header_attributes(&mut self, module: &mut Module) -> PResult<()> {
        while self.c.eat(b',') {
            let Some((key_pos, key)) = self.c.ident() else {
                return Err(self.c.expected("a module attribute name"));
            };
            self.c.expect(b'=', &format!("after {key}"))?;
            let duplicate = match key {
                "entry_computation_layout" => {
                    module.entry_layout.replace(self.entry_layout()?).is_some()
                }
                "input_output_alias" => {
                    let had = !module.input_output_alias.is_empty();
                    module.input_output_alias = self.input_output_alias()?;
                    had
                }
                _ => {
                    let value = self.c.raw_value(&format!("a value for {key}"))?;
                    let had = module.header_attribute(key).is_some();
                    module
                        .header_attributes
                        .push((key.to_string(), value.to_string()));
                    had
                }
            };
            if duplicate {
                return Err(self
                    .c
                    .error_at(key_pos, format!("duplicate module attribute '{key}'")));
            }
        }
        Ok(())
    }

    /// `{(f32[2]{0}, s32[])->f32[2]{0}}`.
    fn entry_layout(&mut self) -> PResult<ProgramShape> {
        self.c.expect(b'{', "to start entry_computation_layout")?;
        self.c.expect(b'(', "before the parameter shapes")?;
        let mut parameters = Vec::new();
        if !self.c.eat(b')') {
            loop {
                parameters.push(parse_shape(&mut self.c, 0)?);
                if self.c.eat(b')') {
                    break;
                }
                self.c.expect(b',', "or ')' between parameter shapes")?;
            }
        }
        if !self.c.eat_str("->") {
            return Err(self.c.expected("'->' before the result shape"));
        }
        let result = parse_shape(&mut self.c, 0)?;
        self.c.expect(b'}', "to close entry_computation_layout")?;
        Ok(ProgramShape { parameters, result })
    }

    /// `{ {0}: (0, {}, may-alias), {1}: (1, {}, must-alias) }`, or the short form
    /// `{ {0}: 1 }` (may-alias of the whole parameter).
    fn input_output_alias(&mut self) -> PResult<Vec<AliasEntry>> {
        self.c.expect(b'{', "to start input_output_alias")?;
        let mut entries = Vec::new();
        if self.c.eat(b'}') {
            return Ok(entries);
        }
        loop {
            let output_index = self.shape_index("the output index")?;
            self.c.expect(b':', "after the output index")?;
            let entry = if self.c.eat(b'(') {
                let parameter = self.c.non_negative("a parameter number")?;
                self.c.expect(b',', "after the parameter number")?;
                let parameter_index = self.shape_index("the parameter index")?;
                let kind = if self.c.eat(b',') {
                    let save = self.c.pos();
                    match self.c.name() {
                        Some((_, "may-alias")) => AliasKind::MayAlias,
                        Some((_, "must-alias")) => AliasKind::MustAlias,
                        _ => {
                            self.c.set_pos(save);
                            return Err(self.c.expected("may-alias or must-alias"));
                        }
                    }
                } else {
                    AliasKind::MayAlias
                };
                self.c.expect(b')', "to close the alias entry")?;
                AliasEntry {
                    output_index,
                    parameter,
                    parameter_index,
                    kind,
                }
            } else {
                let parameter = self.c.non_negative("a parameter number or '('")?;
                AliasEntry {
                    output_index,
                    parameter,
                    parameter_index: Vec::new(),
                    kind: AliasKind::MayAlias,
                }
            };
            entries.push(entry);
            if self.c.eat(b'}') {
                return Ok(entries);
            }
            self.c.expect(b',', "or '}' between alias entries")?;
        }
    }

    /// `{}` or `{1,0}`.
    fn shape_index(&mut self, what: &str) -> PResult<Vec<i64>> {
        int_list(&mut self.c, what)
    }

    /// `FileNames` ... sections, each running to the next blank line.
    fn debug_sections(&mut self, module: &mut Module) -> PResult<()> {
        loop {
            self.c.skip_trivia();
            let start = self.c.pos();
            let title = match self.c.ident() {
                Some((_, title))
                    if DEBUG_SECTIONS.contains(&title) && self.c.line_is_blank_from_here() =>
                {
                    title
                }
                _ => {
                    self.c.set_pos(start);
                    return Ok(());
                }
            };
            self.c.rest_of_line();
            let mut lines = Vec::new();
            loop {
                let line_start = self.c.pos();
                let line = self.c.rest_of_line();
                if !line
                    .trim_start()
                    .starts_with(|ch: char| ch.is_ascii_digit())
                {
                    if !line.trim().is_empty() {
                        self.c.set_pos(line_start);
                    }
                    break;
                }
                lines.push(line.to_string());
            }
            module.debug_sections.push((title.to_string(), lines));
        }
    }

    /// One computation; returns it with its name's position and the ENTRY keyword's if any.
    fn computation(&mut self, index: usize) -> PResult<(Computation, usize, Option<usize>)> {
        self.c.skip_trivia();
        let mut entry_pos = None;
        let save = self.c.pos();
        if let Some((pos, "ENTRY")) = self.c.ident() {
            // `ENTRY` followed by a name is the keyword; otherwise it is the name itself.
            if matches!(
                self.c.peek(),
                Some(b'%' | b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_')
            ) {
                entry_pos = Some(pos);
            } else {
                self.c.set_pos(save);
            }
        } else {
            self.c.set_pos(save);
        }
        let (name_pos, name) = self.c.expect_name("a computation name")?;
        let mut computation = Computation::new(name);
        let signature_result = if self.c.peek() == Some(b'(') {
            Some(self.signature()?)
        } else {
            None
        };
        self.c.skip_trivia();
        let open = self.c.pos();
        self.c
            .expect(b'{', &format!("to start the body of computation '{name}'"))?;

        let mut pending: Vec<PendingOperands> = Vec::new();
        let mut names: HashMap<String, (InstrId, usize)> = HashMap::new();
        let mut root: Option<(InstrId, usize)> = None;
        loop {
            if self.c.eat(b'}') {
                break;
            }
            if self.c.at_end() {
                return Err(self.c.error_at(
                    self.c.pos(),
                    format!("unterminated computation '{name}': expected an instruction or '}}' to close the '{{' at {}, found end of input", self.c.position_text(open)),
                ));
            }
            let id = InstrId(computation.instructions.len() as u32);
            let (instruction, operands, is_root, name_pos) = self.instruction(index, id.index())?;
            if let Some(&(_, first)) = names.get(&instruction.name) {
                return Err(self.c.error_at(
                    name_pos,
                    format!("duplicate instruction name '{}' in computation '{name}' (first defined at {})", instruction.name, self.c.position_text(first)),
                ));
            }
            if let Some(root_pos) = is_root {
                if let Some((_, first)) = root {
                    return Err(self.c.error_at(
                        root_pos,
                        format!(
                            "a second ROOT in computation '{name}' (the first is at {})",
                            self.c.position_text(first)
                        ),
                    ));
                }
                root = Some((id, root_pos));
            }
            names.insert(instruction.name.clone(), (id, name_pos));
            computation.instructions.push(instruction);
            pending.push(operands);
        }
        if computation.instructions.is_empty() {
            return Err(self
                .c
                .error_at(open, format!("computation '{name}' has no instructions")));
        }
        // Like XLA: without ROOT the last instruction is the root.
        computation.root = root.map_or(
            InstrId(computation.instructions.len() as u32 - 1),
            |(id, _)| id,
        );

        for (instruction, refs) in computation.instructions.iter_mut().zip(&pending) {
            let resolve = |r: &NameRef, what: &str| match names.get(&r.name) {
                Some(&(id, _)) => Ok(id),
                None => Err(self.c.error_at(
                    r.pos,
                    format!("unknown {what} '{}' in computation '{name}'", r.name),
                )),
            };
            instruction.operands = refs
                .operands
                .iter()
                .map(|(r, _)| resolve(r, "operand"))
                .collect::<PResult<_>>()?;
            instruction.control_predecessors = refs
                .control_predecessors
                .iter()
                .map(|r| resolve(r, "control predecessor"))
                .collect::<PResult<_>>()?;
        }
        // Like XLA: shapes written in the text must agree with what they describe.
        for (instruction, refs) in computation.instructions.iter().zip(&pending) {
            for (&operand, (r, shape)) in instruction.operands.iter().zip(&refs.operands) {
                let actual = &computation.get(operand).shape;
                if let Some(shape) = shape.as_ref().filter(|s| !s.compatible(actual)) {
                    return Err(self.c.error_at(
                        r.pos,
                        format!(
                            "operand '{}' is written as {} but its shape is {}",
                            r.name,
                            shape.to_text(false),
                            actual.to_text(false)
                        ),
                    ));
                }
            }
        }
        if let Some((_, params, _)) = &signature_result {
            self.check_signature_parameters(&computation, params)?;
        }
        if let Some((pos, _, shape)) = signature_result {
            let actual = computation.result_shape();
            if !shape.compatible(actual) {
                return Err(self.c.error_at(
                    pos,
                    format!(
                        "computation '{name}' is declared to return {} but its root '{}' has shape {}",
                        shape.to_text(false),
                        computation.root_instruction().name,
                        actual.to_text(false)
                    ),
                ));
            }
        }
        self.computation_attributes()?;
        Ok((computation, name_pos, entry_pos))
    }

    /// `(p0: f32[2], p1: s32[]) -> f32[2]`: the parameter instructions are what defines the
    /// parameters; the declared parameters (name, shape, position) and the result shape (and
    /// where it is) are returned for checking against them and the root.
    fn signature(&mut self) -> PResult<(usize, Vec<SignatureParameter>, Shape)> {
        self.c.expect(b'(', "to start the parameter list")?;
        let mut params = Vec::new();
        if !self.c.eat(b')') {
            loop {
                let (pos, name) = self.c.expect_name("a parameter name")?;
                self.c.expect(b':', "after the parameter name")?;
                let shape = parse_shape(&mut self.c, 0)?;
                params.push(SignatureParameter { pos, name: name.to_string(), shape });
                if self.c.eat(b')') {
                    break;
                }
                self.c.expect(b',', "or ')' between parameters")?;
            }
        }
        if !self.c.eat_str("->") {
            return Err(self
                .c
                .expected("'->' before the computation's result shape"));
        }
        self.c.skip_trivia();
        let pos = self.c.pos();
        Ok((pos, params, parse_shape(&mut self.c, 0)?))
    }

    /// The declared parameters must be the computation's parameter instructions: as many, and
    /// parameter `i` of the shape the signature gives in place `i` (layouts aside).
    fn check_signature_parameters(&self, computation: &Computation, declared: &[SignatureParameter]) -> PResult<()> {
        let name = &computation.name;
        let parameters = computation.parameters();
        if declared.len() != parameters.len() {
            let pos = declared.get(parameters.len()).map_or(self.c.pos(), |p| p.pos);
            return Err(self.c.error_at(
                pos,
                format!(
                    "computation '{name}' declares {} parameters in its signature but has {} parameter instructions",
                    declared.len(),
                    parameters.len()
                ),
            ));
        }
        for (i, (d, &p)) in declared.iter().zip(&parameters).enumerate() {
            let actual = &computation.get(p).shape;
            if !d.shape.compatible(actual) {
                return Err(self.c.error_at(
                    d.pos,
                    format!(
                        "parameter {i} of computation '{name}' is declared as {}: {} but parameter({i}) '{}' has shape {}",
                        d.name,
                        d.shape.to_text(false),
                        computation.get(p).name,
                        actual.to_text(false)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `, execution_thread="..."` after a computation's closing brace: accepted and dropped
    /// (hlojit runs every computation on the host).
    fn computation_attributes(&mut self) -> PResult<()> {
        while self.c.eat(b',') {
            if self.c.ident().is_none() {
                return Err(self.c.expected("a computation attribute name"));
            }
            self.c
                .expect(b'=', "after the computation attribute name")?;
            self.c.raw_value("a computation attribute value")?;
        }
        Ok(())
    }

    /// One instruction line. Returns the instruction (operands unresolved), the names it
    /// refers to, the ROOT keyword's position if present and the name's position.
    fn instruction(
        &mut self,
        comp: usize,
        index: usize,
    ) -> PResult<(Instruction, PendingOperands, Option<usize>, usize)> {
        self.c.skip_trivia();
        let mut is_root = None;
        let save = self.c.pos();
        if let Some((pos, "ROOT")) = self.c.ident() {
            if self.c.peek() != Some(b'=') {
                is_root = Some(pos);
            } else {
                self.c.set_pos(save);
            }
        } else {
            self.c.set_pos(save);
        }
        let (name_pos, name) = self.c.expect_name("an instruction name")?;
        self.c
            .expect(b'=', &format!("after instruction name '{name}'"))?;
        let shape = parse_shape(&mut self.c, 0)?;
        self.c.skip_trivia();
        let opcode_pos = self.c.pos();
        let Some((_, opcode_name)) = self.c.ident() else {
            return Err(self.c.expected("an opcode"));
        };
        let Some(opcode) = Opcode::from_name(opcode_name) else {
            return Err(self
                .c
                .error_at(opcode_pos, format!("unknown opcode '{opcode_name}'")));
        };
        self.c
            .expect(b'(', &format!("after opcode {opcode_name}"))?;

        let mut parsed = InstrAttrs::default();
        let mut operands = Vec::new();
        match opcode {
            Opcode::Constant => {
                if self.elided_literal() {
                    // `{...}`: XLA left the values out; the constant keeps no literal.
                } else {
                    parsed.attrs.literal = Some(parse_literal(&mut self.c, &shape, 0)?);
                }
                self.c.expect(b')', "after the constant's value")?;
            }
            Opcode::Parameter => {
                parsed.attrs.parameter_number = Some(self.c.non_negative("a parameter number")?);
                self.c.expect(b')', "after the parameter number")?;
            }
            _ => operands = self.operands()?,
        }

        let mut seen: Vec<&str> = Vec::new();
        let mut backend_config_pos = None;
        while self.c.eat(b',') {
            let Some((key_pos, key)) = self.c.ident() else {
                return Err(self.c.expected("an attribute name"));
            };
            if seen.contains(&key) {
                return Err(self
                    .c
                    .error_at(key_pos, format!("duplicate attribute '{key}'")));
            }
            if !attribute_schema::takes(opcode, key) {
                let own = attribute_schema::attributes_of(opcode);
                let takes = if own.is_empty() { "none of its own".to_string() } else { own.join(", ") };
                return Err(self.c.error_at(
                    key_pos,
                    format!("{opcode} has no attribute '{key}' (it takes {takes}, besides the ones every instruction may carry: {})", attribute_schema::COMMON.join(", ")),
                ));
            }
            seen.push(key);
            if key == "backend_config" {
                backend_config_pos = Some(key_pos);
            }
            self.c
                .expect(b'=', &format!("after attribute name {key}"))?;
            parse_attribute(&mut self.c, key, opcode, &mut parsed)?;
        }

        if opcode == Opcode::CustomCall {
            if let Err(message) = parsed.attrs.decode_ffi_attributes() {
                let at = backend_config_pos.unwrap_or(opcode_pos);
                return Err(self.c.error_at(at, format!("custom-call: {message}")));
            }
        }
        let refs = called_in_role_order(opcode, parsed.called)
            .map_err(|m| self.c.error_at(opcode_pos, m))?;
        if !refs.is_empty() {
            self.pending_calls.push(PendingCalls {
                comp,
                instr: index,
                refs,
            });
        }
        let mut instruction = Instruction::new(name, opcode, shape, Vec::new());
        instruction.attrs = parsed.attrs;
        let pending = PendingOperands {
            operands,
            control_predecessors: parsed.control_predecessors,
        };
        Ok((instruction, pending, is_root, name_pos))
    }

    /// True (and consumed) if `{...}` follows: a constant printed without its values.
    fn elided_literal(&mut self) -> bool {
        let save = self.c.pos();
        if self.c.eat(b'{') && self.c.eat_str("...") && self.c.eat(b'}') {
            return true;
        }
        self.c.set_pos(save);
        false
    }

    /// `a, b` or `f32[2]{0} %a, (s32[], f32[]) %b`, through the closing `)`.
    fn operands(&mut self) -> PResult<Vec<(NameRef, Option<Shape>)>> {
        let mut operands = Vec::new();
        if self.c.eat(b')') {
            return Ok(operands);
        }
        loop {
            let declared = if self.typed_operand_follows() {
                Some(parse_shape(&mut self.c, 0)?)
            } else {
                None
            };
            let (pos, name) = self.c.expect_name("an operand name")?;
            operands.push((
                NameRef {
                    name: name.to_string(),
                    pos,
                },
                declared,
            ));
            if self.c.eat(b')') {
                return Ok(operands);
            }
            self.c.expect(b',', "or ')' between operands")?;
        }
    }

    /// True if the next operand is written with its shape first.
    fn typed_operand_follows(&mut self) -> bool {
        if self.c.peek() == Some(b'(') {
            return true;
        }
        let save = self.c.pos();
        let result = match self.c.ident() {
            Some((_, word)) => {
                self.c.peek_raw() == Some(b'[')
                    && (ElementType::from_name(word).is_some()
                        || matches!(word, "token" | "opaque"))
            }
            None => false,
        };
        self.c.set_pos(save);
        result
    }
}

/// Orders called computations as `Instruction::called` documents: `[condition, body]` for
/// while, `[select, scatter]` for select-and-scatter, `[true, false]` or the branches for
/// conditional, otherwise to_apply / calls / called_computations in that order.
fn called_in_role_order(opcode: Opcode, called: CalledRefs) -> Result<Vec<NameRef>, String> {
    let CalledRefs {
        to_apply,
        calls,
        condition,
        body,
        select,
        scatter,
        true_computation,
        false_computation,
        branches,
        called_computations,
    } = called;
    let mut refs = Vec::new();
    match opcode {
        Opcode::While => match (condition, body) {
            (Some(c), Some(b)) => refs.extend([c, b]),
            (None, None) => {}
            _ => return Err("while needs both condition= and body=".to_string()),
        },
        Opcode::SelectAndScatter => match (select, scatter) {
            (Some(s), Some(t)) => refs.extend([s, t]),
            (None, None) => {}
            _ => return Err("select-and-scatter needs both select= and scatter=".to_string()),
        },
        Opcode::Conditional => match (true_computation, false_computation, branches.is_empty()) {
            (Some(t), Some(f), true) => refs.extend([t, f]),
            (None, None, _) => refs.extend(branches),
            _ => return Err("conditional needs true_computation= and false_computation=, or branch_computations=".to_string()),
        },
        _ => {
            for role in [condition, body, select, scatter, true_computation, false_computation].into_iter().flatten() {
                refs.push(role);
            }
            refs.extend(branches);
        }
    }
    let mut ordered = to_apply;
    ordered.extend(calls);
    ordered.extend(called_computations);
    ordered.extend(refs);
    Ok(ordered)
}
