"""``mlirtrace devices``: the OpenCL devices mlirtrace can use."""
from __future__ import annotations


def add_parser(sub, name):
    return sub.add_parser(name, help="list OpenCL devices", description="List the OpenCL devices and their specs.")


def run(_args) -> int:    # every command's run takes its parsed arguments
    from ..runtime import list_devices

    for d in list_devices():
        print(f"{d.spec:<16} {d.kind:<4} {d.name} [{d.platform}] cu={d.compute_units} "
              f"wg={d.max_work_group_size} local={d.local_mem_size // 1024}KiB key={d.key_name}"
              + (f" target={d.target_cpu}" if d.target_cpu else "")
              + (f" builtin-vectors<={d.vector_bits}bit" if d.vector_bits else "")
              + (f" mma={d.mma}" if d.mma else ""))
    return 0
