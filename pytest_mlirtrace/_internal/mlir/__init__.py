"""Layer 2, ``mlir``: the migraphx dialect in MLIR syntax.

* :func:`emit_mlir` -- a :class:`~pytest_mlirtrace._internal.ir.Module` as MIGraphX prints it for
  rocMLIR, in ``tensor<>`` or ``!migraphx.shaped<>`` types (:mod:`.emit`);
* :func:`parse_mlir` / :func:`parse_mlir_module` -- MLIR text back to modules, parsed by xDSL
  with the migraphx dialect (:mod:`.dialect`) and verified against the IR's shape rules
  (:mod:`.parse`); real rocMLIR test files are taken as they are;
* :func:`normalise_mlir` -- canonical text for signatures (:mod:`.normalise`);
* :func:`module_difference` / :func:`canonical` -- what "the same module" means across the
  round trip (:mod:`.equiv`).
"""
import re

from .emit import emit_func, emit_mlir, param_names
from .equiv import canonical, module_difference
from .errors import MLIRParseError, MLIRUnsupportedError, MLIRVerifyError
from .funcattrs import FuncAttrs
from .normalise import normalise_mlir
from .parse import ParsedFunc, parse_mlir, parse_mlir_module
from .strings import symbol, symbol_ref

__all__ = ["emit_mlir", "emit_func", "param_names", "parse_mlir", "parse_mlir_module", "ParsedFunc", "FuncAttrs",
           "MLIRParseError", "MLIRVerifyError", "MLIRUnsupportedError", "normalise_mlir", "canonical",
           "module_difference", "is_mlir", "symbol", "symbol_ref"]


def is_mlir(text: str) -> bool:
    """Does ``text`` look like MLIR (rather than MIGraphX module text)? Also the 2022 ``func @f`` and MLIR's
    generic form (``"func.func"() ({...})``, ``"builtin.module"() ({...})``)."""
    return bool(re.search(r'(?m)^\s*(module(\s+@([\w.$-]+|"(?:[^"\\\n]|\\.)*"))?\s*(attributes\b.*)?\{|func\.func\b'
                          r'|func\s+(?:(?:private|public|nested)\s+)?@|"(?:builtin\.module|func\.func|builtin\.func)"\s*\()',
                          text))
