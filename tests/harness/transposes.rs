//! Kernels that transpose large operands walk them in tiles; the tiles' ragged edges, task
//! splits and transposes through broadcasts and copies must still give every element.

use hlojit::{Client, HostBuffer};

fn run(text: &str, args: &[&HostBuffer]) -> Vec<f32> {
    let exe = Client::new().compile_text(text).expect("compiles");
    let out = exe.run(args.iter().copied()).expect("runs");
    out[0].as_slice::<f32>().expect("f32").to_vec()
}

fn ramp(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| i as f32 * scale).collect()
}

#[test]
fn transpose_plus_array_with_ragged_tiles() {
    // 130 x 1000: neither is a multiple of the tile, and the work is large enough to be split
    // into parallel tasks over rows.
    let (r, c) = (130usize, 1000usize);
    let text = format!(
        "HloModule t
ENTRY e {{
  x = f32[{c},{r}]{{1,0}} parameter(0)
  y = f32[{r},{c}]{{1,0}} parameter(1)
  t = f32[{r},{c}]{{1,0}} transpose(x), dimensions={{1,0}}
  ROOT s = f32[{r},{c}]{{1,0}} add(t, y)
}}"
    );
    let x = HostBuffer::from_slice(&[c as i64, r as i64], &ramp(r * c, 1.0)).unwrap();
    let y = HostBuffer::from_slice(&[r as i64, c as i64], &ramp(r * c, 0.001)).unwrap();
    let got = run(&text, &[&x, &y]);
    for i in 0..r {
        for j in 0..c {
            let want = (j * r + i) as f32 + (i * c + j) as f32 * 0.001;
            assert_eq!(got[i * c + j], want, "element [{i}, {j}]");
        }
    }
}

#[test]
fn layout_change_of_a_rank_3_array_through_a_broadcast() {
    // out[r, p, q] = x[p, q] * r, with x column-major and the output row-major: x's minor
    // dimension is output dimension 1, found through the broadcast.
    let (k, a, b) = (3usize, 96usize, 70usize);
    let text = format!(
        "HloModule t
ENTRY e {{
  x = f32[{a},{b}]{{0,1}} parameter(0)
  xb = f32[{k},{a},{b}]{{2,1,0}} broadcast(x), dimensions={{1,2}}
  i = f32[{k},{a},{b}]{{2,1,0}} iota(), iota_dimension=0
  ROOT m = f32[{k},{a},{b}]{{2,1,0}} multiply(xb, i)
}}"
    );
    // x in logical order: x[p, q] = p * 1000 + q.
    let logical: Vec<f32> = (0..a).flat_map(|p| (0..b).map(move |q| (p * 1000 + q) as f32)).collect();
    let x = HostBuffer::from_slice(&[a as i64, b as i64], &logical).unwrap().relayout(hlojit::Layout::new(vec![0, 1])).unwrap();
    let got = run(&text, &[&x]);
    for r in 0..k {
        for p in 0..a {
            for q in 0..b {
                assert_eq!(got[(r * a + p) * b + q], (p * 1000 + q) as f32 * r as f32, "element [{r}, {p}, {q}]");
            }
        }
    }
}
