//! Runs an HLO module as JAX dumps it (`jax.jit(f).lower(*args).as_text(dialect="hlo")`) on
//! `.npy` inputs and compares with expected outputs when they are there.
//!
//! `cargo run --release --example run_jax_hlo [CASE_DIR]` — a directory with `module.hlo`,
//! `in0.npy`, ... and optionally `out0.npy`, ... (the layout of the conformance corpus).

use hlojit::{npy, Client, HostBuffer};
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/cases/model_mlp_forward")
    });
    let text = std::fs::read_to_string(dir.join("module.hlo"))?;
    let exe = Client::new().compile_text(&text)?;
    println!("compiled {} in {:.1} ms", dir.display(), exe.compile_time().as_secs_f64() * 1e3);

    let mut inputs = Vec::new();
    for (i, shape) in exe.argument_shapes().into_iter().enumerate() {
        let literal = npy::read(&dir.join(format!("in{i}.npy")), Some(shape.element_type))?;
        inputs.push(HostBuffer::from_literal(literal).relayout(shape.layout_or_default())?);
    }
    let outputs = exe.run(&inputs)?;
    for (i, out) in outputs.iter().enumerate() {
        let got = out.to_literal();
        print!("out{i}: {}{:?}", got.element_type(), got.dims());
        let expected = dir.join(format!("out{i}.npy"));
        if expected.exists() {
            let want = npy::read(&expected, Some(got.element_type()))?;
            let worst = (0..want.element_count()).map(|e| (got.get_f64(e) - want.get_f64(e)).abs()).fold(0.0, f64::max);
            print!(", largest difference from the expected output {worst:.2e}");
        }
        println!();
    }
    Ok(())
}
