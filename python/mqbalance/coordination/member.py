"""``GroupMember``: one consumer of a group that balances its partitions with the others through
ZooKeeper, in one of two modes.

``"every-member"`` — the protocol of Kafka 0.8's ``ZookeeperConsumerConnector``, faithfully:
register an ephemeral ``ids/<client_id>`` node with the subscription; three listeners (new
session, partition count change, member change) funnel into one rebalance that stops work
(``on_revoked`` with everything held — Kafka's ``beforeReleasingPartitions``), deletes its owner
nodes, reads every member and the partition counts, computes its own share, reads the committed
offsets, claims each partition with an ephemeral ``owners/<topic>/<p>`` node and, on a conflict,
releases what this attempt claimed, backs off and retries up to ``rebalance_max_retries``. Every
member wakes on every change (the herd) and decides alone (split decisions → conflicts).

``"leader"`` — ours: members elect one leader through ephemeral sequential nodes (each watches
only its predecessor: no herd on leader loss). The leader alone watches members and partition
counts, computes the whole group's assignment in one call and publishes it with a generation
(fenced: one multi that checks its election node). Members watch that one node, release only what
they lost, then claim only what they gained, waiting on the previous owner's node instead of
backing off; partitions that stay keep being worked. With ``strategy="STICKY"`` (per topic) or
``"kafka-sticky"`` (across the group's topics) the leader moves the fewest partitions that keep the
group balanced.

Both modes: committed offsets are fenced (:meth:`GroupMember.commit` is one multi that checks the
owner node and sets the offset at the version this member last wrote; a claim bumps that version,
so a zombie's late commit fails and can never overwrite its successor's progress); work is gated by
a session lease (:meth:`GroupMember.may_work` is false as soon as the connection is suspended, the
session is lost, or no request has been answered for ¾ of the session timeout), so a paused member
stops before ZooKeeper can hand its partitions to anybody else; with ``auth`` the group's nodes carry
digest ACLs (world-readable, writable only with the credentials).

>>> import mqbalance.coordination as c
>>> c.GroupMember("127.0.0.1:1", "g", ["t"], session_timeout=0)
Traceback (most recent call last):
...
mqbalance.coordination.errors.InvalidCoordinationConfigError: session_timeout must be > 0 seconds, got 0
"""

from __future__ import annotations

import enum
import logging
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, WatchedEvent
from kazoo.security import make_acl, make_digest_acl

from mqbalance.allocation.registry import StrategySpec, Use
from mqbalance.coordination.assignment import group_assignment
from mqbalance.coordination.errors import (
    CommitFailedError,
    CoordinationAuthError,
    CoordinationError,
    DuplicateClientIdError,
    FencedCommitError,
    InvalidCoordinationConfigError,
    NoPartitionsError,
    RebalanceFailedError,
    ZooKeeperUnreachableError,
)
from mqbalance.coordination.layout import (
    GroupPaths,
    MemberInfo,
    PublishedAssignment,
    _check_name,
    encode_assignment,
    encode_member,
    parse_assignment,
    parse_member,
    parse_partitions,
)
from mqbalance.coordination.session import digest_auth
from mqbalance.exceptions import InvalidInputError
from mqbalance.kafka import TopicPartition

__all__ = ["GroupMember", "Mode", "MemberState", "RevokeReason", "MemberStats", "LEASE_FRACTION"]

log = logging.getLogger("mqbalance.coordination")

#: Work is allowed until ``send time of the last answered request + LEASE_FRACTION × session timeout``:
#: ZooKeeper cannot expire the session (and give its partitions away) before ``send time + timeout``.
#: This assumes the server granted the requested timeout (it clamps it to [2, 20] × tickTime, and kazoo
#: does not expose the negotiated value): request a timeout inside that range.
LEASE_FRACTION = 0.75
CLAIM_BATCH = 128


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

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class _Claim:
    thread: str
    offset: int  # committed offset, as last read or written by this member
    offset_version: int  # version of the offset node after our claim / last commit (the fencing token)
    owner_version: int = 0


def _positive(name: str, value: Any, *, integer: bool = False, zero_ok: bool = False) -> None:
    bad = isinstance(value, bool) or not isinstance(value, int | float) or value != value
    if not bad and integer and not isinstance(value, int):
        bad = True
    if bad or (value < 0 if zero_ok else value <= 0):
        unit = "" if integer else " seconds"
        raise InvalidCoordinationConfigError(
            f"{name} must be {'>= 0' if zero_ok else '> 0'}{unit}, got {value!r}", value
        )


Callback = Callable[..., Any]


class GroupMember:
    """A member of consumer group ``group`` on the ZooKeeper ensemble ``hosts``.

    ``topics``: topic names, or ``{topic: streams}`` (Kafka's consumer threads per topic; used by
    ``range`` / ``roundrobin``). ``strategy``: any configuration :meth:`StrategySpec.parse` reads
    (``"AVG"``, ``{"name": "CONSISTENT_HASH", "virtualNodeCnt": 5}``, a spec; ``strategy_params`` are
    more of its fields) of a strategy the mode can run: RocketMQ's, ``range``, ``roundrobin``, and in
    leader mode also ``STICKY`` and ``kafka-sticky`` (:mod:`mqbalance.coordination.assignment`); any
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
        self._auth = auth
        self._acl = (
            [make_digest_acl(auth[0], auth[1], all=True), make_acl("world", "anyone", read=True)] if auth else None
        )
        self._on_assigned, self._on_revoked, self._on_state = on_assigned, on_revoked, on_state

        self._client: Any = None
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._commit_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._stats = MemberStats()
        self._state = MemberState.INIT
        self._events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._connected = False
        self._fenced = False  # a session was lost and its claims are not revoked yet: no work
        self._lease_until = 0.0
        self._session: int | None = None  # the session our ids node belongs to
        self._owned: dict[TopicPartition, _Claim] = {}
        self._revoking: dict[TopicPartition, _Claim] = {}
        self._retry_at: float | None = None
        self._error: CoordinationError | None = None
        # leader mode
        self._pending: dict[TopicPartition, str] = {}
        self._generation = -1
        self._assignment: PublishedAssignment | None = None
        self._assignment_version = -1
        self._election_node: str | None = None
        self._is_leader = False
        self._member_cache: dict[str, MemberInfo | None] = {}
        self._partition_cache: dict[str, dict[int, int]] = {}
        self._watchers: dict[Any, Callable[[WatchedEvent], None]] = {}

    # ------------------------------------------------------------------ public surface
    def __repr__(self) -> str:
        return (
            f"GroupMember(group={self.group!r}, client_id={self.client_id!r}, mode={self.mode.value!r}, "
            f"strategy={self.spec.display_name!r}, state={self.state.value}, owned={len(self._owned)})"
        )

    @property
    def state(self) -> MemberState:
        s = self._state
        if s in (MemberState.ACQUIRED, MemberState.REBALANCING) and not self._connected:
            return MemberState.SUSPENDED
        return s

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this member owns now (its owner nodes exist)."""
        with self._lock:
            return frozenset(self._owned)

    @property
    def pending(self) -> frozenset[TopicPartition]:
        """Leader mode: partitions assigned to this member whose previous owner has not released them yet."""
        with self._lock:
            return frozenset(self._pending)

    @property
    def generation(self) -> int:
        """Leader mode: the generation of the assignment applied; every-member: rebalances completed."""
        return self._generation

    @property
    def is_leader(self) -> bool:
        return self._is_leader

    @property
    def stats(self) -> MemberStats:
        with self._stats_lock:
            return MemberStats(**self._stats.as_dict())

    @property
    def error(self) -> CoordinationError | None:
        """Why the member is FAILED, if it is."""
        return self._error

    def committed(self, tp: TopicPartition) -> int | None:
        """The committed offset of an owned partition, as read at the claim or written since."""
        with self._lock:
            c = self._owned.get(tp) or self._revoking.get(tp)
            return c.offset if c else None

    def may_work(self, tp: TopicPartition | None = None) -> bool:
        """True while this member may process ``tp`` (any owned partition when ``None``): it owns
        it, is connected, and its session lease has not run out."""
        return self.work_deadline(tp) is not None

    def work_deadline(self, tp: TopicPartition | None = None) -> float | None:
        """The ``time.monotonic()`` until which work on ``tp`` is safe, or ``None`` if it is not now."""
        until = self._lease_until
        if not self._connected or self._fenced or time.monotonic() >= until:
            return None
        with self._lock:
            ok = (tp in self._owned) if tp is not None else bool(self._owned)
        return until if ok else None

    def wait_for(self, *states: MemberState, timeout: float | None = None) -> bool:
        """Block until the state is one of ``states`` (True) or ``timeout`` passes (False)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.state in states, timeout)

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
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise InvalidInputError(f"offset must be an int >= 0, got {offset!r}", offset)
        tp = TopicPartition(*tp)
        with self._commit_lock:
            with self._lock:
                claim = self._owned.get(tp) or self._revoking.get(tp)
            if claim is None:
                raise FencedCommitError(f"{self.client_id} does not own {tp.topic}/{tp.partition}", tp)
            if offset < claim.offset:
                raise InvalidInputError(
                    f"commit of {tp.topic}/{tp.partition} would go backwards: {offset} < {claim.offset}", offset
                )
            if offset == claim.offset:
                return claim.offset_version
            tx = self._client.transaction()
            tx.check(self.paths.owner(tp.topic, tp.partition), claim.owner_version)
            tx.set_data(self.paths.offset(tp.topic, tp.partition), str(offset).encode(), claim.offset_version)
            with self._stats_lock:
                self._stats.commits += 1
            try:
                result = tx.commit()
            except (ConnectionLoss, SessionExpiredError, ConnectionClosedError) as e:
                raise CommitFailedError(f"commit of {tp.topic}/{tp.partition} failed: {type(e).__name__}", tp) from e
            if any(isinstance(r, Exception) for r in result):
                with self._stats_lock:
                    self._stats.fenced_commits += 1
                why = type(result[0] if isinstance(result[0], Exception) else result[1]).__name__
                raise FencedCommitError(
                    f"commit of {tp.topic}/{tp.partition} by {self.client_id} fenced ({why}): "
                    "another member owns it or claimed it since",
                    tp,
                )
            claim.offset = offset
            claim.offset_version = result[1].version
            return int(result[1].version)

    def start(self) -> GroupMember:
        """Connect, check the topics, register (refusing a duplicated id) and start rebalancing.
        Returns once registered; use :meth:`wait_acquired` to wait for the first share."""
        if self._state is not MemberState.INIT:
            raise CoordinationError(f"{self.client_id} was already started", self.client_id)
        self._set_state(MemberState.JOINING)
        client = KazooClient(
            hosts=self.hosts,
            timeout=self.session_timeout,
            connection_retry={"max_tries": -1, "delay": 0.05, "backoff": 1.5, "max_delay": 0.5},
            auth_data=digest_auth(self._auth),
        )
        self._client = client
        client.add_listener(self._on_connection)
        try:
            client.start(timeout=self.connect_timeout)
        except KazooTimeoutError:
            self._shutdown_client()
            self._set_state(MemberState.CLOSED)
            raise ZooKeeperUnreachableError(
                f"no ZooKeeper server answered at {self.hosts} within {self.connect_timeout:g} s", self.hosts
            ) from None
        try:
            self._prepare()
            self._register()
        except BaseException:
            self._shutdown_client()
            self._set_state(MemberState.CLOSED)
            raise
        for target, name in ((self._loop, "events"), (self._lease_loop, "lease")):
            t = threading.Thread(target=target, name=f"mqbalance-{name}-{self.client_id}", daemon=True)
            t.start()
            self._threads.append(t)
        self._events.put(("start",))
        return self

    def close(self) -> None:
        """Leave gracefully: ``on_revoked(..., CLOSE)``, delete the owner nodes, the registration and
        the election node, close the session. Idempotent."""
        if self._state in (MemberState.CLOSED, MemberState.INIT):
            self._set_state(MemberState.CLOSED)
            return
        self._stop.set()
        self._events.put(("stop",))
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(30)
        self._threads.clear()
        with self._lock:
            self._pending.clear()
        try:
            if self._owned:
                self._revoke(list(self._owned), RevokeReason.CLOSE, release=self._connected)
            if self._connected:
                for path in (self._election_node, self.paths.member(self.client_id)):
                    if path is not None:
                        self._zk_delete(path)
        except KazooException as e:
            log.warning("%s: leaving without cleanup (%s): ephemeral nodes go with the session", self.client_id, e)
        self._shutdown_client()
        self._set_state(MemberState.CLOSED)

    def __enter__(self) -> GroupMember:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing
    def _count(self, ops: int = 1) -> None:
        with self._stats_lock:
            self._stats.requests += 1
            self._stats.operations += ops

    def _bump(self, name: str, n: int = 1) -> None:
        with self._stats_lock:
            setattr(self._stats, name, getattr(self._stats, name) + n)

    def _set_state(self, state: MemberState) -> None:
        with self._cond:
            changed = state is not self._state
            self._state = state
            self._cond.notify_all()
        if changed:
            self._callback(self._on_state, state)

    def _callback(self, fn: Callback | None, *args: Any) -> None:
        if fn is None:
            return
        try:
            fn(self, *args)
        except Exception:
            log.exception("%s: callback %s raised", self.client_id, getattr(fn, "__name__", fn))

    def _shutdown_client(self) -> None:
        c = self._client
        if c is None:
            return
        self._connected = False
        try:
            c.stop()
        finally:
            c.close()

    def _watcher(self, key: Any, event: tuple[Any, ...]) -> Callable[[WatchedEvent], None]:
        """One callback object per watched thing (kazoo keeps watchers in a set: no duplicates)."""
        w = self._watchers.get(key)
        if w is None:

            def w(ev: WatchedEvent) -> None:
                if ev.type == EventType.NONE:  # kazoo firing watchers at a session reset
                    return
                self._bump("notifications")
                self._events.put(event)

            self._watchers[key] = w
        return w

    def _on_connection(self, st: str) -> None:  # kazoo's thread: flags and events only
        if st == KazooState.CONNECTED:
            cid = self._client.client_id if self._client is not None else None
            if self._session is not None and cid is not None and cid[0] != self._session:
                self._fenced = True  # a new session: whatever the old one owned is gone
            self._lease_until = time.monotonic() + LEASE_FRACTION * self.session_timeout
            self._connected = True
            self._events.put(("connected",))
        elif st == KazooState.SUSPENDED:
            self._connected = False
            self._events.put(("suspended",))
        elif st == KazooState.LOST:
            self._connected = False
            self._fenced = True
            self._events.put(("lost",))

    def _lease_loop(self) -> None:
        interval = self.session_timeout / 4
        path = self.paths.member(self.client_id)
        while not self._stop.wait(interval):
            if not self._connected:
                continue
            sent = time.monotonic()
            try:
                self._client.exists_async(path).get(timeout=interval)
            except Exception:  # noqa: S112 - no answer: the lease is not renewed
                continue
            finally:
                self._bump("lease_requests")
            if self._connected:
                self._lease_until = max(self._lease_until, sent + LEASE_FRACTION * self.session_timeout)

    def _prepare(self) -> None:
        """Group nodes (with the ACL) and the subscribed topics' partition nodes must exist."""
        c = self._client
        try:
            self._count()
            c.ensure_path("/consumers")
            for p in (self.paths.ids, self.paths.leader, self.paths.owners, self.paths.offsets):
                self._count()
                c.ensure_path(p, acl=self._acl)
            for t in self.subscription:
                for p in (f"{self.paths.owners}/{t}", f"{self.paths.offsets}/{t}"):
                    self._count()
                    c.ensure_path(p, acl=self._acl)
            if self.mode is Mode.LEADER:
                self._count()
                if c.exists(self.paths.assignment) is None:
                    try:
                        self._count()
                        c.create(self.paths.assignment, b"", acl=self._acl)
                    except NodeExistsError:
                        pass
            for t in self.subscription:
                self._count()
                raw = c.exists(GroupPaths.topic(t))
                if raw is None:
                    raise NoPartitionsError(
                        f"topic {t!r} has no partition node {GroupPaths.topic(t)} (create it with "
                        "mqbalance.coordination.set_partitions or `mqbalance member --topic T:N`)",
                        t,
                    )
        except NoAuthError as e:
            raise CoordinationAuthError(
                f"ZooKeeper refused to create the nodes of group {self.group!r} (digest ACL): pass its auth", self.group
            ) from e

    def _register(self) -> None:
        """Create ``ids/<client_id>`` (ephemeral) for this session; refuse an id held by another session."""
        c = self._client
        path = self.paths.member(self.client_id)
        data = encode_member(MemberInfo(self.client_id, self.subscription, self.spec.display_name, self.mode.value))
        session = c.client_id[0] if c.client_id else None
        sent = time.monotonic()
        for _ in range(3):
            try:
                self._count()
                c.create(path, data, acl=self._acl, ephemeral=True)
                break
            except NodeExistsError:
                self._count()
                stat = c.exists(path)
                if stat is None:
                    continue
                if stat.ephemeralOwner == session:
                    break
                raise DuplicateClientIdError(
                    f"client id {self.client_id!r} is already registered in group {self.group!r} by another "
                    f"live session (0x{stat.ephemeralOwner:x}): refusing to start a second member with the same id",
                    self.client_id,
                ) from None
            except NoAuthError as e:
                raise CoordinationAuthError(
                    f"ZooKeeper refused to register {path} (digest ACL on group {self.group!r}): pass its auth", path
                ) from e
        self._session = session
        self._lease_until = max(self._lease_until, sent + LEASE_FRACTION * self.session_timeout)

    def _zk_delete(self, path: str) -> None:
        try:
            self._count()
            self._client.delete(path)
        except NoNodeError:
            pass

    # ------------------------------------------------------------------ the event loop
    def _loop(self) -> None:
        while True:
            timeout = None if self._retry_at is None else max(0.0, self._retry_at - time.monotonic())
            try:
                events = [self._events.get(timeout=timeout)]
            except queue.Empty:
                events = [("retry",)]
            while True:
                try:
                    events.append(self._events.get_nowait())
                except queue.Empty:
                    break
            if any(e[0] == "stop" for e in events) or self._stop.is_set():
                return
            if self._retry_at is not None and time.monotonic() >= self._retry_at:
                self._retry_at = None
                events.append(("retry",))
            try:
                self._handle(events)
            except (ConnectionLoss, SessionExpiredError, ConnectionClosedError) as e:
                log.info("%s: %s during %s; retrying once connected", self.client_id, type(e).__name__, events)
                self._retry_at = time.monotonic() + 0.1
            except CoordinationError as e:
                self._error = e
                log.error("%s: %s", self.client_id, e)
                self._set_state(MemberState.FAILED)
            except Exception:
                log.exception("%s: error handling %s; retrying later", self.client_id, events)
                self._retry_at = time.monotonic() + max(self.rebalance_backoff_ms, 100) / 1000

    def _handle(self, events: list[tuple[Any, ...]]) -> None:
        kinds = {e[0] for e in events}
        if "lost" in kinds:
            self._session_lost()
        if "suspended" in kinds and not self._connected:
            self._callback(self._on_state, MemberState.SUSPENDED)
            with self._cond:
                self._cond.notify_all()
        new_session = "start" in kinds
        if "connected" in kinds and self._connected:
            cid = self._client.client_id
            sid = cid[0] if cid else None
            if sid is not None and sid != self._session:
                if self._owned:  # missed LOST (e.g. expired while we were paused)
                    self._session_lost()
                self._register()
                new_session = True
            elif self._state is not MemberState.ACQUIRED:  # same session: finish what the drop interrupted
                kinds.add("retry")
            else:  # same session, but kazoo dropped every watch with the connection and sets none again
                kinds.add("rewatch")
            self._callback(self._on_state, self.state)
            with self._cond:
                self._cond.notify_all()
        if self._session is None or not self._connected or self._state is MemberState.FAILED and self._error:
            return
        if "rewatch" in kinds:
            # Read again whatever is watched (setting the watches anew), as if each had fired: a
            # change made while disconnected would otherwise go unnoticed for good.
            self._member_cache.clear()
            self._partition_cache.clear()
            if self.mode is Mode.EVERY_MEMBER and not kinds & {"members", "partitions", "retry"}:
                if self._share_changed():
                    kinds.add("members")
            else:
                kinds |= {"members", "assignment", "election", "freed"}
        if self.mode is Mode.EVERY_MEMBER:
            if new_session or kinds & {"members", "partitions", "retry"}:
                self._synced_rebalance()
            return
        if new_session:
            self._read_assignment()
            self._elect()
        elif "election" in kinds:
            self._elect()
        if self._is_leader and (kinds & {"members", "partitions", "retry"} or new_session):
            for e in events:
                if e[0] == "partitions":
                    self._partition_cache.pop(e[1], None)
            self._publish()
        if kinds & {"assignment", "retry"}:
            self._read_assignment()
        if kinds & {"freed", "retry"} and self._pending:
            self._claim_pending()

    def _share_changed(self) -> bool:
        """Every-member mode: read the members and partitions (watching them again) and tell
        whether this member's share differs from what it owns."""
        members = self._read_members(cached=False)
        if self.client_id not in members:
            return True
        return self._share(members, self._read_partitions(self.subscription, cached=False)).keys() != self._owned.keys()

    def _share(
        self, members: dict[str, MemberInfo], partitions: dict[str, dict[int, int]]
    ) -> dict[TopicPartition, str]:
        """Every-member mode: this member's partitions (and consumer thread of each) by the strategy."""
        owners = group_assignment(self.spec, members, partitions)
        return {tp: th for tp, (m, th) in sorted(owners.items()) if m == self.client_id}

    def _session_lost(self) -> None:
        """Stop work on everything first; the owner nodes went with the session."""
        with self._lock:
            self._pending.clear()
        self._session = None
        self._generation = -1  # re-apply the current assignment with the new session
        self._election_node = None
        self._is_leader = False
        self._member_cache.clear()
        self._partition_cache.clear()
        if self._owned:
            self._revoke(list(self._owned), RevokeReason.SESSION_LOST, release=False)
        self._fenced = False
        self._set_state(MemberState.JOINING)

    def _revoke(self, tps: Iterable[TopicPartition], reason: RevokeReason, *, release: bool) -> None:
        with self._lock:
            claims = {tp: self._owned.pop(tp) for tp in tps if tp in self._owned}
            self._revoking.update(claims)
        if not claims:
            return
        self._callback(self._on_revoked, frozenset(claims), reason)
        try:
            if release:
                with self._commit_lock:
                    if self.mode is Mode.EVERY_MEMBER:  # Kafka deletes them one by one
                        for tp in sorted(claims):
                            self._zk_delete(self.paths.owner(*tp))
                    else:
                        self._delete_many([self.paths.owner(*tp) for tp in sorted(claims)])
                self._bump("released", len(claims))
        finally:
            with self._lock:
                for tp in claims:
                    self._revoking.pop(tp, None)

    def _delete_many(self, paths: list[str]) -> None:
        for i in range(0, len(paths), CLAIM_BATCH):
            chunk = paths[i : i + CLAIM_BATCH]
            tx = self._client.transaction()
            for p in chunk:
                tx.delete(p)
            self._count(len(chunk))
            if any(isinstance(r, Exception) for r in tx.commit()):
                for p in chunk:  # one was gone already: delete the rest one by one
                    self._zk_delete(p)

    # ------------------------------------------------------------------ reading the group
    def _read_members(self, *, cached: bool) -> dict[str, MemberInfo]:
        c = self._client
        self._count()
        children = c.get_children(self.paths.ids, watch=self._watcher("members", ("members",)))
        if not cached:
            self._member_cache = {}
        for gone in set(self._member_cache) - set(children):
            del self._member_cache[gone]
        new = [cid for cid in children if cid not in self._member_cache]
        asyncs = [(cid, c.get_async(self.paths.member(cid))) for cid in new]
        for cid, a in asyncs:
            self._count()
            try:
                raw, _ = a.get()
            except NoNodeError:
                continue
            self._member_cache[cid] = parse_member(self.paths.member(cid), cid, raw)
        return {cid: m for cid, m in sorted(self._member_cache.items()) if m is not None}

    def _read_partitions(self, topics: Iterable[str], *, cached: bool) -> dict[str, dict[int, int]]:
        c = self._client
        out: dict[str, dict[int, int]] = {}
        for t in sorted(set(topics)):
            if cached and t in self._partition_cache:
                out[t] = self._partition_cache[t]
                continue
            path = GroupPaths.topic(t)
            w = self._watcher(("partitions", t), ("partitions", t))
            try:
                self._count()
                raw, _ = c.get(path, watch=w)
                parts = parse_partitions(raw, path) or {}
            except NoNodeError:
                log.warning("%s: topic %s has no partition node %s: nothing to consume", self.client_id, t, path)
                self._count()
                if c.exists(path, watch=w) is not None:
                    self._events.put(("partitions", t))
                parts = {}
            self._partition_cache[t] = out[t] = parts
        return out

    def _read_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, tuple[bytes | None, int | None]]:
        c = self._client
        asyncs = [(tp, c.get_async(self.paths.offset(*tp))) for tp in tps]
        out: dict[TopicPartition, tuple[bytes | None, int | None]] = {}
        for tp, a in asyncs:
            self._count()
            try:
                raw, stat = a.get()
                out[tp] = (raw, stat.version)
            except NoNodeError:
                out[tp] = (None, None)
        return out

    def _offset_value(self, tp: TopicPartition, raw: bytes | None) -> int:
        if raw is None:
            return 0
        try:
            v = int(raw.decode())
            if v < 0:
                raise ValueError("negative")
            return v
        except (ValueError, UnicodeDecodeError):
            log.warning("%s: offset node %s holds %.40r, not an offset: starting at 0", self.client_id,
                        self.paths.offset(*tp), raw)  # fmt: skip
            return 0

    def _claim_ops(self, tx: Any, tp: TopicPartition, thread: str, raw: bytes | None, version: int | None) -> None:
        """Create the owner node and, in the same multi, bump the offset node's version (same value):
        any commit based on an older version — a zombie's — fails from now on."""
        tx.create(self.paths.owner(*tp), thread.encode(), acl=self._acl, ephemeral=True)
        if version is None:
            tx.create(self.paths.offset(*tp), b"0", acl=self._acl)
        else:
            tx.set_data(self.paths.offset(*tp), raw or b"0", version)

    # ---------------------------------------------- every-member mode (Kafka 0.8's ZooKeeper consumer)
    def _synced_rebalance(self) -> None:
        for attempt in range(self.rebalance_max_retries):
            if attempt:
                self._bump("retries")
                if self._stop.wait(self.rebalance_backoff_ms / 1000) or not self._connected:
                    return
                while True:  # events seen before this attempt are covered by it
                    try:
                        e = self._events.get_nowait()
                    except queue.Empty:
                        break
                    if e[0] in ("stop", "lost", "suspended", "connected"):
                        self._events.put(e)
                        return
            if self._rebalance_once():
                self._retry_at = None
                return
        log.warning(
            "%s: rebalance failed after %d attempts; retrying in %d ms",
            self.client_id,
            self.rebalance_max_retries,
            self.rebalance_backoff_ms,
        )
        self._set_state(MemberState.FAILED)
        self._retry_at = time.monotonic() + self.rebalance_backoff_ms / 1000

    def _rebalance_once(self) -> bool:
        self._set_state(MemberState.REBALANCING)
        self._bump("rebalances")
        if self._owned:
            self._revoke(list(self._owned), RevokeReason.REBALANCE, release=True)
        members = self._read_members(cached=False)
        if self.client_id not in members:
            log.warning("%s: own registration missing from %s; registering again", self.client_id, self.paths.ids)
            self._register()
            return False
        mine = self._share(members, self._read_partitions(self.subscription, cached=False))
        offsets = self._read_offsets(mine)
        claimed: dict[TopicPartition, _Claim] = {}
        for tp, thread in mine.items():
            raw, version = offsets[tp]
            tx = self._client.transaction()
            self._claim_ops(tx, tp, thread, raw, version)
            self._count(2)
            result = self._commit_tx(tx)
            if any(isinstance(r, Exception) for r in result):
                self._bump("conflicts")
                log.info("%s: conflict claiming %s/%s; releasing %d claimed", self.client_id, *tp, len(claimed))
                for done in claimed:  # Kafka: remove all paths that we have owned in ZK
                    self._zk_delete(self.paths.owner(*done))
                return False
            claimed[tp] = self._new_claim(tp, thread, raw, version, result[1])
        with self._lock:
            self._owned = claimed
        self._generation += 1
        self._bump("claimed", len(claimed))
        self._set_state(MemberState.ACQUIRED)
        self._callback(self._on_assigned, {tp: c.offset for tp, c in claimed.items()})
        return True

    def _commit_tx(self, tx: Any) -> list[Any]:
        try:
            return list(tx.commit())
        except NoAuthError as e:
            raise CoordinationAuthError(f"ZooKeeper refused a claim in group {self.group!r} (digest ACL)") from e

    def _new_claim(self, tp: TopicPartition, thread: str, raw: bytes | None, version: int | None, res: Any) -> _Claim:
        new_version = res.version if version is not None else 0
        return _Claim(thread, self._offset_value(tp, raw), new_version)

    # ------------------------------------------------------------------ leader mode
    def _elect(self) -> None:
        c = self._client
        if self._election_node is None:
            self._count()
            self._election_node = c.create(
                f"{self.paths.leader}/n_", self.client_id.encode(), acl=self._acl, ephemeral=True, sequence=True
            )
        mine = self._election_node.rsplit("/", 1)[1]
        while True:
            self._count()
            children = sorted(c.get_children(self.paths.leader), key=lambda n: n.rsplit("_", 1)[-1])
            if mine not in children:
                self._election_node = None
                return self._elect()
            i = children.index(mine)
            if i == 0:
                if not self._is_leader:
                    self._is_leader = True
                    self._member_cache.clear()
                    self._partition_cache.clear()
                    log.info("%s: elected leader of %s", self.client_id, self.group)
                    self._publish()
                return None
            self._count()
            if c.exists(f"{self.paths.leader}/{children[i - 1]}", watch=self._watcher("election", ("election",))):
                return None

    def _publish(self) -> None:
        c = self._client
        assert self._election_node is not None
        for _ in range(5):
            members = self._read_members(cached=True)
            topics = {t for m in members.values() for t in m.subscription}
            partitions = self._read_partitions(topics, cached=True)
            prev = self._assignment
            owners = group_assignment(
                self.spec,
                members,
                partitions,
                previous=prev.owners if prev else None,
                generation=prev.generation if prev else None,
            )
            if prev is not None and dict(prev.owners) == owners:
                return
            new = PublishedAssignment(
                (prev.generation if prev else 0) + 1, self.client_id, self.spec.display_name, owners
            )
            tx = c.transaction()
            tx.check(self._election_node, 0)
            tx.set_data(self.paths.assignment, encode_assignment(new), self._assignment_version)
            self._count(2)
            result = self._commit_tx(tx)
            if not any(isinstance(r, Exception) for r in result):
                self._assignment_version = result[1].version
                self._bump("published")
                self._apply(new)
                return
            if isinstance(result[0], Exception):  # our election node is gone: not the leader any more
                log.warning("%s: lost leadership while publishing", self.client_id)
                self._is_leader = False
                return
            self._read_assignment()  # someone else wrote it: start from theirs
        log.warning("%s: could not publish after 5 attempts; retrying later", self.client_id)
        self._retry_at = time.monotonic() + max(self.rebalance_backoff_ms, 100) / 1000

    def _read_assignment(self) -> None:
        self._count()
        try:
            raw, stat = self._client.get(self.paths.assignment, watch=self._watcher("assignment", ("assignment",)))
        except NoNodeError:
            return
        self._assignment_version = stat.version
        a = parse_assignment(raw, self.paths.assignment)
        if a is not None and a.generation > self._generation:
            self._apply(a)
        elif a is None and self._is_leader and raw:
            self._assignment = None  # malformed: the leader writes a fresh one
            self._publish()

    def _apply(self, a: PublishedAssignment) -> None:
        self._assignment = a
        self._generation = a.generation
        self._bump("rebalances")
        mine = a.of(self.client_id)
        with self._lock:
            lost = [tp for tp, cl in self._owned.items() if mine.get(tp) != cl.thread]
            for tp in [tp for tp in self._pending if tp not in mine]:
                del self._pending[tp]
        if lost:
            self._set_state(MemberState.REBALANCING)
            self._revoke(lost, RevokeReason.REBALANCE, release=True)
        with self._lock:
            for tp, thread in mine.items():
                if tp not in self._owned:
                    self._pending[tp] = thread
        self._claim_pending()

    def _claim_pending(self) -> None:
        c = self._client
        with self._lock:
            batch = dict(self._pending)
        if not batch:
            self._set_state(MemberState.ACQUIRED)
            return
        self._set_state(MemberState.REBALANCING)
        claimed: dict[TopicPartition, _Claim] = {}
        offsets = self._read_offsets(batch)
        items = sorted(batch.items())
        for i in range(0, len(items), CLAIM_BATCH):
            chunk = dict(items[i : i + CLAIM_BATCH])
            for _ in range(4):
                if not chunk:
                    break
                tx = c.transaction()
                order = list(chunk.items())
                for tp, thread in order:
                    self._claim_ops(tx, tp, thread, *offsets[tp])
                self._count(2 * len(order))
                result = self._commit_tx(tx)
                if not any(isinstance(r, Exception) for r in result):
                    for k, (tp, thread) in enumerate(order):
                        claimed[tp] = self._new_claim(tp, thread, *offsets[tp], result[2 * k + 1])
                    break
                stale = []
                for k, (tp, _) in enumerate(order):
                    own, off = result[2 * k], result[2 * k + 1]
                    if isinstance(own, NodeExistsError):  # the previous owner still holds it: wait for it
                        self._bump("conflicts")
                        del chunk[tp]
                        self._count()
                        if c.exists(self.paths.owner(*tp), watch=self._watcher(("freed", tp), ("freed", tp))) is None:
                            self._events.put(("freed", tp))
                    elif isinstance(off, BadVersionError | NodeExistsError | NoNodeError):
                        stale.append(tp)
                if stale:
                    offsets.update(self._read_offsets(stale))
        orphans = []
        with self._lock:
            for tp, cl in list(claimed.items()):
                if self._pending.get(tp) == cl.thread:
                    del self._pending[tp]
                    self._owned[tp] = cl
                else:  # reassigned while we claimed it
                    orphans.append(tp)
                    del claimed[tp]
            done = not self._pending
        for tp in orphans:
            self._zk_delete(self.paths.owner(*tp))
        self._bump("claimed", len(claimed))
        if claimed:
            self._callback(self._on_assigned, {tp: cl.offset for tp, cl in claimed.items()})
        if done:
            self._set_state(MemberState.ACQUIRED)
        elif self._retry_at is None:  # a safety net besides the watches
            self._retry_at = time.monotonic() + max(self.session_timeout, 1.0)
