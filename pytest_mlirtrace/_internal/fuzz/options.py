"""What a fuzz run is asked to do (``mlirtrace fuzz`` options as one value)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..codegen import FAST_BUILD_OPTIONS
from ..strategies import SUPPORTED_KINDS

DEFAULT_DATABASE = ".mlirtrace/fuzz-db"
#: ``--build``: the OpenCL build options of the fuzz's kernels (None: the code generator's own)
BUILDS = {"full": None, "fast": FAST_BUILD_OPTIONS}


@dataclass
class FuzzOptions:
    budget_s: float = 60.0
    seed: int | None = None
    device: str | None = None
    repro_dir: str = "reproducers"
    kinds: tuple = SUPPORTED_KINDS
    dtypes: tuple = ("f32", "f16", "bf16")
    max_dim: int = 16
    max_rank: int = 4
    max_elements: int = 4096
    max_epilogue: int = 3
    values: str = "wide"             # value profile (strategies.VALUES): unit ([-1, 1] inputs, guarded), wide
                                     # (scaled by literals up to 1000, guards loosened), extreme (dtype limits too)
    odd_solutions: bool = True       # half the cases add a perf config beyond the space, in any printed
                                     # form: refused with a reason (counted) or run and checked
    round_trip: bool = True          # every case: module -> MIGraphX text / MLIR (both syntaxes) -> parse -> compare
    long_reductions: bool = True     # gemm K / reduce and softmax axes up to the element cap, other dims small
    database: str | None = DEFAULT_DATABASE
    store: object | None = None      # a store.StoreSpec; redis: examples, reproducers shared with a fleet
    machine: str | None = None       # this runner's name in a fleet's records (Settings.machine); None: the host name
    jobs: int = 0                    # lanes; 0: min(2, cpu count)
    campaigns: int = 0               # Hypothesis campaigns at once, a thread each with jobs // campaigns lanes
                                     # (while one shrinks, the others wait and it has every lane); 0: one per
                                     # lane with build "fast", 1 with "full"
    max_solutions: int = 0           # solutions per example (--solutions); 0: 2 * jobs. Each lane builds its
                                     # share as one program; more per example ran more cases a second but
                                     # found the planted faults later (BENCHMARKS.md)
    timeout_s: float = 10.0          # per build / run (a hang costs this much; PoCL's first launch of a
                                     # big work-group kernel can take seconds on a loaded 2-core machine)
    compile_timeout_s: float = 60.0  # per build and per first-launch compile (timed apart from the run)
    build: str = "full"              # BUILDS: full (the code generator's build options), fast (optimisations
                                     # off: the same kernels, ~2x the cases a second on PoCL)
    seeds_per_case: int = 2          # inputs each built kernel is checked on (cases = solutions x seeds)
    shrink_budget_s: float | None = None   # per campaign's shrink; None: max(15, 35% of the budget)
    inject: str | None = None        # planted faults; None: the environment's now (config.inject_now)
    max_findings: int | None = None  # stop once this many reproducers are written (None: run the budget)
    verify: bool = True              # run each reproducer once in a fresh process before writing it
    verify_tries: int = 4            # failing cases tried, smallest first, until one reproduces alone
    write_grace_s: float = 30.0      # after the budget: time left to run reproducers alone before writing them
                                     # (then written unchecked, with a note); a case in flight is not cut short
    kind_weights: dict = field(default_factory=lambda: {"pointwise": 1, "reduce": 1, "softmax": 1, "gemm": 3,
                                                       "conv": 2})

    @property
    def shrink_s(self) -> float:
        return self.shrink_budget_s if self.shrink_budget_s is not None else max(15.0, 0.35 * self.budget_s)
