"""A throwaway standalone ZooKeeper server on loopback, for tests, benchmarks and demos.

It runs the server main class from the Debian package ``zookeeper`` (``apt-get install -y
--no-install-recommends zookeeper``; elsewhere point ``MQBALANCE_ZOOKEEPER_CLASSPATH`` at the
server jars) with a generated ``zoo.cfg``: a free port on 127.0.0.1, a temporary data dir,
``tickTime`` 500 ms (sessions down to 1 s). It is started and stopped by PID; ``restart()`` keeps
port and data, so sessions and ephemeral nodes survive it like a real server restart.

>>> ZooKeeperServer(tick_ms=0)
Traceback (most recent call last):
...
mqbalance.exceptions.InvalidCoordinationConfigError: tick_ms must be an int >= 1, got 0
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from mqbalance.exceptions import (
    InvalidCoordinationConfigError,
    ZooKeeperNotFoundError,
    ZooKeeperUnreachableError,
)

__all__ = ["ZooKeeperServer", "find_classpath", "four_letter"]

DEBIAN_JARS = ("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-log4j12.jar", "log4j-1.2.jar")
JAVA_DIR = Path("/usr/share/java")
INSTALL_HINT = (
    "install the ZooKeeper server: `apt-get install -y --no-install-recommends zookeeper` (Debian/Ubuntu, as root), "
    "or set MQBALANCE_ZOOKEEPER_CLASSPATH to the server's jars"
)


def find_classpath() -> str:
    """The server classpath: ``$MQBALANCE_ZOOKEEPER_CLASSPATH`` or the Debian jars."""
    env = os.environ.get("MQBALANCE_ZOOKEEPER_CLASSPATH")
    if env:
        return env
    jars = [JAVA_DIR / j for j in DEBIAN_JARS if (JAVA_DIR / j).exists()]
    if not (JAVA_DIR / "zookeeper.jar").exists():
        raise ZooKeeperNotFoundError(f"no ZooKeeper server jar in {JAVA_DIR}: {INSTALL_HINT}", str(JAVA_DIR))
    return ":".join(str(j) for j in jars)


def four_letter(host: str, port: int, word: str, timeout: float = 1.0) -> str:
    """Send a four-letter command (``srvr``, ``ruok``, ``cons`` …) and return the answer ("" on failure)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ZooKeeperServer:
    """``with ZooKeeperServer() as zk: ... zk.hosts`` — ``"127.0.0.1:<port>"``."""

    def __init__(
        self,
        *,
        port: int | None = None,
        tick_ms: int = 500,
        data_dir: str | os.PathLike[str] | None = None,
        java: str = "java",
        heap_mb: int = 256,
    ) -> None:
        if not isinstance(tick_ms, int) or tick_ms < 1:
            raise InvalidCoordinationConfigError(f"tick_ms must be an int >= 1, got {tick_ms!r}", tick_ms)
        self.tick_ms = tick_ms
        self.port = port or _free_port()
        self._own_dir = data_dir is None
        self.dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="mqbalance-zk-"))
        self.java = java
        self.heap_mb = heap_mb
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def __repr__(self) -> str:
        return f"ZooKeeperServer(hosts={self.hosts!r}, pid={self.pid})"

    def _write_config(self) -> Path:
        (self.dir / "data").mkdir(parents=True, exist_ok=True)
        cfg = self.dir / "zoo.cfg"
        cfg.write_text(
            f"tickTime={self.tick_ms}\ndataDir={self.dir / 'data'}\nclientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n"
            "maxClientCnxns=0\nmaxSessionTimeout=60000\n",
            encoding="utf-8",
        )
        (self.dir / "log4j.properties").write_text(
            "log4j.rootLogger=WARN, F\nlog4j.appender.F=org.apache.log4j.FileAppender\n"
            f"log4j.appender.F.File={self.dir / 'server.log'}\n"
            "log4j.appender.F.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.F.layout.ConversionPattern=%d %p %c{1}: %m%n\n",
            encoding="utf-8",
        )
        return cfg

    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        """Start and wait until ``srvr`` reports ``Mode: standalone``."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        if shutil.which(self.java) is None:
            raise ZooKeeperNotFoundError(f"no Java runtime {self.java!r} on PATH (ZooKeeper needs Java 11+)", self.java)
        cfg = self._write_config()
        cmd = [
            self.java,
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            f"-Dlog4j.configuration=file:{self.dir / 'log4j.properties'}",
            "-Dzookeeper.admin.enableServer=false",
            "-cp",
            find_classpath(),
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(cfg),
        ]
        with open(self.dir / "stdout.log", "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.starts += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = (self.dir / "stdout.log").read_text(errors="replace")[-2000:]
                self.proc = None
                raise ZooKeeperUnreachableError(f"ZooKeeper exited during start-up:\n{log}", self.hosts)
            if "Mode: standalone" in four_letter("127.0.0.1", self.port, "srvr", 0.5):
                return self
            time.sleep(0.05)
        self.stop()
        raise ZooKeeperUnreachableError(f"ZooKeeper did not serve on {self.hosts} within {timeout:g} s", self.hosts)

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server process (``kill=True``: SIGKILL, no clean shutdown)."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def restart(self, *, kill: bool = True, down_s: float = 0.0) -> None:
        """Stop (by default with SIGKILL), stay down ``down_s`` seconds, start again on the same port and data."""
        self.stop(kill=kill)
        if down_s > 0:
            time.sleep(down_s)
        self.start()

    def close(self) -> None:
        """Stop and remove the temporary directory."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ZooKeeperServer:
        try:
            return self.start()
        except BaseException:
            self.close()  # no temporary directory left behind
            raise

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
