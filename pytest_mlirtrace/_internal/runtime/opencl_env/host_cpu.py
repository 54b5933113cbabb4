"""The host's CPU as PoCL's fix needs it: its flags (``/proc/cpuinfo``), the model that keys the cached
decision, and the best ``x86-64-vN`` level the flags allow (the CPU name the patched PoCL builds for)."""
from __future__ import annotations

__all__ = ["host_cpu_flags", "cpu_model_string", "choose_cpu_name", "CPU_LEVELS"]

CPU_LEVELS = (
    ("x86-64-v4", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")),
    ("x86-64-v3", ("avx2", "fma", "bmi1", "bmi2", "movbe", "f16c")),
    ("x86-64-v2", ("sse4_2", "popcnt", "ssse3")),
)


def host_cpu_flags(cpuinfo_text: str | None = None) -> set[str]:
    if cpuinfo_text is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo_text = f.read()
        except OSError:
            return set()
    for line in cpuinfo_text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_model_string() -> str:
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break
                k, _, v = line.partition(":")
                fields[k.strip()] = v.strip()
    except OSError:
        pass
    return "|".join(fields.get(k, "") for k in
                    ("vendor_id", "cpu family", "model", "model name", "stepping"))


def choose_cpu_name(flags: set[str]) -> str:
    for name, need in CPU_LEVELS:
        if all(f in flags for f in need):
            return name
    return "x86-64"
