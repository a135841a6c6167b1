//! What an on-disk entry records beside the object files, so that a hit needs neither the HLO
//! passes nor LLVM: the entry signature of the prepared module (the layouts arguments must
//! have, names for messages, aliasing, the largest buffers) and the custom-call targets the
//! code calls (resolved again in the loading process, which may register other functions).
//!
//! Encoded as length-prefixed fields; shapes as their text (the printer's form with layouts,
//! parsed back by the HLO shape parser). Before storing, the encoding is decoded again and
//! compared: an executable whose record would not come back equal is not cached at all.

use crate::hlo::text::parse_shape;
use hlojit_runtime::executor::{Alias, Signature};
use hlojit_runtime::{ArrayShape, Layout, Shape};

/// An executable's record in its cache entry.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryMeta {
    pub signature: Signature,
    /// Custom-call targets by name, in the order the compilation resolved them.
    pub targets: Vec<String>,
}

impl EntryMeta {
    /// The record as bytes; `None` when it would not decode to itself (then do not cache).
    pub fn encode(&self) -> Option<Vec<u8>> {
        let s = &self.signature;
        let mut w = Writer::default();
        w.shapes(&s.parameters);
        w.shapes(std::slice::from_ref(&s.result));
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
        let bytes = w.0;
        (EntryMeta::decode(&bytes).as_ref() == Ok(self)).then_some(bytes)
    }

    /// The record encoded in `bytes`; an error says what is malformed.
    pub fn decode(bytes: &[u8]) -> Result<EntryMeta, String> {
        let mut r = super::disk::Reader::new(bytes);
        let parameters = shapes(&mut r)?;
        let result = match shapes(&mut r)?.as_slice() {
            [one] => one.clone(),
            _ => return Err("malformed result shape".into()),
        };
        let argument_names = strings(&mut r)?;
        let output_names = strings(&mut r)?;
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
            largest_buffers.push((string(&mut r)?, string(&mut r)?, r.u64()?));
        }
        let targets = strings(&mut r)?;
        if !r.at_end() {
            return Err("trailing bytes after the executable's record".into());
        }
        let signature = Signature { parameters, result, argument_names, output_names, aliases, largest_buffers };
        Ok(EntryMeta { signature, targets })
    }
}

#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn string(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }

    fn strings(&mut self, items: &[String]) {
        self.u64(items.len() as u64);
        for s in items {
            self.string(s);
        }
    }

    fn shapes(&mut self, items: &[Shape]) {
        self.u64(items.len() as u64);
        for s in items {
            self.string(&s.to_string());
            // The text of a scalar has no layout; whether it had one is recorded apart.
            let mut flags = Vec::new();
            scalar_layouts(&mut s.clone(), &mut |a| flags.push(a.layout.is_some()));
            self.u64(flags.len() as u64);
            for f in flags {
                self.u64(f as u64);
            }
        }
    }
}

fn string(r: &mut super::disk::Reader) -> Result<String, String> {
    String::from_utf8(r.chunk()?.to_vec()).map_err(|_| "malformed text in the executable's record".to_string())
}

fn strings(r: &mut super::disk::Reader) -> Result<Vec<String>, String> {
    (0..r.count()?).map(|_| string(r)).collect()
}

fn shapes(r: &mut super::disk::Reader) -> Result<Vec<Shape>, String> {
    let mut out = Vec::new();
    for _ in 0..r.count()? {
        let mut shape = parse_shape(&string(r)?).map_err(|e| format!("malformed shape in the executable's record: {e}"))?;
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
        EntryMeta { signature, targets: vec!["my_target".into(), "tab\tand\nnewline".into()] }
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
