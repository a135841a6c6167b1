"""The JAX plugin: JAX imports this module (entry point group ``jax_plugins``) at start-up.

Registered below XLA:CPU's priority, so JAX runs on hlojit only when asked:
``JAX_PLATFORMS=hlojit``. Devices: ``HLOJIT_DEVICE_COUNT`` (default 1).
"""

import hlojit


def initialize():
    from jax._src import xla_bridge

    xla_bridge.register_plugin("hlojit", priority=-100, library_path=hlojit.plugin_path())
