"""docs/ARCHITECTURE.md describes the code as it is: every module in its map (and no module that is gone),
its layer table in the order the import-linter contract enforces."""
from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")


def _section(name: str) -> str:
    m = re.search(rf"<!-- {name}[^>]*-->(.*?)<!-- /{name} -->", DOC, re.S)
    assert m, f"docs/ARCHITECTURE.md has no <!-- {name} --> section"
    return m.group(1)


def test_the_module_map_lists_every_module_and_only_those():
    listed = set(re.findall(r"^- `(pytest_mlirtrace/[\w/]+\.py)`", _section("modules"), re.M))
    present = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pytest_mlirtrace").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert present - listed == set(), "modules missing from docs/ARCHITECTURE.md's module map"
    assert listed - present == set(), "docs/ARCHITECTURE.md lists modules that are gone"


def test_the_layer_table_is_the_contracts_order():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg", encoding="utf-8")
    lines = [x.strip() for x in cfg["importlinter:contract:layers"]["layers"].splitlines() if x.strip()]
    contract = [{name.strip().rsplit(".", 1)[-1] for name in line.split("|")} for line in reversed(lines)]
    rows = [r for r in _section("layers").splitlines() if r.startswith("| `")]
    table = [set(re.findall(r"`([\w.]+)`", r.split("|")[1])) for r in rows]
    assert table == contract
