"""Layer 1, ``ir``: the migraphx program, its shape rules, MIGraphX text and the numpy oracle."""
from .compare import Bound, Mismatch, compare, compare_bounded, error_bounds, result_precisions, tolerance
from .dtypes import DType, DTypeError, all_dtypes, dtype
from .module import VIEW_OPS, Instruction, IRError, Module
from .ops import (
                  BINARY_OPS,
                  COMPARE_OPS,
                  CONV_OPS,
                  GEMM_OPS,
                  POINTWISE_OPS,
                  QUANT_OPS,
                  REDUCE_OPS,
                  UNARY_OPS,
                  UnsupportedOp,
                  infer_shape,
)
from .printer import print_module
from .quoting import quote_string, unquote_string
from .reference import evaluate, random_inputs
from .shape import Shape, standard_strides
from .text import TextParseError, parse_module

__all__ = [
    "DType", "DTypeError", "all_dtypes", "dtype", "Instruction", "IRError", "Module", "VIEW_OPS", "Shape",
    "standard_strides", "infer_shape", "UnsupportedOp", "UNARY_OPS", "BINARY_OPS", "COMPARE_OPS",
    "POINTWISE_OPS", "QUANT_OPS", "REDUCE_OPS", "GEMM_OPS", "CONV_OPS", "evaluate", "random_inputs", "compare",
    "result_precisions", "tolerance",
    "Mismatch", "Bound", "error_bounds", "compare_bounded", "TextParseError", "parse_module", "print_module",
    "quote_string", "unquote_string",
]
