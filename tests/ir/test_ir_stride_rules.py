"""rocMLIR's memory-layout rule for ``!migraphx.shaped`` strides (``ir.shape.layout_problem``), one test per
rule.  The rule is rocMLIR's ``MIXRShapedType::asMemoryLayoutTensor``: order the dims by (stride, length),
outermost first; a stride-0 dim is a broadcast; the smallest non-zero stride must be 1; going outwards each
stride must cover the dims inside it and, when it is larger (padding), be a multiple of the inner stride.
The refused examples are those of rocMLIR's own test migraphx-to-tosa-non-contiguous-strides.mlir."""
from __future__ import annotations

from pytest_mlirtrace._internal.ir.shape import Shape, layout_problem


def test_rule_standard_layout_is_laid_out():
    assert layout_problem((4, 24, 24), (576, 24, 1)) is None
    assert layout_problem((2, 1, 3), (3, 3, 1)) is None          # MIGraphX's stride for a length-1 dim
    assert layout_problem((), ()) is None


def test_rule_smallest_stride_must_be_one():
    # rocMLIR: "!migraphx.shaped type with smallest stride 2 has no supported in-memory layout"
    why = layout_problem((4, 24, 24), (1152, 48, 2))
    assert why == "strides [1152, 48, 2]: the smallest stride is 2, not 1 (no in-memory layout has it)"


def test_rule_a_stride_may_not_be_smaller_than_the_dims_inside_it():
    # rocMLIR: "the stride 1000 at index 0 being smaller than the product of previous lengths 2400"
    why = layout_problem((4, 24, 24), (1000, 100, 1))
    assert why == ("strides [1000, 100, 1]: stride 1000 is smaller than 2400, the span of the dims inside it "
                   "(stride 100 x length 24); dims would overlap")
    assert "smaller than 4" in layout_problem((4, 4), (3, 1))


def test_rule_a_padded_stride_must_be_a_multiple_of_the_inner_stride():
    # rocMLIR: "the stride 576 at index 0 does not evenly divide the previous stride 10"
    why = layout_problem((4, 24, 24), (576, 10, 1))
    assert why == ("strides [576, 10, 1]: stride 576 is not a multiple of the inner stride 10 "
                   "(a padded row must hold whole inner elements)")


def test_rule_padded_layouts_are_laid_out():
    # rocMLIR lowers these outputs (expand_strides): rows padded to 48 and to 12 elements
    assert layout_problem((4, 24, 24), (1152, 24, 1)) is None
    assert layout_problem((4, 5, 24), (288, 24, 1)) is None
    assert layout_problem((3, 2), (1, 7)) is None                # a transposed, padded 2-D view


def test_rule_permuted_layouts_are_laid_out():
    # the convolution result of rocMLIR's mixr-conv1x1-gemm-scale-bias test: NHWC memory for NCHW lens
    assert layout_problem((2, 16, 8, 8), (2048, 1, 128, 16)) is None
    assert layout_problem((4, 8, 32), (256, 1, 8)) is None


def test_rule_broadcast_dims_are_laid_out_anywhere():
    assert layout_problem((4, 8, 32), (0, 32, 1)) is None        # a broadcast weight
    assert layout_problem((2, 2, 7, 32, 32), (2048, 1024, 0, 32, 1)) is None   # a 0 in the middle (5-D)
    assert layout_problem((3, 5), (0, 0)) is None                # a broadcast scalar
    assert layout_problem((2, 7, 32), (32, 0, 2)) is not None    # ... but the unit-stride rule still holds


def test_rule_checks_stop_at_the_unit_stride_as_rocmlir_does():
    # rocMLIR stops its outward walk at the first stride-1 dim; two unit-stride dims pass it
    assert layout_problem((2, 3), (1, 1)) is None


def test_shape_exposes_the_rule():
    assert Shape.of("f16", (4, 24, 24), (1152, 48, 2)).layout_problem.startswith("strides [1152, 48, 2]")
    assert Shape.of("f16", (2, 16, 8, 8), (2048, 1, 128, 16)).layout_problem is None
