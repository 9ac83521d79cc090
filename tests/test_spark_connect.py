"""Over Spark Connect (a local server started by the ``spark_connect`` fixture, see
``spark_cluster.py``): the DataFrame functions of ``mqbalance.spark`` give what the in-process
path gives, and ``mqbalance audit --remote sc://…`` gives what local mode gives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from spark_cluster import driver_env, run_cli
from test_spark_cluster import audit_outputs, local_mode  # noqa: F401  (the local-mode audit to compare with)
from test_spark_functions_cluster import CASES, run_cases

pytestmark = pytest.mark.spark


def connect_env() -> dict[str, str]:
    import mqbalance

    env = driver_env(python=sys.executable)
    env["PYTHONPATH"] = f"{Path(mqbalance.__file__).resolve().parent.parent}:{CASES.parent}"
    return env


def test_dataframe_functions_over_spark_connect_equal_the_in_process_path(spark_connect):
    run = run_cases(["--remote", spark_connect.url], connect_env())
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr[-4000:]}\n{spark_connect.daemon.text()[-3000:]}"
    assert run.stdout.split()[-2] == "ok" and int(run.stdout.split()[-1]) > 400


def test_audit_over_spark_connect_equals_local_mode(spark_connect, local_mode, tmp_path):  # noqa: F811
    run = run_cli(["audit", "--remote", spark_connect.url, "--out", str(tmp_path / "audit")], connect_env())
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr[-4000:]}\n{spark_connect.daemon.text()[-3000:]}"
    assert f"starting Spark ({spark_connect.url})" in run.stdout
    assert audit_outputs(tmp_path / "audit") == local_mode


def test_remote_and_master_together_are_refused(capsys):
    from mqbalance.cli import main

    assert main(["audit", "--remote", "sc://127.0.0.1:1", "--master", "local[1]"]) == 2
    assert "--remote and --master: give one" in capsys.readouterr().err
