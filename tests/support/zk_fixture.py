"""Helpers of the coordination tests (the server fixtures are in ``zk_plugin.py``), and the ZooKeeper
ensemble of the network-fault tests (:class:`ZooKeeperEnsemble`)."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from mqbalance.coordination.zkserver import find_classpath, four_letter


def wait_until(predicate: Callable[[], Any], timeout: float = 15.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


def expire_session(hosts: str, client: KazooClient) -> None:
    """Expire ``client``'s session the way ZooKeeper's own tests do: open the same session from a
    second connection and close it there."""
    other = KazooClient(hosts=hosts, client_id=client.client_id, timeout=5.0)
    other.start(timeout=10)
    other.stop()
    other.close()


class ZooKeeperEnsemble:
    """ZooKeeper servers from the Debian package, one per network namespace (``nodes``: the
    :class:`nemesis_net.Node` of each), as production runs them: ``len(nodes) == 1`` is a standalone
    server, 3 a quorum (``server.N`` lines, ``myid``). Each listens on its namespace's address, port
    2181 for clients, 2888/3888 for its peers, so every byte between clients and servers, and between
    servers, crosses the namespaces' veths (and can be cut there). Timers for fast failover:
    ``tickTime`` 500 ms (sessions from 1 s), ``syncLimit`` 2 ticks (a follower cut off from its
    leader gives up after 1 s), election connections time out after 1 s. Started and stopped by PID.
    """

    CLIENT_PORT = 2181

    def __init__(self, nodes: list[Any], directory: Path, *, tick_ms: int = 500) -> None:
        self.nodes, self.dir, self.tick_ms = nodes, directory, tick_ms
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * len(nodes)

    @property
    def hosts(self) -> str:
        return ",".join(f"{n.addr}:{self.CLIENT_PORT}" for n in self.nodes)

    def host(self, i: int) -> str:
        return f"{self.nodes[i].addr}:{self.CLIENT_PORT}"

    def _config(self, i: int) -> Path:
        d = self.dir / f"zk{i}"
        (d / "data").mkdir(parents=True, exist_ok=True)
        lines = [
            f"tickTime={self.tick_ms}",
            f"dataDir={d / 'data'}",
            f"clientPort={self.CLIENT_PORT}",
            f"clientPortAddress={self.nodes[i].addr}",
            "initLimit=10",
            "syncLimit=2",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            "maxClientCnxns=0",
            "maxSessionTimeout=60000",
        ]
        if len(self.nodes) > 1:
            lines += [f"server.{k + 1}={n.addr}:2888:3888" for k, n in enumerate(self.nodes)]
            (d / "data" / "myid").write_text(f"{i + 1}\n")
        (d / "zoo.cfg").write_text("\n".join(lines) + "\n")
        (d / "log4j.properties").write_text(
            "log4j.rootLogger=INFO, F\nlog4j.appender.F=org.apache.log4j.FileAppender\n"
            f"log4j.appender.F.File={d / 'server.log'}\n"
            "log4j.appender.F.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.F.layout.ConversionPattern=%d %p %c{1}: %m%n\n"
        )
        return d

    def start_server(self, i: int) -> None:
        d = self._config(i)
        cmd = [
            "java",
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            f"-Dlog4j.configuration=file:{d / 'log4j.properties'}",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.cnxTimeout=1000",
            "-cp",
            find_classpath(),
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            str(d / "zoo.cfg"),
        ]
        self.procs[i] = self.nodes[i].popen(cmd, log=d / "stdout.log")

    def mode(self, i: int) -> str | None:
        """``leader``, ``follower``, ``standalone``, or ``None`` while server ``i`` does not serve."""
        m = re.search(r"Mode: (\w+)", four_letter(self.nodes[i].addr, self.CLIENT_PORT, "srvr", 0.5))
        return m.group(1) if m else None

    def leader(self) -> int | None:
        for i in range(len(self.nodes)):
            if self.mode(i) in ("leader", "standalone"):
                return i
        return None

    def clients_of(self, i: int) -> set[str]:
        """The client addresses connected to server ``i`` (its ``cons`` list)."""
        return set(re.findall(r"/([\d.]+):\d+\[", four_letter(self.nodes[i].addr, self.CLIENT_PORT, "cons", 0.5)))

    def serving(self) -> bool:
        modes = [self.mode(i) for i in range(len(self.nodes))]
        if len(self.nodes) == 1:
            return modes == ["standalone"]
        return all(m in ("leader", "follower") for m in modes) and modes.count("leader") == 1

    def start(self, timeout: float = 60.0) -> ZooKeeperEnsemble:
        """Start every server and wait until all serve (one leader, the rest followers)."""
        for i in range(len(self.nodes)):
            self.start_server(i)
        deadline = time.monotonic() + timeout
        while not self.serving():
            for i, p in enumerate(self.procs):
                if p is not None and p.poll() is not None:
                    log = (self.dir / f"zk{i}" / "stdout.log").read_text(errors="replace")[-2000:]
                    raise AssertionError(f"ZooKeeper server {i} exited during start-up:\n{log}")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"ZooKeeper ensemble {self.hosts} not serving within {timeout:g} s: modes "
                    f"{[self.mode(i) for i in range(len(self.nodes))]}"
                )
            time.sleep(0.1)
        return self

    def stop_server(self, i: int) -> None:
        p, self.procs[i] = self.procs[i], None
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)

    def close(self) -> None:
        for i in range(len(self.nodes)):
            self.stop_server(i)

    def logs(self) -> str:
        """The tail of every server's log (for a failure message)."""
        out = []
        for i in range(len(self.nodes)):
            f = self.dir / f"zk{i}" / "server.log"
            if f.exists():
                out.append(f"--- zk{i} ({self.nodes[i].addr})\n" + f.read_text(errors="replace")[-3000:])
        return "\n".join(out)
