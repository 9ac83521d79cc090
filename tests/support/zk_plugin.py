"""A real ZooKeeper server for the coordination tests (the Debian package ``zookeeper``; ``make
test`` installs it). Started by PID on a free loopback port with a temporary data dir; a test that
cannot start it fails — it never skips. Use them with ``pytest_plugins = ["zk_plugin"]``."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

import server_process
from mqbalance.coordination import ZooKeeperServer


@pytest.fixture(scope="session")
def zk_server() -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tick_ms=500, port=server_process.free_port())
    proc = None
    try:
        server.start()
        proc = server.proc
        if proc is not None:  # a run killed mid-way leaves it to the next run's sweep
            server_process.track("zookeeper (session)", proc)
        yield server
    finally:
        server.close()
        if proc is not None:
            server_process.untrack(proc)


@pytest.fixture
def zk(zk_server: ZooKeeperServer) -> Iterator[KazooClient]:
    """An admin client on the session server."""
    client = KazooClient(hosts=zk_server.hosts, timeout=5.0)
    client.start(timeout=10)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def group(request: pytest.FixtureRequest) -> str:
    """A group name unique to the test."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)[:80]
