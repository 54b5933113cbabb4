"""``runtime.opencl_env``: the OpenCL environment a process needs before ``import pyopencl`` finds a device.

* :mod:`.prepare` -- :func:`ensure_opencl_env` (once per process), :func:`fix_state`, :func:`pocl_identity`;
* :mod:`.pocl_cpu_fix` -- the pip PoCL's CPU target (LLVM 14 says ``generic`` on newer CPUs): decided once,
  a patched copy of its library made where needed; :mod:`.libpocl_patch`, the byte patch itself;
  :mod:`.host_cpu`, the host's CPU flags and level;
* :mod:`.icd_files` -- the ICD files the loader sees: the user's, the patched PoCL, an ICD-less NVIDIA driver;
* :mod:`.pocl_cache` -- mlirtrace's own PoCL kernel cache, in shards that one worker each writes.

The worker processes import these modules without the rest of the package (see ``runtime/worker.py``):
they import only the standard library, pyelftools, ``fs`` and ``config.environment``.
"""
from ...fs import cache_dir
from .pocl_cache import Shard, cache_root, claim_shard, claim_worker_shard
from .prepare import ensure_opencl_env, fix_state, pocl_identity

__all__ = ["ensure_opencl_env", "fix_state", "pocl_identity", "cache_dir", "Shard", "claim_shard",
           "claim_worker_shard", "cache_root"]
