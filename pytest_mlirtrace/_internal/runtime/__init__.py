"""OpenCL runtime layer: devices, kernel jobs, isolated worker processes, the OpenCL environment.

Imports only ``vocab``, ``config`` and ``fs`` from the rest of ``pytest_mlirtrace``.  Nothing here imports
pyopencl in the calling process: all OpenCL work happens in worker processes
(see :mod:`.pool`), so a driver crash, a segfaulting kernel or an endless loop
becomes a :class:`JobResult` instead of a dead test run.  :mod:`.opencl_env` prepares what OpenCL needs
before a worker imports pyopencl (the pip PoCL's CPU fix, ICD files, PoCL's kernel cache).
"""

from .devcheck import KINDS as CHECK_KINDS
from .device import DeviceError, DeviceInfo, EnvironmentFailure, list_devices, resolve_device
from .job import InBuf, JobResult, KernelJob, LocalMem, OutBuf, OutCheck, Scalar, bound_f32, program_key
from .opencl_env import ensure_opencl_env
from .pool import WorkerPool, close_all_pools, get_pool

__all__ = [
    "DeviceError", "EnvironmentFailure", "DeviceInfo", "list_devices", "resolve_device",
    "InBuf", "OutBuf", "OutCheck", "Scalar", "bound_f32", "LocalMem", "KernelJob", "JobResult", "program_key",
    "CHECK_KINDS", "ensure_opencl_env", "WorkerPool", "get_pool", "close_all_pools",
]
