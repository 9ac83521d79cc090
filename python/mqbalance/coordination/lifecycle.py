"""What drives a member and what it tells its user: the event queue its one worker thread drains,
the state (with a condition to wait on), the user's callbacks, a stop flag and the time of the next
retry. The ZooKeeper parts (session, watches, claims, protocols) put events in and call back out
through it; none of them sees the others' threads.

Events are tuples, the first item naming the kind: ``("start",)``, ``("stop",)``, the connection's
``("connected",)`` / ``("suspended",)`` / ``("lost",)``, and the watches' ``("members",)``,
``("partitions", topic)``, ``("assignment",)``, ``("election",)``, ``("freed", tp)``.

>>> seen = []
>>> life = Lifecycle("owner", "c1", on_state=lambda member, state: seen.append((member, state)))
>>> life.set_state(MemberState.JOINING); life.set_state(MemberState.JOINING)
>>> seen  # a callback only on a change; the first argument is the member
[('owner', <MemberState.JOINING: 'JOINING'>)]
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from mqbalance.coordination.states import MemberState, RevokeReason
from mqbalance.kafka import TopicPartition

__all__ = ["Callback", "Event", "Lifecycle"]

log = logging.getLogger("mqbalance.coordination")

Callback = Callable[..., Any]
Event = tuple[Any, ...]


class Lifecycle:
    """The state, events and callbacks of the member ``owner`` (passed first to every callback)."""

    def __init__(
        self,
        owner: object,
        name: str,
        *,
        on_assigned: Callback | None = None,
        on_revoked: Callback | None = None,
        on_state: Callback | None = None,
    ) -> None:
        self.owner, self.name = owner, name
        self._on_assigned, self._on_revoked, self._on_state = on_assigned, on_revoked, on_state
        self.cond = threading.Condition(threading.RLock())
        self.state = MemberState.INIT
        self.events: queue.Queue[Event] = queue.Queue()
        self.stop = threading.Event()
        self.retry_at: float | None = None  # time.monotonic() of the next ("retry",), if any

    def set_state(self, state: MemberState) -> None:
        with self.cond:
            changed = state is not self.state
            self.state = state
            self.cond.notify_all()
        if changed:
            self._callback(self._on_state, state)

    def announce(self, shown: MemberState) -> None:
        """``on_state(shown)`` and wake the waiters without changing the state (the connection's
        SUSPENDED, or the state shown again once reconnected)."""
        self._callback(self._on_state, shown)
        with self.cond:
            self.cond.notify_all()

    def assigned(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._callback(self._on_assigned, offsets)

    def revoked(self, tps: frozenset[TopicPartition], reason: RevokeReason) -> None:
        self._callback(self._on_revoked, tps, reason)

    def retry_in(self, seconds: float) -> None:
        self.retry_at = time.monotonic() + seconds

    def _callback(self, fn: Callback | None, *args: Any) -> None:
        if fn is None:
            return
        try:
            fn(self.owner, *args)
        except Exception:
            log.exception("%s: callback %s raised", self.name, getattr(fn, "__name__", fn))
