//! Builds a two-layer perceptron with a softmax head using hlojit's builder, prints its HLO,
//! compiles it, runs it on a batch and checks the result against a plain Rust evaluation.
//!
//! Run with `cargo run --release --example mlp_builder`.

use hlojit::hlo::builder::{Builder, Op};
use hlojit::hlo::Module;
use hlojit::{Client, ElementType::F32, HostBuffer, Shape};

const BATCH: usize = 8;
const INPUTS: usize = 16;
const HIDDEN: usize = 32;
const CLASSES: usize = 4;

/// `softmax(relu(x . w1 + b1) . w2 + b2)` over the classes of each batch row.
pub fn build_mlp() -> Result<Module, hlojit::Error> {
    let b = Builder::new("mlp");
    let x = b.parameter(0, Shape::array(F32, [BATCH as i64, INPUTS as i64]), "x")?;
    let w1 = b.parameter(1, Shape::array(F32, [INPUTS as i64, HIDDEN as i64]), "w1")?;
    let b1 = b.parameter(2, Shape::array(F32, [HIDDEN as i64]), "b1")?;
    let w2 = b.parameter(3, Shape::array(F32, [HIDDEN as i64, CLASSES as i64]), "w2")?;
    let b2 = b.parameter(4, Shape::array(F32, [CLASSES as i64]), "b2")?;

    // Each bias vector matches dimension 1 of its layer's [batch, features] product.
    let hidden = b.add_in_dim(&b.dot(&x, &w1)?, &b1, &[1])?;
    let hidden = b.max(&hidden, &b.zero(F32)?)?;
    let logits = b.add_in_dim(&b.dot(&hidden, &w2)?, &b2, &[1])?;
    let probabilities = softmax(&b, &logits)?;
    b.build(&probabilities)
}

/// Softmax along dimension 1 of a [batch, classes] array, shifted by the row maximum.
fn softmax(b: &Builder, logits: &Op) -> Result<Op, hlojit::Error> {
    let lowest = b.scalar(F32, f64::NEG_INFINITY)?;
    let row_max = b.reduce(logits, &lowest, &[1], |r, p| r.max(&p[0], &p[1]))?;
    // The per-row vectors match dimension 0 of the [batch, classes] logits.
    let exp = b.exp(&b.sub_in_dim(logits, &row_max, &[0])?)?;
    let row_sum = b.reduce(&exp, &b.zero(F32)?, &[1], |r, p| r.add(&p[0], &p[1]))?;
    b.div_in_dim(&exp, &row_sum, &[0])
}

/// Deterministic inputs in [-0.5, 0.5).
fn values(count: usize, seed: usize) -> Vec<f32> {
    (0..count).map(|i| ((i * 37 + seed * 11) % 101) as f32 / 101.0 - 0.5).collect()
}

/// The same network evaluated with loops in f64.
fn reference(x: &[f32], w1: &[f32], b1: &[f32], w2: &[f32], b2: &[f32]) -> Vec<f64> {
    let mut out = Vec::with_capacity(BATCH * CLASSES);
    for row in 0..BATCH {
        let hidden: Vec<f64> = (0..HIDDEN)
            .map(|h| {
                let s: f64 = (0..INPUTS).map(|i| x[row * INPUTS + i] as f64 * w1[i * HIDDEN + h] as f64).sum();
                (s + b1[h] as f64).max(0.0)
            })
            .collect();
        let logits: Vec<f64> = (0..CLASSES)
            .map(|c| (0..HIDDEN).map(|h| hidden[h] * w2[h * CLASSES + c] as f64).sum::<f64>() + b2[c] as f64)
            .collect();
        let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let exps: Vec<f64> = logits.iter().map(|l| (l - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        out.extend(exps.iter().map(|e| e / sum));
    }
    out
}

/// Builds, compiles and runs the network; returns the largest difference from the reference.
pub fn run(print_hlo: bool) -> Result<f64, Box<dyn std::error::Error>> {
    let module = build_mlp()?;
    if print_hlo {
        println!("{module}");
    }
    let exe = Client::new().compile(&module)?;
    let (x, w1, b1) = (values(BATCH * INPUTS, 1), values(INPUTS * HIDDEN, 2), values(HIDDEN, 3));
    let (w2, b2) = (values(HIDDEN * CLASSES, 4), values(CLASSES, 5));
    let dims = |d: &[usize]| d.iter().map(|&n| n as i64).collect::<Vec<i64>>();
    let args = [
        HostBuffer::from_slice(&dims(&[BATCH, INPUTS]), &x)?,
        HostBuffer::from_slice(&dims(&[INPUTS, HIDDEN]), &w1)?,
        HostBuffer::from_slice(&dims(&[HIDDEN]), &b1)?,
        HostBuffer::from_slice(&dims(&[HIDDEN, CLASSES]), &w2)?,
        HostBuffer::from_slice(&dims(&[CLASSES]), &b2)?,
    ];
    let outputs = exe.run(&args)?;
    let got = outputs.first().ok_or("no output")?.as_slice::<f32>()?;
    let expected = reference(&x, &w1, &b1, &w2, &b2);
    Ok(got.iter().zip(&expected).map(|(&g, &e)| (g as f64 - e).abs()).fold(0.0, f64::max))
}

#[allow(dead_code)] // the integration harness includes this file and calls `run`
fn main() {
    match run(true) {
        Ok(error) if error < 1e-5 => println!("matches the reference (max abs difference {error:.2e})"),
        Ok(error) => {
            eprintln!("differs from the reference by up to {error:.2e}");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
