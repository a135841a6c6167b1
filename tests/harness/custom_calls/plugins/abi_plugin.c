/* Custom-call targets for hlojit's tests, one per calling convention XLA:CPU has. Built by
 * the test run with `cc -shared`; see tests/harness/custom_calls/mod.rs for the HLO calling them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlojit_ffi.h"

/* API_VERSION_ORIGINAL, two operands, tuple result: (x + y, x * y) over f32[4]. */
HLOJIT_FFI_EXPORT void sum_and_product(void* out, const void** in) {
  const float* x = (const float*)in[0];
  const float* y = (const float*)in[1];
  void** outs = (void**)out;
  float* s = (float*)outs[0];
  float* p = (float*)outs[1];
  for (int i = 0; i < 4; ++i) {
    s[i] = x[i] + y[i];
    p[i] = x[i] * y[i];
  }
}

/* API_VERSION_ORIGINAL with a tuple operand (f32[2], s32[]): a * b. */
HLOJIT_FFI_EXPORT void tuple_operand(void* out, const void** in) {
  const void** t = (const void**)in[0];
  const float* a = (const float*)t[0];
  const int* b = (const int*)t[1];
  float* o = (float*)out;
  for (int i = 0; i < 2; ++i) o[i] = a[i] * (float)*b;
}

/* Copies its operand's 6 floats in memory order: shows the layout the target was given. */
HLOJIT_FFI_EXPORT void raw_copy6(void* out, const void** in) { memcpy(out, in[0], 6 * sizeof(float)); }

/* Works in place: reads its output buffer, which starts as the aliased operand's value. */
HLOJIT_FFI_EXPORT void increment_in_place(void* out, const void** in) {
  (void)in;
  float* o = (float*)out;
  for (int i = 0; i < 4; ++i) o[i] += 1.0f;
}

/* API_VERSION_STATUS_RETURNING: sqrt over f32[4], failing on a negative input. */
HLOJIT_FFI_EXPORT void checked_sqrt(void* out, const void** in, XlaCustomCallStatus* status) {
  const float* x = (const float*)in[0];
  float* o = (float*)out;
  for (int i = 0; i < 4; ++i) {
    if (x[i] < 0) {
      char msg[80];
      int n = snprintf(msg, sizeof msg, "negative input %g at index %d", x[i], i);
      XlaCustomCallStatusSetFailure(status, msg, (size_t)n);
      return;
    }
    o[i] = sqrtf(x[i]);
  }
  XlaCustomCallStatusSetSuccess(status);
}

/* API_VERSION_STATUS_RETURNING_UNIFIED: x * k with the opaque string "k=<int>". */
HLOJIT_FFI_EXPORT void scale_by_opaque(void* out, const void** in, const char* opaque,
                                       size_t opaque_len, XlaCustomCallStatus* status) {
  char buf[64];
  if (opaque_len >= sizeof buf || opaque_len < 3 || strncmp(opaque, "k=", 2) != 0) {
    XlaCustomCallStatusSetFailure(status, "bad opaque", 10);
    return;
  }
  memcpy(buf, opaque, opaque_len);
  buf[opaque_len] = 0;
  int k = atoi(buf + 2);
  const float* x = (const float*)in[0];
  float* o = (float*)out;
  for (int i = 0; i < 4; ++i) o[i] = x[i] * (float)k;
}

/* API_VERSION_TYPED_FFI in plain C: y = x * alpha + n over any f32 buffer; `name` must be
 * "hi"; the second result (s64[rank]) receives x's dimensions. */
HLOJIT_FFI_EXPORT XLA_FFI_Error* c_affine(XLA_FFI_CallFrame* frame) {
  if (hlojit_ffi_answer_metadata(frame)) return NULL;
  XLA_FFI_Buffer* x = hlojit_ffi_arg(frame, 0);
  XLA_FFI_Buffer* y = hlojit_ffi_ret(frame, 0);
  XLA_FFI_Buffer* dims = hlojit_ffi_ret(frame, 1);
  const float* alpha = (const float*)hlojit_ffi_scalar_attr(frame, "alpha", XLA_FFI_DataType_F32);
  const int32_t* n = (const int32_t*)hlojit_ffi_scalar_attr(frame, "n", XLA_FFI_DataType_S32);
  XLA_FFI_AttrType type = (XLA_FFI_AttrType)0;
  const XLA_FFI_ByteSpan* name = (const XLA_FFI_ByteSpan*)hlojit_ffi_attr(&frame->attrs, "name", &type);
  if (!x || !y || !dims || !alpha || !n || !name || type != XLA_FFI_AttrType_STRING)
    return hlojit_ffi_error(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, "c_affine: bad signature");
  if (name->len != 2 || memcmp(name->ptr, "hi", 2) != 0)
    return hlojit_ffi_error(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, "c_affine: name is not hi");
  if (x->dtype != XLA_FFI_DataType_F32 || y->dtype != XLA_FFI_DataType_F32 || dims->dtype != XLA_FFI_DataType_S64)
    return hlojit_ffi_error(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, "c_affine: wrong element types");
  int64_t count = hlojit_ffi_element_count(x);
  for (int64_t i = 0; i < count; ++i) ((float*)y->data)[i] = ((const float*)x->data)[i] * *alpha + (float)*n;
  for (int64_t d = 0; d < x->rank; ++d) ((int64_t*)dims->data)[d] = x->dims[d];
  return NULL;
}

/* Resolution order: the registry's `which_one` writes 2, this one 1. */
HLOJIT_FFI_EXPORT void which_one(void* out, const void** in) {
  (void)in;
  *(float*)out = 1.0f;
}
