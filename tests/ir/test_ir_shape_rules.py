"""Every op's shape rule: the shape it gives, and a clear error (naming the instruction) for bad input."""
import pytest

from pytest_mlirtrace._internal.ir import (
    BINARY_OPS,
    COMPARE_OPS,
    REDUCE_OPS,
    UNARY_OPS,
    IRError,
    Module,
    Shape,
    UnsupportedOp,
    standard_strides,
)
from pytest_mlirtrace._internal.ir.ops import RULES


def mod(*params):
    m = Module()
    names = []
    for i, (dt, lens, *strides) in enumerate(params):
        names.append(m.add_param(f"p{i}", dt, lens, strides[0] if strides else None))
    return m, names


def test_standard_strides_keep_stride_of_next_dim_for_length_one():
    assert standard_strides([2, 4, 2, 1, 1]) == (8, 2, 1, 1, 1)
    assert standard_strides([1, 384, 768]) == (294912, 768, 1)
    assert standard_strides([]) == ()


@pytest.mark.parametrize("op", UNARY_OPS)
def test_unary_keeps_shape(op):
    m, (a,) = mod(("f16", [2, 3]))
    out = m.get(m.add(op, a)).shape
    assert out == Shape.of("f16", [2, 3])


def test_unary_of_transposed_packed_input_keeps_its_layout():
    m, (a,) = mod(("f32", [3, 2], [1, 3]))
    assert m.get(m.add("relu", a)).shape.strides == (1, 3)


def test_unary_of_broadcast_input_is_standard():
    m, (a,) = mod(("f32", [3, 2], [0, 1]))
    assert m.get(m.add("exp", a)).shape.strides == (2, 1)


@pytest.mark.parametrize("op", BINARY_OPS)
def test_binary(op):
    m, (a, b) = mod(("f32", [2, 3]), ("f32", [2, 3], [0, 1]))
    assert m.get(m.add(op, a, b)).shape == Shape.of("f32", [2, 3])


@pytest.mark.parametrize("op", BINARY_OPS + COMPARE_OPS)
def test_binary_lens_mismatch_names_instruction(op):
    m, (a, b) = mod(("f32", [2, 3]), ("f32", [3, 2]))
    with pytest.raises(IRError, match=rf"^@2 = {op}: inputs differ in lens: \[2, 3\] vs \[3, 2\]"):
        m.add(op, a, b)


def test_binary_type_mismatch():
    m, (a, b) = mod(("f32", [2]), ("f16", [2]))
    with pytest.raises(IRError, match=r"@2 = add: inputs differ in type: float_type vs half_type"):
        m.add("add", a, b)


def test_binary_arity():
    m, (a,) = mod(("f32", [2]))
    with pytest.raises(IRError, match=r"@1 = mul: takes 2 inputs, got 1"):
        m.add("mul", a)


@pytest.mark.parametrize("op", COMPARE_OPS)
def test_compare_gives_bool(op):
    m, (a, b) = mod(("i32", [4]), ("i32", [4]))
    assert m.get(m.add(op, a, b)).shape == Shape.of("bool", [4])


def test_where():
    m, (c, a, b) = mod(("bool", [2, 2]), ("f16", [2, 2]), ("f16", [2, 2]))
    assert m.get(m.add("where", c, a, b)).shape == Shape.of("f16", [2, 2])
    m2, (c, a, b) = mod(("f32", [2]), ("f16", [2]), ("f16", [2]))
    with pytest.raises(IRError, match=r"@3 = where: condition must be bool or integer, got float_type"):
        m2.add("where", c, a, b)
    m3, (c, a, b) = mod(("i8", [2]), ("f16", [2]), ("f32", [2]))
    with pytest.raises(IRError, match=r"@3 = where: branches differ in type"):
        m3.add("where", c, a, b)


def test_convert():
    m, (a,) = mod(("f16", [2, 3]))
    assert m.get(m.add("convert", a, target_type=2)).shape == Shape.of("f32", [2, 3])
    assert m.get(m.add("convert", a, target_type="i8")).shape == Shape.of("i8", [2, 3])
    with pytest.raises(IRError, match=r"@3 = convert: unknown target_type 99"):
        m.add("convert", a, target_type=99)
    with pytest.raises(IRError, match=r"@3 = convert: missing attribute target_type"):
        m.add("convert", a)


def test_multibroadcast():
    m, (a, b) = mod(("f32", [1, 768, 768]), ("f32", [2, 4, 2, 1, 1], [8, 2, 1, 1, 1]))
    assert m.get(m.add("multibroadcast", a, out_lens=[1, 768, 768], out_dyn_dims=[])).shape.strides == (
        589824, 768, 1)
    # the splitkv trace: {2,4,2,1,1} -> {2,4,2,1,512} gives {8,2,1,1,0}
    assert m.get(m.add("multibroadcast", b, out_lens=[2, 4, 2, 1, 512])).shape.strides == (8, 2, 1, 1, 0)
    m2, (c,) = mod(("f32", [12]))
    assert m2.get(m2.add("multibroadcast", c, out_lens=[2, 2, 12])).shape.strides == (0, 0, 1)
    with pytest.raises(IRError, match=r"@2 = multibroadcast: cannot broadcast input lens \[12\] to \[2, 5\]"):
        m2.add("multibroadcast", c, out_lens=[2, 5])
    with pytest.raises(IRError, match=r"out_lens \[\] has lower rank"):
        m2.add("multibroadcast", c, out_lens=[])
    with pytest.raises(IRError, match=r"missing attribute out_lens"):
        m2.add("multibroadcast", c)
    with pytest.raises(IRError, match=r"must be a list of integers"):
        m2.add("multibroadcast", c, out_lens=["a"])


def test_broadcast():
    m, (a,) = mod(("f32", [4, 12]))
    assert m.get(m.add("broadcast", a, axis=1, out_lens=[2, 4, 12])).shape == Shape.of("f32", [2, 4, 12],
                                                                                       [0, 12, 1])
    with pytest.raises(IRError, match=r"@2 = broadcast: axis 2 does not fit"):
        m.add("broadcast", a, axis=2, out_lens=[2, 4, 12])
    with pytest.raises(IRError, match=r"input dim 0 \(4\) != out_lens\[0\] \(5\)"):
        m.add("broadcast", a, axis=0, out_lens=[5, 12, 3])


def test_transpose():
    m, (a,) = mod(("f16", [1, 12, 384, 64]))
    out = m.get(m.add("transpose", a, permutation=[0, 2, 1, 3])).shape
    assert out == Shape.of("f16", [1, 384, 12, 64], [294912, 64, 24576, 1])
    with pytest.raises(IRError, match=r"@2 = transpose: permutation \[0, 1\] is not a permutation of 4 dims"):
        m.add("transpose", a, permutation=[0, 1])


def test_reshape():
    m, (a,) = mod(("f16", [1, 384, 12, 64]))
    assert m.get(m.add("reshape", a, dims=[0, 0, 768])).shape == Shape.of("f16", [1, 384, 768])
    assert m.get(m.add("reshape", a, dims=[-1, 64])).shape.lens == (4608, 64)
    with pytest.raises(IRError, match=r"@3 = reshape: dims \[5, 5\] give 25 elements, input \[1, 384, 12, 64\] "
                                      r"has 294912"):
        m.add("reshape", a, dims=[5, 5])
    with pytest.raises(IRError, match=r"more than one -1"):
        m.add("reshape", a, dims=[-1, -1])
    with pytest.raises(IRError, match=r"cannot infer -1"):
        m.add("reshape", a, dims=[-1, 7])
    with pytest.raises(IRError, match=r"dims\[5\] = 0 copies an input dim that does not exist"):
        m.add("reshape", a, dims=[1, 384, 12, 64, 1, 0])


def test_contiguous():
    m, (a,) = mod(("f32", [3, 2], [1, 3]))
    assert m.get(m.add("contiguous", a)).shape == Shape.of("f32", [3, 2])


def test_slice():
    m, (a,) = mod(("f16", [1, 96, 2, 128], [24576, 128, 12288, 1]))
    out = m.get(m.add("slice", a, axes=[1], starts=[0], ends=[32])).shape
    assert out == Shape.of("f16", [1, 32, 2, 128], [24576, 128, 12288, 1])
    assert m.get(m.add("slice", a, axes=[-1], starts=[-28], ends=[1000])).shape.lens == (1, 96, 2, 28)
    with pytest.raises(IRError, match=r"@3 = slice: axes, starts and ends differ in length"):
        m.add("slice", a, axes=[1], starts=[0, 1], ends=[2])
    with pytest.raises(IRError, match=r"axis 7 out of range for rank 4"):
        m.add("slice", a, axes=[7], starts=[0], ends=[1])
    with pytest.raises(IRError, match=r"empty-reversed"):
        m.add("slice", a, axes=[1], starts=[5], ends=[2])


def test_squeeze_unsqueeze():
    m, (a,) = mod(("f16", [2, 4, 1, 32], [128, 32, 32, 1]))
    # the splitkv trace: unsqueeze[axes={3}] -> {2, 4, 1, 1, 32}, {128, 32, 32, 32, 1}
    u = m.add("unsqueeze", a, axes=[3], steps=[])
    assert m.get(u).shape == Shape.of("f16", [2, 4, 1, 1, 32], [128, 32, 32, 32, 1])
    assert m.get(m.add("squeeze", u, axes=[3])).shape == m.get(a).shape
    assert m.get(m.add("squeeze", u)).shape.lens == (2, 4, 32)
    with pytest.raises(IRError, match=r"cannot squeeze axis 0 of length 2"):
        m.add("squeeze", a, axes=[0])


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce(op):
    m, (a,) = mod(("f32", [2, 4, 2, 1, 512]))
    assert m.get(m.add(op, a, axes=[4])).shape == Shape.of("f32", [2, 4, 2, 1, 1], [8, 2, 1, 1, 1])
    with pytest.raises(IRError, match=rf"= {op}: axis 5 out of range"):
        m.add(op, a, axes=[5])


def test_dot():
    m, (a, b) = mod(("f16", [1, 384, 768]), ("f16", [1, 768, 768], [589824, 768, 1]))
    assert m.get(m.add("dot", a, b)).shape == Shape.of("f16", [1, 384, 768])
    m2, (x, y, z, w) = mod(("f32", [2, 3]), ("f32", [4, 5]), ("i8", [3, 2]), ("f32", [3]))
    with pytest.raises(IRError, match=r"@4 = dot: inner dims differ: \[2, 3\] x \[4, 5\] \(k 3 != 4\)"):
        m2.add("dot", x, y)
    with pytest.raises(IRError, match=r"inputs differ in type"):
        m2.add("dot", x, z)
    with pytest.raises(IRError, match=r"rank >= 2"):
        m2.add("dot", x, w)
    m3, (p, q) = mod(("f32", [2, 2, 3]), ("f32", [3, 3, 4]))
    with pytest.raises(IRError, match=r"batch dims differ"):
        m3.add("dot", p, q)
    m4, (i, j) = mod(("i8", [2, 3]), ("i8", [3, 4]))
    with pytest.raises(IRError, match=r"dot takes float inputs, got int8_type"):
        m4.add("dot", i, j)
    assert m4.get(m4.add("quant_dot", i, j)).shape == Shape.of("i32", [2, 4])
    m5, (f, g) = mod(("f32", [2, 3]), ("f32", [3, 4]))
    with pytest.raises(IRError, match=r"quant_dot takes int8 inputs"):
        m5.add("quant_dot", f, g)


def test_narrow_float_gemms_and_the_scaled_quant_dot():
    """fp8 / fp4 operands give an f32 result; a scaled quant_dot takes a, b, scale_a, scale_b, each scale of its
    operand's lens (issue 14)."""
    m, (a, b, sa, sb, f) = mod(("f4E2M1FN", [1, 16, 64]), ("f4E2M1FN", [1, 64, 8]), ("f8E8M0FNU", [1, 16, 64]),
                               ("f32", [1, 64, 8]), ("f32", [1, 16, 8]))
    assert m.get(m.add("dot", a, b)).shape == Shape.of("f32", [1, 16, 8])
    assert m.get(m.add("quant_dot", a, b)).shape == Shape.of("f32", [1, 16, 8])
    assert m.get(m.add("quant_dot", a, b, sa, sb)).shape == Shape.of("f32", [1, 16, 8])
    with pytest.raises(IRError, match=r"scale of B has lens \[1, 16, 64\], its operand \[1, 64, 8\]"):
        m.add("quant_dot", a, b, sa, sa)
    with pytest.raises(IRError, match=r"scale of A must be one of f32, f16, bf16, f8E8M0FNU, got f4E2M1FN"):
        m.add("quant_dot", a, b, a, sb)
    m2, (i, j, si, sj) = mod(("i8", [2, 4]), ("i8", [4, 2]), ("f32", [2, 4]), ("f32", [4, 2]))
    with pytest.raises(IRError, match=r"scaled operand A must be a float type"):
        m2.add("quant_dot", i, j, si, sj)


def test_unpack():
    m, (a, b, c) = mod(("i8", [8, 2]), ("i8", [9, 8, 2], [16, 1, 8]), ("f32", [4]))
    assert m.get(m.add("unpack", a, axis=1, isUnsigned=False)).shape == Shape.of("i8", [8, 4])
    assert m.get(m.add("unpack", a, axis=0, isUnsigned=True)).shape == Shape.of("i8", [16, 2])
    assert m.get(m.add("unpack", b, axis=-1)).shape == Shape.of("i8", [9, 8, 4])
    with pytest.raises(IRError, match=r"unpack: axis 2 out of range for rank 2"):
        m.add("unpack", a, axis=2)
    with pytest.raises(IRError, match=r"unpack takes int8 input, got float_type"):
        m.add("unpack", c, axis=0)


def test_softmax():
    m, (a, b) = mod(("f32", [1, 64, 64], [4096, 1, 64]), ("i32", [2]))
    assert m.get(m.add("softmax", a, axis=2)).shape == Shape.of("f32", [1, 64, 64])
    with pytest.raises(IRError, match=r"softmax: axis 3 out of range"):
        m.add("softmax", a, axis=3)
    with pytest.raises(IRError, match=r"softmax takes float input"):
        m.add("softmax", b, axis=0)


def test_unknown_op_and_undefined_input():
    m, (a,) = mod(("f32", [2]))
    with pytest.raises(UnsupportedOp, match=r"@1 = backwards_data_convolution: op 'backwards_data_convolution' is "
                                            "not supported"):
        m.add("backwards_data_convolution", a, a)
    with pytest.raises(IRError, match=r"@1 = relu: input nope is not defined before it"):
        m.add("relu", "nope")
    with pytest.raises(IRError, match=r"a second instruction with this name"):
        m.add("relu", a, name=a)


def test_every_rule_is_tested_here():
    tested = set(UNARY_OPS + BINARY_OPS + COMPARE_OPS + REDUCE_OPS) | {
        "where", "convert", "multibroadcast", "broadcast", "transpose", "reshape", "contiguous", "slice",
        "squeeze", "unsqueeze", "dot", "quant_dot", "softmax", "reshape_lazy",
        "convolution", "quant_convolution",      # test_ir_conv.py
        "clip", "quantizelinear", "dequantizelinear",      # test_ir_quant_ops.py
        "unpack"}
    assert set(RULES) <= tested


def test_verify_catches_a_printed_shape_that_breaks_the_rule():
    m, (a,) = mod(("f32", [2, 3]))
    r = m.add("relu", a)
    m.add_return(r)
    m.verify()
    m.get(r).shape = Shape.of("f32", [3, 2])
    with pytest.raises(IRError, match=r"@1 = relu: printed shape .* does not match the op's rule"):
        m.verify()


def test_symbol_name_like_migraphx():
    m, (a, b) = mod(("f32", [2, 3]), ("f32", [3]))
    bb = m.add("broadcast", b, axis=1, out_lens=[2, 3])
    mb = m.add("multibroadcast", b, out_lens=[2, 3])
    c = m.add("contiguous", mb)
    m.add_return(m.add("add", m.add("add", a, bb), c))
    # generate_name_from_ops skips multibroadcast, contiguous and identity (broadcast stays)
    assert m.symbol_name() == "mlir_broadcast_add_add"
    assert Module().symbol_name() == "mlir_noop"
