"""Kafka consumer groups of ``mqbalance kafka-consume`` processes (:class:`KafkaGroup`, :class:`Member`)
on any Kafka broker, and Tansu (a Kafka-protocol broker in Rust; ``make tansu`` builds it into
``~/.cache/mqbalance/tansu-<version>``, ``MQBALANCE_TANSU_HOME`` overrides the place), which only the
benchmarks ``benches/kafka_rebalance.py`` and ``benches/kafka_snapshot_scale.py`` use now: the tests
run on Apache Kafka itself (``kafka_java_cluster.py``).

Where Tansu 0.6.0 differs from Apache Kafka (measured): no join barrier (a JoinGroup is answered at
once with the members known so far; a generation number can carry two assignments); no
``CreatePartitions``; DescribeGroups answers members without their metadata or assignment.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import server_process
from server_process import free_port

VERSION = "0.6.0"
HOME = Path(os.environ.get("MQBALANCE_TANSU_HOME") or Path.home() / ".cache" / "mqbalance" / f"tansu-{VERSION}")
BIN = HOME / "bin" / "tansu"


def _serves(port: int) -> bool:
    """A Kafka ApiVersions request (v0, correlation id 7) answered with the same correlation id."""
    request = (
        (18).to_bytes(2, "big") + (0).to_bytes(2, "big") + (7).to_bytes(4, "big") + (-1).to_bytes(2, "big", signed=True)
    )
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
            s.sendall(len(request).to_bytes(4, "big") + request)
            head = s.recv(8)
            return len(head) == 8 and int.from_bytes(head[4:8], "big") == 7
    except OSError:
        return False


class TansuBroker:
    """``with TansuBroker() as b: b.bootstrap`` — one broker on ``127.0.0.1:<free port>``."""

    def __init__(self, *, start_timeout: float = 30.0) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="mqbalance-tansu-"))
        self.port = free_port()
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def log_tail(self, n: int = 3000) -> str:
        try:
            return (self.dir / "out.log").read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def start(self) -> TansuBroker:
        if not BIN.exists():
            raise RuntimeError(
                f"{BIN} is missing: run `make tansu` (or set MQBALANCE_TANSU_HOME to the directory holding bin/tansu)"
            )
        url = f"tcp://127.0.0.1:{self.port}"
        cmd = [str(BIN), "broker", "--listener-url", url, "--advertised-listener-url", url]
        cmd += ["--storage-engine", "memory://tansu/"]
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
        with open(self.dir / "out.log", "ab") as out:
            self.proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.dir,
                env=env,
                start_new_session=True,  # a Ctrl-C in the terminal is the test run's, not the server's
            )
        server_process.track("tansu", self.proc)
        deadline = time.monotonic() + self.start_timeout
        while not _serves(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"tansu exited with code {self.proc.returncode}; its log:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"tansu did not serve on {self.bootstrap} within {self.start_timeout:g} s\n{self.log_tail()}"
                )
            time.sleep(0.05)
        return self

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        if proc is not None:
            server_process.untrack(proc)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> TansuBroker:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


MQBALANCE = Path(sys.executable).parent / "mqbalance"


class Member:
    """One ``mqbalance kafka-consume`` process, by PID, recording into ``records``."""

    def __init__(self, name: str, proc: subprocess.Popen[bytes], records: Path, impl: str, assignor: str) -> None:
        self.name, self.proc, self.records, self.impl, self.assignor = name, proc, records, impl, assignor

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, *, timeout: float = 30.0) -> int:
        """SIGTERM: a graceful leave (revoke, commit, LeaveGroup); waits for the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise RuntimeError(f"member {self.name} did not leave within {timeout:g} s") from None

    def kill(self) -> float:
        """``kill -9``: nothing is said to the broker; returns the ``time.monotonic()`` of the kill."""
        t = time.monotonic()
        self.proc.kill()
        self.proc.wait(10)
        return t


class KafkaGroup:
    """Members of one consumer group, each a separate ``mqbalance kafka-consume`` process.

    >>> # with KafkaGroup(broker, "g", tmp_path) as g: g.start("m1", ["t"], "sticky"); ...
    """

    def __init__(
        self,
        broker: TansuBroker,
        group: str,
        directory: Path,
        *,
        session_timeout_ms: int = 4_000,
        heartbeat_interval_ms: int = 400,
        max_poll_interval_ms: int = 8_000,
    ) -> None:
        self.broker, self.group, self.dir = broker, group, directory
        self.timeouts = (session_timeout_ms, heartbeat_interval_ms, max_poll_interval_ms)
        self.members: dict[str, Member] = {}

    def start(
        self,
        name: str,
        topics: list[str],
        assignor: str,
        *,
        impl: str = "mqbalance",
        extra_topics: tuple[str, ...] = (),
        bootstrap: str | None = None,
        command_config: Path | None = None,
    ) -> Member:
        """``bootstrap`` (default: the broker's) with ``command_config``, a client properties file: a
        secured listener."""
        records = self.dir / f"{name}.jsonl"
        s, h, p = self.timeouts
        cmd = [
            str(MQBALANCE),
            "kafka-consume",
            "--bootstrap",
            bootstrap or self.broker.bootstrap,
            "--group",
            self.group,
        ]
        if command_config is not None:
            cmd += ["--command-config", str(command_config)]
        cmd += [a for t in topics for a in ("--topic", t)] + [a for t in extra_topics for a in ("--extra-topic", t)]
        cmd += ["--assignor", assignor, "--impl", impl, "--client-id", name, "--record", str(records)]
        cmd += ["--session-timeout-ms", str(s), "--heartbeat-interval-ms", str(h), "--max-poll-interval-ms", str(p)]
        with open(self.dir / f"{name}.log", "ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        m = self.members[name] = Member(name, proc, records, impl, assignor)
        return m

    def live(self) -> list[Member]:
        return [m for m in self.members.values() if m.alive()]

    def close(self) -> None:
        for m in self.members.values():
            if m.alive():
                m.proc.kill()
                m.proc.wait(10)

    def __enter__(self) -> KafkaGroup:
        return self

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
