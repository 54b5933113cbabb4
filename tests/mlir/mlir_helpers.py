"""Shared checks for the mlir tests."""
import numpy as np

from pytest_mlirtrace.ir import evaluate, random_inputs


def inputs_for(parsed, original, inputs):
    """The original's inputs renamed to the parsed module's params (same position in params())."""
    return {q.param: inputs[p.param] for p, q in zip(original.params(), parsed.params())}


def assert_same_outputs(original, parsed, seed=0):
    """Both modules give bit-identical outputs with the oracle on the same random inputs."""
    ins = random_inputs(original, seed=seed)
    a = evaluate(original, ins)
    b = evaluate(parsed, inputs_for(parsed, original, ins))
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape
        if x.dtype == np.bool_ or y.dtype == np.bool_:
            x, y = x.astype(np.int8), y.astype(np.int8)
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


def macs(module) -> int:
    """Rough cost of evaluating ``module`` (multiply-adds of its dots, elements of the rest)."""
    total = 0
    for ins in module.instructions:
        if ins.op in ("dot", "quant_dot"):
            k = module.get(ins.inputs[0]).shape.lens[-1]
            total += int(np.prod(ins.shape.lens)) * k
        elif ins.shape is not None:
            total += int(np.prod(ins.shape.lens))
    return total
