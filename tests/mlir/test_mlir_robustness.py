"""Damaged MLIR never crashes or hangs the parser: it parses, or it is an MLIRParseError with a place."""
import random
import time
from pathlib import Path

from pytest_mlirtrace._internal.mlir import MLIRParseError, parse_mlir

SEED = (Path(__file__).resolve().parents[1] / "data" / "seed_module.mlir").read_text()
PIECES = ["(", ")", "{", "}", "<", ">", ",", "%", '"', "x", "0x", ":", "->", " ", "\n", "@", "#", "!", "1", "[", "]"]


def mutations(n, seed=0):
    rnd = random.Random(seed)
    for _ in range(n):
        i = rnd.randrange(len(SEED))
        j = min(len(SEED), i + rnd.randint(1, 6))
        k = rnd.random()
        if k < 0.4:
            yield SEED[:i] + SEED[j:]
        elif k < 0.8:
            yield SEED[:i] + rnd.choice(PIECES) + SEED[i:]
        else:
            yield SEED[:i] + SEED[i:j] + SEED[i:]


def test_damaged_seed_mlir():
    start = time.monotonic()
    outcomes = {"parsed": 0, "error": 0}
    for text in mutations(120):
        t0 = time.monotonic()
        try:
            parse_mlir(text, "m.mlir")
            outcomes["parsed"] += 1
        except MLIRParseError as e:
            assert e.line >= 1 and e.column >= 1
            assert str(e).startswith(f"m.mlir:{e.line}:{e.column}: ")
            outcomes["error"] += 1
        assert time.monotonic() - t0 < 2.0, "parse took too long (a regex backtracking on a bad string?)"
    assert outcomes["error"] > 30
    assert time.monotonic() - start < 30


def test_unterminated_string_in_a_long_line_fails_fast():
    text = SEED.replace('kernel = "mixr"', 'kernel = "mixr' + "x" * 2000)
    t0 = time.monotonic()
    try:
        parse_mlir(text)
        raise AssertionError("expected an error")
    except MLIRParseError as e:
        assert "unterminated string literal" in e.msg and e.line == 2
    assert time.monotonic() - t0 < 1.0
