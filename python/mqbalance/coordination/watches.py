"""What a member watches, and the reads that set the watches: the member list under ``ids``, the
partition nodes of topics, and (through :meth:`Watches.watcher`) any other node. A fired watch
becomes an event for the member's event loop.

kazoo keeps watchers in a set, so each watched thing has one callback object: reading a node again
with the same key never piles up notifications. The reads keep what they read (the leader reads
incrementally); :meth:`Watches.forget` drops it.

>>> import queue
>>> events = queue.Queue()
>>> w = Watches(None, events, Stats(), "c1")
>>> w.watcher("members", ("members",)) is w.watcher("members", ("members",))
True
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable, Iterable
from typing import Any

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType, WatchedEvent

from mqbalance.coordination.layout import GroupPaths, MemberInfo, parse_member, parse_partitions
from mqbalance.coordination.lifecycle import Event
from mqbalance.coordination.session import MemberSession
from mqbalance.coordination.states import Stats

__all__ = ["Watches"]

log = logging.getLogger("mqbalance.coordination")


class Watches:
    """Watched reads through ``session`` (its ``client`` and ``paths``); fired watches go to ``events``."""

    def __init__(self, session: MemberSession, events: queue.Queue[Event], stats: Stats, name: str) -> None:
        self._session, self._events, self._stats, self._name = session, events, stats, name
        self._watchers: dict[Any, Callable[[WatchedEvent], None]] = {}
        self._members: dict[str, MemberInfo | None] = {}
        self._partitions: dict[str, dict[int, int]] = {}

    def watcher(self, key: Any, event: Event) -> Callable[[WatchedEvent], None]:
        """One callback object per watched thing, putting ``event`` on the queue when it fires."""
        w = self._watchers.get(key)
        if w is None:

            def w(ev: WatchedEvent) -> None:
                if ev.type == EventType.NONE:  # kazoo firing watchers at a session reset
                    return
                self._stats.bump("notifications")
                self._events.put(event)

            self._watchers[key] = w
        return w

    def forget(self) -> None:
        """Drop what was read: the next reads go to ZooKeeper (and watch again)."""
        self._members.clear()
        self._partitions.clear()

    def forget_partitions(self, topic: str) -> None:
        self._partitions.pop(topic, None)

    def read_members(self, *, cached: bool) -> dict[str, MemberInfo]:
        """The registered members (sorted by id; malformed registrations left out), watching the
        list. ``cached``: read only the members not read before."""
        c, paths = self._session.client, self._session.paths
        self._stats.count()
        children = c.get_children(paths.ids, watch=self.watcher("members", ("members",)))
        if not cached:
            self._members = {}
        for gone in set(self._members) - set(children):
            del self._members[gone]
        new = [cid for cid in children if cid not in self._members]
        asyncs = [(cid, c.get_async(paths.member(cid))) for cid in new]
        for cid, a in asyncs:
            self._stats.count()
            try:
                raw, _ = a.get()
            except NoNodeError:
                continue
            self._members[cid] = parse_member(paths.member(cid), cid, raw)
        return {cid: m for cid, m in sorted(self._members.items()) if m is not None}

    def read_partitions(self, topics: Iterable[str], *, cached: bool) -> dict[str, dict[int, int]]:
        """``{topic: {partition: leader broker}}``, watching each partition node (``{}`` for a topic
        without one, watched for its creation). ``cached``: read only topics not read before."""
        c = self._session.client
        out: dict[str, dict[int, int]] = {}
        for t in sorted(set(topics)):
            if cached and t in self._partitions:
                out[t] = self._partitions[t]
                continue
            path = GroupPaths.topic(t)
            w = self.watcher(("partitions", t), ("partitions", t))
            try:
                self._stats.count()
                raw, _ = c.get(path, watch=w)
                parts = parse_partitions(raw, path) or {}
            except NoNodeError:
                log.warning("%s: topic %s has no partition node %s: nothing to consume", self._name, t, path)
                self._stats.count()
                if c.exists(path, watch=w) is not None:
                    self._events.put(("partitions", t))
                parts = {}
            self._partitions[t] = out[t] = parts
        return out
