// Typed-FFI handlers written against XLA's own C++ API (xla/ffi/api/ffi.h, from the jaxlib
// wheel's `jax.ffi.include_dir()`), built by the test run and loaded into hlojit unchanged.
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// y = x * alpha + n + xs[1] + d["k"] (+ 100 if flag); name must be "hi".
static ffi::Error AffineImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y, float alpha,
                             int32_t n, std::string_view name, ffi::Span<const int64_t> xs,
                             ffi::Dictionary d, bool flag) {
  if (name != "hi") return ffi::Error::InvalidArgument("name must be hi, got " + std::string(name));
  if (xs.size() != 2) return ffi::Error::InvalidArgument("xs must have 2 elements");
  auto k = d.get<int32_t>("k");
  if (k.has_error()) return k.error();
  float add = static_cast<float>(n + xs[1] + *k + (flag ? 100 : 0));
  for (size_t i = 0; i < x.element_count(); ++i) y->typed_data()[i] = x.typed_data()[i] * alpha + add;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(xla_affine, AffineImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<float>("alpha")
                                  .Attr<int32_t>("n")
                                  .Attr<std::string_view>("name")
                                  .Attr<ffi::Span<const int64_t>>("xs")
                                  .Attr<ffi::Dictionary>("d")
                                  .Attr<bool>("flag"));

// Always fails with its own message.
static ffi::Error FailImpl(ffi::AnyBuffer) {
  return ffi::Error(ffi::ErrorCode::kFailedPrecondition, "xla handler refuses: precondition");
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(xla_fail, FailImpl, ffi::Ffi::Bind().Arg<ffi::AnyBuffer>());

// Ranks are part of the binding: a vector in, two scalars out. (Aliases keep the template
// commas out of the macro's arguments.)
using F64Vector = ffi::Buffer<ffi::F64, 1>;
using F64Scalar = ffi::Buffer<ffi::F64, 0>;
using S64Scalar = ffi::Buffer<ffi::S64, 0>;

// Sum and count of an f64 vector, the sum computed on the host's thread pool.
static ffi::Error StatsImpl(ffi::ThreadPool pool, F64Vector x, ffi::Result<F64Scalar> sum,
                            ffi::Result<S64Scalar> count) {
  std::atomic<bool> done{false};
  double total = 0;
  pool.Schedule([&] {
    for (size_t i = 0; i < x.element_count(); ++i) total += x.typed_data()[i];
    done.store(true, std::memory_order_release);
  });
  while (!done.load(std::memory_order_acquire)) std::this_thread::yield();
  *sum->typed_data() = total;
  *count->typed_data() = static_cast<int64_t>(x.element_count());
  if (pool.num_threads() < 1) return ffi::Error::Internal("no threads in the pool");
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(xla_stats, StatsImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<F64Vector>()
                                  .Ret<F64Scalar>()
                                  .Ret<S64Scalar>());
