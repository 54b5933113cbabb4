"""The OpenCL environment (runtime.opencl_env): the PoCL getHostCPUName patch and the ICD files."""

import json
import os
import struct
import subprocess
import sys

import pytest

from pytest_mlirtrace._internal.config import environment
from pytest_mlirtrace._internal.runtime import opencl_env
from pytest_mlirtrace._internal.runtime.device import DEVICE_LIST_LINE, WORKER_SCRIPT
from pytest_mlirtrace._internal.runtime.opencl_env import host_cpu, icd_files, pocl_cpu_fix, prepare
from pytest_mlirtrace._internal.runtime.opencl_env import libpocl_patch as pp

# --------------------------------------------------------- synthetic ELF ---

RODATA_OFF, RODATA_VA = 0x1000, 0x1000
TEXT_OFF, TEXT_VA = 0x2000, 0x5000          # offset != vaddr on purpose
FUNC_OFF, TARGET_OFF = 0x2100, 0x2800


def synthetic_lib(with_decoy=True) -> bytes:
    data = bytearray(0x3000)
    data[0:16] = b"\x7fELF\x02\x01\x01" + bytes(9)
    struct.pack_into("<HHIQQQIHHHHHH", data, 16, 3, 62, 1, 0, 0x40, 0, 0, 64, 56, 2, 64, 0, 0)
    struct.pack_into("<IIQQQQQQ", data, 0x40, 1, 4, RODATA_OFF, RODATA_VA, RODATA_VA,
                     0x1000, 0x1000, 0x1000)
    struct.pack_into("<IIQQQQQQ", data, 0x40 + 56, 1, 5, TEXT_OFF, TEXT_VA, TEXT_VA,
                     0x1000, 0x1000, 0x1000)
    strings = b"\x00pentium\x00x86-64-v2\x00x86-64-v3\x00x86-64-v4\x00"
    data[RODATA_OFF + 0x10:RODATA_OFF + 0x10 + len(strings)] = strings
    func_va = TEXT_VA + FUNC_OFF - TEXT_OFF
    target_va = TEXT_VA + TARGET_OFF - TEXT_OFF
    rel = target_va - (func_va + 11)
    func = (bytes.fromhex("55534883ec08e8") + struct.pack("<i", rel)
            + bytes.fromhex("4889c54889d3488d7a01") + b"\xc3")
    data[FUNC_OFF:FUNC_OFF + len(func)] = func
    if with_decoy:  # same prologue, different continuation, calls garbage
        decoy = bytes.fromhex("55534883ec08e8") + struct.pack("<i", 0x100) + b"\x90" * 8
        data[TEXT_OFF + 0x40:TEXT_OFF + 0x40 + len(decoy)] = decoy
    host = bytes.fromhex("31c04889de0fa2") + b"\x90" * 24 + b"\xc3"
    data[TARGET_OFF:TARGET_OFF + len(host)] = host
    return bytes(data)


def decode_patch(data: bytes, site) -> tuple[str, int]:
    """Follow the patched 'lea rax,[rip+d]; mov edx,len; ret' back to the string."""
    code = data[site.target_offset:site.target_offset + 13]
    assert code[:3] == b"\x48\x8d\x05" and code[7] == 0xBA and code[12] == 0xC3
    disp = struct.unpack_from("<i", code, 3)[0]
    length = struct.unpack_from("<I", code, 8)[0]
    elf = pp.ElfImage(data)
    off = elf.vaddr_to_offset(site.target_vaddr + 7 + disp)
    s = data[off:off + length]
    assert data[off + length] == 0 and data[off - 1] == 0
    return s.decode(), length


def test_synthetic_pattern_search_and_patch():
    lib = synthetic_lib()
    site = pp.find_patch_site(lib)
    assert site.func_offset == FUNC_OFF
    assert site.target_offset == TARGET_OFF
    assert site.target_vaddr == TEXT_VA + TARGET_OFF - TEXT_OFF
    assert not site.already_patched
    for name in ("x86-64-v2", "x86-64-v3", "x86-64-v4"):
        patched = pp.patch_libpocl_bytes(lib, name)
        assert len(patched) == len(lib)
        again = pp.find_patch_site(patched)
        assert again.already_patched and again.target_offset == TARGET_OFF
        assert decode_patch(patched, again) == (name, len(name))
        # only the 13 bytes at the target changed
        diff = [i for i in range(len(lib)) if lib[i] != patched[i]]
        assert diff and min(diff) >= TARGET_OFF and max(diff) < TARGET_OFF + 13
        with pytest.raises(pp.PatchError, match="already"):
            pp.patch_libpocl_bytes(patched, name)


def test_synthetic_wrong_signatures_rejected():
    lib = bytearray(synthetic_lib(with_decoy=False))
    lib[TARGET_OFF + 5] = 0x90            # cpuid no longer there
    with pytest.raises(pp.PatchError):
        pp.find_patch_site(bytes(lib))
    with pytest.raises(pp.PatchError, match="not found"):
        pp.patch_libpocl_bytes(synthetic_lib(), "znver5")   # string not in the file
    with pytest.raises(pp.PatchError):
        pp.find_patch_site(b"not an elf" + bytes(100))


def test_choose_cpu_name():
    v4 = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
    v3 = {"avx2", "fma", "bmi1", "bmi2", "movbe", "f16c"}
    v2 = {"sse4_2", "popcnt", "ssse3"}
    assert host_cpu.choose_cpu_name(v4 | v3 | v2) == "x86-64-v4"
    assert host_cpu.choose_cpu_name(v3 | v2) == "x86-64-v3"
    assert host_cpu.choose_cpu_name((v3 - {"movbe"}) | v2) == "x86-64-v2"
    assert host_cpu.choose_cpu_name(set()) == "x86-64"
    assert host_cpu.host_cpu_flags("processor: 0\nflags\t\t: fpu avx2 fma\n") == {"fpu", "avx2", "fma"}


# ----------------------------------------------------------- real libpocl ---

BUNDLED = pocl_cpu_fix.find_bundled_libpocl()
needs_lib = pytest.mark.skipif(BUNDLED is None, reason="no libpocl bundled with pyopencl")


@needs_lib
def test_real_libpocl_site():
    with open(BUNDLED, "rb") as f:
        data = f.read()
    site = pp.find_patch_site(data)
    assert not site.already_patched
    assert data[site.func_offset:site.func_offset + 7] == pp.POCL_FUNC_SIG
    assert data[site.target_offset:site.target_offset + 7] == pp.HOST_CPU_SIG
    elf = pp.ElfImage(data)
    va = elf.dynamic_symbol(pp.SYMBOL)
    assert va is not None and elf.vaddr_to_offset(va) == site.func_offset
    assert site.target_offset == site.target_vaddr       # text: offset == vaddr here
    cpu = host_cpu.choose_cpu_name(host_cpu.host_cpu_flags())
    if cpu == "x86-64":
        pytest.skip("host below x86-64-v2")
    patched = pp.patch_libpocl_bytes(data, cpu)
    assert decode_patch(patched, pp.find_patch_site(patched)) == (cpu, len(cpu))


@needs_lib
def test_fix_state_consistent():
    st = opencl_env.fix_state()
    if os.environ.get(environment.NO_POCL_FIX):
        assert not st["pocl_fix"]
        return
    forced = os.environ.get(environment.POCL_CPU, "").strip()
    if st.get("reported_cpu") == "generic" or forced:
        # LLVM can't name this CPU, or the user named the target (environment.POCL_CPU): patched
        assert st["pocl_fix"], st
        if forced:
            assert st["cpu_name"] == forced, st
        assert os.path.isfile(st["patched_lib"])
        root = os.path.dirname(os.path.dirname(os.path.dirname(st["patched_lib"])))
        link = os.path.join(root, "pocl_binary_distribution")
        assert os.path.islink(link) and os.path.isdir(os.path.join(link, ".libs", "share", "pocl"))
        assert pocl_cpu_fix.query_llvm_cpu_name(st["patched_lib"]) == st["cpu_name"]
        with open(os.path.join(st["vendors"], "mlirtrace-pocl.icd")) as f:
            assert f.read().strip() == st["patched_lib"]
    else:
        assert not st["pocl_fix"]


def _run_py(code, env):
    cp = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                        timeout=120)
    assert cp.returncode == 0, cp.stderr
    return cp.stdout


@needs_lib
def test_user_icds_are_kept_and_opt_out(tmp_path):
    user = tmp_path / "vendors"
    user.mkdir()
    (user / "foo.icd").write_text("libfoo-opencl-does-not-exist.so\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OCL_ICD_VENDORS", environment.ORIG_OCL_ICD_VENDORS, environment.PYOPENCL_HOME)}
    env["OCL_ICD_VENDORS"] = str(user)
    code = ("import json, os; from pytest_mlirtrace._internal.runtime import opencl_env\n"
            "opencl_env.ensure_opencl_env(import_pyopencl=False)\n"
            "print(json.dumps([opencl_env.fix_state(), os.environ.get('OCL_ICD_VENDORS')]))\n")
    st, vendors = json.loads(_run_py(code, env).strip().splitlines()[-1])
    if st["pocl_fix"]:
        assert vendors == st["vendors"] != str(user)
        names = sorted(os.listdir(vendors))
        assert "foo.icd" in names and "mlirtrace-pocl.icd" in names
        assert (open(os.path.join(vendors, "foo.icd")).read().strip()
                == "libfoo-opencl-does-not-exist.so")
        # PoCL still enumerates next to the broken user ICD
        out = subprocess.run([sys.executable, WORKER_SCRIPT, "--list"], env=env, capture_output=True, text=True,
                             timeout=120)
        devs = json.loads(out.stdout.split(DEVICE_LIST_LINE, 1)[1])["devices"]
        assert any(d["key_name"] == "pocl-cpu" for d in devs)
    env[environment.NO_POCL_FIX] = "1"
    st, vendors = json.loads(_run_py(code, env).strip().splitlines()[-1])
    assert not st["pocl_fix"] and "disabled" in st["reason"]


def test_nvidia_icd_added_when_missing(tmp_path, monkeypatch):
    drv = tmp_path / "driver"
    drv.mkdir()
    (drv / icd_files.NVIDIA_LIB).write_bytes(b"")
    user = tmp_path / "vendors"
    user.mkdir()
    (user / "other.icd").write_text("libother.so\n")
    monkeypatch.setattr(icd_files, "NVIDIA_DIRS", (str(drv),))
    monkeypatch.setattr(pocl_cpu_fix, "find_bundled_libpocl", lambda: None)
    monkeypatch.setenv(environment.CACHE_DIR, str(tmp_path / "cache"))
    monkeypatch.setenv("OCL_ICD_VENDORS", str(user))
    monkeypatch.delenv(environment.ORIG_OCL_ICD_VENDORS, raising=False)
    st = prepare._compute_state()
    assert st["nvidia"] == str(drv / icd_files.NVIDIA_LIB)
    files = {n: open(os.path.join(st["vendors"], n)).read().strip()
             for n in os.listdir(st["vendors"])}
    assert files == {"nvidia.icd": str(drv / icd_files.NVIDIA_LIB), "other.icd": "libother.so"}
    # an ICD that already names the driver: nothing to add
    (user / "nv.icd").write_text("libnvidia-opencl.so.1\n")
    monkeypatch.delenv(environment.ORIG_OCL_ICD_VENDORS, raising=False)
    st = prepare._compute_state()
    assert st["nvidia"] is None and st["vendors"] is None
