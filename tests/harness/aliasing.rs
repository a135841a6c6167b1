//! input_output_alias at run time: donated arguments are updated in place (the output is
//! the argument's own memory), borrowed ones are never clobbered (copy protection), and a
//! must-alias parameter has to be donated.

use hlojit::{Client, HostBuffer};

fn compile(text: &str) -> hlojit::Executable {
    Client::new().compile_text(text).expect("compiles")
}

fn ramp(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| i as f32 * scale).collect()
}

const AXPY: &str = "HloModule axpy, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY e {
  y = f32[4096] parameter(0)
  x = f32[4096] parameter(1)
  two = f32[] constant(2)
  b = f32[4096] broadcast(two), dimensions={}
  ax = f32[4096] multiply(x, b)
  ROOT r = f32[4096] add(y, ax)
}";

#[test]
fn donated_argument_is_updated_in_place() {
    let exe = compile(AXPY);
    let y = HostBuffer::from_slice(&[4096], &ramp(4096, 1.0)).unwrap();
    let x = HostBuffer::from_slice(&[4096], &ramp(4096, 0.5)).unwrap();
    let y_ptr = y.as_ptr();
    let out = exe.run(vec![hlojit::Argument::Donated(y), (&x).into()]).unwrap();
    assert_eq!(out[0].as_ptr(), y_ptr, "the output lives in the donated buffer");
    let r = out[0].as_slice::<f32>().unwrap();
    for i in [0, 1, 100, 4095] {
        assert_eq!(r[i], i as f32 + 2.0 * (i as f32 * 0.5));
    }
}

#[test]
fn borrowed_argument_is_protected() {
    let exe = compile(AXPY);
    let y = HostBuffer::from_slice(&[4096], &ramp(4096, 1.0)).unwrap();
    let x = HostBuffer::from_slice(&[4096], &ramp(4096, 0.5)).unwrap();
    let out = exe.run([&y, &x]).unwrap();
    assert_ne!(out[0].as_ptr(), y.as_ptr());
    assert_eq!(y.as_slice::<f32>().unwrap(), ramp(4096, 1.0).as_slice(), "the input is unchanged");
    assert_eq!(out[0].as_slice::<f32>().unwrap()[10], 10.0 + 10.0);
}

#[test]
fn must_alias_parameter_must_be_donated() {
    let text = AXPY.replace("may-alias", "must-alias");
    let exe = compile(&text);
    let y = HostBuffer::from_slice(&[4096], &ramp(4096, 1.0)).unwrap();
    let x = HostBuffer::from_slice(&[4096], &ramp(4096, 0.5)).unwrap();
    let err = exe.run([&y, &x]).unwrap_err().to_string();
    assert!(err.contains("parameter 0 (y)") && err.contains("must be donated"), "{err}");
    assert!(exe.run(vec![hlojit::Argument::Donated(y), (&x).into()]).is_ok());
}

#[test]
fn in_place_dynamic_update_slice_on_donated_state() {
    let exe = compile(
        "HloModule dus, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY e {
  state = f32[1000] parameter(0)
  update = f32[10] parameter(1)
  at = s32[] parameter(2)
  ROOT r = f32[1000] dynamic-update-slice(state, update, at)
}",
    );
    let state = HostBuffer::from_slice(&[1000], &ramp(1000, 1.0)).unwrap();
    let ptr = state.as_ptr();
    let update = HostBuffer::from_slice(&[10], &[-1.0f32; 10]).unwrap();
    let at = HostBuffer::from_slice(&[], &[995i32]).unwrap();
    let out = exe.run(vec![hlojit::Argument::Donated(state), (&update).into(), (&at).into()]).unwrap();
    assert_eq!(out[0].as_ptr(), ptr);
    let r = out[0].as_slice::<f32>().unwrap();
    assert_eq!(r[989], 989.0);
    assert_eq!(&r[990..1000], &[-1.0f32; 10], "start 995 is clamped to 990");
}

#[test]
fn aliased_parameter_still_read_by_other_outputs() {
    // Output 0 overwrites parameter 0's memory; output 1 must still see the old values.
    let exe = compile(
        "HloModule swap, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY e {
  p = f32[256] parameter(0)
  n = f32[256] negate(p)
  r = f32[256] reverse(p), dimensions={0}
  ROOT t = (f32[256], f32[256]) tuple(n, r)
}",
    );
    let p = HostBuffer::from_slice(&[256], &ramp(256, 1.0)).unwrap();
    let ptr = p.as_ptr();
    let out = exe.run(vec![hlojit::Argument::Donated(p)]).unwrap();
    assert_eq!(out[0].as_ptr(), ptr);
    assert_eq!(out[0].as_slice::<f32>().unwrap()[3], -3.0);
    assert_eq!(out[1].as_slice::<f32>().unwrap()[0], 255.0);
    assert_eq!(out[1].as_slice::<f32>().unwrap()[255], 0.0);
}

#[test]
fn arguments_are_checked_by_parameter() {
    let exe = compile(AXPY);
    let y = HostBuffer::from_slice(&[4096], &ramp(4096, 1.0)).unwrap();
    let wrong = HostBuffer::from_slice(&[4095], &ramp(4095, 1.0)).unwrap();
    let err = exe.run([&y, &wrong]).unwrap_err().to_string();
    assert!(err.contains("argument 1 for parameter 1 (x)") && err.contains("f32[4095]"), "{err}");
    let ints = HostBuffer::from_slice(&[4096], &vec![0i32; 4096]).unwrap();
    assert!(exe.run([&y, &ints]).unwrap_err().to_string().contains("s32[4096]"));
    assert!(exe.run([&y]).unwrap_err().to_string().contains("takes 2 arguments"));
}

#[test]
fn layouts_are_checked_and_honoured() {
    let exe = compile(
        "HloModule t, entry_computation_layout={(f32[2,3]{0,1})->f32[3,2]{1,0}}
ENTRY e {
  p = f32[2,3]{0,1} parameter(0)
  ROOT t = f32[3,2]{1,0} transpose(p), dimensions={1,0}
}",
    );
    let row_major = HostBuffer::from_slice(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let err = exe.run([&row_major]).unwrap_err().to_string();
    assert!(err.contains("laid out {1,0}") && err.contains("{0,1}"), "{err}");
    let column_major = row_major.relayout(hlojit::Layout::new(vec![0, 1])).unwrap();
    assert_eq!(column_major.as_slice::<f32>().unwrap(), &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    let out = exe.run([&column_major]).unwrap();
    assert_eq!(out[0].as_slice::<f32>().unwrap(), &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
}

#[test]
fn one_executable_runs_on_many_threads() {
    let exe = std::sync::Arc::new(compile(AXPY));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let exe = exe.clone();
            std::thread::spawn(move || {
                for _ in 0..20 {
                    let y = HostBuffer::from_slice(&[4096], &ramp(4096, t as f32)).unwrap();
                    let x = HostBuffer::from_slice(&[4096], &ramp(4096, 1.0)).unwrap();
                    let out = exe.run([&y, &x]).unwrap();
                    assert_eq!(out[0].as_slice::<f32>().unwrap()[7], 7.0 * t as f32 + 14.0);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
