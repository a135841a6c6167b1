/* A custom-call plugin in C: one legacy target and one typed-FFI handler.
 *
 *   cc -shared -fPIC -O2 -I ffi/include examples/c-plugin/plugin.c -o libexample.so
 *   hlojit run examples/c-plugin/example.hlo --plugin ./libexample.so --random-inputs 1
 */
#include <math.h>

#include "hlojit_ffi.h"

/* API_VERSION_STATUS_RETURNING: softsign(x) = x / (1 + |x|) over f32[4]; fails on NaN. */
HLOJIT_FFI_EXPORT void softsign4(void* out, const void** in, XlaCustomCallStatus* status) {
  const float* x = (const float*)in[0];
  float* y = (float*)out;
  for (int i = 0; i < 4; ++i) {
    if (isnan(x[i])) {
      XlaCustomCallStatusSetFailure(status, "softsign4: NaN input", 20);
      return;
    }
    y[i] = x[i] / (1.0f + fabsf(x[i]));
  }
}

/* API_VERSION_TYPED_FFI: y = max(x, lo) for any f32 buffer, `lo` an f32 attribute. */
HLOJIT_FFI_EXPORT XLA_FFI_Error* clamp_min(XLA_FFI_CallFrame* frame) {
  if (hlojit_ffi_answer_metadata(frame)) return NULL; /* XLA asks this first; hlojit does not */
  XLA_FFI_Buffer* x = hlojit_ffi_arg(frame, 0);
  XLA_FFI_Buffer* y = hlojit_ffi_ret(frame, 0);
  const float* lo = (const float*)hlojit_ffi_scalar_attr(frame, "lo", XLA_FFI_DataType_F32);
  if (!x || !y || !lo || x->dtype != XLA_FFI_DataType_F32 || y->dtype != XLA_FFI_DataType_F32)
    return hlojit_ffi_error(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                            "clamp_min: expects one f32 buffer, one f32 result and lo : f32");
  const float* xs = (const float*)x->data;
  float* ys = (float*)y->data;
  for (int64_t i = 0; i < hlojit_ffi_element_count(x); ++i) ys[i] = xs[i] < *lo ? *lo : xs[i];
  return NULL;
}
