//! The library's side of infeed, outfeed and host send/recv: values queued by another thread
//! while the program runs, timeouts that end in errors, host channels in both directions.
//! (Values computed from infeed and outfeed: the file tests under tests/filetests/transfers.)

use hlojit::{ArrayLiteral, Client, HostBuffer, Literal};
use std::time::{Duration, Instant};

fn compile(text: &str) -> hlojit::Executable {
    Client::new().compile_text(text).expect("compiles")
}

fn f32s(values: &[f32]) -> Literal {
    ArrayLiteral::from_slice(&[values.len() as i64], values).unwrap().into()
}

const ECHO_TWICE: &str = "HloModule echo
ENTRY e {
  t = token[] after-all()
  a = (f32[2], token[]) infeed(t)
  x = f32[2] get-tuple-element(a), index=0
  t1 = token[] get-tuple-element(a), index=1
  o = token[] outfeed(x, t1), outfeed_shape=f32[2]
  b = (f32[2], token[]) infeed(o)
  y = f32[2] get-tuple-element(b), index=0
  ROOT s = f32[2] subtract(x, y)
}";

#[test]
fn infeed_waits_for_a_value_another_thread_queues_after_an_outfeed() {
    let exe = compile(ECHO_TWICE);
    exe.infeed(0, &f32s(&[5.0, 7.0])).unwrap();
    let none: Vec<HostBuffer> = Vec::new();
    let result = std::thread::scope(|s| {
        let run = s.spawn(|| exe.run(none));
        // The program outfeeds its first value, then waits for the second infeed.
        let first = exe.outfeed(0, Duration::from_secs(20)).unwrap();
        assert_eq!(first[0].as_slice::<f32>().unwrap(), &[5.0, 7.0]);
        exe.infeed(0, &f32s(&[1.0, 2.0])).unwrap();
        run.join().unwrap()
    });
    assert_eq!(result.unwrap()[0].as_slice::<f32>().unwrap(), &[4.0, 5.0]);
}

#[test]
fn an_infeed_nobody_fills_fails_after_the_wait_limit_and_outfeed_times_out() {
    let exe = compile(ECHO_TWICE);
    exe.set_transfer_wait_limit(Duration::from_millis(100));
    exe.infeed(0, &f32s(&[5.0, 7.0])).unwrap();
    let start = Instant::now();
    let err = exe.run(Vec::<HostBuffer>::new()).unwrap_err().to_string();
    assert!(err.contains("b: device 0's infeed holds 0 of the 1 arrays"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(10));
    // The first value was outfed before the failure; nothing else was.
    assert_eq!(exe.outfeed_len(0), 1);
    exe.outfeed(0, Duration::ZERO).unwrap();
    let err = exe.outfeed(0, Duration::from_millis(20)).unwrap_err().to_string();
    assert!(err.contains("no outfeed value from device 0"), "{err}");
    assert!(exe.infeed(3, &f32s(&[1.0])).unwrap_err().to_string().contains("device 3 does not exist"));
}

#[test]
fn host_channels_carry_values_both_ways() {
    let exe = compile(
        "HloModule host
ENTRY e {
  p = s32[3] parameter(0)
  t = token[] after-all()
  r = (s32[3], u32[], token[]) recv(t), channel_id=4, is_host_transfer=true
  rd = (s32[3], token[]) recv-done(r), channel_id=4, is_host_transfer=true
  v = s32[3] get-tuple-element(rd), index=0
  t1 = token[] get-tuple-element(rd), index=1
  m = s32[3] multiply(v, p)
  s = (s32[3], u32[], token[]) send(m, t1), channel_id=9, is_host_transfer=true
  sd = token[] send-done(s), channel_id=9, is_host_transfer=true
  ROOT c = s32[3] add(m, p)
}",
    );
    let p = HostBuffer::from_slice(&[3], &[1i32, 2, 3]).unwrap();
    exe.send_to_device(0, 4, &ArrayLiteral::from_slice(&[3], &[10i32, 20, 30]).unwrap().into()).unwrap();
    let out = exe.run([&p]).unwrap();
    assert_eq!(out[0].as_slice::<i32>().unwrap(), &[11, 42, 93]);
    let sent = exe.recv_from_device(0, 9, Duration::from_secs(1)).unwrap();
    assert_eq!(sent[0].as_slice::<i32>().unwrap(), &[10, 40, 90]);
    assert!(exe.recv_from_device(0, 4, Duration::from_millis(10)).is_err());
    // Nothing sent on channel 4 this time: the run ends with an error naming the channel.
    exe.set_transfer_wait_limit(Duration::from_millis(50));
    let err = exe.run([&p]).unwrap_err().to_string();
    assert!(err.contains("rd: the host sent device 0 nothing on channel 4"), "{err}");
}
