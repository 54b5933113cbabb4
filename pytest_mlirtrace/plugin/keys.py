"""The names the plugin's parts share: stash keys, report section titles, junit property names."""
from __future__ import annotations

import pytest

STATE_KEY = pytest.StashKey["MlirtraceState"]()
FACADE_KEY = pytest.StashKey["Mlirtrace"]()
PROP_REPRO = "mlirtrace_repro"          # JSON of the WrittenRepro (what the terminal summary reads)
PROP_SIGNATURE = "mlirtrace_signature"
PROP_SCRIPT = "mlirtrace_reproducer"
PROP_TICKET = "mlirtrace_ticket"
SECTION = "mlirtrace: "
