"""``reduce``: a written reproducer's module made small while it keeps failing the same way.

Delta debugging over three kinds of step, in a fixed order, each tried once per pass until a pass changes
nothing or the budget is spent (deterministic: no randomness, the same steps in the same order every time):

1. *drop an op*: a pointwise op (or view) whose first input has its shape and type is taken out, its uses
   reading that input instead (what is left unused goes too);
   *bypass a view*: a view (transpose, reshape, broadcast, ...) of a parameter goes, the parameter taking
   the view's shape;
2. *shrink a size*: every occurrence of one dimension value (in the parameters' lens and in the ops'
   ``out_lens`` / ``dims``) becomes a smaller one -- 1, 2, 3, half, a value keeping a tail past 16, one less;
   *narrow a type*: every f64 parameter f16 (else f32), every f32 one f16;
3. *move the solution toward the default*: the default solution, else one field at a time to its value.

A step holds when the changed case, run isolated (the engine's workers, the recorded seed, the recorded
faults and hang limit), fails in the same *failure class* as the original: its kind and its first error line
with numbers, paths, the solution and the kernel's name scrubbed (the ticket signature also hashes the MLIR,
which every step changes). Each step says which reduction it made and whether it held.
"""
from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import codegen, engine
from ..ir import Module
from ..vocab import ExitCode, Status, format_perf_config, parse_perf_config
from .record import FailureRecord
from .signature import first_line, normalise_error
from .writer import ReproWriter, read_payload

__all__ = ["Step", "Reduction", "Reducer", "ReduceOutcome", "reduce_reproducer", "failure_class", "without",
           "size_of", "REDUCIBLE_KINDS"]

#: failure kinds a run can show again (a test's assertion, a slow run and an import have no run to compare)
REDUCIBLE_KINDS = (Status.WRONG, Status.CRASH, Status.HANG, Status.BUILD_ERROR, Status.LAUNCH_ERROR,
                   Status.LOWERING_ERROR)
_VIEW_OPS = ("transpose", "reshape", "reshape_lazy", "broadcast", "multibroadcast", "squeeze", "unsqueeze",
             "contiguous")
_NAMES = re.compile(r"@[\w.$-]+|'[\w.$-]*mlir_[\w.$-]*'|\bmlir_\w+")


def failure_class(kind: str, error: str, solution: str = "") -> str:
    """What a reduced case must still show: the kind and the first error line, normalised (numbers, paths,
    addresses, the solution) and with the func / kernel names scrubbed (the ops in them change as ops go)."""
    return f"{kind}: {_NAMES.sub('F', normalise_error(first_line(error or ''), solution))}"


@dataclass
class Step:
    what: str           # "dropped relu (@3)", "size 23 -> 2", "solution -> 8,8,8,4,8,8,0,4"
    held: bool
    detail: str = ""    # what the candidate showed when it did not hold


@dataclass
class Reduction:
    module: object              # ir.Module
    solution: str
    result: object | None       # the engine RunResult of the reduced case (None: nothing held)
    steps: list = field(default_factory=list)
    runs: int = 0
    elapsed_s: float = 0.0
    out_of_budget: bool = False

    @property
    def held(self) -> list:
        return [s for s in self.steps if s.held]


def _ops(m) -> list:
    return [i.op for i in m.instructions if not i.op.startswith("@")]


def size_of(m) -> tuple[int, int]:
    """(ops, parameter elements) of module ``m``."""
    return len(_ops(m)), sum(int(p.shape.elements) for p in m.params())


def without(m, name: str):
    """``m`` with instruction ``name`` taken out (its uses read its first input); None when that does not verify."""
    out = copy.deepcopy(m)
    src = out.get(name).inputs[0]
    out.instructions = [i for i in out.instructions if i.name != name]
    for i in out.instructions:
        i.inputs = [src if x == name else x for x in i.inputs]
    used = set()
    for i in reversed(out.instructions):
        if i.op == "@return" or i.name in used:
            used.update(i.inputs)
    out.instructions = [i for i in out.instructions if i.op == "@return" or i.name in used]
    try:
        out.verify()
    except Exception:   # noqa: BLE001 - a candidate that is no module
        return None
    return out


_SIZE_ATTRS = ("out_lens", "dims")


def _resized(m, old: int, new: int):
    """``m`` with every dimension ``old`` (parameter lens, ``out_lens`` / ``dims`` attributes) made ``new``;
    None when that gives no valid module (a literal or a non-standard parameter of that size, a rule broken)."""
    def lens(ls):
        return [new if d == old else d for d in ls]

    out = Module(name=m.name)
    try:
        for ins in m.instructions:
            if ins.op == "@param":
                sh = ins.shape
                if old in sh.lens and not sh.standard:
                    return None
                out.add_param(ins.param, sh.dtype, lens(sh.lens), None if old in sh.lens else sh.strides,
                              name=ins.name)
            elif ins.op == "@literal":
                if old in ins.shape.lens:
                    return None
                out.add_literal(ins.literal, ins.shape.dtype, ins.shape.lens, ins.shape.strides, name=ins.name)
            elif ins.op == "@return":
                out.add_return(*ins.inputs)
            else:
                attrs = {k: (lens(v) if k in _SIZE_ATTRS and isinstance(v, list) else v) for k, v in ins.attrs.items()}
                out.add(ins.op, *ins.inputs, name=ins.name, **attrs)
        out.verify()
    except Exception:   # noqa: BLE001 - a candidate that is no module
        return None
    return out


def _rebuilt(m, param=None, skip: str = ""):
    """``m`` instruction by instruction, each parameter through ``param(ins) -> (dtype, lens, strides, name)``
    (None: as it is), the instruction ``skip`` left out; None when that gives no valid module."""
    out = Module(name=m.name)
    try:
        for ins in m.instructions:
            if ins.name == skip:
                continue
            if ins.op == "@param":
                sh = ins.shape
                dt, lens, strides, name = (param(ins) if param else None) or (sh.dtype, sh.lens, sh.strides, ins.name)
                out.add_param(ins.param, dt, lens, strides, name=name)
            elif ins.op == "@literal":
                out.add_literal(ins.literal, ins.shape.dtype, ins.shape.lens, ins.shape.strides, name=ins.name)
            elif ins.op == "@return":
                out.add_return(*ins.inputs)
            else:
                out.add(ins.op, *ins.inputs, name=ins.name, **ins.attrs)
        out.verify()
    except Exception:   # noqa: BLE001 - a candidate that is no module
        return None
    return out


def _bypassed(m, view: str):
    """``m`` with the view ``view`` of a parameter (its only use) taken out: the parameter takes the view's
    shape (standard layout) and name; None when the view reads no parameter or that does not verify."""
    v = m.get(view)
    src = m.get(v.inputs[0]) if v.inputs else None
    if src is None or src.op != "@param" or sum(src.name in i.inputs for i in m.instructions) != 1:
        return None
    return _rebuilt(m, lambda ins: (v.shape.dtype, v.shape.lens, None, view) if ins.name == src.name else None,
                    skip=view) if v.shape is not None else None


#: float types tried in place of a wider one, narrowest first
_NARROWER = {"f64": ("f16", "f32"), "f32": ("f16",)}


def _retyped(m, old: str, new: str):
    """``m`` with every parameter of type ``old`` of type ``new`` (the ops' types follow their inputs)."""
    return _rebuilt(m, lambda ins: (new, ins.shape.lens, ins.shape.strides, ins.name)
                    if ins.shape.dtype.name == old else None)


def _fields(solution: str) -> list[str]:
    """The fields of the perf config ``solution`` (its version prefix left out)."""
    return list(parse_perf_config(solution).fields)


def _smaller(d: int) -> list[int]:
    cands = [1, 2, 3, d // 2, d % 16 + 16, d - 1]
    return sorted({c for c in cands if 1 <= c < d})


class Reducer:
    """Reduce the case of a reproducer's payload ``data``. ``run(module, solution) -> RunResult`` runs one
    candidate isolated (raising for a module or solution the code generator refuses); ``default(module)``
    gives the default solution of a module's problem; ``progress(step, reduction)`` is told every step."""

    def __init__(self, data: dict, run, default, budget_s: float = 300.0, progress=None):
        if data.get("kind") not in REDUCIBLE_KINDS:
            raise ValueError(f"a failure of kind {data.get('kind')!r} cannot be reduced (only "
                             f"{', '.join(REDUCIBLE_KINDS)}: a failure a run shows)")
        self.data = data
        self.want = failure_class(data["kind"], data.get("error", ""), data.get("solution", ""))
        self._run, self._default = run, default
        self.budget_s = budget_s
        self.progress = progress

    def _class_of(self, module, solution: str):
        try:
            res = self._run(module, solution)
        except Exception as e:   # noqa: BLE001 - refused: a lowering error of its own
            return f"refused: {type(e).__name__}: {first_line(str(e))}", None
        if res.ok:
            return "passes", res
        return failure_class(res.status, res.detail or res.compiled.error or "", solution), res

    def reduce(self, module, solution: str) -> Reduction:
        """Reduce ``module`` with ``solution`` in passes of every kind of step until a pass changes nothing or
        the budget is spent; when the original case does not fail the recorded way, no step is tried."""
        t0 = time.monotonic()
        red = Reduction(module, solution, None)
        got, res = self._class_of(module, solution)
        red.runs = 1
        if got != self.want:
            red.steps.append(Step("the original case", False, got))
            red.elapsed_s = time.monotonic() - t0
            return red
        red.result = res
        steps = _Steps(self, red, t0)
        changed = True
        while changed and not red.out_of_budget:
            changed = steps.one_pass()
        red.elapsed_s = time.monotonic() - t0
        return red


class _Steps:
    """The steps of one :meth:`Reducer.reduce`: each tried on ``red`` (the reduction so far, started at
    ``t0``), kept when it held."""

    def __init__(self, reducer: Reducer, red: Reduction, t0: float):
        self.reducer = reducer
        self.red = red
        self.t0 = t0

    def one_pass(self) -> bool:
        """Every kind of step once, in order; whether one held."""
        changed = self.drop_ops()
        changed |= self.bypass_views()
        changed |= self.shrink_sizes()
        changed |= self.narrow_types()
        if self.red.out_of_budget:
            return changed
        changed |= self.toward_default()
        return changed

    def attempt(self, what: str, m, sol: str, refit: bool = False) -> bool:
        """Run the candidate ``m`` with ``sol``; whether it failed in the wanted class (then it is the
        reduction so far). ``refit``: when the solution no longer fits the changed module, try its default
        solution too."""
        red, want = self.red, self.reducer.want
        if time.monotonic() - self.t0 > self.reducer.budget_s:
            red.out_of_budget = True
            return False
        c, r = self.reducer._class_of(m, sol)
        red.runs += 1
        red.elapsed_s = time.monotonic() - self.t0
        if refit and c != want and c.startswith(("refused: ", "lowering_error: ")):
            try:
                d = str(self.reducer._default(m))
            except Exception:   # noqa: BLE001
                d = sol
            if d != sol:
                what, sol = f"{what}, solution -> {d} (the default: the old one does not fit)", d
                c, r = self.reducer._class_of(m, sol)
                red.runs += 1
        step = Step(what, c == want, "" if c == want else c)
        red.steps.append(step)
        if self.reducer.progress is not None:
            self.reducer.progress(step, red)
        if step.held:
            red.module, red.solution, red.result = m, sol, r
        return step.held

    def first_held(self, cands) -> bool:
        """Try ``(what, make_module)`` candidates in order (the solution refitted where needed) until one
        holds; whether one did."""
        for what, make in cands:
            if self.red.out_of_budget:
                return False
            m = make()
            if m is not None and self.attempt(what, m, self.red.solution, refit=True):
                return True
        return False

    def drop_ops(self) -> bool:
        """1. drop ops, last first (an epilogue before what feeds it)."""
        red, changed = self.red, False
        for ins in reversed([i for i in red.module.instructions if not i.op.startswith("@") and i.inputs]):
            if red.out_of_budget:
                break
            if ins.name not in red.module:
                continue
            src = red.module.get(ins.inputs[0]).shape
            if src is None or src.lens != ins.shape.lens or src.dtype != ins.shape.dtype:
                continue
            m = without(red.module, ins.name)
            if m is not None and self.attempt(f"dropped {ins.op} ({ins.name})", m, red.solution):
                changed = True
        return changed

    def bypass_views(self) -> bool:
        """1b. bypass a view of a parameter: the parameter takes the view's shape."""
        red, changed = self.red, False
        for ins in [i for i in red.module.instructions if i.op in _VIEW_OPS]:
            if red.out_of_budget:
                break
            if ins.name not in red.module:
                continue
            m = _bypassed(red.module, ins.name)
            if m is not None and self.attempt(f"bypassed {ins.op} ({ins.name}): the parameter takes its shape",
                                              m, red.solution, refit=True):
                changed = True
        return changed

    def shrink_sizes(self) -> bool:
        """2. shrink each size, largest first."""
        red, changed = self.red, False
        dims = sorted({d for p in red.module.params() for d in p.shape.lens if d > 1}, reverse=True)
        for d in dims:
            changed |= self.first_held((f"size {d} -> {new}", lambda new=new, d=d: _resized(red.module, d, new))
                                       for new in _smaller(d))
        return changed

    def narrow_types(self) -> bool:
        """2b. narrow the parameters' float types (f64 -> f16 / f32, f32 -> f16)."""
        red, changed = self.red, False
        for old_t in sorted({p.shape.dtype.name for p in red.module.params()} & set(_NARROWER)):
            changed |= self.first_held((f"type {old_t} -> {new_t}",
                                        lambda new_t=new_t, old_t=old_t: _retyped(red.module, old_t, new_t))
                                       for new_t in _NARROWER[old_t])
        return changed

    def toward_default(self) -> bool:
        """3. the solution toward the default: the default itself, else one field at a time."""
        red = self.red
        try:
            default = str(self.reducer._default(red.module))
        except Exception:   # noqa: BLE001 - no default for this module: keep the solution
            default = red.solution
        vals, dv = _fields(red.solution), _fields(default)
        if dv == vals:
            return False
        if self.attempt(f"solution -> {default} (the default)", red.module, default):
            return True
        changed = False
        for i, (a, b) in enumerate(zip(vals, dv, strict=False)):
            if a == b or red.out_of_budget:
                continue
            trial = vals[:i] + [b] + vals[i + 1:]
            if self.attempt(f"solution field {i + 1}: {a} -> {b}", red.module, format_perf_config(trial)):
                vals = trial
                changed = True
        return changed


@dataclass
class ReduceOutcome:
    """What :func:`reduce_reproducer` did: ``code`` (``ExitCode``: OK reduced or nothing to reduce, DIFFERENT
    the original no longer fails the recorded way), ``message`` (one line), the reduced reproducer's paths."""
    code: int
    message: str
    script_path: object | None = None      # Path of the reduced reproducer (None: none written)
    ticket_path: object | None = None
    reduction: Reduction | None = None


def reduce_reproducer(script, device=None, timeout_s: float | None = None, budget_s: float = 300.0,
                      progress=None) -> ReduceOutcome:
    """Reduce the reproducer ``script`` (a path) on ``device`` (a spec or None: the default): each step run
    isolated in the engine's workers with the recorded seed and faults; the reduced reproducer and its ticket
    (with a "Reduced" section: sizes before and after, the reductions that held) written beside it.
    ``progress(step, reduction)`` is told every step. Raises ValueError for a file that is no reproducer
    or a failure kind no run shows (message with the path)."""
    script = Path(script)
    try:
        data = read_payload(script)
    except FileNotFoundError:
        raise ValueError(f"{script}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{script}: a directory, expected a reproducer (REPRO.py)") from None
    except (ValueError, KeyError, SyntaxError, UnicodeDecodeError):
        raise ValueError(f"{script}: not a reproducer mlirtrace wrote (no PAYLOAD in it)") from None
    module, _ = engine.load_module(data.get("module_text") or data["mlir_text"])
    inject = data.get("inject") or ""       # the recorded faults, none when none were recorded
    timeout = float(data.get("timeout_s") or timeout_s or 30.0)
    pipe = engine.Pipeline(device, inject=inject, timeout_s=timeout, database=engine.MemoryDatabase())
    seed = int(data.get("seed") or 0)
    try:
        r = Reducer(data, lambda m, sol: pipe.run(m, solution=sol, seed=seed),
                    lambda m: codegen.default_solution(codegen.problem_of(m), pipe.device),
                    budget_s=budget_s, progress=progress)
    except ValueError as e:
        raise ValueError(f"{script}: {e}") from None
    red = r.reduce(module, data["solution"])
    if red.result is None:
        return ReduceOutcome(ExitCode.DIFFERENT, f"{script}: the original case does not fail the recorded way "
                                                 f"here ({red.steps[0].detail}); recorded: {r.want}", reduction=red)
    (o_ops, o_el), (n_ops, n_el) = size_of(module), size_of(red.module)
    if not red.held:
        return ReduceOutcome(ExitCode.OK, f"{script}: nothing could be reduced ({red.runs} runs): every step "
                                          "changed the failure or passed", reduction=red)
    rec = FailureRecord.from_run(red.result, origin=f"reduce {script.name}", timeout_s=timeout,
                                 inject=inject, device_info=pipe.device)
    w = ReproWriter(script.parent).write(rec)
    lines = ["", "## Reduced", "", f"From `{script.name}` ({data['signature']}) by `mlirtrace reduce`, in "
             f"{red.runs} isolated runs ({red.elapsed_s:.0f} s{', budget spent' if red.out_of_budget else ''}): "
             f"{o_ops} ops and {o_el} parameter elements before, {n_ops} and {n_el} after; solution "
             f"`{data['solution']}` -> `{red.solution}`. Failure class kept: `{r.want}`.", "",
             "Reductions that held, in order:", ""] + [f"1. {s.what}" for s in red.held] + [""]
    w.ticket_path.write_text(w.ticket_path.read_text(encoding="utf-8").rstrip() + "\n" + "\n".join(lines),
                             encoding="utf-8")
    return ReduceOutcome(ExitCode.OK, f"reduced: {o_ops} ops / {o_el} elements -> {n_ops} ops / {n_el} elements, "
                                      f"solution {red.solution}, {len(red.held)} of {len(red.steps)} steps held, "
                                      f"{red.runs} runs in {red.elapsed_s:.1f}s",
                         w.script_path, w.ticket_path, red)
