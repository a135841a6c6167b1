//! Producer-consumer multi-output fusion, as XLA's multi-output fusion pass does it: a fusion
//! whose value is needed in memory anyway (it is a module output, or other kernels read it)
//! and is also read by a consumer fusion running the same loop merges into that consumer. The
//! merged kernel stores the producer's value and hands it to the consumer in registers, so the
//! consumer no longer reads it back (and the producer's own inputs, when the consumer reads
//! them too, stream once).
//!
//! XLA's rules, kept here: the two loops must be compatible ([`LoopSpace::merge`]); the
//! consumer must read the producer at the index it visits (through elementwise ops of the
//! loop's shape, or as the operand of its reductions), otherwise fusing would recompute the
//! producer per use instead of sharing it; no other path may lead from the producer to the
//! consumer (the merged fusion would depend on itself); the merged body stays under the size
//! budget. A producer with the consumer as its only user is plain fusion's business.

use super::fusion::sequenced_computations;
use super::multi_output::{fused_size, loop_space, merge, reaches, value_nodes, MAX_FUSED_INSTRUCTIONS};
use crate::error::Result;
use crate::hlo::{CompId, Computation, InstrId, Module, Opcode};

/// Merges producers into consumers in every computation that runs as a sequence of kernels.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for c in sequenced_computations(module) {
        while let Some((p, u)) = find_pair(module, c) {
            merge(module, c, p, u, true)?;
            changed = true;
        }
    }
    Ok(changed)
}

fn find_pair(module: &Module, c: CompId) -> Option<(InstrId, InstrId)> {
    let comp = module.computation(c);
    let users = comp.users();
    for producer in comp.post_order() {
        let Some(ps) = loop_space(module, c, producer) else { continue };
        // The producer's values reach their users directly or through get-tuple-element.
        let nodes = value_nodes(comp, &users, producer);
        let mut readers: Vec<InstrId> = nodes.iter().flat_map(|n| users[n.index()].iter().copied()).collect();
        readers.sort();
        readers.dedup();
        if readers.len() < 2 {
            continue;
        }
        for &consumer in &readers {
            let Some(cs) = loop_space(module, c, consumer) else { continue };
            let Some(space) = ps.merge(&cs) else { continue };
            let fits = fused_size(module, comp.get(producer)) + fused_size(module, comp.get(consumer)) <= MAX_FUSED_INSTRUCTIONS;
            let other_path = nodes.iter().any(|&n| reaches(&users, n, consumer, &[consumer]));
            if fits && !other_path && reads_at_visited_index(module, comp, consumer, &nodes, space.dims()) {
                return Some((producer, consumer));
            }
        }
    }
    None
}

/// Whether every read of the producer's values (`nodes`) inside fusion `consumer` is at the
/// element the loop visits: by elementwise ops whose shape is the loop's, or as the operand of
/// a reduce over it.
fn reads_at_visited_index(module: &Module, comp: &Computation, consumer: InstrId, nodes: &[InstrId], loop_dims: &[i64]) -> bool {
    let fusion = comp.get(consumer);
    let Some(f) = fusion.fused_computation() else {
        // An unfused consumer: an elementwise op of the loop's shape, or a reduce of it.
        let elementwise = fusion.opcode.is_elementwise() && fusion.shape.dims() == loop_dims;
        let reduced = fusion.opcode == Opcode::Reduce && fusion.operands.iter().skip(1).all(|o| !nodes.contains(o));
        return elementwise || reduced;
    };
    let body = module.computation(f);
    let users = body.users();
    let params = body.parameters();
    fusion.operands.iter().enumerate().filter(|(_, o)| nodes.contains(o)).all(|(i, _)| {
        let Some(&p) = params.iter().find(|&&p| body.get(p).attrs.parameter_number == Some(i as i64)) else { return false };
        body.get(p).shape.dims() == loop_dims
            && users[p.index()].iter().all(|&u| {
                let user = body.get(u);
                let elementwise = user.opcode.is_elementwise() && user.shape.dims() == loop_dims;
                let reduced = user.opcode == Opcode::Reduce && user.operands[0] == p;
                elementwise || reduced || (u == body.root && user.opcode == Opcode::Tuple)
            })
    })
}

/// Producer-consumer multi-output fusion.
pub struct ProducerConsumerFusion;

impl super::pass::Pass for ProducerConsumerFusion {
    fn name(&self) -> &'static str {
        "producer-consumer-fusion"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::test_util::run_verified;

    fn fusions(m: &Module) -> Vec<InstrId> {
        let e = m.entry_computation();
        e.ids().filter(|&i| e.get(i).opcode == Opcode::Fusion).collect()
    }

    /// The module as the fusion pass leaves it: `m` is a module output and, being expensive
    /// (exp), is not recomputed through the consumer's broadcast-free elementwise use because
    /// it has too many users.
    const TEXT: &str = "HloModule m\nENTRY e { a = f32[256] parameter(0)  b = f32[256] parameter(1)\n\
        fa = f32[256] fusion(a, b), kind=kLoop, calls=fa_body\n\
        fb = f32[256] fusion(fa, b), kind=kLoop, calls=fb_body\n\
        ROOT t = (f32[256], f32[256]) tuple(fa, fb) }\n\
        fa_body { p0 = f32[256] parameter(0)  p1 = f32[256] parameter(1)  s = f32[256] add(p0, p1)  ROOT x = f32[256] exponential(s) }\n\
        fb_body { q0 = f32[256] parameter(0)  q1 = f32[256] parameter(1)  ROOT y = f32[256] multiply(q0, q1) }\n";

    #[test]
    fn an_output_that_a_consumer_reads_is_stored_by_the_consumer() {
        let (changed, m) = run_verified(TEXT, run);
        assert!(changed);
        let f = fusions(&m);
        assert_eq!(f.len(), 1, "{}", crate::hlo::text::print_module(&m));
        let e = m.entry_computation();
        // a and b, each read once.
        assert_eq!(e.get(f[0]).operands.len(), 2);
        let body = m.computation(e.get(f[0]).fused_computation().unwrap());
        assert_eq!(body.root_instruction().operands.len(), 2);
        // The module result reads both outputs through get-tuple-element.
        let root = e.root_instruction();
        assert!(root.operands.iter().all(|&o| e.get(o).opcode == Opcode::GetTupleElement));
    }

    #[test]
    fn a_producer_read_by_many_consumers_becomes_one_kernel_with_them() {
        // p = exp(x) has five users, too many to be recomputed in each, so plain fusion leaves
        // it a kernel of its own: the first consumer takes the producer in (a multi-output
        // producer from then on), the next ones follow.
        let text = "HloModule m\nENTRY e { x = f32[256] parameter(0)  p = f32[256] exponential(x)\n\
            a = f32[256] add(p, x)  b = f32[256] multiply(p, x)  c = f32[256] subtract(p, x)  d = f32[256] divide(p, x)\n\
            ROOT t = (f32[256], f32[256], f32[256], f32[256], f32[256]) tuple(p, a, b, c, d) }\n";
        let mut m = crate::hlo::text::parse_module(text).unwrap();
        crate::passes::fusion::fuse(&mut m).unwrap();
        // Five kernels: every op is alone in its group (the exponential is no one's to take).
        assert_eq!(fusions(&m).len(), 0);
        let (changed, m) = run_verified(&crate::hlo::text::print_module(&m), run);
        assert!(changed);
        let f = fusions(&m);
        assert_eq!(f.len(), 1, "{}", crate::hlo::text::print_module(&m));
        let body = m.computation(m.entry_computation().get(f[0]).fused_computation().unwrap());
        assert_eq!(body.root_instruction().operands.len(), 5);
        assert_eq!(body.ids().filter(|&i| body.get(i).opcode == Opcode::Exp).count(), 1);
    }

    #[test]
    fn a_consumer_reading_the_producer_transposed_is_left_alone() {
        let text = "HloModule m\nENTRY e { a = f32[16,16] parameter(0)\n\
            fa = f32[16,16] fusion(a), kind=kLoop, calls=fa_body\n\
            fb = f32[16,16] fusion(fa), kind=kLoop, calls=fb_body\n\
            ROOT t = (f32[16,16], f32[16,16]) tuple(fa, fb) }\n\
            fa_body { p0 = f32[16,16] parameter(0)  ROOT x = f32[16,16] exponential(p0) }\n\
            fb_body { q0 = f32[16,16] parameter(0)  tr = f32[16,16] transpose(q0), dimensions={1,0}  ROOT y = f32[16,16] add(tr, q0) }\n";
        let (changed, _) = run_verified(text, run);
        assert!(!changed);
    }

    #[test]
    fn a_second_path_from_producer_to_consumer_prevents_the_merge() {
        // fb reads fa directly and through the sort, which is not fused: merging would make
        // the sort both an operand and a user of the merged fusion.
        let text = "HloModule m\nlt { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT c = pred[] compare(a, b), direction=LT }\n\
            ENTRY e { a = f32[256] parameter(0)\n\
            fa = f32[256] fusion(a), kind=kLoop, calls=fa_body\n\
            s = f32[256] sort(fa), dimensions={0}, to_apply=lt\n\
            fb = f32[256] fusion(fa, s), kind=kLoop, calls=fb_body\n\
            ROOT t = (f32[256], f32[256]) tuple(fa, fb) }\n\
            fa_body { p0 = f32[256] parameter(0)  ROOT x = f32[256] exponential(p0) }\n\
            fb_body { q0 = f32[256] parameter(0)  q1 = f32[256] parameter(1)  ROOT y = f32[256] add(q0, q1) }\n";
        let (changed, _) = run_verified(text, run);
        assert!(!changed);
    }
}
