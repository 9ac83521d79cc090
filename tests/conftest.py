"""Fixtures shared by test modules."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import server_process
from java_oracle import oracle_kafka, oracle_kafka_zk, oracle_rocketmq4, oracle_rocketmq5  # noqa: F401  (Java's answers, per module)
from kafka_java_cluster import kafka_java, kafka_java_secured  # noqa: F401  (an Apache Kafka KRaft broker per module; + SASL/TLS listeners)
from rocketmq_cluster import rocketmq, rocketmq2  # noqa: F401  (a name server and 1 or 2 brokers per module)
from rocketmq_java_cluster import rocketmq_both  # noqa: F401  (the Rust port, then the Java servers, per module)
from spark_cluster import spark_cluster, spark_connect  # noqa: F401  (module-scoped Spark standalone cluster / Connect server)

#: The JVMs Spark starts for the tests (the local-mode driver of a CLI run, a page's own
#: ``SparkSession``) compile with C1 only: a test's job is small, and C2 compiling Spark's start-up
#: costs more than it saves (the docs' Spark page alone: 24.3 -> 19.6 s). Spark's launcher adds
#: this variable to the driver's options (no banner on stderr, unlike ``JAVA_TOOL_OPTIONS``); a
#: benchmark run outside the tests keeps C2.
SPARK_SUBMIT_OPTS = "-XX:TieredStopAtLevel=1"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Stop the servers that an interrupted or killed earlier run left behind (see server_process);
    Spark's JVMs compile with C1 (:data:`SPARK_SUBMIT_OPTS`)."""
    os.environ.setdefault("SPARK_SUBMIT_OPTS", SPARK_SUBMIT_OPTS)
    for name in server_process.sweep():
        print(f"stopped a server an earlier test run left behind: {name}")


#: The test files that take longest (per-file time summed over a full run, longest first; the wheel
#: is built when the sources changed, a few minutes). `make test` runs whole files on each worker (`--dist
#: loadfile --no-loadscope-reorder`): these start first and the short files fill in at the end, so
#: the run does not end with one worker alone on a long file.
LONGEST_FIRST = (
    "tests/test_bad_input.py",
    "tests/test_drain_live.py",
    "tests/test_spark_cluster.py",
    "tests/test_java_kafka_live.py",
    "tests/test_history.py",
    "tests/test_spark.py",
    "tests/test_kafka_live.py",
    "tests/test_wheel.py",
    "tests/test_history_kafka_churn_live.py",
    "tests/test_nemesis_rocketmq.py",
    "tests/test_docs.py",
    "tests/test_java_rocketmq_live.py",
    "tests/test_java_kafka_drain.py",
    "tests/test_history_kafka_live.py",
    "tests/test_spark_functions.py",
    "tests/test_java_kafka_fleet.py",
    "tests/test_spark_functions_cluster.py",
    "tests/test_java_history_live.py",
    "tests/test_nemesis_links.py",
    "tests/test_java_kafka_secured.py",
    "tests/test_vectors.py",
    "tests/test_kafka_watch_live.py",
    "tests/test_history_live.py",
    "tests/test_lag_time_live.py",
    "tests/test_nemesis_ensemble.py",
    "tests/test_java_oracle.py",
    "tests/test_nemesis_zk.py",
    "tests/test_coordination_soak.py",
    "tests/test_stubs.py",
    "tests/test_kafka_fleet.py",
    "tests/test_watch.py",
    "tests/test_kafka_properties.py",
    "tests/test_rocketmq_member.py",
    "tests/test_history_kafka.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files of :data:`LONGEST_FIRST` first, in that order; the rest as collected."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


#: how long a process a test started may take to exit after the test before it counts as left behind
GRACE_S = 10.0


def _running_children() -> dict[int, str]:
    """This process's live child processes (zombies excluded), pid -> command line."""
    pids: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            pids.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    alive = {}
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state != "Z":
            alive[pid] = cmdline.strip()
    return alive


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    """A test that leaves a process of its own running fails itself (at teardown), and the process is
    killed, so the next test never pays for it. Servers of module- and session-scoped fixtures were
    started before this fixture and are not counted."""
    before = set(_running_children())
    yield
    deadline = time.monotonic() + GRACE_S
    while (left := {p: c for p, c in _running_children().items() if p not in before}) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    if left:
        pytest.fail(
            "the test left processes running (now killed): " + "; ".join(f"{p}: {c[:200]}" for p, c in left.items())
        )
