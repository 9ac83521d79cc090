"""``RocketMQMember``: one consumer of a RocketMQ consumer group on a real cluster, driving our
injected-time state machines (:class:`~mqbalance.rebalance.consumer.PushConsumer`: ``RebalanceImpl``
+ ``RebalanceService`` + the client's scheduled tasks, 4.x or 5.x semantics) with a real clock and
two threads, over :class:`~mqbalance.rocketmq.transport.ClusterTransport`.

* the **control** thread runs ``PushConsumer.tick`` whenever something is due (route poll, heartbeat
  every 30 s, rebalance, offset persistence every 5 s) or the broker's ``NOTIFY_CONSUMER_IDS_CHANGED``
  arrived (``rebalanceImmediately``), and after each rebalance looks for its own client id held by
  another connection (:class:`~mqbalance.rocketmq.transport.DuplicateClientId`);
* the **pull** thread pulls every queue the member holds from its process queue's offset and hands
  the messages to ``consume(mq, messages)``; the offset moves on only after the callback returned
  (a callback that raises gets the batch again), so a crash or a lost queue means messages consumed
  again, never skipped (at-least-once). A pull answered over a new broker connection is not
  consumed: the queue first moves up to the group's committed offset when that is ahead (cut off
  longer than the broker's ``channelExpiredTimeout``, the member was dropped and others went on
  with its queues), and a position is committed only over the connection it was last read on (its
  last pull, or the offset read when the queue was taken) — so a member back from a partition
  neither redoes the others' work nor moves their progress back (Java's client does both until its
  process queue expires).

Offsets reach the broker as in Java: every 5 s, when a queue is dropped, at shutdown. Errors of the
cluster (unreachable broker, rejected request, unknown topic, unknown code) never stop the member:
each is counted in :attr:`RocketMQMember.stats`, handed to ``on_error`` and retried at the next
round; the committed progress stays on the broker.

The duplicated client id (two processes with one id: Java's broker lists it twice and a share goes
to nobody; the Rust port lists it once, both take the same share): after every rebalance the member
compares the group's consumer list and connection list with its own connection, and before its first
heartbeat it looks for its id already registered by a live process (confirmed through the broker with
``GET_CONSUMER_RUNNING_INFO``: the Rust broker closes the older connection when a second one claims
the id, so only the incumbent would see it afterwards). Found: logged as an error, ``on_duplicate_id``
called; with ``refuse_duplicate_id=True`` a member that finds it while joining (the newcomer) does
not join, or releases its queues and leaves (:attr:`state` ``REFUSED``); a member already consuming
when a newcomer appears keeps going.

>>> RocketMQMember("127.0.0.1:1", "cg", [], consume=lambda mq, msgs: None)
Traceback (most recent call last):
...
mqbalance.exceptions.InvalidInputError: topics: give at least one topic, got []
"""

from __future__ import annotations

import enum
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Any

from mqbalance._validate import duration_ms, java_int, str_sequence, text
from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.registry import StrategySpec, Use
from mqbalance.exceptions import InvalidInputError, MQBalanceError
from mqbalance.rebalance.client import ConsumeFromWhere, ProcessQueue
from mqbalance.rebalance.consumer import (
    HEARTBEAT_INTERVAL_MS,
    PERSIST_INTERVAL_MS,
    POLL_NAME_SERVER_INTERVAL_MS,
    PushConsumer,
)
from mqbalance.rebalance.service import MIN_INTERVAL_MS, WAIT_INTERVAL_MS
from mqbalance.remoting.client import check_timeout
from mqbalance.rocketmq.transport import ClusterTransport, DuplicateClientId, PulledMessage
from mqbalance.versions import Semantics

__all__ = ["RocketMQMember", "MemberState", "MemberStats", "default_client_id"]

log = logging.getLogger("mqbalance.rocketmq")

Consume = Callable[[MessageQueue, Sequence[PulledMessage]], None]

#: the largest ``pull_batch_size`` (Java's ``DefaultMQPushConsumer`` refuses more: ``[1, 1024]``)
MAX_PULL_BATCH_SIZE = 1024


def default_client_id() -> str:
    """RocketMQ's ``buildMQClientId()`` for a default instance name: ``<ip>@<pid>``."""
    try:
        ip = socket.gethostbyname(socket.gethostname())
    except OSError:
        ip = "127.0.0.1"
    return f"{ip}@{os.getpid()}"


class MemberState(enum.StrEnum):
    CREATED = "created"
    RUNNING = "running"
    REFUSED = "refused"  # found its client id held by another connection while joining: left the group
    STOPPED = "stopped"


@dataclass
class MemberStats:
    rebalances: int = 0
    notifications: int = 0
    heartbeats: int = 0
    pulls: int = 0
    consumed: int = 0
    commits: int = 0
    errors: int = 0
    duplicate_id_seen: int = 0
    caught_up: int = 0  # queues moved up to the group's committed offset after a reconnection

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def _callable(name: str, value: Any, *, optional: bool = True) -> None:
    if not (callable(value) or (optional and value is None)):
        what = "a callable or None" if optional else "a callable"
        raise InvalidInputError(f"{name} must be {what}, got {type(value).__name__} {value!r:.80}", value)


class RocketMQMember:
    """One push consumer of ``group`` on the cluster whose name servers are ``namesrv``
    (``"host:port[;host:port]"``), subscribed to every tag of ``topics``.

    ``consume(mq, messages)`` runs on the pull thread; ``on_assigned(mqs, offsets)`` /
    ``on_revoked(mqs)`` report ownership changes, ``on_commit(mq, offset)`` every offset sent,
    ``on_error(where, error)`` every failed request, ``on_duplicate_id(found)`` the hazard.
    Intervals are in milliseconds and named after the Java settings.
    """

    def __init__(
        self,
        namesrv: str,
        group: str,
        topics: Iterable[str],
        *,
        consume: Consume,
        strategy: str | Mapping[str, Any] | StrategySpec = "AVG",
        strategy_params: Mapping[str, Any] | None = None,
        client_id: str | None = None,
        semantics: Semantics | str = Semantics.V5,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.LAST_OFFSET,
        refuse_duplicate_id: bool = False,
        timeout: float = 3.0,
        pull_batch_size: int = 32,
        idle_pull_ms: int = 50,
        heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS,
        persist_interval_ms: int = PERSIST_INTERVAL_MS,
        poll_name_server_interval_ms: int = POLL_NAME_SERVER_INTERVAL_MS,
        rebalance_wait_interval_ms: int = WAIT_INTERVAL_MS,
        rebalance_min_interval_ms: int | None = MIN_INTERVAL_MS,
        joining_ms: int | None = None,
        on_assigned: Callable[[list[MessageQueue], list[int]], None] | None = None,
        on_revoked: Callable[[list[MessageQueue]], None] | None = None,
        on_commit: Callable[[MessageQueue, int], None] | None = None,
        on_error: Callable[[str, Exception], None] | None = None,
        on_duplicate_id: Callable[[DuplicateClientId], None] | None = None,
        on_notified: Callable[[], None] | None = None,
        on_rebalanced: Callable[[int | None], None] | None = None,
    ) -> None:
        # every argument is checked here, before any connection or thread exists
        self.topics = str_sequence(topics, "topics")
        if not self.topics:
            raise InvalidInputError(f"topics: give at least one topic, got {self.topics!r}", self.topics)
        for i, topic in enumerate(self.topics):
            if not topic.strip():
                raise InvalidInputError(f"topics[{i}] must not be blank, got {topic!r}", topic)
        group = text(group, "group")
        if not group.strip():
            raise InvalidInputError(f"group must not be blank, got {group!r}", group)
        if client_id is not None:
            client_id = text(client_id, "client_id")
        timeout = check_timeout(timeout)
        pull_batch_size = java_int(pull_batch_size, "pull_batch_size", minimum=1)
        if pull_batch_size > MAX_PULL_BATCH_SIZE:  # the Java client's checkConfig range
            raise InvalidInputError(
                f"pull_batch_size must be between 1 and {MAX_PULL_BATCH_SIZE}, got {pull_batch_size!r}", pull_batch_size
            )
        idle_pull_ms = duration_ms(idle_pull_ms, "idle_pull_ms", positive=True)
        heartbeat_interval_ms = duration_ms(heartbeat_interval_ms, "heartbeat_interval_ms", positive=True)
        persist_interval_ms = duration_ms(persist_interval_ms, "persist_interval_ms", positive=True)
        poll_name_server_interval_ms = duration_ms(
            poll_name_server_interval_ms, "poll_name_server_interval_ms", positive=True
        )
        rebalance_wait_interval_ms = duration_ms(
            rebalance_wait_interval_ms, "rebalance_wait_interval_ms", positive=True
        )
        if rebalance_min_interval_ms is not None:
            rebalance_min_interval_ms = duration_ms(rebalance_min_interval_ms, "rebalance_min_interval_ms")
        if joining_ms is not None:
            joining_ms = duration_ms(joining_ms, "joining_ms")
        if not isinstance(refuse_duplicate_id, bool):
            raise InvalidInputError(
                f"refuse_duplicate_id must be a bool, got {refuse_duplicate_id!r}", refuse_duplicate_id
            )
        try:
            consume_from_where = ConsumeFromWhere(consume_from_where)
        except ValueError:
            choices = ", ".join(c.name for c in ConsumeFromWhere)
            raise InvalidInputError(
                f"consume_from_where must be one of {choices}, got {consume_from_where!r}", consume_from_where
            ) from None
        _callable("consume", consume, optional=False)
        for name, callback in (
            ("on_assigned", on_assigned),
            ("on_revoked", on_revoked),
            ("on_commit", on_commit),
            ("on_error", on_error),
            ("on_duplicate_id", on_duplicate_id),
            ("on_notified", on_notified),
            ("on_rebalanced", on_rebalanced),
        ):
            _callable(name, callback)
        self.strategy = StrategySpec.parse(
            strategy, where="strategy", use=Use.ROCKETMQ_CLIENT, params=strategy_params
        ).build()
        self.semantics = Semantics.parse(semantics)
        self.group = group
        self.client_id = client_id or default_client_id()
        self.refuse_duplicate_id = refuse_duplicate_id
        self.pull_batch_size = pull_batch_size
        self.idle_pull_s = idle_pull_ms / 1000
        self.joining_ms = 2 * heartbeat_interval_ms + 5_000 if joining_ms is None else joining_ms
        self._consume = consume
        self._on_assigned, self._on_revoked, self._on_commit = on_assigned, on_revoked, on_commit
        self._on_error, self._on_duplicate_id = on_error, on_duplicate_id
        self._on_notified, self._on_rebalanced = on_notified, on_rebalanced
        self.stats = MemberStats()
        self.duplicate: DuplicateClientId | None = None
        self.transport = ClusterTransport(
            namesrv,
            timeout=timeout,
            on_notify=self._notified,
            on_error=self._error,
            on_commit=self._committed,
            running_info=self._running_info,
            may_commit=self._may_commit,
        )
        self.consumer = PushConsumer(
            self.client_id,
            group,
            self.topics,
            self.strategy,
            self.transport,
            self.transport.route,
            semantics=self.semantics,
            consume_from_where=consume_from_where,
            heartbeat_interval_ms=heartbeat_interval_ms,
            persist_interval_ms=persist_interval_ms,
            poll_name_server_interval_ms=poll_name_server_interval_ms,
            rebalance_wait_interval_ms=rebalance_wait_interval_ms,
            rebalance_min_interval_ms=rebalance_min_interval_ms,
        )
        self._state = MemberState.CREATED
        self._lock = threading.RLock()  # the state machine and the process-queue table
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._notified_at: int | None = None
        self._t0 = time.monotonic()
        self._threads: list[threading.Thread] = []
        self._held: dict[MessageQueue, int] = {}  # the ownership last reported (queue → start offset)
        self._epochs: dict[MessageQueue, int | None] = {}  # broker connection a queue's position was last read on
        self._notified_mono = 0.0
        #: ``(notification arrived, rebalance done)`` in ``time.monotonic()`` seconds, per rebalance
        #: that followed a notification (the latency benchmark's figure)
        self.rebalance_log: list[tuple[float, float]] = []

    def __repr__(self) -> str:
        return f"RocketMQMember({self.client_id!r}, group={self.group!r}, state={self._state.value})"

    # ---- public ----------------------------------------------------------------------------------
    @property
    def state(self) -> MemberState:
        return self._state

    def now_ms(self) -> int:
        """Milliseconds since the member was created (the state machines' clock)."""
        return int((time.monotonic() - self._t0) * 1000)

    def owned(self) -> dict[MessageQueue, int]:
        """The queues this member holds now → the offset it will pull next."""
        with self._lock:
            return {mq: pq.consumed_offset for mq, pq in self.consumer.owned().items()}

    def start(self) -> RocketMQMember:
        """Heartbeat to the brokers, look for a duplicated id, start the threads. Never raises for
        an unreachable cluster: the member keeps retrying (see :attr:`stats` ``errors``)."""
        if self._state is not MemberState.CREATED:
            raise InvalidInputError(f"member {self.client_id!r} is {self._state}, not created", self.client_id)
        self._state = MemberState.RUNNING
        for topic in self.topics:  # the brokers to look at before joining
            self.transport.route(topic)
        holder = self.transport.holder_before_join(self.group, self.client_id)
        if holder is not None:
            self._duplicate_found(holder, joining=True)
            if self._state is not MemberState.RUNNING:
                return self
        with self._lock:
            self.consumer.start(now_ms=self.now_ms())
            self.stats.heartbeats += 1
        self._check_duplicate()
        for name, target in (("control", self._control_loop), ("pull", self._pull_loop)):
            t = threading.Thread(target=target, name=f"mqbalance-{name}-{self.client_id}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def wait_owned(self, predicate: Callable[[dict[MessageQueue, int]], bool], timeout: float) -> bool:
        """Wait until ``predicate(owned())`` holds (tests, tools)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate(self.owned()):
                return True
            time.sleep(0.02)
        return predicate(self.owned())

    def close(self) -> None:
        """Graceful stop: stop pulling, persist every offset, unregister (the broker notifies the
        group), close the connections. Idempotent."""
        if self._state is MemberState.STOPPED:
            return
        was_running = self._state is MemberState.RUNNING
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join(timeout=30)
        with self._lock:
            if was_running and self.consumer.running:
                held = list(self.consumer.owned())
                self.consumer.shutdown()  # persist_all + unregister
                self._report_revoked(held)
        self.transport.close()
        self._state = MemberState.STOPPED

    def __enter__(self) -> RocketMQMember:
        return self.start() if self._state is MemberState.CREATED else self

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # ---- callbacks from the transport (the connection's reader thread: flags only) ----------------
    def _notified(self) -> None:
        self._notified_mono = time.monotonic()
        self._notified_at = self.now_ms()
        self.stats.notifications += 1
        self._wake.set()
        if self._on_notified is not None:
            self._on_notified()

    def _running_info(self) -> dict[str, Any]:
        """What we answer ``GET_CONSUMER_RUNNING_INFO`` with (the Java client's ``ConsumerRunningInfo``
        properties; the strategy by its RocketMQ name)."""
        return {
            "properties": {
                "consumeType": "CONSUME_PASSIVELY",
                "messageModel": "CLUSTERING",
                "allocateMessageQueueStrategy": self.strategy.name,
                "PROP_CONSUMEORDERLY": "false",
                "PROP_CLIENT_VERSION": "mqbalance",
                "PROP_CONSUMER_START_TIMESTAMP": str(int(time.time() * 1000 - self.now_ms())),
            },
            "subscriptionSet": [{"topic": t, "subString": "*", "expressionType": "TAG"} for t in self.topics],
            "mqTable": {},
            "statusTable": {},
        }

    def _error(self, where: str, error: Exception) -> None:
        self.stats.errors += 1
        log.warning("%s: %s failed: %s", self.client_id, where, error)
        if self._on_error is not None:
            self._on_error(where, error)

    def _committed(self, mq: MessageQueue, offset: int) -> None:
        self.stats.commits += 1
        if self._on_commit is not None:
            self._on_commit(mq, offset)

    # ---- control thread -------------------------------------------------------------------------
    def _control_loop(self) -> None:
        pending: int | None = None  # when the notification not yet followed by a rebalance arrived (ms)
        pending_mono = 0.0
        next_reconnect_check = 0
        while not self._stop.is_set():
            if self.transport.reconnected() and self.now_ms() >= next_reconnect_check:
                next_reconnect_check = self.now_ms() + 2_000
                self._rejoin()
            with self._lock:
                if not self.consumer.running:
                    break
                notified, self._notified_at = self._notified_at, None
                now = self.now_ms()
                if notified is not None:
                    self.consumer.on_notify(now_ms=now)
                    if pending is None:
                        pending, pending_mono = notified, self._notified_mono
                before = self.consumer.service.rebalances
                heartbeat_due = self.consumer.next_heartbeat_ms <= now
                try:
                    self.consumer.tick(now_ms=now)
                except MQBalanceError as e:  # a strategy or input problem: report, go on
                    self._error("rebalance", e)
                if heartbeat_due:
                    self.stats.heartbeats += 1
                rebalanced = self.consumer.service.rebalances > before
                if rebalanced:
                    self.stats.rebalances += 1
                    if pending is not None:
                        self.rebalance_log.append((pending_mono, time.monotonic()))
                    self._report_ownership()
                    if self._on_rebalanced is not None:
                        self._on_rebalanced(pending)
                    pending = None
                due = self.consumer.due_ms()
            if rebalanced:
                self._check_duplicate()
                if self._state is not MemberState.RUNNING:
                    break
                self._reclaim_if_unlisted()
            wait = 1.0 if due is None else max(0.0, (due - self.now_ms()) / 1000)
            if self._wake.wait(timeout=min(wait, 1.0)):
                self._wake.clear()

    def _report_ownership(self) -> None:
        """Compare the process-queue table with the last report: ``on_revoked`` / ``on_assigned``;
        a queue just taken also gets the connection its offset was read over (``_epochs``)."""
        now = {mq: pq.consumed_offset for mq, pq in self.consumer.owned().items()}
        gone = [mq for mq in self._held if mq not in now]
        new = [mq for mq in now if mq not in self._held]
        if gone:
            self._report_revoked(gone)
        if new:
            for mq in new:
                self._held[mq] = now[mq]
                # its position was just read over this connection: a commit before its first pull
                # goes over the same one, or waits for that pull to catch it up (see _may_commit)
                self._epochs[mq] = self.transport.connection_epoch(mq.broker_name)
            if self._on_assigned is not None:
                self._on_assigned(new, [now[mq] for mq in new])

    def _report_revoked(self, gone: list[MessageQueue]) -> None:
        for mq in gone:
            self._held.pop(mq, None)
        if gone and self._on_revoked is not None:
            self._on_revoked(gone)

    def _rejoin(self) -> None:
        """A broker connection was re-established (the broker restarted, or closed it): the broker
        does not know this connection. Heartbeat at once — unless another connection carries our
        id (a per-id broker closes the older connection when a second one claims the id): then
        report the duplicate and do not fight over the id (each heartbeat would close the other)."""
        if self._state is not MemberState.RUNNING:
            return
        found = self.transport.find_duplicate(self.group, self.client_id)
        if found is not None:
            self._duplicate_found(found)
            return
        with self._lock:
            if self.consumer.running:
                self.transport.send_heartbeat(self.consumer.impl)
                self.stats.heartbeats += 1
                self.consumer.on_notify(now_ms=self.now_ms())

    def _reclaim_if_unlisted(self) -> None:
        """Our id absent from the consumer list while we run (a per-id broker dropped the entry when
        another connection with our id closed): heartbeat now and rebalance again."""
        ids = self.transport.last_consumer_ids.get(self.group)
        if ids is not None and self.client_id not in ids:
            with self._lock:
                if self.consumer.running:
                    self.transport.send_heartbeat(self.consumer.impl)
                    self.stats.heartbeats += 1
                    self.consumer.on_notify(now_ms=self.now_ms())

    def _check_duplicate(self) -> None:
        """Look for this member's id on another connection; act on it (see the module docs)."""
        found = self.transport.find_duplicate(self.group, self.client_id)
        if found is not None:
            self._duplicate_found(found)

    def _duplicate_found(self, found: DuplicateClientId, *, joining: bool = False) -> None:
        self.stats.duplicate_id_seen += 1
        first = self.duplicate is None
        self.duplicate = found
        if first:
            log.error("%s: DUPLICATED CLIENT ID: %s", self.client_id, found.describe())
        if self._on_duplicate_id is not None:
            self._on_duplicate_id(found)
        if self.refuse_duplicate_id and (joining or self.now_ms() <= self.joining_ms):
            self._refuse(joined=not joining)

    def _refuse(self, *, joined: bool) -> None:
        """Leave without consuming (more): drop every queue without committing (the other holder of
        the id owns them too), close the connections without unregistering (an unregister names
        the id, which the other process also holds)."""
        log.error("%s: refusing to consume: another process uses this client id", self.client_id)
        self._stop.set()
        with self._lock:
            if joined and self.consumer.running:
                held = list(self.consumer.owned())
                self.consumer.crash()
                self.consumer.owned().clear()
                self._report_revoked(held)
            self._state = MemberState.REFUSED
        self.transport.close()

    def _may_commit(self, mq: MessageQueue) -> bool:
        """Commit ``mq``'s position only over the connection it was last read on (its last pull, or
        the offset read when the queue was taken; see :meth:`_catch_up`): over a new one, or none (the
        commit would open one), it may be behind the group's progress until the next pull catches it
        up — a member cut off before its first pull of a queue must not commit the offset it started
        from over the progress others made meanwhile."""
        if mq not in self._epochs:
            return True  # not taken through a rebalance of ours: nothing to compare with
        epoch = self._epochs[mq]  # the connection of its last pull, or of the offset read when it was taken
        return epoch is not None and self.transport.connection_epoch(mq.broker_name) == epoch

    def _catch_up(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """Move ``mq``'s position up to the group's committed offset if that is ahead. A member cut
        off from its broker for longer than the broker's ``channelExpiredTimeout`` was dropped and
        its queues handed to others, who processed and committed past where it stopped, while it
        still holds them until it rebalances. Below a committed offset every message was processed
        (a commit follows the processing), so nothing is skipped; going on from the old position
        would process them all again and commit that older position over the group's progress."""
        committed = self.transport.query_offset(self.group, mq)  # -1: none, -2: failed
        if committed == -2:
            return False
        with self._lock:
            if committed > pq.consumed_offset and not pq.dropped and self.consumer.owned().get(mq) is pq:
                log.info("%s: %s: the group committed %d, ahead of our %d: going on from there",
                         self.client_id, mq, committed, pq.consumed_offset)  # fmt: skip
                pq.consumed_offset = committed
                self.stats.caught_up += 1
        return True

    # ---- pull thread ----------------------------------------------------------------------------
    def _pull_loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                now = self.now_ms()
                work = [
                    (mq, pq, pq.consumed_offset)
                    for mq, pq in self.consumer.owned().items()
                    if self.consumer.active_from.get(mq, 0) <= now
                ]
            got = 0
            for mq, pq, offset in work:
                if self._stop.is_set():
                    return
                got += self._pull_one(mq, pq, offset)
            if not got:
                self._stop.wait(self.idle_pull_s)

    def _pull_one(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> int:
        result = self.transport.pull(self.group, mq, offset, self.pull_batch_size)
        self.stats.pulls += 1
        if result is None:  # failed: reported by the transport
            return 0
        epoch = self.transport.connection_epoch(mq.broker_name)
        if self._epochs.setdefault(mq, epoch) != epoch:  # pulled over a new connection: catch up first
            self._epochs[mq] = epoch if self._catch_up(mq, pq) else -1  # -1: try again at the next pull
            return 0  # the batch is pulled again from the position caught up to
        messages, next_offset = result
        if messages:
            try:
                self._consume(mq, messages)
            except Exception as e:  # the callback failed: the batch is pulled and offered again
                self._error(f"consume of {mq}", e)
                return 0
            self.stats.consumed += len(messages)
        with self._lock:
            if pq.dropped or self.consumer.owned().get(mq) is not pq:
                return len(messages)  # the queue moved while we consumed: the next owner redoes the batch
            if next_offset != pq.consumed_offset:
                pq.consumed_offset = next_offset
            self.consumer.impl.on_pull(mq, now_ms=self.now_ms())
        return len(messages)
