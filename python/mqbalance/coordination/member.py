"""``GroupMember``: one consumer of a group that balances its partitions with the others through
ZooKeeper, in one of two modes — ``"every-member"`` (Kafka 0.8's ``ZookeeperConsumerConnector``,
:mod:`~mqbalance.coordination.every_member`) or ``"leader"`` (one elected leader publishes
generations, :mod:`~mqbalance.coordination.leader`).

``GroupMember`` is the public object; it checks its arguments and composes the parts, each one
concept:

* :mod:`~mqbalance.coordination.session` — the connection, the registration ``ids/<client_id>``
  (a duplicated id is refused) and the session lease: :meth:`GroupMember.may_work` is false as
  soon as the connection is suspended, the session is lost, or no request has been answered for ¾
  of the session timeout, so a paused member stops before ZooKeeper can hand its partitions away;
* :mod:`~mqbalance.coordination.watches` — the watched reads (members, partition nodes);
* :mod:`~mqbalance.coordination.claims` — owner nodes, claims and fenced offset commits (a
  zombie's late commit fails and never overwrites its successor's progress);
* :mod:`~mqbalance.coordination.lifecycle` — the state, the event queue and the user's callbacks;
* the protocol of the mode, which turns events into releases and claims.

One thread drains the events (watches and connection changes) and runs the protocol; another
renews the lease. With ``auth`` the group's nodes carry digest ACLs (world-readable, writable only
with the credentials).

>>> import mqbalance.coordination as c
>>> c.GroupMember("127.0.0.1:1", "g", ["t"], session_timeout=0)
Traceback (most recent call last):
...
mqbalance.exceptions.InvalidCoordinationConfigError: session_timeout must be > 0 seconds, got 0
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol

from kazoo.exceptions import KazooException

from mqbalance.allocation.registry import StrategySpec, Use
from mqbalance.coordination.claims import Claims
from mqbalance.coordination.every_member import EveryMemberProtocol
from mqbalance.coordination.layout import GroupPaths, MemberInfo, _check_name
from mqbalance.coordination.leader import LeaderProtocol
from mqbalance.coordination.lifecycle import Callback, Event, Lifecycle
from mqbalance.coordination.session import CONNECTION_LOST, MemberSession
from mqbalance.coordination.states import MemberState, MemberStats, Mode, RevokeReason, Stats
from mqbalance.coordination.watches import Watches
from mqbalance.exceptions import (
    CoordinationError,
    InvalidCoordinationConfigError,
    RebalanceFailedError,
    ZooKeeperUnreachableError,
)
from mqbalance.kafka import TopicPartition

__all__ = ["GroupMember"]

log = logging.getLogger("mqbalance.coordination")


class GroupProtocol(Protocol):
    """What a mode does with the events (:class:`EveryMemberProtocol`, :class:`LeaderProtocol`)."""

    generation: int
    is_leader: bool
    election_node: str | None

    def handle(self, kinds: set[str], events: list[Event], *, new_session: bool) -> None: ...

    def rewatch(self, kinds: set[str]) -> None: ...

    def session_lost(self) -> None: ...


def _positive(name: str, value: Any, *, integer: bool = False, zero_ok: bool = False) -> None:
    bad = isinstance(value, bool) or not isinstance(value, int | float) or value != value
    if not bad and integer and not isinstance(value, int):
        bad = True
    if bad or (value < 0 if zero_ok else value <= 0):
        unit = "" if integer else " seconds"
        raise InvalidCoordinationConfigError(
            f"{name} must be {'>= 0' if zero_ok else '> 0'}{unit}, got {value!r}", value
        )


class GroupMember:
    """A member of consumer group ``group`` on the ZooKeeper ensemble ``hosts``.

    ``topics``: topic names, or ``{topic: streams}`` (Kafka's consumer threads per topic; used by
    ``range`` / ``roundrobin``). ``strategy``: any configuration :meth:`StrategySpec.parse` reads
    (``"AVG"``, ``{"name": "CONSISTENT_HASH", "virtualNodeCnt": 5}``, a spec; ``strategy_params`` are
    more of its fields) of a strategy the mode can run: RocketMQ's, ``range``, ``roundrobin``, and in
    leader mode also ``STICKY`` and Kafka's ``sticky`` (:mod:`mqbalance.coordination.assignment`); any
    other is refused here with :class:`~mqbalance.exceptions.UnsupportedStrategyError`.
    Callbacks (called on one thread, in order): ``on_assigned(member, {TopicPartition: committed
    offset})`` with what was just acquired; ``on_revoked(member, frozenset[TopicPartition],
    RevokeReason)`` before it is released — stop work on those before returning (commit inside
    with :meth:`commit` unless the reason is ``SESSION_LOST``); ``on_state(member, MemberState)``.

    Kafka's defaults: ``session_timeout`` 6 s, ``rebalance_max_retries`` 4, ``rebalance_backoff_ms``
    2000. After the last failed attempt Kafka waits for the next change; this member also re-arms
    one rebalance ``rebalance_backoff_ms`` later, so a group cannot stay partly unowned.

    Use as a context manager (``with GroupMember(...) as m:``) or ``start()`` / ``close()``.
    """

    def __init__(
        self,
        hosts: str,
        group: str,
        topics: Sequence[str] | Mapping[str, int],
        *,
        client_id: str | None = None,
        strategy: str | Mapping[str, Any] | StrategySpec = "AVG",
        strategy_params: Mapping[str, Any] | None = None,
        mode: str | Mode = Mode.EVERY_MEMBER,
        on_assigned: Callback | None = None,
        on_revoked: Callback | None = None,
        on_state: Callback | None = None,
        session_timeout: float = 6.0,
        connect_timeout: float | None = None,
        rebalance_max_retries: int = 4,
        rebalance_backoff_ms: int = 2000,
        auth: tuple[str, str] | None = None,
    ) -> None:
        _positive("session_timeout", session_timeout)
        if connect_timeout is not None:
            _positive("connect_timeout", connect_timeout)
        _positive("rebalance_max_retries", rebalance_max_retries, integer=True)
        _positive("rebalance_backoff_ms", rebalance_backoff_ms, integer=True, zero_ok=True)
        if not isinstance(hosts, str) or not hosts:
            raise InvalidCoordinationConfigError(f"hosts must be 'host:port[,host:port...]', got {hosts!r}", hosts)
        try:
            self.mode = Mode(mode)
        except ValueError:
            raise InvalidCoordinationConfigError(
                f"unknown mode {mode!r}; known: {', '.join(m.value for m in Mode)}", mode
            ) from None
        self.paths = GroupPaths(group)
        self.group = group
        if isinstance(topics, str):
            raise InvalidCoordinationConfigError(f"topics must be a list or a mapping, not the str {topics!r}", topics)
        subscription = dict(topics) if isinstance(topics, Mapping) else dict.fromkeys(topics, 1)
        if not subscription:
            raise InvalidCoordinationConfigError("subscribe to at least one topic", topics)
        for t, n in subscription.items():
            _check_name("topic", t)
            _positive(f"stream count of {t!r}", n, integer=True)
        self.subscription: dict[str, int] = subscription
        self.client_id = _check_name(
            "client_id",
            client_id or f"{socket.gethostname()}-{int(time.time() * 1000)}-{uuid.uuid4().hex[:8]}",
        )
        use = Use.ZOOKEEPER_LEADER if self.mode is Mode.LEADER else Use.ZOOKEEPER_EVERY_MEMBER
        self.spec = StrategySpec.parse(strategy, where="strategy", use=use, params=strategy_params)
        if self.spec.info.cls is not None:
            self.spec.build()  # the strategy's own parameter checks, here rather than at the first rebalance
        if auth is not None and (
            not isinstance(auth, tuple) or len(auth) != 2 or not all(isinstance(x, str) and x for x in auth)
        ):
            raise InvalidCoordinationConfigError("auth must be a (user, password) tuple of non-empty strings", auth)
        self.hosts = hosts
        self.session_timeout = float(session_timeout)
        self.connect_timeout = float(connect_timeout if connect_timeout is not None else session_timeout)
        self.rebalance_max_retries = rebalance_max_retries
        self.rebalance_backoff_ms = rebalance_backoff_ms

        self._stats = Stats()
        self._life = Lifecycle(self, self.client_id, on_assigned=on_assigned, on_revoked=on_revoked, on_state=on_state)
        registration = MemberInfo(self.client_id, self.subscription, self.spec.display_name, self.mode.value)
        self._session = MemberSession(
            hosts,
            self.paths,
            registration,
            session_timeout=self.session_timeout,
            connect_timeout=self.connect_timeout,
            auth=auth,
            stats=self._stats,
            events=self._life.events,
        )
        self._watches = Watches(self._session, self._life.events, self._stats, self.client_id)
        self._claims = Claims(self._session, self._life, one_by_one=self.mode is Mode.EVERY_MEMBER)
        parts = (self._session, self._watches, self._claims, self._life, self.spec)
        self._protocol: GroupProtocol = (
            LeaderProtocol(*parts, rebalance_backoff_ms=rebalance_backoff_ms)
            if self.mode is Mode.LEADER
            else EveryMemberProtocol(
                *parts,
                self.subscription,
                rebalance_max_retries=rebalance_max_retries,
                rebalance_backoff_ms=rebalance_backoff_ms,
            )
        )
        self._threads: list[threading.Thread] = []
        self._error: CoordinationError | None = None

    # ------------------------------------------------------------------ public surface
    def __repr__(self) -> str:
        return (
            f"GroupMember(group={self.group!r}, client_id={self.client_id!r}, mode={self.mode.value!r}, "
            f"strategy={self.spec.display_name!r}, state={self.state.value}, owned={len(self._claims.owned)})"
        )

    @property
    def state(self) -> MemberState:
        s = self._life.state
        if s in (MemberState.ACQUIRED, MemberState.REBALANCING) and not self._session.connected:
            return MemberState.SUSPENDED
        return s

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this member owns now (its owner nodes exist)."""
        with self._claims.lock:
            return frozenset(self._claims.owned)

    @property
    def pending(self) -> frozenset[TopicPartition]:
        """Leader mode: partitions assigned to this member whose previous owner has not released them yet."""
        with self._claims.lock:
            return frozenset(self._claims.pending)

    @property
    def generation(self) -> int:
        """Leader mode: the generation of the assignment applied; every-member: rebalances completed."""
        return self._protocol.generation

    @property
    def is_leader(self) -> bool:
        return self._protocol.is_leader

    @property
    def stats(self) -> MemberStats:
        return self._stats.snapshot()

    @property
    def error(self) -> CoordinationError | None:
        """Why the member is FAILED, if it is."""
        return self._error

    def committed(self, tp: TopicPartition) -> int | None:
        """The committed offset of an owned partition, as read at the claim or written since."""
        return self._claims.committed(tp)

    def may_work(self, tp: TopicPartition | None = None) -> bool:
        """True while this member may process ``tp`` (any owned partition when ``None``): it owns
        it, is connected, and its session lease has not run out."""
        return self.work_deadline(tp) is not None

    def work_deadline(self, tp: TopicPartition | None = None) -> float | None:
        """The ``time.monotonic()`` until which work on ``tp`` is safe, or ``None`` if it is not now."""
        until = self._session.lease()
        if until is None:
            return None
        return until if self._claims.owns(tp) else None

    def wait_for(self, *states: MemberState, timeout: float | None = None) -> bool:
        """Block until the state is one of ``states`` (True) or ``timeout`` passes (False)."""
        with self._life.cond:
            return self._life.cond.wait_for(lambda: self.state in states, timeout)

    def wait_acquired(self, timeout: float | None = None) -> None:
        """Block until the member owns its whole share (ACQUIRED). Raises
        :class:`RebalanceFailedError` when it is FAILED, ``TimeoutError`` after ``timeout``."""
        if not self.wait_for(MemberState.ACQUIRED, MemberState.FAILED, MemberState.CLOSED, timeout=timeout):
            raise TimeoutError(f"{self.client_id}: not ACQUIRED after {timeout} s (state {self.state})")
        if self.state is MemberState.FAILED:
            raise self._error or RebalanceFailedError(
                f"{self.client_id}: rebalance failed after {self.rebalance_max_retries} attempts", self.client_id
            )
        if self.state is MemberState.CLOSED:
            raise CoordinationError(f"{self.client_id} is closed", self.client_id)

    def commit(self, tp: TopicPartition, offset: int) -> int:
        """Commit ``offset`` (the next message to process) for ``tp``, fenced: one ZooKeeper multi
        that checks this member's owner node and sets the offset node at the version this member
        last wrote. Returns the offset node's new version (it grows with every claim and commit).

        Raises :class:`FencedCommitError` if this member does not own ``tp`` (any more) — nothing
        was written; :class:`CommitFailedError` on connection loss (outcome unknown).
        """
        return self._claims.commit(tp, offset)

    def start(self) -> GroupMember:
        """Connect, check the topics, register (refusing a duplicated id) and start rebalancing.
        Returns once registered; use :meth:`wait_acquired` to wait for the first share."""
        if self._life.state is not MemberState.INIT:
            raise CoordinationError(f"{self.client_id} was already started", self.client_id)
        self._life.set_state(MemberState.JOINING)
        try:
            self._session.connect()
        except ZooKeeperUnreachableError:
            self._life.set_state(MemberState.CLOSED)
            raise
        try:
            self._session.prepare(leader=self.mode is Mode.LEADER)
            self._session.register()
        except BaseException:
            self._session.shutdown()
            self._life.set_state(MemberState.CLOSED)
            raise
        # Queued before the event thread runs, so that it sees "start" in its first batch: were the
        # connection's "connected" handled alone first, the member would rebalance twice on joining.
        self._life.events.put(("start",))
        loops: tuple[tuple[str, Any, tuple[Any, ...]], ...] = (
            ("events", self._loop, ()),
            ("lease", self._session.lease_loop, (self._life.stop,)),
        )
        for name, target, args in loops:
            t = threading.Thread(target=target, args=args, name=f"mqbalance-{name}-{self.client_id}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def close(self) -> None:
        """Leave gracefully: ``on_revoked(..., CLOSE)``, delete the owner nodes, the registration and
        the election node, close the session. Idempotent."""
        if self._life.state in (MemberState.CLOSED, MemberState.INIT):
            self._life.set_state(MemberState.CLOSED)
            return
        self._life.stop.set()
        self._life.events.put(("stop",))
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(30)
        self._threads.clear()
        claims, session = self._claims, self._session
        with claims.lock:
            claims.pending.clear()
        try:
            if claims.owned:
                claims.revoke(list(claims.owned), RevokeReason.CLOSE, release=session.connected)
            if session.connected:
                for path in (self._protocol.election_node, self.paths.member(self.client_id)):
                    if path is not None:
                        session.delete(path)
        except KazooException as e:
            log.warning("%s: leaving without cleanup (%s): ephemeral nodes go with the session", self.client_id, e)
        session.shutdown()
        self._life.set_state(MemberState.CLOSED)

    def __enter__(self) -> GroupMember:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------------ the event loop
    def _loop(self) -> None:
        life = self._life
        while True:
            timeout = None if life.retry_at is None else max(0.0, life.retry_at - time.monotonic())
            try:
                events = [life.events.get(timeout=timeout)]
            except queue.Empty:
                events = [("retry",)]
            while True:
                try:
                    events.append(life.events.get_nowait())
                except queue.Empty:
                    break
            if any(e[0] == "stop" for e in events) or life.stop.is_set():
                return
            if life.retry_at is not None and time.monotonic() >= life.retry_at:
                life.retry_at = None
                events.append(("retry",))
            try:
                self._handle(events)
            except CONNECTION_LOST as e:
                log.info("%s: %s during %s; retrying once connected", self.client_id, type(e).__name__, events)
                life.retry_in(0.1)
            except CoordinationError as e:
                self._error = e
                log.error("%s: %s", self.client_id, e)
                life.set_state(MemberState.FAILED)
            except Exception:
                log.exception("%s: error handling %s; retrying later", self.client_id, events)
                life.retry_in(max(self.rebalance_backoff_ms, 100) / 1000)

    def _handle(self, events: list[Event]) -> None:
        """The connection's events here (a lost or new session, a reconnection); the rest is the mode's."""
        session, life = self._session, self._life
        kinds = {e[0] for e in events}
        if "lost" in kinds:
            self._session_lost()
        if "suspended" in kinds and not session.connected:
            life.announce(MemberState.SUSPENDED)
        new_session = "start" in kinds
        if "connected" in kinds and session.connected:
            sid = session.current()
            if sid is not None and sid != session.session:
                if self._claims.owned:  # missed LOST (e.g. expired while we were paused)
                    self._session_lost()
                session.close_abandoned()  # before registering: their registration goes with them
                session.register()
                new_session = True
            else:  # same session, but kazoo dropped every watch with the connection and sets none again
                kinds.add("rewatch")
                if life.state is not MemberState.ACQUIRED:  # and finish what the drop interrupted
                    kinds.add("retry")
            life.announce(self.state)
        if session.session is None or not session.connected or life.state is MemberState.FAILED and self._error:
            return
        self._claims.release_leftovers()
        if "rewatch" in kinds:
            # Read again whatever is watched (setting the watches anew), as if each had fired: a
            # change made while disconnected would otherwise go unnoticed for good.
            self._watches.forget()
            self._protocol.rewatch(kinds)
        self._protocol.handle(kinds, events, new_session=new_session)

    def _session_lost(self) -> None:
        """Stop work on everything first; the owner nodes went with the session."""
        claims = self._claims
        with claims.lock:
            claims.pending.clear()
            claims.unreleased.clear()  # the session's owner nodes went with it
        self._session.session = None
        self._protocol.session_lost()
        self._watches.forget()
        if claims.owned:
            claims.revoke(list(claims.owned), RevokeReason.SESSION_LOST, release=False)
        self._session.fenced = False
        self._life.set_state(MemberState.JOINING)
