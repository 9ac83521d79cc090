"""Java's answer on any case: a long-lived JVM of the harness (``tests/java``) that reads JSON lines
and writes one JSON line per request with what Apache RocketMQ's or Apache Kafka's own classes return.

Four processes, one per classpath, each a module-scoped fixture: :func:`oracle_rocketmq5` and
:func:`oracle_rocketmq4` (``io.mqbalance.harness.RocketmqOracle`` on the 5.3.3 / 4.9.8 client:
allocation strategies and ``Collections.sort``), :func:`oracle_kafka`
(``io.mqbalance.harness.KafkaOracle`` on Kafka 4.4.0: the four client-side assignors and the
broker's ``uniform`` and ``range``) and :func:`oracle_kafka_zk` (``io.mqbalance.harness.ZkOracle``
on Kafka 0.10.2.2: the ZooKeeper-era consumer's ``range`` and ``roundrobin``, run against a real
ZooKeeper server inside that JVM). Requests are the vector files' case shapes plus ``"op"``
(``tests/java/*/src/main/java/io/mqbalance/harness/*Oracle.java`` documents each); a batch is
written by one thread while the replies are read, so thousands of cases take one round trip.

Example (a started oracle):
    >>> oracle.ask([{"op": "sort", "mqs": [], "cids": ["b", "a"]}])  # doctest: +SKIP
    [{'id': 0, 'mqsSorted': [], 'cidsSorted': ['a', 'b']}]
"""

from __future__ import annotations

import json
import os
import select
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from java_harness import java_command
from server_process import ServerProcess

#: replies per batch must arrive within this many seconds of the previous reply (a loaded 2-core
#: machine answers thousands per second; a stuck JVM fails the test naming the case it is stuck on)
REPLY_TIMEOUT_S = 60.0


class OracleError(RuntimeError):
    """The oracle did not answer a case (timed out, exited, or could not read the request)."""


class JavaOracle:
    """One oracle JVM: :meth:`ask` sends a batch of requests and returns Java's replies, in order."""

    def __init__(self, module: str, main_class: str, *, log: Path, heap_mb: int = 256) -> None:
        props = {"user.home": str(log.parent)}  # RocketMQ's loggers write under ~/logs
        self.server = ServerProcess(
            f"java-oracle-{module}",
            java_command(module, main_class, heap_mb=heap_mb, properties=props),
            log=log,
            pipes=True,
        )
        self._buffer = b""
        self.started_in_s = 0.0
        self.version = ""

    def start(self) -> None:
        """Start the JVM and wait for its first answer (recorded: :attr:`started_in_s`, :attr:`version`)."""
        t0 = time.monotonic()
        self.server.start()
        (reply,) = self.ask([{"op": "version"}], timeout=120.0)
        self.started_in_s = time.monotonic() - t0
        self.version = reply["version"]

    def close(self) -> None:
        proc = self.server.proc
        if proc is not None and proc.stdin is not None and not proc.stdin.closed:
            try:
                proc.stdin.close()  # end of input: the oracle exits by itself
                proc.wait(timeout=10)
            except (OSError, Exception):  # noqa: BLE001 - stop() below ends it either way
                pass
        self.server.stop()
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()

    def ask(self, requests: Sequence[dict[str, Any]], *, timeout: float = REPLY_TIMEOUT_S) -> list[dict[str, Any]]:
        """Java's replies to ``requests``, in order. Each request's ``id`` is replaced by its index
        in the batch; an error names the case (its own ``id``) that got no answer."""
        lines = [json.dumps({**r, "id": i}, ensure_ascii=False).encode() + b"\n" for i, r in enumerate(requests)]
        return self._exchange(lines, requests, timeout=timeout, ordered=True)

    def ask_raw(self, lines: Sequence[bytes], *, timeout: float = REPLY_TIMEOUT_S) -> list[dict[str, Any]]:
        """The replies to ``lines`` sent exactly as given (one request per line, malformed ones too)."""
        return self._exchange(
            [line.rstrip(b"\n") + b"\n" for line in lines],
            [{"id": line} for line in lines],
            timeout=timeout,
            ordered=False,
        )

    def _exchange(
        self, lines: list[bytes], requests: Sequence[dict[str, Any]], *, timeout: float, ordered: bool
    ) -> list[dict[str, Any]]:
        proc = self.server.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None, "the oracle is not started"
        failure: list[BaseException] = []

        def write() -> None:
            try:
                assert proc.stdin is not None
                proc.stdin.write(b"".join(lines))
                proc.stdin.flush()
            except OSError as e:  # the reader reports the dead process with its log
                failure.append(e)

        writer = threading.Thread(target=write, name=f"{self.server.name}-writer", daemon=True)
        writer.start()
        replies: list[dict[str, Any]] = []
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while len(replies) < len(requests):
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line, self._buffer = self._buffer[:newline], self._buffer[newline + 1 :]
                reply = json.loads(line)
                k = len(replies)
                if ordered and reply.get("id") != k:
                    raise OracleError(f"{self.server.name}: reply out of order for case {_case(requests, k)}: {reply}")
                replies.append(reply)
                deadline = time.monotonic() + timeout
                continue
            ready, _, _ = select.select([fd], [], [], max(0.0, min(1.0, deadline - time.monotonic())))
            if ready:
                chunk = os.read(fd, 1 << 20)
                if chunk:
                    self._buffer += chunk
                    continue
            if not self.server.alive() or (ready and not chunk):
                raise OracleError(
                    f"{self.server.name} exited (status {proc.poll()}) before answering case "
                    f"{_case(requests, len(replies))}; its log ({self.server.log}):\n{self.server.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise OracleError(
                    f"{self.server.name} gave no answer to case {_case(requests, len(replies))} within "
                    f"{timeout:.0f} s; its log ({self.server.log}):\n{self.server.log_tail()}"
                )
        writer.join(timeout)
        if failure:
            raise OracleError(f"{self.server.name}: writing the batch failed: {failure[0]}")
        return replies


def _case(requests: Sequence[dict[str, Any]], k: int) -> str:
    r = requests[k]
    return f"#{k} (id {r.get('id')!r}, {json.dumps(r, ensure_ascii=False)[:300]})"


def _oracle(module: str, main_class: str, tmp: Path) -> Iterator[JavaOracle]:
    oracle = JavaOracle(module, main_class, log=tmp / f"{module}-oracle.log")
    try:
        oracle.start()
        yield oracle
    finally:
        oracle.close()


@pytest.fixture(scope="module")
def oracle_rocketmq5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaOracle]:
    """RocketMQ 5.3.3's allocation strategies and ordering."""
    yield from _oracle("rocketmq5", "io.mqbalance.harness.RocketmqOracle", tmp_path_factory.mktemp("oracle5"))


@pytest.fixture(scope="module")
def oracle_rocketmq4(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaOracle]:
    """RocketMQ 4.9.8's allocation strategies and ordering."""
    yield from _oracle("rocketmq4", "io.mqbalance.harness.RocketmqOracle", tmp_path_factory.mktemp("oracle4"))


@pytest.fixture(scope="module")
def oracle_kafka_zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaOracle]:
    """Kafka 0.10.2.2's ZooKeeper-era consumer assignors, on a ZooKeeper server inside the JVM."""
    yield from _oracle("kafka-zk", "io.mqbalance.harness.ZkOracle", tmp_path_factory.mktemp("oraclezk"))


@pytest.fixture(scope="module")
def oracle_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaOracle]:
    """Kafka 4.4.0's client-side and broker-side assignors."""
    yield from _oracle("kafka", "io.mqbalance.harness.KafkaOracle", tmp_path_factory.mktemp("oraclek"))
