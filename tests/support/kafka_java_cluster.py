"""Apache Kafka itself for the Kafka tests: a single-node KRaft broker (Kafka 4.4.0, the ``kafka``
module of the Java harness, ``make java``), its storage formatted by the fixture with a random
cluster id, both group protocols enabled (``classic`` and ``consumer``, KIP-848), on free loopback
ports, stopped by PID. Java consumer-group members (``io.mqbalance.harness.kafka.KafkaMember``) run
beside ``mqbalance kafka-consume`` members in one :class:`MixedKafkaGroup`, every member writing
the same record layout (:mod:`mqbalance.kafka.member`).

A harness that is not built or a broker that does not serve fails the test (it never skips); the
broker's log (``server.log`` in its directory) is kept and its tail printed when a test of the
module failed.

Fixture: ``kafka_java`` (one broker per test module), registered in ``conftest.py``. Its API mirrors
the Tansu fixture's (``bootstrap``, ``pid``, ``log_tail``) and adds ``create_topic``.

``KafkaJavaBroker(secured=True)`` (fixture ``kafka_java_secured``) adds one listener per security
protocol beside the plaintext one the fixture itself uses: SASL_SSL with SCRAM-SHA-256 and -512
(user ``alice``, both stored by ``kafka-storage format --add-scram``), SASL_PLAINTEXT with PLAIN
(user ``bob``), SSL with ``ssl.client.auth=required`` (mutual TLS); certificates made by the fixture
(:mod:`tls_pki`), passwords random per broker (:attr:`KafkaJavaBroker.secured`).

Example:
    >>> # with KafkaJavaBroker() as b: b.create_topic("t", 6); print(b.bootstrap, b.timings)
"""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from java_harness import java_command
from kafka_cluster import KafkaGroup, _serves
from server_process import ServerProcess, free_port, wait_for
from tls_pki import Pki, make_pki

VERSION = "4.4.0"
BROKER_HEAP_MB = 512
CLIENT_HEAP_MB = 256

#: The broker's settings beyond listeners and directories: one node, replication factor 1, small
#: segments, no initial rebalance delay, and session timeouts short enough for tests of both
#: protocols (the consumer protocol's are the broker's: 6 s session, 500 ms heartbeat); a running
#: classic group may be upgraded to the consumer protocol and back (``bidirectional``: Kafka 4.4.0's
#: default, set so that a test of the online upgrade does not depend on it).
SETTINGS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "offsets.topic.segment.bytes": "1048576",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "log.segment.bytes": "1048576",
    "group.coordinator.rebalance.protocols": "classic,consumer",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.migration.policy": "bidirectional",
}

LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = file
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
logger.groups.name = org.apache.kafka.coordinator.group
logger.groups.level = INFO
"""


def topics_led(admin: Any, names: list[str], partitions: int) -> bool:
    """Every topic of ``names`` described with ``partitions`` partitions, each with a leader (a
    commit to a partition without one yet is lost); described 500 at a time."""
    for i in range(0, len(names), 500):
        for t in admin.describe_topics(names[i : i + 500]):
            if (
                t["error_code"]
                or len(t["partitions"]) != partitions
                or any(p["leader_id"] < 0 for p in t["partitions"])
            ):
                return False
    return True


def random_cluster_id() -> str:
    """A Kafka ``Uuid`` string (22 characters of unpadded base64url) that does not start with ``-``.

    >>> len(random_cluster_id()), random_cluster_id()[0] != "-"
    (22, True)
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class SecuredListeners:
    """The secured listeners of a ``KafkaJavaBroker(secured=True)``: their addresses by security
    protocol, the users and passwords the broker knows, and the certificates."""

    def __init__(self, directory: Path) -> None:
        self.pki: Pki = make_pki(directory / "pki")
        self.ports = {p: free_port() for p in ("SASL_SSL", "SASL_PLAINTEXT", "SSL")}
        self.scram_user, self.scram_password = "alice", secrets.token_urlsafe(16)
        self.plain_user, self.plain_password = "bob", secrets.token_urlsafe(16)

    def bootstrap(self, protocol: str) -> str:
        """``127.0.0.1:PORT`` of the listener of ``protocol`` (SASL_SSL, SASL_PLAINTEXT, SSL)."""
        return f"127.0.0.1:{self.ports[protocol]}"

    def listeners(self) -> list[str]:
        return [f"{name}://127.0.0.1:{self.ports[p]}" for name, p in LISTENER_NAMES.items()]

    def settings(self) -> dict[str, str]:
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        plain = "org.apache.kafka.common.security.plain.PlainLoginModule required"
        plain += f' user_{self.plain_user}="{self.plain_password}";'
        return {
            "listener.name.secure.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.secure.scram-sha-256.sasl.jaas.config": scram,
            "listener.name.secure.scram-sha-512.sasl.jaas.config": scram,
            "listener.name.saslplain.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.saslplain.plain.sasl.jaas.config": plain,
            "listener.name.mtls.ssl.client.auth": "required",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.pki.server_pem),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.pki.ca),
        }

    def scram_arguments(self) -> list[str]:
        """``kafka-storage format`` arguments storing ``alice``'s SCRAM credentials (both hashes)."""
        return [
            a
            for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")
            for a in ("--add-scram", f"{m}=[name={self.scram_user},password={self.scram_password}]")
        ]


#: listener name -> security protocol of a secured broker's extra listeners
LISTENER_NAMES = {"SECURE": "SASL_SSL", "SASLPLAIN": "SASL_PLAINTEXT", "MTLS": "SSL"}


class KafkaJavaBroker:
    """``with KafkaJavaBroker() as b: b.bootstrap`` — one KRaft broker+controller on
    ``127.0.0.1:<free port>``; ``b.timings`` holds the seconds the storage format, the start (until an
    admin request is answered) and the group coordinator's readiness took. ``secured=True`` adds the
    listeners of :class:`SecuredListeners` (``b.secured``). ``settings``: broker settings over
    :data:`SETTINGS` (e.g. ``{"group.max.session.timeout.ms": "3600000"}`` for a benchmark's idle
    members)."""

    def __init__(
        self,
        *,
        start_timeout: float = 120.0,
        secured: bool = False,
        settings: Mapping[str, str] | None = None,
        quick_jit: bool = True,
    ) -> None:
        """``quick_jit=False``: the broker compiles with C2, as in production (a benchmark timing
        requests to it); a test's broker compiles with C1 only (see ``java_command``)."""
        self.quick_jit = quick_jit
        self.dir = Path(tempfile.mkdtemp(prefix="mqbalance-kafka-java-"))
        self.secured = SecuredListeners(self.dir) if secured else None
        self.settings = dict(settings or {})
        self.port, self.controller_port = free_port(), free_port()
        self.start_timeout = start_timeout
        self.cluster_id = random_cluster_id()
        self.server: ServerProcess | None = None
        self.timings: dict[str, float] = {}
        self.keep_logs = False
        """Keep the log (and this directory, without the data) when closed: set when a test failed."""
        self._admin: Any = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self.server is None or self.server.proc is None else self.server.pid

    @property
    def log(self) -> Path:
        return self.dir / "server.log"

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def _write_config(self) -> Path:
        listeners = [f"PLAINTEXT://127.0.0.1:{self.port}"]
        settings = {**SETTINGS, "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}"}
        if self.secured is not None:
            listeners += self.secured.listeners()
            settings["listener.security.protocol.map"] += "".join(f",{n}:{p}" for n, p in LISTENER_NAMES.items())
            settings.update(self.secured.settings())
        settings.update(self.settings)
        settings.update(
            {
                "listeners": ",".join([*listeners, f"CONTROLLER://127.0.0.1:{self.controller_port}"]),
                "advertised.listeners": ",".join(listeners),
                "log.dirs": str(self.dir / "data"),
            }
        )
        config = self.dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        (self.dir / "log4j2.properties").write_text(LOG4J2.format(log=self.log))
        return config

    def _java(self, main_class: str, heap_mb: int) -> list[str]:
        return java_command(
            "kafka",
            main_class,
            heap_mb=heap_mb,
            quick_jit=self.quick_jit,
            properties={"log4j2.configurationFile": str(self.dir / "log4j2.properties")},
        )

    def start(self) -> KafkaJavaBroker:
        config = self._write_config()
        t0 = time.monotonic()
        fmt = ServerProcess(
            "kafka storage format",
            [
                *self._java("kafka.tools.StorageTool", 128),
                *("format", "-t", self.cluster_id, "-c", str(config)),
                *(self.secured.scram_arguments() if self.secured is not None else ()),
            ],
            log=self.dir / "format.log",
        )
        fmt.start()
        assert fmt.proc is not None
        status = fmt.proc.wait(self.start_timeout)
        fmt.stop()
        if status != 0:
            raise RuntimeError(f"formatting Kafka's storage failed with status {status}:\n{fmt.log_tail()}")
        self.timings["format_s"] = time.monotonic() - t0
        t1 = time.monotonic()
        self.server = ServerProcess(
            "kafka broker", [*self._java("kafka.Kafka", BROKER_HEAP_MB), str(config)], log=self.dir / "out.log"
        )
        self.server.start()
        wait_for(
            f"Kafka to serve on {self.bootstrap}",
            lambda: _serves(self.port),
            timeout=self.start_timeout,
            server=self.server,
        )
        wait_for("Kafka's admin API to answer", self._admin_answers, timeout=self.start_timeout, server=self.server)
        self.timings["start_s"] = time.monotonic() - t1
        # the group coordinator needs __consumer_offsets, created on the first group request
        t2 = time.monotonic()
        wait_for("Kafka's group coordinator", self._coordinator_answers, timeout=self.start_timeout, server=self.server)
        self.timings["coordinator_s"] = time.monotonic() - t2
        return self

    def _admin_answers(self) -> bool:
        from kafka.admin import KafkaAdminClient
        from kafka.errors import KafkaError

        try:
            if self._admin is None:
                self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=10_000)
            brokers = self._admin.describe_cluster()["brokers"]
        except KafkaError:
            return False
        return bool(brokers) and not brokers[0].get("is_fenced")

    def _coordinator_answers(self) -> bool:
        from kafka.errors import KafkaError

        try:
            self._admin.list_group_offsets({"mqbalance-readiness": None})
        except KafkaError:
            return False
        return True

    def admin(self) -> Any:
        """The fixture's kafka-python ``KafkaAdminClient`` (shared; closed with the broker)."""
        assert self._admin is not None, "the broker is not started"
        return self._admin

    def create_topic(self, name: str, partitions: int) -> None:
        """Create a topic (replication factor 1) and wait until its every partition has a leader."""
        from kafka.admin import NewTopic

        self.admin().create_topics([NewTopic(name, partitions, 1)])
        wait_for(
            f"topic {name} to have {partitions} partitions with leaders",
            lambda: self._ready(name, partitions),
            timeout=30,
        )

    def add_partitions(self, name: str, total: int) -> None:
        """Raise a topic's partition count to ``total`` (CreatePartitions)."""
        from kafka.admin import NewPartitions

        self.admin().create_partitions({name: NewPartitions(total)})
        wait_for(f"topic {name} to have {total} partitions with leaders", lambda: self._ready(name, total), timeout=30)

    def _ready(self, name: str, partitions: int) -> bool:
        return topics_led(self.admin(), [name], partitions)

    def stop_serving(self, *, timeout: float = 30) -> None:
        """Stop the broker process, its directory kept (a test of what clients see when it is gone).
        The fixture's admin client is closed first: kafka-python 3.0.12 leaks a socket per attempt to
        reconnect to a stopped broker, which a later test would see as an unclosed-socket warning."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        if self.server is not None:
            self.server.stop(timeout=timeout)

    def close(self, *, keep_logs: bool = False) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        if self.server is not None:
            self.server.stop(timeout=20)
        if keep_logs:
            shutil.rmtree(self.dir / "data", ignore_errors=True)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> KafkaJavaBroker:
        try:
            return self.start()
        except BaseException:
            self.close(keep_logs=True)
            raise

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.close(keep_logs=self.keep_logs or t is not None)


@pytest.fixture(scope="module")
def kafka_java(request: pytest.FixtureRequest) -> Iterator[KafkaJavaBroker]:
    """One Apache Kafka broker (KRaft, both group protocols) per test module; its log is kept and
    its tail printed when a test of the module failed."""
    yield from _broker(request, KafkaJavaBroker())


@pytest.fixture(scope="module")
def kafka_java_secured(request: pytest.FixtureRequest) -> Iterator[KafkaJavaBroker]:
    """``kafka_java`` with the secured listeners (:class:`SecuredListeners`: SASL_SSL with SCRAM,
    SASL_PLAINTEXT with PLAIN, SSL with client certificates) beside the plaintext one."""
    yield from _broker(request, KafkaJavaBroker(secured=True))


def _broker(request: pytest.FixtureRequest, broker: KafkaJavaBroker) -> Iterator[KafkaJavaBroker]:
    failed = request.session.testsfailed
    with broker:
        t = broker.timings
        pki = f", certificates made in {broker.secured.pki.seconds:.1f} s" if broker.secured is not None else ""
        print(
            f"\nApache Kafka {VERSION}: storage formatted in {t['format_s']:.1f} s, serving in "
            f"{t['start_s']:.1f} s, group coordinator in {t['coordinator_s']:.1f} s{pki}"
        )
        yield broker
        if request.session.testsfailed > failed:
            print(f"\nApache Kafka's log (kept in {broker.log}):\n{broker.log_tail()}")
            broker.keep_logs = True


class JavaMember:
    """One Java ``KafkaMember`` process (a ``KafkaConsumer``), by PID, recording into ``records``;
    the same interface as :class:`kafka_cluster.Member`."""

    def __init__(self, name: str, server: ServerProcess, records: Path, impl: str, assignor: str) -> None:
        self.name, self.server, self.records, self.impl, self.assignor = name, server, records, impl, assignor

    @property
    def proc(self) -> Any:
        return self.server.proc

    def alive(self) -> bool:
        return self.server.alive()

    def stop(self, *, timeout: float = 30.0) -> int:
        """SIGTERM: a graceful leave (revoke, commit, LeaveGroup); its exit status (0 when clean)."""
        if self.alive():
            os.kill(self.server.pid, signal.SIGTERM)
            try:
                self.server.proc.wait(timeout)  # type: ignore[union-attr]
            except subprocess.TimeoutExpired:
                self.server.stop(kill=True)
                raise RuntimeError(f"Java member {self.name} did not leave within {timeout:g} s") from None
        status = self.server.stop()
        return 0 if status is None else status

    def kill(self) -> float:
        """``kill -9``; returns the ``time.monotonic()`` of the kill."""
        t = time.monotonic()
        self.server.stop(kill=True)
        return t


class MixedKafkaGroup(KafkaGroup):
    """A consumer group of ``mqbalance kafka-consume`` members (:meth:`start`) and Java
    ``KafkaConsumer`` members (:meth:`start_java`) on any Kafka broker.

    >>> # with MixedKafkaGroup(broker, "g", tmp_path) as g: g.start_java("j1", ["t"], "sticky"); ...
    """

    def start_java(
        self,
        name: str,
        topics: list[str],
        assignor: str = "range",
        *,
        protocol: str = "classic",
        instance_id: str | None = None,
        metadata_max_age_ms: int = 2_000,
        bootstrap: str | None = None,
        command_config: Path | None = None,
        work_ms: int = 0,
        max_poll_records: int | None = None,
    ) -> JavaMember:
        """A Java member: ``protocol="classic"`` with client ``assignor`` (range, roundrobin, sticky,
        cooperative-sticky, or ``everyone``: deliberately wrong, every partition to every member) or
        ``protocol="consumer"`` with the broker's ``assignor`` (uniform, range). A long
        ``metadata_max_age_ms`` keeps it from seeing new partitions for that long. ``bootstrap`` (default:
        the broker's plaintext listener) with ``command_config``, a client properties file: a secured
        listener. ``work_ms`` with ``max_poll_records``: a slow consumer, sleeping ``work_ms`` after each
        poll that returned records (at most about ``max_poll_records * 1000 / work_ms`` records a second)."""
        records = self.dir / f"{name}.jsonl"
        s, h, p = self.timeouts
        argv = [*java_command("kafka", "io.mqbalance.harness.kafka.KafkaMember", heap_mb=CLIENT_HEAP_MB)]
        argv += ["--bootstrap", bootstrap or self.broker.bootstrap, "--group", self.group, "--client-id", name]
        if command_config is not None:
            argv += ["--command-config", str(command_config)]
        argv += [a for t in topics for a in ("--topic", t)] + ["--protocol", protocol, "--record", str(records)]
        argv += ["--assignor" if protocol == "classic" else "--remote-assignor", assignor]
        argv += ["--session-timeout-ms", str(s), "--heartbeat-interval-ms", str(h), "--max-poll-interval-ms", str(p)]
        argv += ["--metadata-max-age-ms", str(metadata_max_age_ms)]
        if instance_id is not None:
            argv += ["--instance-id", instance_id]
        if work_ms:
            argv += ["--work-ms", str(work_ms)]
        if max_poll_records is not None:
            argv += ["--max-poll-records", str(max_poll_records)]
        server = ServerProcess(f"java member {name}", argv, log=self.dir / f"{name}.log")
        server.start()
        member = JavaMember(
            name, server, records, "java" if protocol == "classic" else "java-consumer-protocol", assignor
        )
        self.members[name] = member  # type: ignore[assignment]
        return member


class GroupWatch:
    """The broker's own account of one group, every ``interval_ms``, through Java's Admin client
    (``io.mqbalance.harness.kafka.GroupWatch``: ConsumerGroupDescribe for the consumer protocol,
    which kafka-python 3.0.12 does not speak): :meth:`latest` is the newest description."""

    def __init__(self, broker: KafkaJavaBroker, group: str, directory: Path, topics: list[str], interval_ms: int = 200):
        self.out = directory / f"watch-{group}.jsonl"
        argv = java_command("kafka", "io.mqbalance.harness.kafka.GroupWatch", heap_mb=CLIENT_HEAP_MB)
        argv += ["--bootstrap", broker.bootstrap, "--group", group, "--out", str(self.out)]
        argv += ["--interval-ms", str(interval_ms), *(a for t in topics for a in ("--topic", t))]
        self.server = ServerProcess(f"group watch {group}", argv, log=directory / f"watch-{group}.log")

    def latest(self) -> dict[str, Any] | None:
        import json

        try:
            lines = self.out.read_text().splitlines()
        except OSError:
            return None
        for line in reversed(lines):
            try:
                found: dict[str, Any] = json.loads(line)
                return found
            except ValueError:
                continue  # torn last line
        return None

    def __enter__(self) -> GroupWatch:
        self.server.start()
        return self

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.server.stop(kill=True)
