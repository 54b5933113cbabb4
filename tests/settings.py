"""The settings the tests run under, resolved once as a front end resolves them (``MLIRTRACE_DEVICE`` picks the
device of the tests that build their own pipelines; nothing below the front ends reads it)."""
from pytest_mlirtrace._internal.config import resolve

SETTINGS = resolve()
#: the device spec of the tests' own pipelines and pools (None: PoCL's CPU device)
DEVICE = SETTINGS.device
