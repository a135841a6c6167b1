//! End-to-end tests of the builder: modules built in Rust are compiled and run, and their
//! results compared with what the seeds state (seed 002 broadcasting, seed 003 expand and
//! repeat) or with references computed here from the seeds' definitions.

use hlojit::hlo::builder::{Builder, Op};
use hlojit::{Client, ElementType::F32, HostBuffer, Shape};

#[path = "../../examples/mlp_builder.rs"]
mod mlp_builder;

/// An array result: dimensions and row-major values.
type Array = (Vec<i64>, Vec<f32>);

/// Builds `root`, compiles and runs the module on f32 `args` (dims, values); returns the
/// result's dims and values.
fn run(b: &Builder, root: &Op, args: &[(&[i64], &[f32])]) -> Array {
    let module = b.build(root).unwrap_or_else(|e| panic!("build failed: {e}"));
    let exe = Client::new().compile(&module).unwrap_or_else(|e| panic!("compile failed: {e}\n{module}"));
    let args: Vec<HostBuffer> = args.iter().map(|(d, v)| HostBuffer::from_slice(d, v).unwrap()).collect();
    let out = exe.run(&args).unwrap_or_else(|e| panic!("run failed: {e}\n{module}"));
    (out[0].dims().to_vec(), out[0].as_slice::<f32>().unwrap().to_vec())
}

fn params(b: &Builder, shapes: &[&[i64]]) -> Vec<Op> {
    shapes
        .iter()
        .enumerate()
        .map(|(i, d)| b.parameter(i as i64, Shape::array(F32, d.to_vec()), &format!("p{i}")).unwrap())
        .collect()
}

/// `lhs (op) rhs` with `broadcast_dimensions`, run on the given values.
fn add(lhs: (&[i64], &[f32]), rhs: (&[i64], &[f32]), bd: &[i64]) -> Array {
    let b = Builder::new("seed002");
    let p = params(&b, &[lhs.0, rhs.0]);
    let sum = b.add_in_dim(&p[0], &p[1], bd).unwrap();
    run(&b, &sum, &[lhs, rhs])
}

fn iota(n: usize, start: f32) -> Vec<f32> {
    (0..n).map(|i| start + i as f32).collect()
}

// Seed 002: |1 2 3; 4 5 6| + |7 8 9| with broadcast dimension (1) = |8 10 12; 11 13 15|.
#[test]
fn seed_002_matrix_plus_vector() {
    let r = add((&[2, 3], &[1., 2., 3., 4., 5., 6.]), (&[3], &[7., 8., 9.]), &[1]);
    assert_eq!(r, (vec![2, 3], vec![8., 10., 12., 11., 13., 15.]));
    // The operands in the other order give the same.
    let r = add((&[3], &[7., 8., 9.]), (&[2, 3], &[1., 2., 3., 4., 5., 6.]), &[1]);
    assert_eq!(r, (vec![2, 3], vec![8., 10., 12., 11., 13., 15.]));
}

// Seed 002: |1 2 3; 4 5 6| + 7 = |8 9 10; 11 12 13|, no broadcast dimensions needed.
#[test]
fn seed_002_matrix_plus_scalar() {
    let b = Builder::new("seed002");
    let m = params(&b, &[&[2, 3]]).remove(0);
    let sum = b.add(&m, &b.constant_r0(7.0f32).unwrap()).unwrap();
    assert_eq!(run(&b, &sum, &[(&[2, 3], &[1., 2., 3., 4., 5., 6.])]), (vec![2, 3], vec![8., 9., 10., 11., 12., 13.]));
}

// Seed 002: |7 8 9| onto a 3x3 matrix becomes rows with broadcast dimension 1 and columns
// with broadcast dimension 0 (added to zeros, the result is the broadcast matrix the seed shows).
#[test]
fn seed_002_vector_onto_square_matrix_both_ways() {
    let zeros = [0.0f32; 9];
    let rows = add((&[3, 3], &zeros), (&[3], &[7., 8., 9.]), &[1]);
    assert_eq!(rows.1, vec![7., 8., 9., 7., 8., 9., 7., 8., 9.]);
    let cols = add((&[3, 3], &zeros), (&[3], &[7., 8., 9.]), &[0]);
    assert_eq!(cols.1, vec![7., 7., 7., 8., 8., 8., 9., 9., 9.]);
}

// Seed 002: a 3x4 matrix onto a 2x3x4 cuboid with broadcast dimensions (1, 2).
#[test]
fn seed_002_matrix_onto_cuboid() {
    let cuboid = iota(24, 0.0);
    let matrix = iota(12, 100.0);
    let (dims, got) = add((&[2, 3, 4], &cuboid), (&[3, 4], &matrix), &[1, 2]);
    assert_eq!(dims, vec![2, 3, 4]);
    // out[i, j, k] = cuboid[i, j, k] + matrix[j, k].
    let expected: Vec<f32> = (0..24).map(|n| cuboid[n] + matrix[n % 12]).collect();
    assert_eq!(got, expected);
}

// Seed 002's formal definition: a T vector matched with each dimension of an MxNxPxQ array.
#[test]
fn seed_002_vector_onto_each_dimension() {
    let dims = [2i64, 3, 4, 5];
    let big = iota(120, 0.0);
    for d in 0..4 {
        let t = dims[d] as usize;
        let v = iota(t, 1000.0);
        let (out_dims, got) = add((&dims, &big), (&[dims[d]], &v), &[d as i64]);
        assert_eq!(out_dims, dims.to_vec());
        let stride: usize = dims[d + 1..].iter().product::<i64>() as usize;
        let expected: Vec<f32> = (0..120).map(|n| big[n] + v[(n / stride) % t]).collect();
        assert_eq!(got, expected, "vector matched with dimension {d}");
    }
}

// Seed 002's degenerate-dimension examples.
#[test]
fn seed_002_degenerate_dimensions() {
    // (2,1) and (2,3) broadcast to (2,3).
    let r = add((&[2, 1], &[1., 2.]), (&[2, 3], &[10., 20., 30., 40., 50., 60.]), &[]);
    assert_eq!(r, (vec![2, 3], vec![11., 21., 31., 42., 52., 62.]));
    // (1,2,5) and (7,2,5) broadcast to (7,2,5): the one 2x5 block is added to each of the 7.
    let small = iota(10, 0.0);
    let big = iota(70, 100.0);
    let r = add((&[1, 2, 5], &small), (&[7, 2, 5], &big), &[]);
    assert_eq!(r.0, vec![7, 2, 5]);
    assert_eq!(r.1, (0..70).map(|n| big[n] + small[n % 10]).collect::<Vec<_>>());
    // (7,2,5) and (7,1,5) broadcast to (7,2,5): each 1x5 row is added to both rows of its block.
    let small = iota(35, 0.0);
    let r = add((&[7, 2, 5], &big), (&[7, 1, 5], &small), &[]);
    assert_eq!(r.0, vec![7, 2, 5]);
    assert_eq!(r.1, (0..70).map(|n| big[n] + small[(n / 10) * 5 + n % 5]).collect::<Vec<_>>());
    // The "outer operation": (2,1) and (1,3) broadcast to (2,3).
    let r = add((&[2, 1], &[1., 2.]), (&[1, 3], &[10., 20., 30.]), &[]);
    assert_eq!(r, (vec![2, 3], vec![11., 21., 31., 12., 22., 32.]));
}

// Seed 002: (7,2,5) and (7,2,6) are incompatible: the build fails with the dimension named.
#[test]
fn seed_002_incompatible_shapes_fail_at_build() {
    let b = Builder::new("seed002");
    let p = params(&b, &[&[7, 2, 5], &[7, 2, 6]]);
    let e = b.add(&p[0], &p[1]).unwrap_err().to_string();
    assert!(e.contains("add: incompatible shapes [7,2,5] and [7,2,6]: dimension 2 has sizes 5 and 6"), "{e}");
}

// Seed 002's composition: |1 2 3 4| + [5 6] (a 1x2 matrix) with broadcast dimension (0)
// = |6 7; 7 8; 8 9; 9 10|.
#[test]
fn seed_002_vector_plus_1x2_matrix() {
    let r = add((&[4], &[1., 2., 3., 4.]), (&[1, 2], &[5., 6.]), &[0]);
    assert_eq!(r, (vec![4, 2], vec![6., 7., 7., 8., 8., 9., 9., 10.]));
}

// Seed 002's composition: a 1x2 matrix onto a 4x3x1 array with broadcast dimensions (1, 2):
// first Mx1x2 (M = 4), then degenerate broadcasting to a 4x3x2 result.
#[test]
fn seed_002_1x2_matrix_onto_4x3x1() {
    let big = iota(12, 1.0);
    let r = add((&[1, 2], &[100., 200.]), (&[4, 3, 1], &big), &[1, 2]);
    assert_eq!(r.0, vec![4, 3, 2]);
    // out[i, j, k] = big[i, j, 0] + small[0, k].
    let expected: Vec<f32> = (0..24).map(|n| big[n / 2] + [100., 200.][n % 2]).collect();
    assert_eq!(r.1, expected);
}

// Comparisons broadcast the same way and give pred.
#[test]
fn seed_002_comparison_broadcasts() {
    let b = Builder::new("cmp");
    let p = params(&b, &[&[2, 3], &[3]]);
    let gt = b.gt_in_dim(&p[0], &p[1], &[1]).unwrap();
    let as_f32 = b.convert(&gt, F32).unwrap();
    let r = run(&b, &as_f32, &[(&[2, 3], &[1., 5., 3., 4., 2., 9.]), (&[3], &[2., 2., 5.])]);
    assert_eq!(r, (vec![2, 3], vec![0., 1., 0., 1., 0., 1.]));
}

/// Seed 003's forward mapping of expand: the output stride of each dimension is the input's
/// stride where the size is kept and 0 where it stretches or is new; out[idx] reads the
/// flattened input at sum(idx * output_stride). (The seed's Python, in Rust.)
fn expand_by_strides(input: &[i64], sizes: &[i64], data: &[f32]) -> Array {
    let mut stride = vec![1i64; input.len()];
    for i in (0..input.len().saturating_sub(1)).rev() {
        stride[i] = stride[i + 1] * input[i + 1];
    }
    let diff = sizes.len() - input.len();
    let mut out_stride = vec![0i64; sizes.len()];
    let mut out_dims = sizes.to_vec();
    for i in diff..sizes.len() {
        let d = input[i - diff];
        if sizes[i] == -1 || sizes[i] == d {
            out_stride[i] = stride[i - diff];
            out_dims[i] = d;
        }
    }
    (out_dims.clone(), gather_strided(&out_dims, &out_stride, data))
}

/// Reads `data` at sum(index * strides) for every index of `dims` in row-major order.
fn gather_strided(dims: &[i64], strides: &[i64], data: &[f32]) -> Vec<f32> {
    let count: i64 = dims.iter().product();
    (0..count)
        .map(|mut n| {
            let mut offset = 0;
            for (d, s) in dims.iter().zip(strides).rev() {
                offset += (n % d) * s;
                n /= d;
            }
            data[offset as usize]
        })
        .collect()
}

fn run_expand(input: &[i64], sizes: &[i64], data: &[f32]) -> Array {
    let b = Builder::new("expand");
    let x = params(&b, &[input]).remove(0);
    let e = b.expand(&x, sizes).unwrap();
    run(&b, &e, &[(input, data)])
}

// Seed 003, expand example 1: every legal spelling of the sizes for [4, 3, 1, 2] gives
// [4, 3, 5, 2], each output element the input element with index 0 in dimension 2.
#[test]
fn seed_003_expand_example_1() {
    let data = iota(24, 0.0);
    for sizes in
        [[4, 3, 5, 2], [-1, 3, 5, 2], [-1, -1, 5, 2], [-1, -1, 5, -1], [4, -1, 5, 2], [4, -1, 5, -1], [4, 3, 5, -1]]
    {
        let got = run_expand(&[4, 3, 1, 2], &sizes, &data);
        assert_eq!(got.0, vec![4, 3, 5, 2], "{sizes:?}");
        assert_eq!(got, expand_by_strides(&[4, 3, 1, 2], &sizes, &data), "{sizes:?}");
    }
}

// Seed 003, expand example 2: [1, 4, 3, 5] to [2, 1, 2, 4, 3, 5] in all listed spellings.
#[test]
fn seed_003_expand_example_2() {
    let data = iota(60, 0.0);
    for sizes in [
        [2, 1, 2, 4, 3, 5],
        [2, 1, 2, -1, 3, 5],
        [2, 1, 2, -1, -1, 5],
        [2, 1, 2, -1, -1, -1],
        [2, 1, 2, 4, -1, 5],
        [2, 1, 2, 4, -1, -1],
        [2, 1, 2, 4, 3, -1],
    ] {
        let got = run_expand(&[1, 4, 3, 5], &sizes, &data);
        assert_eq!(got.0, vec![2, 1, 2, 4, 3, 5], "{sizes:?}");
        assert_eq!(got, expand_by_strides(&[1, 4, 3, 5], &sizes, &data), "{sizes:?}");
    }
}

// Seed 003's stride example: [4, 1, 3, 5] expanded to [2, 1, 4, 4, 3, 5] has output strides
// [0, 0, 15, 0, 5, 1], i.e. output[x, y, z, k, v, w] = input_flatten[z*15 + v*5 + w].
#[test]
fn seed_003_expand_output_strides() {
    let data = iota(60, 0.0);
    let got = run_expand(&[4, 1, 3, 5], &[2, 1, 4, 4, 3, 5], &data);
    assert_eq!(got.0, vec![2, 1, 4, 4, 3, 5]);
    assert_eq!(got.1, gather_strided(&[2, 1, 4, 4, 3, 5], &[0, 0, 15, 0, 5, 1], &data));
}

// Seed 003's consistent-view example: logical input [4, 3, 1, 2] (strides [6, 2, 2, 1])
// expanded to [2, 4, 3, 4, 2] has output strides [0, 6, 2, 0, 1].
#[test]
fn seed_003_expand_logical_example() {
    let data = iota(24, 0.0);
    let got = run_expand(&[4, 3, 1, 2], &[2, 4, 3, 4, 2], &data);
    assert_eq!(got.0, vec![2, 4, 3, 4, 2]);
    assert_eq!(got.1, gather_strided(&[2, 4, 3, 4, 2], &[0, 6, 2, 0, 1], &data));
}

/// Tiling, as seed 003 defines repeat: along each dimension the input is copied
/// `repeats[i]` times, new leading dimensions copy the whole input; so output index `j` of
/// an input dimension of size `s` reads index `j mod s`.
fn tile(input: &[i64], repeats: &[i64], data: &[f32]) -> Array {
    let diff = repeats.len() - input.len();
    let out: Vec<i64> =
        repeats.iter().enumerate().map(|(i, &r)| if i < diff { r } else { r * input[i - diff] }).collect();
    let count: i64 = out.iter().product();
    let values = (0..count)
        .map(|mut n| {
            let (mut offset, mut stride) = (0, 1);
            for i in (0..out.len()).rev() {
                let j = n % out[i];
                n /= out[i];
                if i >= diff {
                    let s = input[i - diff];
                    offset += (j % s) * stride;
                    stride *= s;
                }
            }
            data[offset as usize]
        })
        .collect();
    (out, values)
}

fn run_repeat(input: &[i64], repeats: &[i64]) -> (Array, Array) {
    let count = input.iter().product::<i64>() as usize;
    let data = iota(count, 1.0);
    let b = Builder::new("repeat");
    let x = params(&b, &[input]).remove(0);
    let r = b.repeat(&x, repeats).unwrap();
    (run(&b, &r, &[(input, &data)]), tile(input, repeats, &data))
}

// Seed 003's repeat examples with the output shapes they state.
#[test]
fn seed_003_repeat_examples() {
    for (input, repeats, shape) in [
        (&[4i64, 1, 3, 5][..], &[2i64, 1, 2, 4, 1, 1][..], &[2i64, 1, 8, 4, 3, 5][..]),
        (&[5], &[3], &[15]),
        (&[3, 1, 5], &[5, 3, 1], &[15, 3, 5]),
        (&[3, 1, 5], &[2, 5, 3, 1], &[2, 15, 3, 5]),
    ] {
        let (got, expected) = run_repeat(input, repeats);
        assert_eq!(got.0, shape.to_vec(), "{input:?} repeated {repeats:?}");
        assert_eq!(got, expected, "{input:?} repeated {repeats:?}");
    }
    // [5] repeated 3 times is the vector three times over.
    let (got, _) = run_repeat(&[5], &[3]);
    assert_eq!(got.1, vec![1., 2., 3., 4., 5., 1., 2., 3., 4., 5., 1., 2., 3., 4., 5.]);
}

// Seed 003's expand is zero-copy once fused: feeding an elementwise op, the broadcast it
// lowers to moves into the consumer's fusion, so no expanded array is materialized.
#[test]
fn expand_fuses_into_its_consumer() {
    let b = Builder::new("expand_add");
    let p = params(&b, &[&[3, 1], &[3, 4]]);
    let e = b.expand(&p[0], &[-1, 4]).unwrap();
    let sum = b.add(&e, &p[1]).unwrap();
    let prepared = hlojit_compiler::pipeline::prepare(&b.build(&sum).unwrap(), &Default::default()).unwrap();
    let entry = prepared.entry_computation();
    let top_level: Vec<_> = entry.instructions.iter().map(|i| i.opcode).collect();
    assert!(
        !top_level.contains(&hlojit::hlo::Opcode::Broadcast),
        "the broadcast stayed a kernel of its own:\n{prepared}"
    );
    let r = run(&b, &sum, &[(&[3, 1], &[1., 2., 3.]), (&[3, 4], &[0.0; 12])]);
    assert_eq!(r.1, vec![1., 1., 1., 1., 2., 2., 2., 2., 3., 3., 3., 3.]);
}

// The example in examples/mlp_builder.rs builds, compiles and runs a two-layer perceptron
// with softmax; its result matches a plain Rust evaluation.
#[test]
fn mlp_builder_example() {
    let error = mlp_builder::run(false).unwrap_or_else(|e| panic!("{e}"));
    assert!(error < 1e-5, "max abs difference {error}");
}
