"""ZooKeeper sessions: a short one for one-off reads and writes (status, topic setup), and a
member's long one — its connection, its registration ``ids/<client_id>`` and its lease.

A short session is connected within a timeout or a clear :class:`ZooKeeperUnreachableError`, and
always closed:

>>> with short_session("127.0.0.1:1", timeout=0.2) as client:  # nothing listens on port 1
...     pass
Traceback (most recent call last):
...
mqbalance.exceptions.ZooKeeperUnreachableError: no ZooKeeper server answered at 127.0.0.1:1 within 0.2 s

A member's session (:class:`MemberSession`) is where work is allowed: the lease runs until the send
time of the last answered request + ``LEASE_FRACTION`` × the session timeout, so with a 6 s session
a member whose last ping was sent at t = 100 s may work until t = 104.5 s, while ZooKeeper cannot
expire the session (and hand its partitions to anybody else) before t = 106 s.

A member disconnected for a whole session timeout gives its session up (:meth:`MemberSession.abandon`,
as Curator does): on a one-way link whose requests reach ZooKeeper but whose answers do not, every
reconnection attempt carries the session id and renews the session on the server, so it would never
expire and the member's partitions would stay with a member that cannot work them for as long as
the link stays broken. Two-way partitions are not affected: ZooKeeper has expired those sessions by
then (the last request it heard was sent before the disconnection).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.connection import ConnectionHandler
from kazoo.protocol.serialization import Connect
from kazoo.security import make_acl, make_digest_acl

from mqbalance.coordination.layout import GroupPaths, MemberInfo, encode_member
from mqbalance.coordination.lifecycle import Event
from mqbalance.coordination.states import Stats
from mqbalance.exceptions import (
    CoordinationAuthError,
    DuplicateClientIdError,
    NoPartitionsError,
    ZooKeeperUnreachableError,
)

__all__ = ["LEASE_FRACTION", "MemberSession", "digest_auth", "short_session"]

log = logging.getLogger("mqbalance.coordination")

#: Work is allowed until ``send time of the last answered request + LEASE_FRACTION × session timeout``:
#: ZooKeeper cannot expire the session (and give its partitions away) before ``send time + timeout``.
#: This assumes the server granted the requested timeout (it clamps it to [2, 20] × tickTime, and kazoo
#: does not expose the negotiated value): request a timeout inside that range.
LEASE_FRACTION = 0.75


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


#: What a request raises when the connection or the session went: the request may or may not have
#: been applied, and the member retries once connected again.
CONNECTION_LOST = (ConnectionLoss, SessionExpiredError, ConnectionClosedError)


def handshake_timeout(session_timeout: float) -> float:
    """How long a member waits for a server's answer to its connection handshake before it tries
    again: a sixth of the session, 2 s at least. kazoo waits the whole session timeout (divided by
    the number of hosts); a server that accepted the connection while it was starting and never
    answered (seen after a ``kill -9`` and restart) then costs the whole session.

    >>> handshake_timeout(36.0), handshake_timeout(6.0)
    (6.0, 2.0)
    """
    return max(2.0, session_timeout / 6)


class _BoundedHandshake(ConnectionHandler):  # type: ignore[misc]
    """kazoo's connection with the handshake's wait capped at ``handshake_s`` (see :func:`handshake_timeout`)."""

    handshake_s = 2.0

    def _invoke(self, timeout: float, request: Any, xid: int | None = None) -> Any:
        if isinstance(request, Connect):
            timeout = min(timeout, self.handshake_s)
        return super()._invoke(timeout, request, xid)


class MemberSession:
    """One member's connection to the group: the kazoo client, the registration of ``member`` under
    ``ids``, and the lease that gates work.

    The connection's changes become events (``("connected",)``, ``("suspended",)``, ``("lost",)``)
    in ``events``; ``fenced`` is set as soon as a session is lost (or replaced by a new one) and
    stays set until whatever the old session owned has been revoked. Every request is counted in
    ``stats``.
    """

    def __init__(
        self,
        hosts: str,
        paths: GroupPaths,
        member: MemberInfo,
        *,
        session_timeout: float,
        connect_timeout: float,
        auth: tuple[str, str] | None,
        stats: Stats,
        events: queue.Queue[Event],
    ) -> None:
        self.hosts, self.paths, self.member = hosts, paths, member
        self.client_id = member.client_id
        self.session_timeout, self.connect_timeout = session_timeout, connect_timeout
        self._auth = auth
        self.acl = (
            [make_digest_acl(auth[0], auth[1], all=True), make_acl("world", "anyone", read=True)] if auth else None
        )
        self.stats = stats
        self._events = events
        self.client: Any = None
        self.connected = False
        self.fenced = False  # a session was lost and its claims are not revoked yet: no work
        self.lease_until = 0.0
        self.session: int | None = None  # the session our ids node belongs to
        self.disconnected_since: float | None = None  # time.monotonic() of the last SUSPENDED, while it lasts
        self.abandoned: set[int] = set()  # sessions this member gave up (their nodes are its own)
        self._to_close: dict[int, bytes] = {}  # of those, id -> password: ZooKeeper may still keep them

    # ------------------------------------------------------------------ connection
    def connect(self) -> None:
        """Start the client; :class:`ZooKeeperUnreachableError` (client closed) if no server answers."""
        client = KazooClient(
            hosts=self.hosts,
            timeout=self.session_timeout,
            connection_retry={"max_tries": -1, "delay": 0.05, "backoff": 1.5, "max_delay": 0.5},
            auth_data=digest_auth(self._auth),
        )
        client._connection.__class__ = _BoundedHandshake  # kazoo builds its connection in __init__
        client._connection.handshake_s = handshake_timeout(self.session_timeout)
        self.client = client
        client.add_listener(self._on_connection)
        try:
            client.start(timeout=self.connect_timeout)
        except KazooTimeoutError:
            self.shutdown()
            raise ZooKeeperUnreachableError(
                f"no ZooKeeper server answered at {self.hosts} within {self.connect_timeout:g} s", self.hosts
            ) from None

    def shutdown(self) -> None:
        c = self.client
        if c is None:
            return
        self.connected = False
        try:
            c.stop()
        finally:
            c.close()

    def current(self) -> int | None:
        """The id of the client's session now (it differs from ``session`` after an expiry)."""
        cid = self.client.client_id
        return cid[0] if cid else None

    def _on_connection(self, st: str) -> None:  # kazoo's thread: flags and events only
        if st == KazooState.CONNECTED:
            cid = self.client.client_id if self.client is not None else None
            if self.session is not None and cid is not None and cid[0] != self.session:
                self.fenced = True  # a new session: whatever the old one owned is gone
            self.lease_until = time.monotonic() + LEASE_FRACTION * self.session_timeout
            self.connected = True
            self.disconnected_since = None
            self._events.put(("connected",))
        elif st == KazooState.SUSPENDED:
            self.connected = False
            self.disconnected_since = time.monotonic()
            self._events.put(("suspended",))
        elif st == KazooState.LOST:
            self.connected = False
            self.fenced = True
            self.disconnected_since = None
            self._events.put(("lost",))

    # ------------------------------------------------------------------ the lease
    def lease(self) -> float | None:
        """The ``time.monotonic()`` until which work is safe, or ``None`` if it is not now."""
        until = self.lease_until
        if not self.connected or self.fenced or time.monotonic() >= until:
            return None
        return until

    def lease_loop(self, stop: threading.Event) -> None:
        """Renew the lease with a cheap read every quarter of the session timeout until ``stop``;
        give the session up once disconnected for a whole session timeout (:meth:`abandon`)."""
        interval = self.session_timeout / 4
        path = self.paths.member(self.client_id)
        while not stop.wait(interval):
            since = self.disconnected_since
            if since is not None and time.monotonic() - since >= self.session_timeout and not stop.is_set():
                self.abandon()
            if not self.connected:
                continue
            sent = time.monotonic()
            try:
                self.client.exists_async(path).get(timeout=interval)
            except Exception:  # noqa: S112 - no answer: the lease is not renewed
                continue
            finally:
                self.stats.bump("lease_requests")
            if self.connected:
                self.lease_until = max(self.lease_until, sent + LEASE_FRACTION * self.session_timeout)

    def abandon(self) -> None:
        """Give the session up and start a new one: close the client (its close request, if it gets
        through, expires the session at once; otherwise nothing renews it any more and ZooKeeper
        expires it one session timeout later), then connect again with no session. The client's
        ``LOST`` revokes everything owned (reason ``SESSION_LOST``); the new session registers again,
        replacing the registration the old one may still hold (:meth:`register`)."""
        log.warning(
            "%s: disconnected for %.1f s (the session timeout): giving the session up and starting a new one",
            self.client_id,
            self.session_timeout,
        )
        self.disconnected_since = None
        self.fenced = True
        if self.session is not None:
            self.abandoned.add(self.session)
        # kazoo keeps the id and password while disconnected (its client_id says None then)
        sid, password = self.client._session_id, self.client._session_passwd
        if sid in self.abandoned:
            self._to_close[sid] = password
        self.stats.bump("sessions_abandoned")
        try:
            self.client.stop()
        finally:
            self.client.start_async()

    def close_abandoned(self) -> None:
        """End the sessions :meth:`abandon` gave up, once a new one is connected. A close request
        sent while the server was unreachable never arrived, and a server that restarted keeps
        every session it had, for one session timeout from its start: until then the old
        session's owner nodes block those partitions, and outlive this member if it leaves. So
        attach to each with its id and password, and close it: the server deletes its nodes at
        once. A session already expired is simply gone (the attach starts a new session, closed
        too); one that cannot be reached now expires on its own."""
        for sid, password in list(self._to_close.items()):
            client = KazooClient(
                hosts=self.hosts,
                timeout=self.session_timeout,
                client_id=(sid, password),
                connection_retry={"max_tries": 3, "delay": 0.05, "backoff": 2, "max_delay": 0.5},
                auth_data=digest_auth(self._auth),
            )
            try:
                self.stats.count()
                client.start(timeout=min(self.connect_timeout, self.session_timeout))
            except KazooTimeoutError:
                log.info("%s: could not reach abandoned session 0x%x to close it", self.client_id, sid)
                continue
            finally:
                try:
                    client.stop()  # the close request: the server ends the session and its nodes
                finally:
                    client.close()
            log.info("%s: closed abandoned session 0x%x", self.client_id, sid)
            del self._to_close[sid]
            self.stats.bump("abandoned_closed")

    # ------------------------------------------------------------------ joining the group
    def prepare(self, *, leader: bool) -> None:
        """Group nodes (with the ACL) and the subscribed topics' partition nodes must exist."""
        c, paths = self.client, self.paths
        try:
            self.stats.count()
            c.ensure_path("/consumers")
            for p in (paths.ids, paths.leader, paths.owners, paths.offsets):
                self.stats.count()
                c.ensure_path(p, acl=self.acl)
            for t in self.member.subscription:
                for p in (f"{paths.owners}/{t}", f"{paths.offsets}/{t}"):
                    self.stats.count()
                    c.ensure_path(p, acl=self.acl)
            if leader:
                self.stats.count()
                if c.exists(paths.assignment) is None:
                    try:
                        self.stats.count()
                        c.create(paths.assignment, b"", acl=self.acl)
                    except NodeExistsError:
                        pass
            for t in self.member.subscription:
                self.stats.count()
                raw = c.exists(GroupPaths.topic(t))
                if raw is None:
                    raise NoPartitionsError(
                        f"topic {t!r} has no partition node {GroupPaths.topic(t)} (create it with "
                        "mqbalance.coordination.set_partitions or `mqbalance zk-consume --topic T:N`)",
                        t,
                    )
        except NoAuthError as e:
            raise CoordinationAuthError(
                f"ZooKeeper refused to create the nodes of group {paths.group!r} (digest ACL): pass its auth",
                paths.group,
            ) from e

    def register(self) -> None:
        """Create ``ids/<client_id>`` (ephemeral) for this session; refuse an id held by another
        session, unless that is one this member abandoned (its node is deleted and created again)."""
        c = self.client
        path = self.paths.member(self.client_id)
        data = encode_member(self.member)
        session = c.client_id[0] if c.client_id else None
        sent = time.monotonic()
        for _ in range(3):
            try:
                self.stats.count()
                c.create(path, data, acl=self.acl, ephemeral=True)
                break
            except NodeExistsError:
                self.stats.count()
                stat = c.exists(path)
                if stat is None:
                    continue
                if stat.ephemeralOwner == session:
                    break
                if stat.ephemeralOwner in self.abandoned:
                    log.info("%s: replacing the registration of its abandoned session 0x%x", self.client_id,
                             stat.ephemeralOwner)  # fmt: skip
                    self.delete(path)
                    continue
                raise DuplicateClientIdError(
                    f"client id {self.client_id!r} is already registered in group {self.paths.group!r} by another "
                    f"live session (0x{stat.ephemeralOwner:x}): refusing to start a second member with the same id",
                    self.client_id,
                ) from None
            except NoAuthError as e:
                raise CoordinationAuthError(
                    f"ZooKeeper refused to register {path} (digest ACL on group {self.paths.group!r}): pass its auth",
                    path,
                ) from e
        self.session = session
        self.lease_until = max(self.lease_until, sent + LEASE_FRACTION * self.session_timeout)

    def delete(self, path: str) -> None:
        """Delete ``path`` if it exists (one counted request)."""
        try:
            self.stats.count()
            self.client.delete(path)
        except NoNodeError:
            pass
