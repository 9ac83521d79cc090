"""The main job on a standalone cluster (a master and two workers on loopback, 1 core each, started
from the installed pyspark like the tests' fixture) against local mode, on the same generated fleet:
the same totals, findings and per-(group, topic) table, and the wall time of each. Writes
``out/fleet_cluster/results.json``.

    python benches/fleet_cluster.py --size 1e7 [--out out/fleet_cluster]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from fleet_scale import make_fleet, run  # noqa: E402
from spark_cluster import driver_env, run_cli, start_cluster  # noqa: E402


def outputs(out: Path) -> dict[str, object]:
    """What must not depend on where the audit ran."""
    findings = json.loads((out / "findings.json").read_text(encoding="utf-8"))
    with (out / "group_topics.csv").open(encoding="utf-8") as f:
        table = sorted(tuple(row.items()) for row in csv.DictReader(f))
    return {
        "totals": findings["totals"],
        "findings": sorted(json.dumps(x, sort_keys=True) for x in findings["findings"]),
        "group_topics": table,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="1e7")
    parser.add_argument("--out", default="out/fleet_cluster")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fleet = Path(tmp) / "fleet"
        queues = make_fleet(int(float(args.size)), fleet)
        print(f"fleet: {queues:,} readable queues", flush=True)
        mq = [sys.executable, "-m", "mqbalance.cli", "audit", str(fleet), "--quiet", "--no-assignments"]
        local_s, local_mem, _, code = run([*mq, "--out", str(Path(tmp) / "local")])
        assert code == 0, "local audit failed"
        print(f"local mode: {local_s:.1f} s, peak {local_mem / 2**30:.2f} GiB", flush=True)
        cluster = start_cluster(workers=2)
        try:
            env = driver_env(python=sys.executable)
            start = time.perf_counter()
            done = run_cli(
                [*mq[3:], "--master", cluster.master_url, "--out", str(Path(tmp) / "cluster")], env, timeout=3600
            )
            cluster_s = time.perf_counter() - start
            executors = len(cluster.executor_dirs())
        finally:
            cluster.stop()
        assert done.returncode == 0, done.stderr[-3000:]
        print(f"cluster (2 workers, {executors} executors): {cluster_s:.1f} s", flush=True)
        same = outputs(Path(tmp) / "local") == outputs(Path(tmp) / "cluster")
        totals = outputs(Path(tmp) / "local")["totals"]
    row = {
        "queues": queues,
        "local_s": round(local_s, 1),
        "local_peak_gib": round(local_mem / 2**30, 2),
        "cluster_s": round(cluster_s, 1),
        "cluster_executors": executors,
        "same_findings": same,
        "totals": totals,
    }
    print(json.dumps(row), flush=True)
    (out / "results.json").write_text(json.dumps(row, indent=1) + "\n")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
