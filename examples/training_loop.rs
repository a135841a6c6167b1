//! A training-style loop: every step donates the model state to the computation, which
//! updates it in place (the module aliases its new weights with the old ones).
//!
//! `cargo run --release --example training_loop`

use hlojit::{Argument, Client, HostBuffer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/training_loop.hlo"))?;
    let step = Client::new().compile_text(&text)?;

    // Data from a known linear model: y = X w* + 0.5.
    let true_w: Vec<f32> = (0..16).map(|i| (i as f32 - 7.5) / 8.0).collect();
    let x: Vec<f32> = (0..256 * 16).map(|i| ((i * 7919 % 1000) as f32 / 500.0) - 1.0).collect();
    let y: Vec<f32> = (0..256).map(|r| (0..16).map(|c| x[r * 16 + c] * true_w[c]).sum::<f32>() + 0.5).collect();
    let x = HostBuffer::from_slice(&[256, 16], &x)?;
    let y = HostBuffer::from_slice(&[256], &y)?;

    let mut w = HostBuffer::from_slice(&[16], &[0.0f32; 16])?;
    let mut b = HostBuffer::from_slice(&[], &[0.0f32])?;
    let state = w.as_ptr();
    let mut loss = f32::INFINITY;
    for i in 0..600 {
        let args = vec![Argument::Donated(w), Argument::Donated(b), (&x).into(), (&y).into()];
        let mut out = step.run(args)?.into_iter();
        (w, b) = (out.next().ok_or("no weights")?, out.next().ok_or("no bias")?);
        loss = out.next().ok_or("no loss")?.as_slice::<f32>()?[0];
        assert_eq!(w.as_ptr(), state, "the weights are updated in place");
        if i % 100 == 0 {
            println!("step {i:3}: loss {loss:.6}");
        }
    }
    println!("final loss {loss:.2e}, bias {:.4} (true 0.5), weights updated in place every step", b.as_slice::<f32>()?[0]);
    if loss > 1e-4 {
        return Err(format!("did not converge: loss {loss}").into());
    }
    Ok(())
}
