//! CHLO ops: the ones HLO has an instruction for (`erf`, `top_k`) map to it; the others are
//! decomposed into StableHLO-level HLO as stablehlo's chlo-legalize-to-stablehlo pass does.

use super::super::ir::{Op, Type};
use super::{CResult, Comp, Converter, Val};

impl<'m> Converter<'m> {
    pub(super) fn convert_chlo(&mut self, comp: &mut Comp, op: &'m Op, short: &str, operands: &[Val]) -> CResult<Vec<Val>> {
        let args = operands.iter().map(|v| v.name.clone()).collect::<Vec<_>>().join(", ");
        let ty = || op.result_types.first().cloned().unwrap_or(Type::Token);
        match short {
            "erf" => Ok(vec![self.emit(comp, "erf", &ty(), format!("erf({args})"))?]),
            "square" => {
                let x = &operands[0].name;
                Ok(vec![self.emit(comp, "multiply", &ty(), format!("multiply({x}, {x})"))?])
            }
            "top_k" => {
                let k = match op.attr("k") {
                    Some(super::super::ir::Attr::Int(k, _)) => *k,
                    _ => return Err(self.err("top_k without k")),
                };
                self.emit_multi(comp, "topk", &op.result_types, format!("topk({args}), k={k}, largest=true"))
            }
            "tan" => Ok(vec![self.emit(comp, "tan", &ty(), format!("tan({args})"))?]),
            _ => Err(self.err(format!("unsupported op 'chlo.{short}'"))),
        }
    }
}
