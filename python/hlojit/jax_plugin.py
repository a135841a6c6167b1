"""The JAX plugin: JAX imports this module (entry point group ``jax_plugins``) at start-up.

Registered below XLA:CPU's priority, so JAX runs on hlojit only when asked:
``JAX_PLATFORMS=hlojit``. Devices: ``HLOJIT_DEVICE_COUNT`` (default 1).

The plugin calls itself platform ``cpu`` (JAX lowers for it as for XLA:CPU), so the custom-call
targets JAX registers for the host — ``jax.ffi.register_ffi_target(..., platform="cpu")``,
jaxlib's LAPACK kernels, jaxlib's host-callback handlers — must reach hlojit's registry too.
"""

import hlojit


def _register_target(name, fn, platform, api_version=0, traits=0):
    """The host platform's custom-call handler: XLA:CPU's registry (jaxlib's, which is what
    JAX would have registered had it made the CPU client first) and hlojit's both get it."""
    from jaxlib import _jax

    _jax.register_custom_call_target(name, fn, platform, api_version, traits)
    if isinstance(name, bytes):
        name = name.decode()
    hlojit._hlojit.register_custom_call_target(name, fn, api_version)


def _register_jaxlib_targets():
    """Targets jaxlib registered statically for the host (the Python host-callback handlers
    ``xla_ffi_python_cpu_callback`` and friends) or that reached its registry before the
    handler above was installed."""
    from jaxlib import _jax

    for name, target in _jax.custom_call_targets("Host").items():
        hlojit._hlojit.register_custom_call_target(name, target, 1 if isinstance(target, dict) else 0)


def initialize():
    from jax._src import xla_bridge
    from jax._src.lib import xla_client

    xla_bridge.register_plugin("hlojit", priority=-100, library_path=hlojit.plugin_path())
    # Replays the registrations made so far (kept by xla_client until a handler exists) and
    # receives the later ones. A no-op if XLA:CPU's handler is already in place; the sweep
    # below still brings over what reached jaxlib's registry.
    xla_client.register_custom_call_handler("cpu", _register_target)
    _register_jaxlib_targets()
