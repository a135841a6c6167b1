"""hlojit: a compiler for XLA's HLO.

``hlojit.compile(module)`` compiles HLO text or StableHLO (as ``jax.jit(f).lower(x).as_text()``
prints it) and returns a callable on numpy arrays. The package is also a JAX plugin:
``JAX_PLATFORMS=hlojit`` runs JAX programs on hlojit (see ``hlojit.jax_plugin``).
"""

import ml_dtypes  # noqa: F401  (registers bfloat16, float8_*, int4 ... with numpy)
import numpy as np

from . import _hlojit
from ._hlojit import HlojitError

__all__ = ["compile", "Executable", "HlojitError", "plugin_path"]


def plugin_path():
    """The shared library JAX loads as the PJRT plugin (this package's native module)."""
    return _hlojit.__file__


def _host(a):
    """(dtype name, shape, minor-to-major order, bytes in that order) of an array, without a
    copy when its elements are densely packed in some order of the dimensions (C order,
    Fortran order, any transpose of those): hlojit reads them in place when the parameter has
    that layout. Anything else (steps, broadcast strides, negative strides) is copied to C
    order first."""
    a = np.asarray(a)
    if a.flags.c_contiguous:  # (whatever strides numpy gives its size-1 dimensions)
        return a.dtype.name, list(a.shape), list(range(a.ndim))[::-1], memoryview(a.reshape(-1).view(np.uint8))
    # Dimensions from slowest to fastest varying.
    major_to_minor = sorted(range(a.ndim), key=lambda d: -a.strides[d])
    physical = a.transpose(major_to_minor)
    if not physical.flags.c_contiguous or any(s < 0 for s in a.strides):
        a = np.ascontiguousarray(a)
        major_to_minor, physical = list(range(a.ndim)), a
    return a.dtype.name, list(a.shape), major_to_minor[::-1], memoryview(physical.reshape(-1).view(np.uint8))


def _array(name, shape, minor_to_major, data):
    """A numpy view of a result's bytes, laid out as minor_to_major says (no copy)."""
    major_to_minor = minor_to_major[::-1]
    physical = np.frombuffer(data, dtype=np.dtype(name)).reshape([shape[d] for d in major_to_minor])
    return physical.transpose(np.argsort(major_to_minor))


class Executable:
    """A compiled module: call it with one numpy array (or scalar) per parameter."""

    def __init__(self, inner):
        self._inner = inner

    @property
    def parameters(self):
        """Parameter leaves as (dtype name, shape)."""
        return self._inner.parameters()

    @property
    def results(self):
        """Result leaves as (dtype name, shape)."""
        return self._inner.results()

    def __call__(self, *args):
        outs = self._inner.run([_host(a) for a in args])
        arrays = [_array(*out) for out in outs]
        return arrays[0] if len(arrays) == 1 else tuple(arrays)


def compile(module):
    """Compiles ``module`` (str or bytes: HLO text or StableHLO) for this machine.

    Raises HlojitError with hlojit's message (line:column or the instruction's name).
    """
    if isinstance(module, str):
        module = module.encode()
    return Executable(_hlojit.compile(bytes(module)))
