"""The fuzz engine behind ``mlirtrace fuzz``: Hypothesis campaigns of fused cases through the pipeline,
one reproducer per new way of failing (see :mod:`.engine`). By job: :mod:`.engine` (the Fuzzer),
:mod:`.campaign` (the campaign loop), :mod:`.cases` (one case checked), :mod:`.lanes` (the pipelines cases
run on), :mod:`.filing` (what a campaign found, through ``repro.Findings``), :mod:`.state` (what they share),
:mod:`.results`, :mod:`.report`, :mod:`.coverage`. The strategies it draws from live in
:mod:`pytest_mlirtrace._internal.strategies`."""
from .engine import Fuzzer, fuzz
from .options import DEFAULT_DATABASE, FuzzOptions
from .report import Progress, report_dict, run_and_report, summary
from .results import (
                      BudgetExhausted,
                      CaseFailed,
                      EnvironmentStop,
                      FailingCase,
                      FuzzReport,
                      FuzzStats,
                      ShrinkBudgetExhausted,
)

__all__ = ["FuzzOptions", "FuzzReport", "FuzzStats", "FailingCase", "Fuzzer", "fuzz", "CaseFailed", "BudgetExhausted",
           "ShrinkBudgetExhausted", "EnvironmentStop", "DEFAULT_DATABASE", "Progress", "summary", "report_dict",
           "run_and_report"]
