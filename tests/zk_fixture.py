"""Helpers of the coordination tests (the server fixtures are in ``zk_plugin.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient


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
