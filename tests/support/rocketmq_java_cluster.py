"""Apache RocketMQ's own Java name server and broker for the live tests: ``NamesrvStartup`` and
``BrokerStartup`` from the ``rocketmq5`` module of the Java harness (``make java``), each started
with a generated ``.properties`` file on free loopback ports, in a temporary directory that holds
its store, its ``ROCKETMQ_HOME`` and its logs (``user.home`` points there, so the jars' logback
configuration writes ``logs/rocketmqlogs/*.log`` under it).

:class:`RocketMQJavaCluster` has the API of :class:`rocketmq_cluster.RocketMQCluster` (the Rust
port): ``namesrv_addr``, ``brokers`` (``addr``, ``broker_name``, ``stop(kill=)``), ``broker(name)``,
``create_topic``, ``start_broker``, ``add_broker`` — a live test can run on either. Every JVM is a
:class:`server_process.ServerProcess` (its own process group, stopped by PID, swept after a killed
run). Readiness is the name server's cluster info listing every broker's master address. A server
that cannot start fails the test with its log tail; a harness that is not built fails naming
``make java`` — neither skips.

Sized for a 2-core machine: name server ``-Xmx128m``, broker ``-Xmx384m`` with 16 MiB commit-log
files and small consume-queue files, the timer wheel off. A 5.x broker also listens on
``listenPort - 2`` (the "fast" channel 4.x producers send to) and on ``haListenPort``.

Fixtures (module-scoped): ``rocketmq_java`` (one broker, ``broker-a``) and ``rocketmq_java2``
(``broker-a`` and ``broker-b`` of one cluster). When a test of the module failed, the cluster's
directory (logs, configs) is kept and its path printed; otherwise it is removed.

Example:
    >>> with RocketMQJavaCluster(brokers=1) as c:  # doctest: +SKIP
    ...     c.create_topic("TopicA", {"broker-a": 8})
    ...     c.startup_seconds  # name server answering + broker listed
    7.1
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from java_harness import java_command
from rocketmq_cluster import BUSY_MACHINE_WAIT_MS, RocketMQCluster
from server_process import ServerProcess, free_port, free_port_pair

NAMESRV_MAIN = "org.apache.rocketmq.namesrv.NamesrvStartup"
BROKER_MAIN = "org.apache.rocketmq.broker.BrokerStartup"
NAMESRV_HEAP_MB = 128
BROKER_HEAP_MB = 384


def _write_properties(path: Path, props: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
    return path


class JavaServer:
    """One Java server of the cluster: a :class:`ServerProcess` whose ``user.home``,
    ``ROCKETMQ_HOME`` and temporary directory are ``directory`` (its logs land in
    ``directory/logs/rocketmqlogs``)."""

    def __init__(self, name: str, main_class: str, conf: Path, directory: Path, heap_mb: int) -> None:
        self.name, self.dir = name, directory
        argv = java_command(
            "rocketmq5",
            main_class,
            heap_mb=heap_mb,
            # java.io.tmpdir: the self-signed certificate a server makes at each start (Netty's,
            # for RocketMQ's TLS test mode) goes with the server's directory, not into /tmp
            properties={
                "user.home": str(directory),
                "rocketmq.home.dir": str(directory),
                "java.io.tmpdir": str(directory),
            },
        )
        # off-heap buffers (netty, the store's direct buffers) bounded too
        argv.insert(1, "-XX:MaxDirectMemorySize=256m")
        self.server = ServerProcess(
            name,
            [*argv, "-c", str(conf)],
            log=directory / "out.log",
            env={**os.environ, "ROCKETMQ_HOME": str(directory)},
            cwd=directory,
        )

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        """The JVM's process (as ``rocketmq_cluster.ServerProcess.proc``: tests signal it)."""
        return self.server.proc

    @property
    def pid(self) -> int | None:
        return self.server.pid if self.server.proc is not None else None

    def start(self) -> None:
        self.server.start()

    def running(self) -> bool:
        return self.server.alive()

    def stop(self, *, kill: bool = False) -> None:
        """SIGTERM (the JVM's shutdown hooks run; ``kill=True``: SIGKILL) and wait for the PID."""
        self.server.stop(kill=kill, timeout=20.0)

    def log_tail(self, n: int = 3000) -> str:
        """The end of its console output and of its main RocketMQ log."""
        parts = []
        for f in (self.server.log, *sorted((self.dir / "logs" / "rocketmqlogs").glob("*.log"))):
            if f.name in ("out.log", "namesrv.log", "broker.log"):
                try:
                    text = "\n".join(
                        line for line in f.read_text(errors="replace").splitlines() if " |-" not in line[:16]
                    )
                except OSError:
                    continue
                parts.append(f"[{f.name}]\n{text[-n:]}")
        return "\n".join(parts) or f"(no log under {self.dir})"


class JavaBroker(JavaServer):
    def __init__(
        self, name: str, cluster: str, namesrv: str, directory: Path, config: Mapping[str, Any] | None = None
    ) -> None:
        self.broker_name, self.cluster, self.host = name, cluster, "127.0.0.1"
        self.port = free_port_pair()  # the 5.x broker also listens on port - 2
        self.ha_port = free_port()
        store = directory / "store"
        props = {
            "brokerClusterName": cluster,
            "brokerName": name,
            "brokerId": 0,
            "namesrvAddr": namesrv,
            "brokerIP1": self.host,
            "brokerIP2": self.host,
            "listenPort": self.port,
            "haListenPort": self.ha_port,
            "storePathRootDir": store,
            "storePathCommitLog": store / "commitlog",
            "autoCreateTopicEnable": "true",
            "autoCreateSubscriptionGroup": "true",
            "mappedFileSizeCommitLog": 16 * 1024 * 1024,
            "mappedFileSizeConsumeQueue": 300_000 * 20 // 100,  # 3,000 entries a file
            "timerWheelEnable": "false",
            "deleteWhen": "04",
            "flushDiskType": "ASYNC_FLUSH",
            # SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE] and [PCBUSY_CLEAN_QUEUE] on a busy machine
            "waitTimeMillsInSendQueue": BUSY_MACHINE_WAIT_MS,
            "osPageCacheBusyTimeOutMills": BUSY_MACHINE_WAIT_MS,
            **(config or {}),
        }
        conf = _write_properties(directory / "broker.properties", props)
        super().__init__(f"java broker {name}", BROKER_MAIN, conf, directory, BROKER_HEAP_MB)

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"


class RocketMQJavaCluster(RocketMQCluster):
    """``with RocketMQJavaCluster(brokers=2) as c: c.namesrv_addr, c.brokers[0].addr``."""

    def __init__(
        self,
        *,
        brokers: int = 1,
        broker_names: list[str] | None = None,
        cluster: str = "mqbalance-java",
        broker_config: Mapping[str, Any] | None = None,
        start_timeout: float = 120.0,
    ) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="mqbalance-rocketmq-java-"))
        self.cluster = cluster
        self.namesrv_host, self.broker_hosts = "127.0.0.1", {}
        self.namesrv_port = free_port()
        conf = _write_properties(
            self.dir / "namesrv" / "namesrv.properties", {"listenPort": self.namesrv_port, "bindAddress": "127.0.0.1"}
        )
        self.namesrv = JavaServer("java name server", NAMESRV_MAIN, conf, self.dir / "namesrv", NAMESRV_HEAP_MB)  # type: ignore[assignment]
        self.broker_config = dict(broker_config or {})
        names = broker_names or [f"broker-{chr(ord('a') + i)}" for i in range(brokers)]
        self.brokers = [self._broker(name) for name in names]  # type: ignore[misc]
        self.start_timeout = start_timeout
        self.startup_seconds: float | None = None
        self.keep = False

    def _broker(self, name: str) -> JavaBroker:  # type: ignore[override]
        return JavaBroker(name, self.cluster, self.namesrv_addr, self.dir / name.replace("@", "_"), self.broker_config)

    def start(self) -> RocketMQJavaCluster:
        t = time.monotonic()
        super().start()
        self.startup_seconds = time.monotonic() - t
        return self

    def __repr__(self) -> str:
        return f"RocketMQJavaCluster(namesrv={self.namesrv_addr!r}, brokers={[b.addr for b in self.brokers]})"

    def close(self) -> None:
        # SIGKILL: the store is thrown away, and a graceful stop of a broker takes 10-20 s
        for b in self.brokers:
            b.stop(kill=True)
        self.namesrv.stop(kill=True)
        if self.keep:
            for b in self.brokers:  # the store is large and says nothing the logs do not
                shutil.rmtree(b.dir / "store", ignore_errors=True)
            print(f"\nthe Java RocketMQ cluster's logs are kept in {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RocketMQJavaCluster:
        try:
            return self.start()
        except BaseException:
            self.keep = True
            self.close()
            raise


def module_cluster(request: pytest.FixtureRequest, **options: Any) -> Iterator[RocketMQJavaCluster]:
    """A cluster for a module-scoped fixture (``options`` as :class:`RocketMQJavaCluster` takes
    them): its logs are kept when a test of the module failed."""
    failed_before = request.session.testsfailed
    with RocketMQJavaCluster(**options) as cluster:
        try:
            yield cluster
        finally:
            cluster.keep = request.session.testsfailed > failed_before


@pytest.fixture(scope="module")
def rocketmq_java(request: pytest.FixtureRequest) -> Iterator[RocketMQJavaCluster]:
    """Apache RocketMQ's Java name server and one broker (``broker-a``), per test module."""
    yield from module_cluster(request, brokers=1)


@pytest.fixture(scope="module")
def rocketmq_java2(request: pytest.FixtureRequest) -> Iterator[RocketMQJavaCluster]:
    """Apache RocketMQ's Java name server and two broker sets (``broker-a``, ``broker-b``), per test module."""
    yield from module_cluster(request, brokers=2)


@pytest.fixture(scope="module", params=["rust", pytest.param("java", marks=pytest.mark.java)])
def rocketmq_both(request: pytest.FixtureRequest) -> Iterator[RocketMQCluster]:
    """One name server and ``broker-a``, per test module, on each implementation in turn: the Rust
    port, then Apache RocketMQ's Java servers (marker ``java``)."""
    if request.param == "rust":
        with RocketMQCluster() as cluster:
            yield cluster
    else:
        yield from module_cluster(request, brokers=1)
