"""The attributes of a fused func: ``{arch = "gfx90a", kernel = "mixr", num_cu = 110 : i64}``.

MIGraphX wrote ``arch``/``kernel``/``num_cu`` until 2026 and ``rock.arch``/``rock.kernel``/
``rock.num_cu`` since; rocMLIR tests also write ``mhal.arch`` and a unit ``kernel``.  All are
read; :attr:`FuncAttrs.prefix` remembers which spelling was used so re-emitting keeps it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .strings import attr_name, quote_string

_PREFIXES = ("", "rock.", "mhal.")


@dataclass
class FuncAttrs:
    arch: str | None = None
    kernel: str | bool | None = None      # "mixr"; True for a unit attribute; None when absent
    num_cu: int | None = None
    prefix: str = ""                       # "" or "rock." (how arch/kernel/num_cu are spelled)
    extra: dict[str, str] = field(default_factory=dict)   # any other attribute: name -> MLIR text

    @staticmethod
    def default(arch: str = "pocl-cpu", num_cu: int = 1, kernel: str | bool = "mixr",
                prefix: str = "") -> FuncAttrs:
        return FuncAttrs(arch, kernel, num_cu, prefix)

    def entries(self) -> dict[str, str | None]:
        """attribute name -> MLIR value text (None for a unit attribute), sorted by name as MLIR prints."""
        out: dict[str, str | None] = {}
        p = self.prefix
        if self.arch is not None:
            out[p + "arch"] = quote_string(self.arch)
        if self.kernel is True:
            out[p + "kernel"] = None
        elif self.kernel:
            out[p + "kernel"] = quote_string(self.kernel)
        if self.num_cu is not None:
            out[p + "num_cu"] = f"{int(self.num_cu)} : i64"
        out.update(self.extra)
        return dict(sorted(out.items()))

    def text(self) -> str:
        """``{arch = "..", kernel = "mixr", num_cu = 1 : i64}`` or "" when there are none."""
        ent = self.entries()
        if not ent:
            return ""
        return "{" + ", ".join(attr_name(k) if v is None else f"{attr_name(k)} = {v}" for k, v in ent.items()) \
            + "}"

    @staticmethod
    def from_entries(entries: dict[str, tuple[object, str | None]]) -> FuncAttrs:
        """From name -> (python value: str, int, True for a unit attribute, or None; its MLIR text)."""
        fa = FuncAttrs()
        prefixes = []
        for k, (v, text) in entries.items():
            pre = "rock." if k.startswith("rock.") else ""
            base = k[len(pre):]
            if base == "arch" and isinstance(v, str) and fa.arch is None:
                fa.arch = v
            elif base == "kernel" and (isinstance(v, str) or v is True) and fa.kernel is None:
                fa.kernel = v
            elif base == "num_cu" and isinstance(v, int) and not isinstance(v, bool) and fa.num_cu is None:
                fa.num_cu = v
            else:
                fa.extra[k] = text
                continue
            prefixes.append(pre)
        fa.prefix = "rock." if prefixes and all(p == "rock." for p in prefixes) else ""
        return fa
