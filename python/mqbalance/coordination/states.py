"""The vocabulary of a group member: its modes, states, revocation reasons and counters.

>>> stats = Stats()
>>> stats.count(ops=2); stats.bump("conflicts")
>>> s = stats.snapshot()
>>> (s.requests, s.operations, s.conflicts)
(1, 2, 1)
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, fields

__all__ = ["Mode", "MemberState", "RevokeReason", "MemberStats", "Stats"]


class Mode(enum.StrEnum):
    """How the group decides: every member for itself (Kafka 0.8's ZooKeeper consumer), or one elected leader."""

    EVERY_MEMBER = "every-member"
    LEADER = "leader"


class MemberState(enum.StrEnum):
    """Like kazoo's ``SetPartitioner`` states, plus the connection's."""

    INIT = "INIT"  #: created, not started
    JOINING = "JOINING"  #: connecting, registering (again after a lost session)
    REBALANCING = "REBALANCING"  #: releasing / computing / claiming (leader mode: some claims pending)
    ACQUIRED = "ACQUIRED"  #: owns its whole share; work on it
    SUSPENDED = "SUSPENDED"  #: connection lost, session may live: work paused
    FAILED = "FAILED"  #: every rebalance attempt conflicted (retried later), or the id was taken
    CLOSED = "CLOSED"


class RevokeReason(enum.StrEnum):
    """Why ``on_revoked`` is called."""

    REBALANCE = "rebalance"  #: the owner nodes are still held: commit now, they are deleted after
    SESSION_LOST = "session-lost"  #: the owner nodes are gone with the session: commits will be fenced
    CLOSE = "close"  #: graceful leave: commit now, the nodes are deleted after


@dataclass
class MemberStats:
    """Counters since start. ``requests`` are round trips to ZooKeeper for coordination (a multi
    counts once, its operations in ``operations``); offset commits and lease pings are counted
    apart (``commits``, ``lease_requests``)."""

    requests: int = 0
    operations: int = 0
    notifications: int = 0
    conflicts: int = 0
    retries: int = 0
    rebalances: int = 0
    claimed: int = 0
    released: int = 0
    published: int = 0
    commits: int = 0
    fenced_commits: int = 0
    lease_requests: int = 0
    sessions_abandoned: int = 0  #: sessions given up after a whole session timeout disconnected
    abandoned_closed: int = 0  #: of those, ended by this member once connected again (their nodes gone at once)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class Stats:
    """The :class:`MemberStats` of one member, updated from its threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats = MemberStats()

    def count(self, ops: int = 1) -> None:
        """One round trip to ZooKeeper carrying ``ops`` operations."""
        with self._lock:
            self._stats.requests += 1
            self._stats.operations += ops

    def bump(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self._stats, name, getattr(self._stats, name) + n)

    def snapshot(self) -> MemberStats:
        with self._lock:
            return MemberStats(**self._stats.as_dict())
