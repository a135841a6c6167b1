/* Runs the AOT-compiled model from C.
 *
 *   hlojit compile examples/aot-c/model.hlo --emit obj -o model.o --header model.h --name model
 *   cc -I. examples/aot-c/main.c examples/aot-c/target.c model.o -I ffi/include \
 *      -Ltarget/release -lhlojit_runtime -lpthread -ldl -lm -o aot_example
 *   ./aot_example                                  # built-in inputs, prints the results
 *   ./aot_example x.bin b.bin s.bin e.bin          # raw little-endian inputs -> outputs
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static int read_file(const char* path, void* buf, size_t bytes) {
  FILE* f = fopen(path, "rb");
  if (!f) return perror(path), -1;
  size_t n = fread(buf, 1, bytes, f);
  int extra = fgetc(f) != EOF;
  fclose(f);
  if (n != bytes || extra) return fprintf(stderr, "%s: expected %zu bytes\n", path, bytes), -1;
  return 0;
}

static int write_file(const char* path, const void* buf, size_t bytes) {
  FILE* f = fopen(path, "wb");
  if (!f) return perror(path), -1;
  size_t n = fwrite(buf, 1, bytes, f);
  fclose(f);
  return n == bytes ? 0 : -1;
}

int main(int argc, char** argv) {
  if (argc != 1 && argc != 1 + MODEL_NUM_ARGS + MODEL_NUM_RESULTS) {
    fprintf(stderr, "usage: %s [%d input files %d output files]\n", argv[0], MODEL_NUM_ARGS, MODEL_NUM_RESULTS);
    return 2;
  }
  /* Buffers sized from the header; the caller owns them. */
  void* args[MODEL_NUM_ARGS];
  void* results[MODEL_NUM_RESULTS];
  for (int i = 0; i < MODEL_NUM_ARGS; ++i) args[i] = calloc(1, model_args[i].size_bytes);
  for (int i = 0; i < MODEL_NUM_RESULTS; ++i) results[i] = calloc(1, model_results[i].size_bytes);
  if (argc == 1) {
    float* x = (float*)args[0];
    float* b = (float*)args[1];
    for (int i = 0; i < MODEL_ARG0_ELEMENTS; ++i) x[i] = (float)(i % 8) * 0.25f - 1.0f;
    for (int i = 0; i < MODEL_ARG1_ELEMENTS; ++i) b[i] = 0.125f * (float)i;
  } else {
    for (int i = 0; i < MODEL_NUM_ARGS; ++i)
      if (read_file(argv[1 + i], args[i], model_args[i].size_bytes)) return 2;
  }
  int rc = model((const void* const*)args, results);
  if (rc != 0) {
    const char* why = hlojit_last_error();
    fprintf(stderr, "model failed: %s\n", why ? why : "(no message)");
    return 1;
  }
  if (argc == 1) {
    for (int r = 0; r < MODEL_NUM_RESULTS; ++r) {
      const float* v = (const float*)results[r];
      printf("result %d (%s):", r, model_results[r].shape);
      for (int i = 0; i < 8; ++i) printf(" %.6f", v[i]);
      printf(" ...\n");
    }
  } else {
    for (int i = 0; i < MODEL_NUM_RESULTS; ++i)
      if (write_file(argv[1 + MODEL_NUM_ARGS + i], results[i], model_results[i].size_bytes)) return 2;
  }
  for (int i = 0; i < MODEL_NUM_ARGS; ++i) free(args[i]);
  for (int i = 0; i < MODEL_NUM_RESULTS; ++i) free(results[i]);
  return 0;
}
