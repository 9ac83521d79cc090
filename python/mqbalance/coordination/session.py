"""A short ZooKeeper session for one-off reads and writes (status, topic setup): connected within
a timeout or a clear :class:`ZooKeeperUnreachableError`, always closed.

>>> with short_session("127.0.0.1:1", timeout=0.2) as client:  # nothing listens on port 1
...     pass
Traceback (most recent call last):
...
mqbalance.coordination.errors.ZooKeeperUnreachableError: no ZooKeeper server answered at 127.0.0.1:1 within 0.2 s
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError

from mqbalance.coordination.errors import ZooKeeperUnreachableError

__all__ = ["digest_auth", "short_session"]


def digest_auth(auth: tuple[str, str] | None) -> list[tuple[str, str]] | None:
    """kazoo's ``auth_data`` for ``(user, password)`` digest credentials."""
    return [("digest", f"{auth[0]}:{auth[1]}")] if auth else None


@contextmanager
def short_session(hosts: str, *, timeout: float, auth: tuple[str, str] | None = None) -> Iterator[KazooClient]:
    """A started client on ``hosts`` (``timeout`` seconds to connect), stopped and closed on exit."""
    client = KazooClient(hosts=hosts, timeout=max(timeout, 2.0), auth_data=digest_auth(auth))
    try:
        try:
            client.start(timeout=timeout)
        except KazooTimeoutError:
            raise ZooKeeperUnreachableError(
                f"no ZooKeeper server answered at {hosts} within {timeout:g} s", hosts
            ) from None
        yield client
    finally:
        client.stop()
        client.close()
