"""Real RocketMQ servers for the live tests: the Rust port of the name server and broker (same
remoting protocol; ``make rocketmq`` builds them into ``~/.cache/mqbalance/rocketmq-rust-<version>``,
``MQBALANCE_ROCKETMQ_HOME`` overrides the place). A :class:`RocketMQCluster` starts one name server
and N brokers on free loopback ports, by PID, with temporary store directories, waits until the
name server's cluster info lists every broker, and stops them. A server that cannot start fails
the test — it never skips.

Every server listens on 127.0.0.1 unless placed elsewhere: ``namesrv_host`` / ``broker_hosts`` give
an address and a network namespace to run it in (``ip netns exec``; the network-fault tests put
the name server and the broker each in a namespace of their own, see ``test_nemesis_rocketmq.py``).

Fixtures (registered in ``conftest.py``): ``rocketmq`` (one broker) and ``rocketmq2`` (two broker
sets ``broker-a``/``broker-b`` of one cluster), each started once per test module.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

import server_process
from mqbalance.exceptions import BrokerResponseError, RemotingError
from mqbalance.remoting import BrokerClient, NameServer, ResponseCode, SendResult
from server_process import free_port, free_port_pair

VERSION = "1.0.0"
HOME = Path(
    os.environ.get("MQBALANCE_ROCKETMQ_HOME") or Path.home() / ".cache" / "mqbalance" / f"rocketmq-rust-{VERSION}"
)
NAMESRV_BIN = HOME / "bin" / "rocketmq-namesrv-rust"
BROKER_BIN = HOME / "bin" / "rocketmq-broker-rust"


class ServerProcess:
    """One server process started by PID, its output in ``<dir>/out.log``."""

    def __init__(self, name: str, cmd: list[str], directory: Path, *, netns: str | None = None) -> None:
        self.name, self.cmd, self.dir, self.netns = name, cmd, directory, netns
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def start(self) -> None:
        if not Path(self.cmd[0]).exists():
            raise RuntimeError(
                f"{self.cmd[0]} is missing: run `make rocketmq` (or set MQBALANCE_ROCKETMQ_HOME to the directory "
                "holding bin/rocketmq-namesrv-rust and bin/rocketmq-broker-rust)"
            )
        self.dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "ROCKETMQ_HOME": str(self.dir), "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
        with open(self.dir / "out.log", "ab") as out:
            argv = ["ip", "netns", "exec", self.netns, *self.cmd] if self.netns else self.cmd  # execs: same pid
            self.proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.dir,
                env=env,
                start_new_session=True,  # a Ctrl-C in the terminal is the test run's, not the server's
            )
        server_process.track(self.name, self.proc)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n: int = 3000) -> str:
        try:
            return (self.dir / "out.log").read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self, *, kill: bool = False) -> None:
        """SIGTERM (``kill=True``: SIGKILL) and wait for the PID to exit."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        server_process.untrack(proc)


# The broker stops accepting writes (SYSTEM_BUSY, ``store_not_writeable``) once the disk holding
# its store is this full, counting space reserved for root as used.
DISK_FULL_RATIO = 0.90
# How long a request may wait in a broker's queue before the broker refuses it as busy (200 ms by
# default: enough on a production broker's own machine, not on a test machine another job loads);
# below the clients' 3 s timeout, so a refusal a sender can retry still comes before it gives up.
BUSY_MACHINE_WAIT_MS = 2_000


def send_through_busy(
    client: BrokerClient, topic: str, queue_id: int, body: bytes, *, within: float = 60.0
) -> SendResult:
    """``client.send``, sent again while the broker answers SYSTEM_BUSY (its flow control on a busy
    machine), as Java's producer does, for at most ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            return client.send(topic, queue_id, body)
        except BrokerResponseError as e:
            if e.code != ResponseCode.SYSTEM_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _check_disk(path: Path) -> None:
    """Fail with the reason up front rather than with SYSTEM_BUSY answers later."""
    st = os.statvfs(path)
    total, available = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    used = (total - available) / total
    if used > DISK_FULL_RATIO - 0.03:
        raise RuntimeError(
            f"the disk holding {path} is {used:.0%} full ({available / 2**30:.1f} GiB available); the RocketMQ "
            f"broker refuses writes from {DISK_FULL_RATIO:.0%}: free space first"
        )


class Broker(ServerProcess):
    def __init__(
        self,
        name: str,
        cluster: str,
        namesrv: str,
        directory: Path,
        config: Mapping[str, Any] | None = None,
        *,
        host: str = "127.0.0.1",
        netns: str | None = None,
    ) -> None:
        self.broker_name, self.cluster, self.host = name, cluster, host
        self.port = free_port_pair()
        self.ha_port = free_port()
        props = {
            "brokerClusterName": cluster,
            "brokerName": name,
            "brokerId": 0,
            "namesrvAddr": namesrv,
            "brokerIP1": host,
            "brokerIP2": host,
            "listenPort": self.port,
            "haListenPort": self.ha_port,
            "storePathRootDir": directory / "store",
            "autoCreateTopicEnable": "true",
            "autoCreateSubscriptionGroup": "true",
            # Small store files: the defaults preallocate 1 GiB of commit log and 400 MiB of index per
            # broker, and the broker refuses writes once its disk is 90 % full.
            "mappedFileSizeCommitLog": 16 * 1024 * 1024,
            "mappedFileSizeConsumeQueue": 300_000 * 20 // 100,  # 3,000 entries a file
            "maxHashSlotNum": 50_000,
            "maxIndexNum": 200_000,
            "waitTimeMillsInSendQueue": BUSY_MACHINE_WAIT_MS,  # SYSTEM_BUSY on a busy machine
            "osPageCacheBusyTimeoutMills": BUSY_MACHINE_WAIT_MS,
            **(config or {}),
        }
        directory.mkdir(parents=True, exist_ok=True)
        conf = directory / "broker.properties"  # the format is chosen by the extension
        conf.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
        super().__init__(f"broker {name}", [str(BROKER_BIN), "-c", str(conf)], directory, netns=netns)

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"


class RocketMQCluster:
    """``with RocketMQCluster(brokers=2) as c: c.namesrv_addr, c.brokers[0].addr``."""

    def __init__(
        self,
        *,
        brokers: int = 1,
        cluster: str = "mqbalance-test",
        broker_config: Mapping[str, Any] | None = None,
        start_timeout: float = 60.0,
        namesrv_host: tuple[str, str | None] = ("127.0.0.1", None),
        broker_hosts: Mapping[str, tuple[str, str | None]] | None = None,
    ) -> None:
        """``namesrv_host`` / ``broker_hosts`` (by broker name): ``(address, network namespace or None)``."""
        self.dir = Path(tempfile.mkdtemp(prefix="mqbalance-rocketmq-"))
        self.cluster = cluster
        self.namesrv_host, self.broker_hosts = namesrv_host[0], dict(broker_hosts or {})
        self.namesrv_port = free_port()
        self.namesrv = ServerProcess(
            "name server",
            [
                str(NAMESRV_BIN),
                "--listenPort",
                str(self.namesrv_port),
                "--bindAddress",
                self.namesrv_host,
                "--rocketmqHome",
                str(self.dir / "namesrv"),
            ],
            self.dir / "namesrv",
            netns=namesrv_host[1],
        )
        self.broker_config = dict(broker_config or {})
        self.brokers = [self._broker(f"broker-{chr(ord('a') + i)}") for i in range(brokers)]
        self.start_timeout = start_timeout

    def _broker(self, name: str) -> Broker:
        host, netns = self.broker_hosts.get(name, ("127.0.0.1", None))
        return Broker(
            name, self.cluster, self.namesrv_addr, self.dir / name, self.broker_config, host=host, netns=netns
        )

    @property
    def namesrv_addr(self) -> str:
        return f"{self.namesrv_host}:{self.namesrv_port}"

    def broker(self, name: str) -> Broker:
        return next(b for b in self.brokers if b.broker_name == name)

    def __repr__(self) -> str:
        return f"RocketMQCluster(namesrv={self.namesrv_addr!r}, brokers={[b.addr for b in self.brokers]})"

    def _listed(self) -> set[str]:
        """Broker names whose master address the name server lists (the readiness probe)."""
        try:
            with NameServer(self.namesrv_addr, timeout=2.0) as ns:
                info = ns.cluster_info()
        except RemotingError:
            return set()
        return {name for name, b in info.brokers.items() if b.master_addr}

    def _wait(self, names: set[str], procs: list[ServerProcess]) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            for p in procs:
                if not p.running():
                    raise RuntimeError(f"{p.name} (pid exited) failed to start; its log:\n{p.log_tail()}")
            if names <= self._listed():
                return
            time.sleep(0.1)
        logs = "\n".join(f"--- {p.name}:\n{p.log_tail()}" for p in procs)
        raise RuntimeError(f"the name server did not list {sorted(names)} within {self.start_timeout:g} s\n{logs}")

    def start(self) -> RocketMQCluster:
        _check_disk(self.dir)
        self.namesrv.start()
        deadline = time.monotonic() + self.start_timeout
        while True:  # the name server answers (cluster info, even empty)
            if not self.namesrv.running():
                raise RuntimeError(f"the name server failed to start; its log:\n{self.namesrv.log_tail()}")
            try:
                with NameServer(self.namesrv_addr, timeout=1.0) as ns:
                    ns.cluster_info()
                break
            except RemotingError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the name server did not answer; its log:\n{self.namesrv.log_tail()}") from None
                time.sleep(0.05)
        for b in self.brokers:
            b.start()
        self._wait({b.broker_name for b in self.brokers}, [self.namesrv, *self.brokers])
        return self

    def create_topic(self, topic: str, queues: Mapping[str, int], *, perm: int = 6, timeout: float = 20.0) -> None:
        """Create ``topic`` with ``queues[broker name]`` read and write queues (``perm`` 6: read and
        write) on those brokers and wait
        until the name server's route lists every one of them: a broker registers a new topic with
        the name server in the background, so a route read at once may miss a broker.

        >>> cluster.create_topic("TopicA", {"broker-a": 8, "broker-b": 4})  # doctest: +SKIP
        """

        def create(names: list[str]) -> float:
            for name in names:
                with BrokerClient(self.broker(name).addr) as admin:
                    admin.create_topic(topic, read=queues[name], write=queues[name], perm=perm)
            return time.monotonic()

        created = create(list(queues))
        want = dict(queues)
        deadline = time.monotonic() + timeout
        with NameServer(self.namesrv_addr) as ns:
            while True:
                try:
                    got = {q.broker_name: q.read_queue_nums for q in ns.topic_route(topic).queues}
                except BrokerResponseError as e:
                    if e.code != ResponseCode.TOPIC_NOT_EXIST:
                        raise
                    got = {}
                if got == want:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the name server's route of {topic} is {got}, not {want}, after {timeout:g} s")
                if time.monotonic() - created > 5:  # a registration was lost: creating again registers again
                    created = create([name for name, n in want.items() if got.get(name) != n])
                time.sleep(0.05)

    def start_broker(self, name: str) -> None:
        """(Re)start a stopped broker on its port and store, and wait until it is listed."""
        b = self.broker(name)
        b.start()
        self._wait({name}, [b])

    def add_broker(self, name: str) -> Broker:
        """Start one more broker set in the cluster."""
        b = self._broker(name)
        self.brokers.append(b)
        b.start()
        self._wait({name}, [b])
        return b

    def close(self) -> None:
        for b in self.brokers:
            b.stop()
        self.namesrv.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RocketMQCluster:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


@pytest.fixture(scope="module")
def rocketmq() -> Iterator[RocketMQCluster]:
    """A name server and one broker (``broker-a``), per test module."""
    with RocketMQCluster(brokers=1) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def rocketmq2() -> Iterator[RocketMQCluster]:
    """A name server and two broker sets (``broker-a``, ``broker-b``) of one cluster, per test module."""
    with RocketMQCluster(brokers=2) as cluster:
        yield cluster
