"""Status words: defined and documented once; the layers' groups are drawn from them."""
from __future__ import annotations

import json

import pytest

from pytest_mlirtrace._internal.vocab import FAILURES, FINDING_KINDS, JOB_STATUSES, Status


def test_each_status_is_one_documented_word():
    assert [s.value for s in Status] == ["ok", "build_error", "crash", "hang", "launch_error", "wrong",
                                         "lowering_error", "slow", "assertion", "imported"]
    for s in Status:
        assert s.doc and s.doc == s.__doc__ and len(s.doc) > 20
        assert Status(s.value) is s and s == s.value
        assert str(s) == s.value and f"{s}" == s.value and f"{s:>15}" == f"{s.value:>15}"
        assert json.dumps(s) == json.dumps(s.value)
    assert len({s.doc for s in Status}) == len(Status)


def test_groups():
    assert set(FAILURES) <= set(FINDING_KINDS) and Status.OK not in FAILURES + FINDING_KINDS
    assert set(JOB_STATUSES) - {Status.OK} <= set(FAILURES)
    assert set(FINDING_KINDS) == set(Status) - {Status.OK}


def test_every_layer_draws_its_words_from_vocab():
    from pytest_mlirtrace._internal.repro.record import KINDS
    from pytest_mlirtrace._internal.runtime.job import STATUSES

    assert STATUSES == tuple(s.value for s in JOB_STATUSES)
    assert set(STATUSES) == {"ok", "build_error", "crash", "hang", "launch_error"}
    assert set(s.value for s in FAILURES) == {"build_error", "crash", "hang", "launch_error", "wrong",
                                              "lowering_error"}
    assert KINDS == tuple(s.value for s in FINDING_KINDS)
    assert set(KINDS) == {"build_error", "crash", "hang", "wrong", "slow", "assertion", "launch_error",
                          "lowering_error", "imported"}
    assert all(type(w) is str for w in STATUSES + KINDS)


def test_a_failure_record_refuses_a_word_that_is_not_a_finding_kind():
    from pytest_mlirtrace._internal.engine import Span
    from pytest_mlirtrace._internal.repro import FailureRecord

    span = Span("x = @param:x -> float_type, {2}, {1}", "", "pocl-cpu\t2\t-op pointwise", "1", "", "0:0")
    with pytest.raises(ValueError, match=r"unknown failure kind 'ok'; known: build_error, crash"):
        FailureRecord("ok", span, "run", "boom")
    assert FailureRecord(Status.CRASH, span, "run", "boom").kind == "crash"
