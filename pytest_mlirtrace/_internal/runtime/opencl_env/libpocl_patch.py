"""The byte patch that makes the pip PoCL build for a CPU LLVM 14 does not know: find
``llvm::sys::getHostCPUName`` through the call in ``pocl_get_llvm_cpu_name`` (exported symbol, else a
byte pattern in the executable segments), and make it return a CPU name that already lives in the
library's rodata. Signatures are checked; there are no hard-coded offsets.

Standard library and pyelftools only (imported on first use).
"""
from __future__ import annotations

import io
import struct
from dataclasses import dataclass

__all__ = ["find_patch_site", "patch_libpocl_bytes", "PatchSite", "PatchError", "ElfImage"]

# pocl_get_llvm_cpu_name: push rbp; push rbx; sub rsp,8; call rel32
POCL_FUNC_SIG = bytes.fromhex("5553 4883ec08 e8".replace(" ", ""))
# rest of pocl_get_llvm_cpu_name after the call: mov rbp,rax; mov rbx,rdx
POCL_FUNC_TAIL = bytes.fromhex("4889c5 4889d3".replace(" ", ""))
# llvm::sys::getHostCPUName: xor eax,eax; mov rsi,rbx; cpuid
HOST_CPU_SIG = bytes.fromhex("31c0 4889de 0fa2".replace(" ", ""))
# our replacement starts with "lea rax,[rip+disp32]"
PATCH_PREFIX = b"\x48\x8d\x05"
SYMBOL = b"pocl_get_llvm_cpu_name"


class PatchError(Exception):
    """The library does not look like the one we know how to patch."""


# ---------------------------------------------------------------- ELF -----

class ElfImage:
    """The loaded segments and exported symbols of a little-endian ELF64 image (read by pyelftools)."""

    def __init__(self, data: bytes):
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile
        try:
            self._elf = ELFFile(io.BytesIO(data))
            if self._elf.elfclass != 64 or not self._elf.little_endian:
                raise PatchError("not a little-endian ELF64 file")
            # (offset, vaddr, filesz, flags) of each PT_LOAD segment
            self.loads = [(seg["p_offset"], seg["p_vaddr"], seg["p_filesz"], seg["p_flags"])
                          for seg in self._elf.iter_segments() if seg["p_type"] == "PT_LOAD"]
        except (ELFError, struct.error, ValueError) as e:
            raise PatchError(f"not a readable ELF file: {e}") from None
        self.data = data

    def vaddr_to_offset(self, vaddr: int) -> int:
        off = next(self._elf.address_offsets(vaddr), None)
        if off is None:
            raise PatchError(f"address {vaddr:#x} not in a loaded segment")
        return off

    def offset_to_vaddr(self, offset: int) -> int:
        for off, va, sz, _fl in self.loads:
            if off <= offset < off + sz:
                return offset - off + va
        raise PatchError(f"file offset {offset:#x} not in a loaded segment")

    def is_exec_offset(self, offset: int) -> bool:
        from elftools.elf.constants import P_FLAGS
        return any(off <= offset < off + sz and fl & P_FLAGS.PF_X for off, _va, sz, fl in self.loads)

    def dynamic_symbol(self, name: bytes) -> int | None:
        """Virtual address of an exported (defined) symbol in .dynsym, or None."""
        from elftools.elf.sections import SymbolTableSection
        for sec in self._elf.iter_sections():
            if not isinstance(sec, SymbolTableSection) or sec["sh_type"] != "SHT_DYNSYM":
                continue
            for sym in sec.get_symbol_by_name(name.decode()) or ():
                if sym["st_shndx"] != "SHN_UNDEF" and sym["st_value"]:
                    return sym["st_value"]
        return None


@dataclass(frozen=True)
class PatchSite:
    func_offset: int     # file offset of pocl_get_llvm_cpu_name
    target_offset: int   # file offset of llvm::sys::getHostCPUName
    target_vaddr: int
    already_patched: bool


def _call_target(elf: ElfImage, func_off: int) -> tuple[int, int]:
    rel = struct.unpack_from("<i", elf.data, func_off + 7)[0]
    func_va = elf.offset_to_vaddr(func_off)
    target_va = func_va + 11 + rel
    return target_va, elf.vaddr_to_offset(target_va)


def _looks_patched(data: bytes, off: int) -> bool:
    return (data[off:off + 3] == PATCH_PREFIX and data[off + 7] == 0xBA
            and data[off + 12] == 0xC3)


def find_patch_site(data: bytes) -> PatchSite:
    """Locate getHostCPUName through the call in pocl_get_llvm_cpu_name.

    The exported symbol is looked up in .dynsym; if that fails, the function
    prologue is searched for as a byte pattern.  Raises PatchError when the
    signatures do not match.
    """
    elf = ElfImage(data)
    candidates = []
    va = elf.dynamic_symbol(SYMBOL)
    if va is not None:
        candidates.append(elf.vaddr_to_offset(va))
    else:  # no section headers: pattern search in executable segments
        pat = POCL_FUNC_SIG
        pos = data.find(pat)
        while pos >= 0:
            if (data[pos + 11:pos + 11 + len(POCL_FUNC_TAIL)] == POCL_FUNC_TAIL
                    and elf.is_exec_offset(pos)):
                candidates.append(pos)
            pos = data.find(pat, pos + 1)
    for func_off in candidates:
        if data[func_off:func_off + len(POCL_FUNC_SIG)] != POCL_FUNC_SIG:
            continue
        try:
            target_va, target_off = _call_target(elf, func_off)
        except PatchError:
            continue
        if not elf.is_exec_offset(target_off):
            continue
        if data[target_off:target_off + len(HOST_CPU_SIG)] == HOST_CPU_SIG:
            return PatchSite(func_off, target_off, target_va, False)
        if _looks_patched(data, target_off):
            return PatchSite(func_off, target_off, target_va, True)
    raise PatchError("pocl_get_llvm_cpu_name / getHostCPUName signature not found")


def patch_libpocl_bytes(data: bytes, cpu_name: str) -> bytes:
    """Return a copy of libpocl with getHostCPUName returning *cpu_name*."""
    site = find_patch_site(data)
    if site.already_patched:
        raise PatchError("library is already patched")
    elf = ElfImage(data)
    needle = b"\x00" + cpu_name.encode() + b"\x00"
    pos = data.find(needle)
    while pos >= 0 and elf.is_exec_offset(pos + 1):
        pos = data.find(needle, pos + 1)
    if pos < 0:
        raise PatchError(f"string {cpu_name!r} not found in the library")
    str_va = elf.offset_to_vaddr(pos + 1)
    disp = str_va - (site.target_vaddr + 7)
    code = (PATCH_PREFIX + struct.pack("<i", disp)          # lea rax,[rip+disp]
            + b"\xba" + struct.pack("<I", len(cpu_name))    # mov edx,len
            + b"\xc3")                                      # ret
    out = bytearray(data)
    out[site.target_offset:site.target_offset + len(code)] = code
    return bytes(out)
