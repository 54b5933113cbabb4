"""Where the real corpus is: ``$MLIRTRACE_SHARED``, else ``shared/`` beside the checkout (as CI lays it
out), else ``/work/shared``. A test that needs it skips with the reason when it is missing;
``tests/test_corpus_present.py`` fails instead under CI, so a CI run never skips the real data quietly."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _shared() -> Path | None:
    for c in (os.environ.get("MLIRTRACE_SHARED"), REPO.parent / "shared", "/work/shared"):
        if c and (Path(c) / "corpus").is_dir():
            return Path(c)
    return None


SHARED = _shared()
CORPUS = SHARED / "corpus" if SHARED else REPO / "shared-corpus-not-found"   # a path that does not exist
ROCMLIR = CORPUS / "rocmlir"
TRACES = CORPUS / "traces"
MISSING = ("the shared corpus was not found (looked at $MLIRTRACE_SHARED, ../shared beside the checkout, "
           "/work/shared); set MLIRTRACE_SHARED to the folder that holds corpus/")
