"""Under CI the real corpus must be there: the corpus tests skip where it is missing, and a CI run
that skipped them would pass without having read one real program."""
import os

import pytest

from tests.corpus import MISSING, ROCMLIR, TRACES


@pytest.mark.skipif(os.environ.get("CI", "").lower() not in ("1", "true", "yes"), reason="only CI insists")
def test_the_shared_corpus_is_here_under_ci():
    assert ROCMLIR.is_dir() and any(ROCMLIR.glob("*.mlir")), MISSING
    assert TRACES.is_dir() and any(TRACES.glob("*.txt")), MISSING
