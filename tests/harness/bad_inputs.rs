//! Bad input at run time, each with the exact error it must give and none ending the process:
//! wrong arguments, a must-alias parameter not donated, a failing custom call, buffers no
//! allocation can provide, and loops stopped by a deadline or a cancellation. (Malformed and
//! ill-typed module text is in `tests/filetests/errors`, .npy files in `runtime/src/npy.rs`,
//! command-line cases in `tools/tests/bad_inputs.rs`.)

use hlojit::ffi::status::XlaCustomCallStatus;
use hlojit::{
    ArrayLiteral, CancellationToken, Client, CompileOptions, CustomCallRegistry, Error, Executable, HostBuffer, Layout,
    Literal, RunOptions,
};
use std::ffi::c_void;
use std::time::{Duration, Instant};

fn compile(text: &str) -> Executable {
    Client::new().compile_text(text).expect("compiles")
}

const ADD: &str = "HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  y = f32[2,3] parameter(1)
  ROOT z = f32[2,3] add(x, y)
}";

fn f32s(dims: &[i64], n: usize) -> HostBuffer {
    HostBuffer::from_slice(dims, &vec![1.0f32; n]).unwrap()
}

#[test]
fn wrong_arguments_are_errors_naming_the_parameter() {
    let exe = compile(ADD);
    let x = f32s(&[2, 3], 6);
    let err = exe.run([&x]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid argument: the computation takes 2 arguments, 1 given"
    );
    let err = exe.run([&x, &x, &x]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid argument: the computation takes 2 arguments, 3 given"
    );

    let ints = HostBuffer::from_slice(&[2, 3], &[1i32; 6]).unwrap();
    let err = exe.run([&x, &ints]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid argument: argument 1 for parameter 1 (y) is s32[2,3], the parameter is f32[2,3]"
    );

    let wide = f32s(&[3, 2], 6);
    let err = exe.run([&wide, &x]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid argument: argument 0 for parameter 0 (x) is f32[3,2], the parameter is f32[2,3]"
    );

    let column_major = x.relayout(Layout::new(vec![0, 1])).unwrap();
    let err = exe.run([&x, &column_major]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid argument: argument 1 for parameter 1 (y) is laid out {0,1}, the parameter expects {1,0} (HostBuffer::relayout converts)"
    );

    let scalar = Literal::Array(ArrayLiteral::scalar(1.0f32));
    let err = exe.run_literals(&[x.to_literal().into(), scalar]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid argument: argument 1 has shape f32[], parameter 1 is f32[2,3]"
    );
    // The executable is unharmed.
    assert_eq!(exe.run([&x, &x]).unwrap()[0].as_slice::<f32>().unwrap(), &[2.0; 6]);
}

#[test]
fn a_must_alias_parameter_passed_by_reference_is_refused_before_running() {
    let exe = compile(
        "HloModule m, input_output_alias={ {}: (0, {}, must-alias) }
         ENTRY e {
           state = f32[4] parameter(0)
           ROOT next = f32[4] negate(state)
         }",
    );
    let state = f32s(&[4], 4);
    let err = exe.run([&state]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid argument: parameter 0 (state) must be donated: the module makes output 0 must-alias it"
    );
    assert_eq!(
        state.as_slice::<f32>().unwrap(),
        &[1.0; 4],
        "the borrowed argument is untouched"
    );
}

/// A status-returning target that always fails.
unsafe extern "C" fn always_fails(_out: *mut c_void, _ins: *const *const c_void, status: *mut XlaCustomCallStatus) {
    hlojit::ffi::status::set_failure(status, "the sensor is offline");
}

#[test]
fn a_failing_custom_call_is_an_error_with_its_message() {
    let registry = CustomCallRegistry::new();
    registry.register_status_returning("read_sensor", always_fails);
    let client = Client::with_options(CompileOptions {
        custom_calls: registry,
        ..CompileOptions::default()
    });
    let exe = client
        .compile_text(
            "HloModule m
             ENTRY e {
               x = f32[2] parameter(0)
               ROOT y = f32[2] custom-call(x), custom_call_target=\"read_sensor\", api_version=API_VERSION_STATUS_RETURNING
             }",
        )
        .unwrap();
    let err = exe.run([&f32s(&[2], 2)]).unwrap_err();
    assert_eq!(
        err,
        Error::Execution("custom call 'read_sensor' failed: the sensor is offline".into())
    );
}

#[test]
fn outputs_no_allocation_can_provide_are_errors_naming_them() {
    // A 4 TB broadcast: the output buffer cannot be had.
    let exe = compile(
        "HloModule m
         ENTRY e {
           x = f32[] parameter(0)
           ROOT huge = f32[1000000000000] broadcast(x), dimensions={}
         }",
    );
    let err = exe.run([&HostBuffer::from_slice(&[], &[1.0f32]).unwrap()]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "out of memory: output 0 (huge) (f32[1000000000000]{0}): cannot allocate 4000000000000 bytes (3.6 TiB)"
    );
    // Interior padding of 10^12 between two elements.
    let exe = compile(
        "HloModule m
         ENTRY e {
           x = f32[2] parameter(0)
           z = f32[] constant(0)
           ROOT p = f32[1000000000002] pad(x, z), padding=0_0_1000000000000
         }",
    );
    let err = exe.run([&f32s(&[2], 2)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "out of memory: output 0 (p) (f32[1000000000002]{0}): cannot allocate 4000000000008 bytes (3.6 TiB)"
    );
    // The process is fine: small runs still work.
    let small = compile(ADD);
    let x = f32s(&[2, 3], 6);
    assert!(small.run([&x, &x]).is_ok());
}

const FOREVER: &str = "HloModule m
cond {
  s = s32[] parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  s = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT n = s32[] add(s, one)
}
ENTRY e {
  x = s32[] parameter(0)
  ROOT w = s32[] while(x), condition=cond, body=body
}";

fn zero() -> HostBuffer {
    HostBuffer::from_slice(&[], &[0i32]).unwrap()
}

#[test]
fn a_loop_that_never_ends_stops_at_its_deadline() {
    let exe = compile(FOREVER);
    let start = Instant::now();
    let err = exe
        .run_with(
            [&zero()],
            &RunOptions::default().with_timeout(Duration::from_millis(100)),
        )
        .unwrap_err();
    assert!(matches!(err, Error::DeadlineExceeded(_)), "{err}");
    assert!(
        err.to_string().starts_with("the run's deadline passed (stopped "),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(30), "took {:?}", start.elapsed());
    // A deadline already passed stops the run before it starts.
    let past = RunOptions::default().with_deadline(Instant::now());
    assert!(matches!(
        exe.run_with([&zero()], &past),
        Err(Error::DeadlineExceeded(_))
    ));
}

#[test]
fn a_loop_that_never_ends_stops_when_another_thread_cancels_it() {
    let exe = compile(FOREVER);
    let token = CancellationToken::new();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            token.cancel();
        })
    };
    let err = exe
        .run_with([&zero()], &RunOptions::default().with_cancellation(token.clone()))
        .unwrap_err();
    canceller.join().unwrap();
    assert_eq!(err, Error::Cancelled);
    assert_eq!(err.to_string(), "the run was cancelled");
    // A cancelled token stops later runs before they start; other runs are unaffected.
    assert_eq!(
        exe.run_with([&zero()], &RunOptions::default().with_cancellation(token))
            .unwrap_err(),
        Error::Cancelled
    );
    let counting = compile(&FOREVER.replace(
        "ROOT t = pred[] constant(true)",
        "ten = s32[] constant(10)\n  ROOT t = pred[] compare(s, ten), direction=LT",
    ));
    assert_eq!(counting.run([&zero()]).unwrap()[0].as_slice::<i32>().unwrap(), &[10]);
}

#[test]
fn an_inner_loop_is_stopped_too() {
    let text = "HloModule m
inner_cond {
  s = s32[] parameter(0)
  ROOT t = pred[] constant(true)
}
inner_body {
  s = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT n = s32[] add(s, one)
}
outer_cond {
  s = s32[] parameter(0)
  ten = s32[] constant(10)
  ROOT t = pred[] compare(s, ten), direction=LT
}
outer_body {
  s = s32[] parameter(0)
  ROOT w = s32[] while(s), condition=inner_cond, body=inner_body
}
ENTRY e {
  x = s32[] parameter(0)
  ROOT w = s32[] while(x), condition=outer_cond, body=outer_body
}";
    let exe = compile(text);
    let err = exe
        .run_with(
            [&zero()],
            &RunOptions::default().with_timeout(Duration::from_millis(50)),
        )
        .unwrap_err();
    assert!(matches!(err, Error::DeadlineExceeded(_)), "{err}");
}
