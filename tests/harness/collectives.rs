//! Multi-device runs: the API's errors, a failing device aborting the others instead of
//! leaving them waiting, a device that skips a collective, and a large all-reduce that runs
//! kernels on the device pools. (Values of the collectives themselves: the file tests under
//! tests/filetests/collectives and the corpus's collective_* cases.)

use hlojit::{Client, HostBuffer};

const SUM4: &str = "HloModule sum4, replica_count=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  x = f32[2] parameter(0)
  ROOT s = f32[2] all-reduce(x), replica_groups={}, to_apply=add
}";

fn compile(text: &str) -> hlojit::Executable {
    Client::new().compile_text(text).expect("compiles")
}

fn args(values: &[[f32; 2]]) -> Vec<Vec<HostBuffer>> {
    values.iter().map(|v| vec![HostBuffer::from_slice(&[2], v).unwrap()]).collect()
}

#[test]
fn run_devices_exchanges_and_run_refuses() {
    let exe = compile(SUM4);
    assert_eq!((exe.num_devices(), exe.replica_count(), exe.num_partitions()), (4, 4, 1));
    let out = exe.run_devices(args(&[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])).unwrap();
    for device in &out {
        assert_eq!(device[0].as_slice::<f32>().unwrap(), &[16.0, 20.0]);
    }
    let single = HostBuffer::from_slice(&[2], &[1f32, 2.0]).unwrap();
    let err = exe.run([&single]).unwrap_err().to_string();
    assert!(err.contains("run_devices"), "{err}");
    let err = exe.run_devices(args(&[[1.0, 2.0]])).unwrap_err().to_string();
    assert!(err.contains("4 devices"), "{err}");
}

#[test]
fn a_failing_device_aborts_the_run() {
    let exe = compile(SUM4);
    let mut a = args(&[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]);
    // Device 2 gets an argument of the wrong shape: it fails before reaching the all-reduce
    // the others wait in.
    a[2] = vec![HostBuffer::from_slice(&[3], &[1f32, 2.0, 3.0]).unwrap()];
    let err = exe.run_devices(a).unwrap_err().to_string();
    assert!(err.contains("device 2"), "{err}");
    // The executable still works afterwards.
    let out = exe.run_devices(args(&[[1.0, 1.0]; 4])).unwrap();
    assert_eq!(out[3][0].as_slice::<f32>().unwrap(), &[4.0, 4.0]);
}

#[test]
fn a_device_that_skips_a_collective_is_an_error() {
    // Only partition 0 takes the branch with the all-reduce; the others finish without it.
    let exe = compile(
        "HloModule skip, num_partitions=2
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
reduce_it {
  x = f32[2] parameter(0)
  ROOT s = f32[2] all-reduce(x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=add
}
keep {
  ROOT x = f32[2] parameter(0)
}
ENTRY e {
  x = f32[2] parameter(0)
  p = u32[] partition-id()
  i = s32[] convert(p)
  ROOT c = f32[2] conditional(i, x, x), branch_computations={reduce_it, keep}
}",
    );
    let err = exe.run_devices(args(&[[1.0, 2.0], [3.0, 4.0]])).unwrap_err().to_string();
    assert!(err.contains("finished without joining"), "{err}");
}

#[test]
fn large_all_reduce_with_parallel_kernels() {
    // Big enough that the kernels around the all-reduce run on each device's thread pool.
    let n = 1 << 17;
    let exe = compile(&format!(
        "HloModule big, replica_count=2
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}}
ENTRY e {{
  x = f32[{n}] parameter(0)
  d = f32[{n}] add(x, x)
  s = f32[{n}] all-reduce(d), replica_groups={{}}, to_apply=add
  ROOT m = f32[{n}] multiply(s, s)
}}"
    ));
    let a: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 5) as f32).collect();
    let out = exe
        .run_devices(vec![vec![HostBuffer::from_slice(&[n as i64], &a).unwrap()], vec![HostBuffer::from_slice(&[n as i64], &b).unwrap()]])
        .unwrap();
    for device in &out {
        let r = device[0].as_slice::<f32>().unwrap();
        for i in [0, 1, 12345, n - 1] {
            let s = 2.0 * (a[i] + b[i]);
            assert_eq!(r[i], s * s, "element {i}");
        }
    }
}
