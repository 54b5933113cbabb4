"""``config``: the one settings object and the names of the environment variables.

* :mod:`.settings` -- :class:`Settings`, resolved once per command or pytest session (option > environment >
  ini file > default), each value remembering its source; :func:`inject_now`, the planted faults now;
* :mod:`.environment` -- every ``MLIRTRACE_*`` variable's name, the settings' and the process variables';
* :mod:`.store_spec` -- the store setting's value (a directory or a Redis URL).

It imports only ``vocab`` and the standard library, so every layer may import it; only front ends
resolve settings.
"""
from . import environment
from .settings import ENV, SettingError, Settings, inject_now, resolve
from .store_spec import REDIS_SCHEMES, StoreSpec, parse_store

__all__ = ["Settings", "SettingError", "resolve", "inject_now", "ENV", "environment", "StoreSpec", "parse_store",
           "REDIS_SCHEMES"]
