"""Old import path of :func:`ensure_opencl_env`, kept for importers outside ``runtime`` until they import
``pytest_mlirtrace.runtime.opencl_env`` (reproducer scripts already written call it here)."""
from .opencl_env import ensure_opencl_env

__all__ = ["ensure_opencl_env"]
