"""``mqbalance.spark`` on a real standalone cluster (one master, two workers on loopback, see
``spark_cluster.py``): a driver process of its own runs every comparison of
``spark_functions_cases.run_all`` with its tasks on both workers."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from spark_cluster import driver_env

pytestmark = pytest.mark.spark

CASES = Path(__file__).parent / "support" / "spark_functions_cases.py"


def run_cases(args: list[str], env: dict[str, str], *, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """``python tests/support/spark_functions_cases.py ARGS`` in its own process group, killed whole after it."""
    process = subprocess.Popen(
        [sys.executable, str(CASES), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        if process.poll() is None:
            process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_dataframe_functions_on_a_standalone_cluster_equal_the_in_process_path(spark_cluster):
    import mqbalance

    checkout = str(Path(mqbalance.__file__).resolve().parent.parent)
    env = driver_env(
        python=sys.executable,
        extra={"PYSPARK_SUBMIT_ARGS": f"--conf spark.executorEnv.PYTHONPATH={checkout} pyspark-shell"},
    )
    env["PYTHONPATH"] = f"{checkout}:{CASES.parent}"
    before = set(spark_cluster.executor_dirs())
    run = run_cases(["--master", spark_cluster.master_url], env)
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr[-4000:]}\n{spark_cluster.logs()}"
    assert run.stdout.split()[-2] == "ok" and int(run.stdout.split()[-1]) > 400
    assert len(set(spark_cluster.executor_dirs()) - before) >= 2  # tasks ran on both workers
