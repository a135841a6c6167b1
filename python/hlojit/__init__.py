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
    a = np.asarray(a)  # (np.ascontiguousarray would make a scalar one-dimensional)
    if not a.flags.c_contiguous:
        a = a.copy(order="C")
    return a.dtype.name, list(a.shape), memoryview(a.reshape(-1).view(np.uint8))


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
        arrays = [np.frombuffer(data, dtype=np.dtype(name)).reshape(shape) for name, shape, data in outs]
        return arrays[0] if len(arrays) == 1 else tuple(arrays)


def compile(module):
    """Compiles ``module`` (str or bytes: HLO text or StableHLO) for this machine.

    Raises HlojitError with hlojit's message (line:column or the instruction's name).
    """
    if isinstance(module, str):
        module = module.encode()
    return Executable(_hlojit.compile(bytes(module)))
