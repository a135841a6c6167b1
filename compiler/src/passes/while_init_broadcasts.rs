//! Gives every element of a while loop's initial state that is a broadcast of a constant its
//! own broadcast. JAX initializes the stacked outputs and residuals of a scan with one
//! `broadcast(0)` used for all of them; the loop updates each in place, so all but one would
//! start as a copy of the shared zeros (read and write of the whole array), where a broadcast
//! of their own only writes. With its own producer, each element's buffer becomes the loop
//! state's (see `buffer_assignment.rs`).

use crate::error::Result;
use crate::hlo::{Module, Opcode};

pub struct WhileInitBroadcasts;

impl super::pass::Pass for WhileInitBroadcasts {
    fn name(&self) -> &'static str {
        "while-init-broadcasts"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        let mut changed = false;
        for c in module.computation_post_order() {
            let comp = module.computation_mut(c);
            let inits: Vec<_> = comp
                .ids()
                .filter(|&w| comp.get(w).opcode == Opcode::While)
                .map(|w| comp.get(w).operands[0])
                .filter(|&t| comp.get(t).opcode == Opcode::Tuple)
                .collect();
            for init in inits {
                let users = comp.users();
                let operands = comp.get(init).operands.clone();
                for (j, &o) in operands.iter().enumerate() {
                    let producer = comp.get(o);
                    let zeros_like = producer.opcode == Opcode::Broadcast
                        && comp.get(producer.operands[0]).opcode == Opcode::Constant
                        && producer.shape.is_array();
                    // Shared with an earlier element of this tuple or with anything else.
                    let shared = operands[..j].contains(&o) || users[o.index()].iter().any(|&u| u != init);
                    if zeros_like && shared {
                        let mut own = producer.clone();
                        own.name = format!("{}.init{j}", producer.name);
                        let own = comp.add(own);
                        comp.get_mut(init).operands[j] = own;
                        changed = true;
                    }
                }
            }
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::text::{parse_module, print_module};
    use crate::hlo::verify_module;
    use crate::passes::pass::Pass;

    #[test]
    fn each_stack_gets_its_own_zeros() {
        let text = r#"
HloModule scan
body {
  p = (f32[8,4], f32[8,4], f32[8,4]) parameter(0)
  ROOT r = (f32[8,4], f32[8,4], f32[8,4]) copy(p)
}
cond {
  p = (f32[8,4], f32[8,4], f32[8,4]) parameter(0)
  ROOT f = pred[] constant(false)
}
ENTRY main {
  z = f32[] constant(0)
  s = f32[8,4] broadcast(z), dimensions={}
  x = f32[8,4] parameter(0)
  init = (f32[8,4], f32[8,4], f32[8,4]) tuple(s, s, x)
  w = (f32[8,4], f32[8,4], f32[8,4]) while(init), condition=cond, body=body
  a = f32[8,4] get-tuple-element(w), index=0
  ROOT sum = f32[8,4] add(a, s)
}
"#;
        let mut m = parse_module(text).expect("parses");
        assert!(WhileInitBroadcasts.run(&mut m).expect("runs"));
        verify_module(&m).expect("verifies");
        let printed = print_module(&m);
        // The first element's broadcast is also read after the loop, so both get their own.
        assert!(printed.contains("tuple(%s.init0, %s.init1, %x)"), "{printed}");
        assert!(!WhileInitBroadcasts.run(&mut m).expect("runs again"), "nothing left to do");
    }
}
