"""``mqbalance audit --master spark://…`` end to end on a real standalone cluster (one master, two
workers, on loopback; see ``spark_cluster.py``), each run in its own driver process, compared
with local mode: the same assignment rows, findings, totals and per-(group, topic) table.

Two kinds of workers: one whose Python has mqbalance (this venv's interpreter, with this checkout
on the executors' ``PYTHONPATH`` so they run the code under test and not wherever the editable
install points), and one whose Python is a bare venv (no mqbalance, numpy or pyarrow): there the
audit fails with a short, clear error, and ``--ship-environment`` makes it work. PySpark takes the
executors' interpreter from the driver's ``PYSPARK_PYTHON``, so that is how each run picks its
kind of worker. About 2–3 minutes in all (three driver JVMs, one cluster, one packing)."""

from __future__ import annotations

import csv
import json
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from mqbalance.cli import main
from mqbalance.fleet import shipping
from spark_cluster import SparkCluster, bare_python, driver_env, run_cli

pytestmark = pytest.mark.spark


def audit_outputs(out: Path) -> dict[str, Any]:
    """What must not depend on where the audit ran, in a comparable form."""
    import pyarrow.parquet as pq

    findings = json.loads((out / "findings.json").read_text(encoding="utf-8"))
    with (out / "group_topics.csv").open(encoding="utf-8") as f:
        table = sorted(tuple(row.items()) for row in csv.DictReader(f))
    rows = pq.read_table(out / "assignments").to_pylist()
    return {
        "totals": findings["totals"],
        "findings": sorted(json.dumps(x, sort_keys=True) for x in findings["findings"]),
        "group_topics": table,
        "assignments": sorted(tuple((k, str(v)) for k, v in r.items()) for r in rows),
    }


@pytest.fixture(scope="module")
def local_mode(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The bundled example audited in local mode, in this process: on the running session if
    there is one (the CLI leaves it alone), else on a quick-starting one stopped afterwards."""
    from pyspark.sql import SparkSession

    from mqbalance.fleet.spark import local_session, stop_session

    own = None if SparkSession.getActiveSession() else local_session(fast_start=True, driver_memory="1g")
    out = tmp_path_factory.mktemp("local") / "audit"
    try:
        assert main(["audit", "--out", str(out)]) == 0
    finally:
        if own is not None:
            stop_session(own)
    result = audit_outputs(out)
    assert result["findings"] and result["assignments"]  # the example's hazards are there to compare
    return result


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A packed-environment cache of this module's own (not the user's ~/.cache)."""
    return tmp_path_factory.mktemp("mqbalance-cache")


def assert_ran_on(cluster: SparkCluster, before: set[Path]) -> None:
    """A new application got an executor on each worker (so the run did not fall back to local,
    and the work was spread over both)."""
    new = set(cluster.executor_dirs()) - before
    assert len(new) >= 2, f"executors started on the workers: {sorted(map(str, new))}"


def test_audit_on_a_standalone_cluster_equals_local_mode(spark_cluster, local_mode, tmp_path):
    import mqbalance

    checkout = str(Path(mqbalance.__file__).resolve().parent.parent)
    env = driver_env(
        python=sys.executable,
        extra={"PYSPARK_SUBMIT_ARGS": f"--conf spark.executorEnv.PYTHONPATH={checkout} pyspark-shell"},
    )
    before = set(spark_cluster.executor_dirs())
    run = run_cli(["audit", "--master", spark_cluster.master_url, "--out", str(tmp_path / "audit")], env)
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{spark_cluster.logs()}"
    assert f"starting Spark ({spark_cluster.master_url})" in run.stdout
    assert_ran_on(spark_cluster, before)
    assert audit_outputs(tmp_path / "audit") == local_mode


def test_workers_without_mqbalance_fail_clearly_and_ship_environment_fixes_it(
    spark_cluster, local_mode, cache, tmp_path
):
    bare = bare_python(tmp_path / "bare-venv")
    env = driver_env(python=bare, extra={"MQBALANCE_CACHE_DIR": str(cache)})
    args = ["audit", "--master", spark_cluster.master_url]

    failed = run_cli([*args, "--out", str(tmp_path / "failed")], env)
    assert failed.returncode == 2, f"{failed.stdout}\n{failed.stderr}"
    assert "mqbalance: error: the executors cannot import mqbalance" in failed.stderr
    assert "install it on the workers or pass --ship-environment" in failed.stderr
    assert "Traceback" not in failed.stderr and "Py4J" not in failed.stderr
    assert len(failed.stderr.splitlines()) < 10, failed.stderr

    before = set(spark_cluster.executor_dirs())
    shipped = run_cli([*args, "--ship-environment", "--out", str(tmp_path / "shipped")], env)
    assert shipped.returncode == 0, f"{shipped.stdout}\n{shipped.stderr}\n{spark_cluster.logs()}"
    assert "packing this Python environment" in shipped.stdout
    assert_ran_on(spark_cluster, before)
    assert audit_outputs(tmp_path / "shipped") == local_mode
    archives = list((cache / "envs").glob("env-*.tar.gz"))
    assert len(archives) == 1
    # The executors really ran the shipped interpreter: its unpacked copy is in their work dir.
    executor = sorted(set(spark_cluster.executor_dirs()) - before)[0]
    assert (executor / "environment" / "pyvenv.cfg").is_file()


def test_the_packed_environment_is_cached_by_content(cache, monkeypatch):
    monkeypatch.setenv("MQBALANCE_CACHE_DIR", str(cache))
    said: list[str] = []
    archive = shipping.environment_archive(progress=said.append)  # packed by the test above, or now
    mtime = archive.stat().st_mtime_ns
    said.clear()
    assert shipping.environment_archive(progress=said.append) == archive
    assert archive.stat().st_mtime_ns == mtime and said == [f"reusing the packed environment {archive}"]
    conf = shipping.environment_conf()
    assert conf == {"spark.archives": f"{archive}#environment", "spark.pyspark.python": "./environment/bin/python"}
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
    site = next(n for n in members if n.endswith("/site-packages/mqbalance/__init__.py")).rsplit("/", 2)[0]
    assert members["bin/python"].issym() and "pyvenv.cfg" in members
    assert any(n.startswith(f"{site}/mqbalance/_core.") and n.endswith(".so") for n in members)
    for package in ("numpy", "pyarrow", "pandas", "yaml"):
        assert f"{site}/{package}/__init__.py" in members, package
    assert not any(n.endswith(".pth") or n.startswith(f"{site}/pyspark/") for n in members)


@pytest.mark.parametrize(
    "message, expected",
    [
        (
            "PythonException: ... ModuleNotFoundError: No module named 'mqbalance'",
            "the executors cannot import mqbalance (their Python has no module 'mqbalance')",
        ),
        (
            "PythonException: ... ModuleNotFoundError: No module named 'pyarrow'",
            "the executors cannot import mqbalance (their Python has no module 'pyarrow')",
        ),
        (
            (
                "AttributeError: Can't get attribute 'expand_pairs' on "
                "<module 'mqbalance.fleet.rocketmq.assignment' from '/x/e.py'>"
            ),
            (
                "the executors run another mqbalance than the driver "
                "(mqbalance.fleet.rocketmq.assignment.expand_pairs is missing in"
            ),
        ),
        ("Job aborted: ZeroDivisionError: division by zero", None),
    ],
)
def test_executor_import_problems_are_explained_and_others_pass(message, expected):
    problem = shipping.executor_import_problem(RuntimeError(message))
    if expected is None:
        assert problem is None
        with pytest.raises(RuntimeError, match="division"), shipping.explain_executor_errors():
            raise RuntimeError(message)
    else:
        assert problem is not None and str(problem).startswith(expected)
        assert "--ship-environment" in str(problem)
        with pytest.raises(shipping.ExecutorEnvironmentError), shipping.explain_executor_errors():
            raise RuntimeError(message)
