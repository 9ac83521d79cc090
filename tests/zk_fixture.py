"""A real ZooKeeper server for the coordination tests (the Debian package ``zookeeper``; ``make
test`` installs it). Started by PID on a free loopback port with a temporary data dir; a test that
cannot start it fails — it never skips. Import the fixtures into a test module to use them."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from mqbalance.coordination import ZooKeeperServer


@pytest.fixture(scope="session")
def zk_server() -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tick_ms=500)
    try:
        server.start()
        yield server
    finally:
        server.close()


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
