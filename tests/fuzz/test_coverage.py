"""The coverage report of a fuzz run: ops by dtype, parameter layouts, kinds, longest reductions."""
from pytest_mlirtrace._internal import codegen, ir
from pytest_mlirtrace._internal.fuzz.coverage import Coverage, layout_of
from pytest_mlirtrace._internal.ir.shape import Shape


def test_parameter_layouts_are_told_apart():
    f32 = ir.dtype("f32")
    assert layout_of(Shape.of(f32, (2, 3), (3, 1))) == "standard"
    assert layout_of(Shape.of(f32, (2, 3), (1, 2))) == "permuted"
    assert layout_of(Shape.of(f32, (2, 3), (0, 1))) == "broadcast"
    assert layout_of(Shape.of(f32, (2, 3), (4, 1))) == "padded"


def test_coverage_counts_ops_by_dtype_kinds_and_the_longest_reduction():
    m = ir.Module()
    a = m.add_param("a", "f16", [1, 4, 300])
    b = m.add_param("b", "f16", [1, 300, 2])
    d = m.add("dot", a, b)
    m.add_return(m.add("convert", m.add("relu", d), target_type=ir.dtype("f32").type_id))
    m.verify()
    cov = Coverage()
    cov.add(m, codegen.problem_of(m))
    cov.add(m, codegen.problem_of(m))
    assert cov.ops[("dot", "f16")] == 2 and cov.ops[("relu", "f16")] == 2 and cov.ops[("convert", "f16->f32")] == 2
    assert cov.kinds == {"gemm": 2} and cov.longest == {"gemm": 300} and cov.layouts == {"standard": 4}
    text = "\n".join(cov.lines())
    assert "dot (f16 2)" in text and "longest reduction: gemm 300" in text and "standard 4" in text
