"""Device enumeration and spec resolution."""

import pytest

from pytest_mlirtrace._internal.config import environment, resolve
from pytest_mlirtrace._internal.runtime import DeviceError, DeviceInfo, WorkerPool, list_devices, resolve_device
from pytest_mlirtrace._internal.runtime import device as devmod


def fake(spec, name, platform, kind, vendor="", version="OpenCL 3.0"):
    p, d = (int(x) for x in spec.split(":"))
    return DeviceInfo(spec=spec, name=name, platform=platform, kind=kind, vendor=vendor,
                      max_work_group_size=1024, local_mem_size=65536, compute_units=8,
                      has_fp16=False, has_fp64=True,
                      key_name=devmod.make_key_name(name, platform, kind, version),
                      opencl_version="3.0", platform_index=p, device_index=d,
                      device_version=version)


FAKES = [
    fake("0:0", "pthread-AMD EPYC", "Portable Computing Language", "cpu", "AuthenticAMD",
         "OpenCL 3.0 PoCL HSTR: pthread-x86_64"),
    fake("1:0", "NVIDIA H200", "NVIDIA CUDA", "gpu", "NVIDIA Corporation"),
    fake("1:1", "NVIDIA H200", "NVIDIA CUDA", "gpu", "NVIDIA Corporation"),
]


def test_key_names():
    assert FAKES[0].key_name == "pocl-cpu"
    assert FAKES[1].key_name == "nvidia-h200"
    assert devmod.make_key_name("Intel(R) Xeon(R) CPU E5", "Intel(R) OpenCL", "cpu") == \
        "intel-xeon-cpu-e5"


@pytest.mark.parametrize("spec,want", [
    ("pocl", "0:0"), ("pocl-cpu", "0:0"), ("POCL", "0:0"), ("cpu", "0:0"),
    ("nvidia", "1:0"), ("gpu", "1:0"), ("2", "1:1"), ("1:1", "1:1"),
    ("nvidia-h200", "1:0"), ("h200", "1:0"), ("epyc", "0:0"),
])
def test_match_spec(spec, want):
    assert devmod.match_spec(FAKES, spec).spec == want


@pytest.mark.parametrize("spec", ["bogus-device", "7", "3:0", "accelerator"])
def test_match_spec_unknown_lists_devices(spec):
    with pytest.raises(DeviceError) as ei:
        devmod.match_spec(FAKES, spec)
    assert "nvidia-h200" in str(ei.value) and "pocl-cpu" in str(ei.value)


def test_no_gpu_message():
    with pytest.raises(DeviceError, match="no GPU device"):
        devmod.match_spec(FAKES[:1], "gpu")


@pytest.mark.usefixtures("pocl_only")
def test_list_and_resolve_real_devices(cpu_device):
    devs = list_devices()
    assert any(d.key_name == "pocl-cpu" for d in devs)
    d = resolve_device(None) if devmod.default_device_spec(None) == "pocl-cpu" else cpu_device
    assert d.kind == "cpu" and d.key_name == "pocl-cpu"
    assert d.max_work_group_size >= 1 and d.compute_units >= 1 and d.local_mem_size > 0
    assert d.opencl_version.count(".") == 1
    assert isinstance(d.has_fp16, bool) and isinstance(d.has_fp64, bool)
    for s in ("pocl", "cpu", d.spec, "0", d.key_name):
        assert resolve_device(s) == d
    assert resolve_device(d) is d


def test_resolve_the_device_setting(monkeypatch, cpu_device):
    """The device setting (the environment's, resolved once into Settings by a front end) is passed down;
    the runtime itself reads no setting from the environment (None: PoCL's CPU device)."""
    monkeypatch.setenv(environment.DEVICE, cpu_device.spec)
    assert resolve_device(resolve().device) == cpu_device
    monkeypatch.setenv(environment.DEVICE, "no-such-thing-xyz")
    with pytest.raises(DeviceError, match="no-such-thing-xyz"):
        resolve_device(resolve().device)
    assert devmod.default_device_spec(None) == devmod.DEFAULT_SPEC


@pytest.mark.usefixtures("cpu_device")
def test_resolve_bogus_spec():
    with pytest.raises(DeviceError) as ei:
        resolve_device("definitely-not-a-device")
    assert "available" in str(ei.value) and "pocl-cpu" in str(ei.value)


@pytest.mark.usefixtures("pocl_only")
def test_pool_resolves_in_worker_when_nothing_cached(monkeypatch, cpu_device):
    # without a cached device list the first worker resolves the spec itself
    monkeypatch.setattr(devmod, "_cache", None)
    with pytest.raises(DeviceError, match="available"):
        WorkerPool("definitely-not-a-device", workers=1)
    monkeypatch.setattr(devmod, "_cache", None)
    with WorkerPool("cpu", workers=1) as p:
        assert p.device == cpu_device
    assert devmod._cache is not None


def test_workers_pin_pocl_threads_unless_the_user_chose(monkeypatch, cpu_device):
    monkeypatch.delenv("POCL_AFFINITY", raising=False)
    with WorkerPool(cpu_device, workers=1) as p:
        assert p._env["POCL_AFFINITY"] == "1"
    monkeypatch.setenv("POCL_AFFINITY", "0")
    with WorkerPool(cpu_device, workers=1) as p:
        assert p._env["POCL_AFFINITY"] == "0"
