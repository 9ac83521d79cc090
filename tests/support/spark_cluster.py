"""A real Spark standalone cluster on loopback for the tests: one master and two workers started
from the installed pyspark (``spark-class org.apache.spark.deploy.master.Master`` /
``…worker.Worker``) on free ports, ready when their logs say so, stopped by PID (the worker's
whole process group, so its executors and their Python workers go too) and their temp dirs
removed, also when a test fails. A cluster that cannot start raises: tests using it fail, they
never skip.

Usage (``tests/conftest.py`` registers the fixture)::

    def test_something(spark_cluster):
        run_audit(spark_cluster, "--out", ...)   # mqbalance audit --master spark://127.0.0.1:PORT
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from server_process import ServerProcess, free_port

START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 15.0
# The worker offers 1 core and this much memory to executors; an executor takes 1g by default
# (spark.executor.memory), the daemons themselves are capped below.
WORKER_MEMORY = "1536m"
DAEMON_MEMORY = "384m"
# Every JVM of these tests (daemons, executors, drivers) starts with the C1 compiler only: about
# twice as fast to start, slower on heavy SQL, which these small jobs do not have. The JVMs print
# one "Picked up JAVA_TOOL_OPTIONS" line for it.
TEST_JAVA_OPTIONS = {"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"}


def spark_home() -> Path:
    """The installed pyspark's directory: it holds ``bin/spark-class`` and the jars."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass
class Daemon:
    """One JVM started by ``spark-class`` (a :class:`ServerProcess`: its own process group, and no
    interrupted run leaves it behind): its process and its log file."""

    name: str
    server: ServerProcess

    @property
    def process(self) -> subprocess.Popen[bytes]:
        assert self.server.proc is not None
        return self.server.proc

    @property
    def log(self) -> Path:
        return self.server.log

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for(self, needle: str, timeout: float) -> None:
        """Poll the log until ``needle`` appears; raise with the log's tail if the process dies or
        the time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.text():
                return
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"spark {self.name} exited with code {self.process.returncode} before "
                    f"{needle!r}; log tail:\n{self.text()[-3000:]}"
                )
            time.sleep(0.2)
        raise RuntimeError(f"spark {self.name} not ready after {timeout:.0f} s; log tail:\n{self.text()[-3000:]}")

    def stop(self) -> None:
        """SIGTERM to the daemon's process group, SIGKILL if it lingers; executors and Python
        workers of this daemon share its group: none survive."""
        self.server.stop(timeout=STOP_TIMEOUT_S)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


@dataclass
class SparkCluster:
    """A running standalone cluster: ``master_url`` is ``spark://127.0.0.1:PORT``."""

    master_url: str
    root: Path
    daemons: list[Daemon] = field(default_factory=list)

    def logs(self) -> str:
        """Every daemon's log and the executors' stderr, for failure messages."""
        parts = [f"--- {d.name} ---\n{d.text()[-4000:]}" for d in self.daemons]
        for err in sorted((self.root / "work").glob("*/*/stderr")):
            parts.append(f"--- {err.relative_to(self.root)} ---\n{err.read_text(errors='replace')[-4000:]}")
        return "\n".join(parts)

    def executor_dirs(self) -> list[Path]:
        """The workers' executor directories (``work/app-…/N``), one per executor started."""
        return sorted(p for p in (self.root / "work").glob("app-*/*") if p.is_dir())

    def stop(self) -> None:
        for d in reversed(self.daemons):
            d.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def _start_daemon(name: str, args: list[str], env: Mapping[str, str], root: Path) -> Daemon:
    server = ServerProcess(
        f"spark {name}", [str(spark_home() / "bin" / "spark-class"), *args], log=root / f"{name}.log", env=env, cwd=root
    )
    server.start()
    return Daemon(name, server)


def daemon_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for the daemons (the worker's executors inherit it): loopback only, small
    heaps, no PYTHONPATH inherited from the test process (a worker must not see this checkout
    unless a test says so)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_")) and k != "PYTHONPATH"}
    env.update(
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_HOME=str(spark_home()),
        SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
        SPARK_NO_DAEMONIZE="1",
        **TEST_JAVA_OPTIONS,
    )
    env.update(extra or {})
    return env


def start_cluster(
    *, workers: int = 2, worker_env: Mapping[str, str] | None = None, timeout: float = START_TIMEOUT_S
) -> SparkCluster:
    """Start a master and ``workers`` workers (1 core, :data:`WORKER_MEMORY` each) on free loopback
    ports and wait until every worker has registered. ``worker_env`` adds variables to the worker's
    environment (its executors inherit it). Raises ``RuntimeError`` with the logs if either does
    not come up; nothing is left running then."""
    root = Path(tempfile.mkdtemp(prefix="mqbalance-spark-cluster-"))
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    cluster = SparkCluster(url, root)
    try:
        master = _start_daemon(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                *("--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"),
            ],
            # No REST submission server: it would take the fixed port 6066.
            daemon_env({"SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}),
            root,
        )
        cluster.daemons.append(master)
        master.wait_for("New state: ALIVE", timeout)
        work = root / "work"  # shared: executor directories are app-…/<executor id>, unique per app
        work.mkdir()
        for k in range(workers):
            worker = _start_daemon(
                f"worker-{k}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    url,
                    *("--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", "0"),
                    *("--cores", "1", "--memory", WORKER_MEMORY, "--work-dir", str(work)),
                ],
                daemon_env(worker_env),
                root,
            )
            cluster.daemons.append(worker)
        for worker in cluster.daemons[1:]:
            worker.wait_for("Successfully registered with master", timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def driver_env(*, python: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an ``mqbalance`` driver process: this checkout importable on the
    driver, ``PYSPARK_PYTHON`` (the executors' interpreter, decided by the driver) = ``python``."""
    import mqbalance

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env.update(
        PYTHONPATH=str(Path(mqbalance.__file__).resolve().parent.parent),
        PYSPARK_PYTHON=python,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        **TEST_JAVA_OPTIONS,
    )
    env.update(extra or {})
    return env


def run_cli(args: list[str], env: Mapping[str, str], *, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """``python -m mqbalance.cli ARGS`` in its own process group (its own driver JVM); the whole
    group is killed if it overruns ``timeout`` or the test is interrupted, so no driver JVM is
    left behind."""
    cmd = [sys.executable, "-m", "mqbalance.cli", *args]
    process = subprocess.Popen(
        cmd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        _signal_group(process.pid, signal.SIGKILL)  # stragglers (a JVM whose Python died) included
        if process.poll() is None:
            process.wait()
    return subprocess.CompletedProcess(cmd, process.returncode, out, err)


def bare_python(root: Path) -> str:
    """A fresh venv's interpreter with nothing installed: no mqbalance, numpy or pyarrow (what a
    worker of a cluster nobody prepared for us runs)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import mqbalance"], capture_output=True, check=False, timeout=60)
    assert probe.returncode != 0, "the bare venv can import mqbalance"
    return str(python)


@dataclass
class ConnectServer:
    """A running Spark Connect server: ``url`` is ``sc://127.0.0.1:PORT``."""

    url: str
    daemon: Daemon
    root: Path

    def stop(self) -> None:
        self.daemon.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def _serving(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start_connect_server(*, timeout: float = START_TIMEOUT_S) -> ConnectServer:
    """A Spark Connect server (``sbin/start-connect-server.sh`` of the installed pyspark, in the
    foreground, ``local[2]``) on a free loopback port, its executors' Python this interpreter;
    ready when the port accepts connections. Raises ``RuntimeError`` with its log if it does not
    come up; nothing is left running then."""
    root = Path(tempfile.mkdtemp(prefix="mqbalance-spark-connect-"))
    port = free_port()
    env = daemon_env(
        {
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOG_DIR": str(root / "logs"),
            "SPARK_PID_DIR": str(root),
            "SPARK_DAEMON_MEMORY": "1g",
        }
    )
    log = root / "connect.log"
    args = [
        str(spark_home() / "sbin" / "start-connect-server.sh"),
        *("--master", "local[2]", "--driver-memory", "1g"),
        *("--conf", f"spark.connect.grpc.binding.port={port}"),
        *("--conf", "spark.connect.grpc.binding.address=127.0.0.1"),
        *("--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1"),
        *("--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4"),
        *("--conf", f"spark.driver.extraJavaOptions=-Djava.io.tmpdir={root}"),
    ]
    daemon = Daemon("connect server", ServerProcess("spark connect server", args, log=log, env=env, cwd=root))
    daemon.server.start()
    process = daemon.process
    server = ConnectServer(f"sc://127.0.0.1:{port}", daemon, root)
    try:
        deadline = time.monotonic() + timeout
        while not _serving(port):
            if process.poll() is not None or time.monotonic() > deadline:
                logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in [log, *root.glob("logs/*")])
                raise RuntimeError(f"Spark Connect server not serving on port {port}; log tail:\n{logs}")
            time.sleep(0.3)
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="module")
def spark_connect() -> Iterator[ConnectServer]:
    """A Spark Connect server for the tests of one module, stopped by PID afterwards."""
    server = start_connect_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def spark_cluster() -> Iterator[SparkCluster]:
    """A master and two workers for the tests of one module; stopped (by PID) and cleaned up
    after them, whatever happened."""
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.stop()
