/* Loads jaxlib's LAPACK typed-FFI handlers and exports them under their custom-call target
 * names, so that hlojit runs JAX programs that call them (the jaxffi_* corpus cases).
 *
 * The handlers themselves are jaxlib's compiled code, called unchanged with hlojit's call
 * frames: that is the point (binary compatibility with XLA's FFI). The bridge exists because
 * jaxlib does not export them as symbols: its `_lapack` Python extension hands them out as
 * capsules, and they call LAPACK through function pointers that `_lapack.initialize()` takes
 * from SciPy. So the bridge starts an embedded Python on first use, imports the extension,
 * initializes it, and forwards each call to the handler from the capsule.
 *
 *   cc -shared -fPIC bridge.c -I ffi/include $(python3-config --includes) \
 *      $(python3-config --ldflags --embed) -o libjaxlib_lapack_bridge.so
 */
#define _GNU_SOURCE
#include <Python.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "hlojit_ffi.h"

#define MAX_HANDLERS 256

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char init_error[512];
static int handler_count;
static char* handler_names[MAX_HANDLERS];
static XLA_FFI_Handler* handler_fns[MAX_HANDLERS];

static void python_error(const char* what) {
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  const char* text = NULL;
  PyObject* s = value ? PyObject_Str(value) : NULL;
  if (s) text = PyUnicode_AsUTF8(s);
  snprintf(init_error, sizeof init_error, "jaxlib LAPACK bridge: %s: %s", what, text ? text : "(no details)");
  Py_XDECREF(s);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
}

static void load_handlers(void) {
  int started = 0;
  /* Hosts load plugins privately (RTLD_LOCAL), so libpython's symbols would be invisible to
   * the extension modules Python loads next: make them global first. */
  Dl_info info;
  if (dladdr((void*)&Py_InitializeEx, &info) && info.dli_fname) {
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  }
  if (!Py_IsInitialized()) {
    Py_InitializeEx(0);
    started = 1;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* mod = PyImport_ImportModule("jaxlib.cpu._lapack");
  if (!mod) {
    python_error("import jaxlib.cpu._lapack (is jax installed?)");
  } else {
    PyObject* r = PyObject_CallMethod(mod, "initialize", NULL);
    if (!r) python_error("_lapack.initialize() (is scipy installed?)");
    Py_XDECREF(r);
    PyObject* regs = r ? PyObject_CallMethod(mod, "registrations", NULL) : NULL;
    if (r && !regs) python_error("_lapack.registrations()");
    if (regs && PyDict_Check(regs)) {
      PyObject *key, *value;
      Py_ssize_t pos = 0;
      while (PyDict_Next(regs, &pos, &key, &value) && handler_count < MAX_HANDLERS) {
        const char* name = PyUnicode_AsUTF8(key);
        if (!name || !PyCapsule_CheckExact(value)) continue;
        void* fn = PyCapsule_GetPointer(value, PyCapsule_GetName(value));
        if (!fn) {
          PyErr_Clear();
          continue;
        }
        handler_names[handler_count] = strdup(name);
        handler_fns[handler_count] = (XLA_FFI_Handler*)fn;
        handler_count++;
      }
    }
    Py_XDECREF(regs);
    Py_DECREF(mod);
  }
  PyGILState_Release(gil);
  /* Let other threads take the interpreter; the handlers themselves never need it. */
  if (started) PyEval_SaveThread();
}

static XLA_FFI_Error* forward(const char* name, XLA_FFI_CallFrame* frame) {
  pthread_once(&once, load_handlers);
  if (init_error[0]) return hlojit_ffi_error(frame, XLA_FFI_Error_Code_FAILED_PRECONDITION, init_error);
  for (int i = 0; i < handler_count; ++i) {
    if (strcmp(handler_names[i], name) == 0) return handler_fns[i](frame);
  }
  char msg[200];
  snprintf(msg, sizeof msg, "jaxlib LAPACK bridge: this jaxlib has no handler '%s'", name);
  return hlojit_ffi_error(frame, XLA_FFI_Error_Code_NOT_FOUND, msg);
}

#define BRIDGE(name) \
  HLOJIT_FFI_EXPORT XLA_FFI_Error* name(XLA_FFI_CallFrame* frame) { return forward(#name, frame); }

#define BRIDGE_REAL(op) BRIDGE(lapack_s##op##_ffi) BRIDGE(lapack_d##op##_ffi)
#define BRIDGE_COMPLEX(op) BRIDGE(lapack_c##op##_ffi) BRIDGE(lapack_z##op##_ffi)
#define BRIDGE_ALL(op) BRIDGE_REAL(op) BRIDGE_COMPLEX(op)

BRIDGE_ALL(trsm)
BRIDGE_ALL(getrf)
BRIDGE_ALL(geqrf)
BRIDGE_ALL(geqp3)
BRIDGE_REAL(orgqr)
BRIDGE_COMPLEX(ungqr)
BRIDGE_REAL(ormqr)
BRIDGE_COMPLEX(unmqr)
BRIDGE_ALL(potrf)
BRIDGE_ALL(gesdd)
BRIDGE_ALL(gesvd)
BRIDGE_REAL(syevd)
BRIDGE_COMPLEX(heevd)
BRIDGE_ALL(geev)
BRIDGE_REAL(sytrd)
BRIDGE_COMPLEX(hetrd)
BRIDGE_ALL(gees)
BRIDGE_ALL(gehrd)
BRIDGE_ALL(gtsv)
