"""What the "newest allowed" stage of .ci/run reports: the installed packages that differ from the lock
(requirements/ci.txt), and with ``--junit FILE`` the tests that broke on them.

    python .ci/compare_lock.py requirements/ci.txt [--junit FILE]

Standard library only: it runs in a fresh environment before anything else is known to work there.
"""
from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from importlib import metadata


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(path: str) -> dict[str, str]:
    pins = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)", line)
            if m:
                pins[_norm(m.group(1))] = m.group(2)
    return pins


def installed() -> dict[str, str]:
    return {_norm(d.metadata["Name"]): d.version for d in metadata.distributions() if d.metadata["Name"]}


def broken(junit: str) -> list[str]:
    out = []
    for case in ET.parse(junit).iter("testcase"):
        for child in case:
            if child.tag in ("failure", "error"):
                first = (child.get("message") or "").splitlines()[:1]
                out.append(f"{case.get('classname')}::{case.get('name')}" + (f": {first[0][:160]}" if first else ""))
                break
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lock")
    ap.add_argument("--junit")
    args = ap.parse_args(argv)
    pins, have = locked(args.lock), installed()
    if args.junit is None:
        diff = [(n, pins[n], have[n]) for n in sorted(pins) if n in have and have[n] != pins[n]]
        extra = sorted(n for n in have if n not in pins and n not in ("pip", "setuptools", "wheel", "pytest-mlirtrace"))
        print(f"newest allowed: {len(diff)} package(s) differ from {args.lock}")
        for n, old, new in diff:
            print(f"   {n}: {old} (locked) -> {new}")
        for n in extra:
            print(f"   {n}: {have[n]} (not in the lock)")
        return 0
    failed = broken(args.junit)
    if failed:
        print(f"newest allowed: {len(failed)} test(s) broke on these versions:")
        for t in failed:
            print("   " + t)
    else:
        print("newest allowed: nothing broke")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
