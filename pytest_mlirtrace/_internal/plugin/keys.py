"""The names the plugin's parts share: stash keys, report section titles, junit property names."""
from __future__ import annotations

import pytest

STATE_KEY = pytest.StashKey["MlirtraceState"]()
FACADE_KEY = pytest.StashKey["Mlirtrace"]()            # or the ExampleFacades of mlirtrace_session.for_example()
SETTINGS_KEY = pytest.StashKey[object]()  # the run's Settings, resolved in pytest_cmdline_main
DEVICES_KEY = pytest.StashKey[list]()   # --mlir-devices resolved on the controller (P:D specs)
PROP_REPRO = "mlirtrace_repro"          # JSON of the WrittenRepro (what the terminal summary reads)
PROP_SIGNATURE = "mlirtrace_signature"
PROP_SCRIPT = "mlirtrace_reproducer"
PROP_TICKET = "mlirtrace_ticket"
PROP_MLIR = "mlirtrace_mlir"            # the failing func's MLIR, whole (a CI page shows it with the test)
PROP_MODULE = "mlirtrace_module"        # the migraphx module, whole
PROP_KEY = "mlirtrace_problem"          # problem key and solution
PROP_CALL = "mlirtrace_call"            # the test's line that made the failing call
PROP_DEVICE = "mlirtrace_device"        # --mlir-devices: the device of the worker that ran the test
SECTION = "mlirtrace: "
HTML_CLASS = "mlirtrace"                # the pytest-html extras' outer <div class=...>
