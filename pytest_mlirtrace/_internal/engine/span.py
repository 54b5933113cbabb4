"""The span a compiled result carries back to what produced it."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field


def short_hash(*parts: str, n: int = 16) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:n]


@dataclass(frozen=True)
class Span:
    module_text: str      # the migraphx module, MIGraphX text format
    mlir_text: str        # its MLIR in the migraphx dialect
    problem_key: str
    solution: str         # the perf config
    kernel_source: str    # the OpenCL C the solution lowered to
    device: str           # device spec the kernel ran on
    kernel_name: str = ""
    hash: str = field(default="")

    def __post_init__(self) -> None:
        if not self.hash:
            object.__setattr__(self, "hash", short_hash(self.module_text, self.mlir_text, self.problem_key,
                                                        self.solution, self.kernel_source, self.device))

    @property
    def mlir_hash(self) -> str:
        return mlir_hash(self.mlir_text)

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @staticmethod
    def from_dict(d: dict) -> Span:
        return Span(**d)

    def describe(self) -> str:
        """The span as the trace prints it with a failure."""
        return (f"span {self.hash}: device {self.device}\n"
                f"Problem: {self.problem_key}\nSolution: {self.solution}\n"
                f"mlir {self.mlir_hash}:\n{self.mlir_text.rstrip()}\n"
                f"migraphx module:\n{self.module_text.rstrip()}\n")


def mlir_hash(text: str) -> str:
    return short_hash(text, n=12)
