"""Perf configs: the comma-separated tuning parameters of one kernel variant -- parsed and written here only.

Forms:

``legacy``   ``128,256,4,64,128,8,1,1`` -- plain numbers, no prefix (MIGraphX logs of 2023; rocMLIR reads
             it as version 1).  mlirtrace's own solutions are written this way (``64,1,16``).
``vN:``      ``v2:16,64,8,16,16,8,1,1,1`` -- rocMLIR's versioned forms v1..v4, of at most 8, 9, 11 and
             12 fields (rocMLIR PR #2088; v3 added a schedule field, #1767).
``kind:vN:`` ``attn:v1:32,32,32,32,32,32,16,1,1`` -- a kernel kind before the version (attention).

Some logs print a ``:`` after the config (``v2:16,64,...,1:``); it is not part of it.

:func:`parse_perf_config` reads any text: by default it never raises and says in
:attr:`PerfConfig.error` what is wrong (the log importer keeps whatever a log printed); with
``strict=True`` a text that is not a well-formed perf config raises :class:`PerfConfigError`.
:func:`format_perf_config` writes one back; ``PerfConfig.text`` is the canonical form of a parsed one.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PerfConfig", "PerfConfigError", "MAX_FIELDS", "format_perf_config", "parse_perf_config"]

#: the most fields rocMLIR writes for each version (configs with a kind prefix have their own layouts)
MAX_FIELDS = {1: 8, 2: 9, 3: 11, 4: 12}

_VER = re.compile(r"^(?:(?P<kind>[A-Za-z_]+):)?v(?P<ver>\d+):(?P<body>.*)$", re.S)
_INT = re.compile(r"^-?\d+$")


class PerfConfigError(ValueError):
    """A text that is not a well-formed perf config (the message says what is wrong)."""


@dataclass
class PerfConfig:
    raw: str                        # the text as given (surrounding whitespace stripped)
    version: int | None = None      # 1 for the legacy form and "v1:"; N for "vN:"; None when not recognised
    kind: str | None = None         # "attn" for "attn:v1:..."
    values: list[Any] = field(default_factory=list)      # each field as an int where it is one, else its text
    fields: tuple[str, ...] = ()    # each field's text, stripped
    prefixed: bool = False          # written with a "vN:" prefix
    error: str | None = None        # why it is not a well-formed perf config; None when it is

    @property
    def n_fields(self) -> int:
        return len(self.values)

    @property
    def legacy(self) -> bool:
        return self.version == 1 and not self.prefixed

    @property
    def text(self) -> str:
        """The config written back in its own form (a trailing ``:`` and stray spaces dropped)."""
        head = (f"{self.kind}:" if self.kind else "") + (f"v{self.version}:" if self.prefixed else "")
        return head + ",".join(self.fields)

    def to_dict(self) -> dict[str, Any]:
        return {"raw": self.raw, "version": self.version, "kind": self.kind, "values": list(self.values)}

    def __str__(self) -> str:
        return self.raw


def _problem(pc: PerfConfig) -> str | None:
    """What is wrong with a parsed config, or None."""
    what = f"perf config {pc.raw!r}"
    if not pc.fields:
        return f"{what} has no fields" if pc.raw else "empty perf config"
    for i, f in enumerate(pc.fields, 1):
        if not _INT.match(f):
            return f"{what}: field {i} is {f!r}, expected an integer"
    if pc.prefixed:
        if pc.version not in MAX_FIELDS:
            return f"{what}: version v{pc.version} is not one rocMLIR writes (v1..v4)"
        most = MAX_FIELDS[pc.version]
        if pc.kind is None and len(pc.fields) > most:
            return f"{what} has {len(pc.fields)} fields; a v{pc.version} config has at most {most}"
    elif len(pc.fields) < 2:
        return f"{what}: a legacy perf config has at least 2 comma-separated numbers"
    return None


def parse_perf_config(text: str, *, strict: bool = False) -> PerfConfig:
    """Parse any of the forms in the module docstring.

    Never raises unless ``strict``: a text that is no perf config comes back with ``version`` None
    (unless it has a version prefix) and :attr:`PerfConfig.error` saying why; ``strict=True`` raises
    :class:`PerfConfigError` with that message instead.
    """
    raw = str(text).strip()
    pc = PerfConfig(raw=raw)
    body = raw
    m = _VER.match(raw)
    if m:
        pc.version, pc.kind, pc.prefixed, body = int(m.group("ver")), m.group("kind"), True, m.group("body")
    if body.endswith(":"):          # printed after the config by some logs
        body = body[:-1].rstrip()
    pc.fields = tuple(v.strip() for v in body.split(",")) if body else ()
    pc.values = [int(v) if _INT.match(v) else v for v in pc.fields]
    pc.error = _problem(pc)
    if not pc.prefixed and pc.error is None:
        pc.version = 1
    if strict and pc.error is not None:
        raise PerfConfigError(pc.error)
    return pc


def format_perf_config(values: Sequence[Any], version: int | None = None, kind: str | None = None) -> str:
    """``values`` comma separated, with a ``vN:`` prefix when ``version`` is given (and ``kind:`` before it)."""
    if kind is not None and version is None:
        raise PerfConfigError(f"a perf config with kind {kind!r} needs a version")
    head = (f"{kind}:" if kind else "") + (f"v{version}:" if version is not None else "")
    text = head + ",".join(str(v) for v in values)
    parse_perf_config(text, strict=True)
    return text
