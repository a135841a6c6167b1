/* The custom-call target model.hlo names: an ordinary C function. Linked into the AOT
 * program it is resolved by the linker; built as a shared library it serves the JIT
 * (`hlojit run model.hlo --plugin libtarget.so`).
 *
 * API_VERSION_STATUS_RETURNING: out = 2 * in over f32[4,8]; fails if |in| > 100. */
#include <math.h>
#include <stdio.h>

#include "hlojit_ffi.h"

HLOJIT_FFI_EXPORT void checked_scale(void* out, const void** in, XlaCustomCallStatus* status) {
  const float* x = (const float*)in[0];
  float* y = (float*)out;
  for (int i = 0; i < 32; ++i) {
    if (!(fabsf(x[i]) <= 100.0f)) {
      char msg[96];
      int n = snprintf(msg, sizeof msg, "checked_scale: value %g at index %d is out of range", x[i], i);
      XlaCustomCallStatusSetFailure(status, msg, (size_t)n);
      return;
    }
    y[i] = 2.0f * x[i];
  }
}
