//! What an on-disk entry records beside the object files, so that a hit needs neither the HLO
//! passes nor LLVM: the entry signature of the prepared module (the layouts arguments must
//! have, names for messages, aliasing, the largest buffers) and the custom-call targets the
//! code calls (resolved again in the loading process, which may register other functions),
//! the devices it runs on and, for a module that runs as a program of runtime calls (no
//! machine code), those calls.
//!
//! Encoded as length-prefixed fields; shapes as their text (the printer's form with layouts,
//! parsed back by the HLO shape parser). Before storing, the encoding is decoded again and
//! compared: an executable whose record would not come back equal is not cached at all.

use super::fields::{Reader, Writer};
use crate::backend::library_program::{Call, Field};
use crate::codegen::collectives::groups::DeviceGrid;
use crate::hlo::text::parse_shape;
use hlojit_runtime::executor::{Alias, Signature};
use hlojit_runtime::{ArrayShape, Layout, Shape};

/// An executable's record in its cache entry.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryMeta {
    pub signature: Signature,
    /// Custom-call targets by name, in the order the compilation resolved them.
    pub targets: Vec<String>,
    /// Replicas and partitions the program runs on.
    pub grid: DeviceGrid,
    /// The program of runtime calls the module runs as, when it has no machine code.
    pub calls: Option<Vec<Call>>,
}

impl EntryMeta {
    /// The record as bytes; `None` when it would not decode to itself (then do not cache).
    pub fn encode(&self) -> Option<Vec<u8>> {
        let s = &self.signature;
        let mut w = Writer::default();
        write_shapes(&mut w, &s.parameters);
        write_shapes(&mut w, std::slice::from_ref(&s.result));
        w.strings(&s.argument_names);
        w.strings(&s.output_names);
        w.u64(s.aliases.len() as u64);
        for a in &s.aliases {
            w.u64(a.output as u64);
            w.u64(a.parameter as u64);
            w.u64(a.must as u64);
        }
        w.u64(s.largest_buffers.len() as u64);
        for (name, shape, bytes) in &s.largest_buffers {
            w.string(name);
            w.string(shape);
            w.u64(*bytes);
        }
        w.strings(&self.targets);
        w.u64(self.grid.replicas as u64);
        w.u64(self.grid.partitions as u64);
        w.u64(self.calls.is_some() as u64);
        if let Some(calls) = &self.calls {
            w.u64(calls.len() as u64);
        }
        for call in self.calls.iter().flatten() {
            w.string(&call.function);
            w.u64(call.fields.len() as u64);
            for f in &call.fields {
                let (tag, a, b) = match *f {
                    Field::Const(c) => (0, c as u64, 0),
                    Field::Parameter(n) => (1, n as u64, 0),
                    Field::Result(n) => (2, n as u64, 0),
                    Field::Temp { offset, size } => (3, offset as u64, size as u64),
                    Field::Slot(n) => (4, n as u64, 0),
                };
                w.u64(tag);
                w.u64(a);
                w.u64(b);
            }
        }
        let bytes = w.0;
        (EntryMeta::decode(&bytes).as_ref() == Ok(self)).then_some(bytes)
    }

    /// The record encoded in `bytes`; an error says what is malformed.
    pub fn decode(bytes: &[u8]) -> Result<EntryMeta, String> {
        let mut r = Reader::new(bytes);
        let parameters = shapes(&mut r)?;
        let result = match shapes(&mut r)?.as_slice() {
            [one] => one.clone(),
            _ => return Err("malformed result shape".into()),
        };
        let argument_names = r.strings()?;
        let output_names = r.strings()?;
        let mut aliases = Vec::new();
        for _ in 0..r.count()? {
            let output = r.usize()?;
            let parameter = r.usize()?;
            let must = match r.u64()? {
                0 => false,
                1 => true,
                _ => return Err("malformed alias".into()),
            };
            aliases.push(Alias { output, parameter, must });
        }
        let mut largest_buffers = Vec::new();
        for _ in 0..r.count()? {
            largest_buffers.push((r.string()?, r.string()?, r.u64()?));
        }
        let targets = r.strings()?;
        let grid = DeviceGrid { replicas: r.usize()?, partitions: r.usize()? };
        if grid.replicas == 0 || grid.partitions == 0 || grid.replicas.checked_mul(grid.partitions).is_none_or(|d| d > hlojit_runtime::limits::MAX_DEVICES) {
            return Err("malformed device grid in the executable's record".into());
        }
        let calls = match r.u64()? {
            0 => None,
            1 => Some(calls(&mut r)?),
            _ => return Err("malformed entry".into()),
        };
        if !r.at_end() {
            return Err("trailing bytes after the executable's record".into());
        }
        let signature = Signature { parameters, result, argument_names, output_names, aliases, largest_buffers };
        Ok(EntryMeta { signature, targets, grid, calls })
    }
}

/// Shapes as their text, with the scalar leaves that have a layout listed apart.
fn write_shapes(w: &mut Writer, items: &[Shape]) {
    w.u64(items.len() as u64);
    for s in items {
        w.string(&s.to_string());
        // The text of a scalar has no layout; whether it had one is recorded apart.
        let mut flags = Vec::new();
        scalar_layouts(&mut s.clone(), &mut |a| flags.push(a.layout.is_some()));
        w.u64(flags.len() as u64);
        for f in flags {
            w.u64(f as u64);
        }
    }
}

/// A program of runtime calls (as [`EntryMeta::encode`] writes it).
fn calls(r: &mut Reader) -> Result<Vec<Call>, String> {
    let mut calls = Vec::new();
    for _ in 0..r.count()? {
        let function = r.string()?;
        let mut fields = Vec::new();
        for _ in 0..r.count()? {
            let (tag, a, b) = (r.u64()?, r.u64()?, r.u64()?);
            let n = usize::try_from(a).map_err(|_| "malformed runtime call")?;
            fields.push(match tag {
                0 => Field::Const(a as i64),
                1 => Field::Parameter(n),
                2 => Field::Result(n),
                3 => Field::Temp { offset: a as i64, size: b as i64 },
                4 => Field::Slot(n),
                _ => return Err("malformed runtime call".into()),
            });
        }
        calls.push(Call { function, fields });
    }
    Ok(calls)
}

fn shapes(r: &mut Reader) -> Result<Vec<Shape>, String> {
    let mut out = Vec::new();
    for _ in 0..r.count()? {
        let mut shape = parse_shape(&r.string()?).map_err(|e| format!("malformed shape in the executable's record: {e}"))?;
        let flags: Vec<u64> = (0..r.count()?).map(|_| r.u64()).collect::<Result<_, _>>()?;
        let mut scalars = 0;
        scalar_layouts(&mut shape, &mut |a: &mut ArrayShape| {
            if flags.get(scalars) == Some(&1) {
                a.layout = Some(Layout::new(Vec::new()));
            }
            scalars += 1;
        });
        if scalars != flags.len() {
            return Err("malformed scalar layouts in the executable's record".into());
        }
        out.push(shape);
    }
    Ok(out)
}

/// Calls `f` on each rank-0 array leaf of `shape`, depth first.
fn scalar_layouts(shape: &mut Shape, f: &mut impl FnMut(&mut ArrayShape)) {
    match shape {
        Shape::Array(a) if a.dims.is_empty() => f(a),
        Shape::Tuple(elements) => elements.iter_mut().for_each(|e| scalar_layouts(e, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> EntryMeta {
        let p = |t: &str| parse_shape(t).unwrap();
        // Layout assignment gives scalars an empty layout, which their text does not show.
        let scalar_with_layout = Shape::Array(ArrayShape { layout: Some(Layout::new(Vec::new())), ..p("f32[]").as_array().unwrap().clone() });
        let signature = Signature {
            parameters: vec![p("f32[2,3]{0,1}"), p("(s32[], bf16[16,128]{1,0:T(8,128)(2,1)})"), scalar_with_layout, p("pred[]")],
            result: p("(f32[3,2]{1,0}, u8[0]{0})"),
            argument_names: vec!["parameter 0 (x)".into(), "parameter 1 (t, leaf 0)".into(), "parameter 1 (t, leaf 1)".into(), "parameter 2 (s)".into(), "parameter 3 (p)".into()],
            output_names: vec!["output 0 (of r)".into(), "output 1 (of r)".into()],
            aliases: vec![Alias { output: 0, parameter: 0, must: true }, Alias { output: 1, parameter: 4, must: false }],
            largest_buffers: vec![("dot.1".into(), "f32[3,2]{1,0}".into(), 24)],
        };
        let calls = vec![Call {
            function: "hlojit_rt_gemm_f32_avx512".into(),
            fields: vec![Field::Const(-7), Field::Parameter(1), Field::Result(0), Field::Temp { offset: 64, size: 4096 }],
        }];
        EntryMeta {
            signature,
            targets: vec!["my_target".into(), "tab\tand\nnewline".into()],
            grid: DeviceGrid { replicas: 2, partitions: 3 },
            calls: Some(calls),
        }
    }

    #[test]
    fn a_record_decodes_to_itself() {
        let m = meta();
        let bytes = m.encode().expect("round trip");
        assert_eq!(EntryMeta::decode(&bytes), Ok(m));
    }

    #[test]
    fn damaged_records_are_errors_not_panics() {
        let bytes = meta().encode().unwrap();
        for cut in [0, 1, 8, 9, bytes.len() / 2, bytes.len() - 1] {
            assert!(EntryMeta::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(EntryMeta::decode(&longer).is_err());
        // A count far beyond the bytes is malformed, not an allocation of that many items.
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&bytes[8..]);
        assert!(EntryMeta::decode(&huge).is_err());
    }
}
