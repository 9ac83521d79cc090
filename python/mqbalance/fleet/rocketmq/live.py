"""A live snapshot: read a RocketMQ cluster through its name servers and brokers into the snapshot
format (:mod:`mqbalance.fleet.rocketmq.snapshot`), as ``mqadmin`` would show it.

What is read, and from where:

* clusters and broker sets — the name server's cluster info (106);
* topics and their routes — the name server's topic list (206) and each topic's route (105);
* consumer groups — every master broker's subscription groups (201);
* each group's connected clients — ``GET_CONSUMER_CONNECTION_LIST`` (203) from the first broker
  (by name) that has the group online, as ``mqadmin consumerConnection`` does; **every**
  connection the broker lists is kept, so an id a Java broker lists twice stays visible to the audit;
* the strategy each client reports, where it does — ``GET_CONSUMER_RUNNING_INFO`` (307), which the
  broker forwards to the client (Java clients report ``allocateMessageQueueStrategy``, the
  strategy object's class); a client that reports none runs the group default, ``AVG`` (Java's
  default); one the audit cannot compute (a custom class, ``CONFIG``, ``MACHINE_ROOM_NEARBY``) is
  kept as reported (:func:`as_reported`) and its group is not computed;
* committed offsets — every master broker's offset table (43).

Every request has a timeout. A broker that does not answer is recorded in the snapshot's
``errors`` (with the request and the error) and skipped from then on; the snapshot of the rest is
still written. Only a cluster with no reachable name server is an error
(:class:`~mqbalance.exceptions.RemotingConnectError`).

>>> from mqbalance.fleet.rocketmq.live import live_snapshot
>>> try:
...     live_snapshot("127.0.0.1:1", timeout=0.5)
... except RemotingConnectError as e:
...     print(str(e).split(":")[0])
no name server answered
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from mqbalance import _validate
from mqbalance.allocation.registry import StrategyName
from mqbalance.exceptions import (
    BrokerResponseError,
    InvalidInputError,
    MQBalanceError,
    RemotingConnectError,
    RemotingError,
    RemotingFrameError,
    RemotingTimeoutError,
)
from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
from mqbalance.fleet.rocketmq.snapshot import Snapshot, auditable_strategy
from mqbalance.remoting import AclCredentials, BrokerClient, ConsumerConnectionInfo, NameServer, ResponseCode
from mqbalance.remoting.api import strategy_from_running_info

__all__ = ["live_snapshot", "read_cluster", "read_summary"]

#: the most requests :func:`read_cluster` keeps in flight at once
MAX_WORKERS = 256

T = TypeVar("T")
R = TypeVar("R")


class _Ticker:
    """``say`` a phase's progress (``done/total``) at most every ``interval`` seconds."""

    def __init__(self, say: Callable[[str], None], what: str, total: int, interval: float = 2.0) -> None:
        self.say, self.what, self.total, self.interval = say, what, total, interval
        self.done = 0
        self.last = time.monotonic()
        self.lock = threading.Lock()

    def tick(self) -> None:
        with self.lock:
            self.done += 1
            now = time.monotonic()
            if now - self.last >= self.interval and self.done < self.total:
                self.last = now
                self.say(f"{self.what}: {self.done:,}/{self.total:,}")


def _pool_map(fn: Callable[[T], R], items: Iterable[T], workers: int, ticker: _Ticker | None = None) -> list[R]:
    def run(item: T) -> R:
        try:
            return fn(item)
        finally:
            if ticker is not None:
                ticker.tick()

    items = list(items)
    if workers <= 1 or len(items) <= 1:
        return [run(i) for i in items]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mqbalance-live") as pool:
        return list(pool.map(run, items))


class _Broker:
    """One master broker: its client, and whether it still answers."""

    def __init__(self, name: str, addr: str, timeout: float, credentials: AclCredentials | None) -> None:
        self.name, self.addr, self.timeout, self.credentials = name, addr, timeout, credentials
        self.client: BrokerClient | None = None
        self.down: str | None = None
        self.lock = threading.Lock()

    def get(self) -> BrokerClient:
        with self.lock:
            if self.down is not None:
                raise RemotingConnectError(self.down, self.addr)
            if self.client is None:
                self.client = BrokerClient(self.addr, timeout=self.timeout, credentials=self.credentials)
            return self.client

    def mark_down(self, error: RemotingError) -> None:
        with self.lock:
            if self.down is None:
                self.down = str(error)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()


class _Reader:
    def __init__(
        self,
        namesrv: str,
        timeout: float,
        workers: int,
        say: Callable[[str], None],
        credentials: AclCredentials | None = None,
    ) -> None:
        self.ns = NameServer(namesrv, timeout=timeout, credentials=credentials)
        self.credentials = credentials
        self.namesrv, self.timeout, self.workers, self.say = namesrv, timeout, workers, say
        self.errors: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def error(self, broker: _Broker | None, request: str, e: BaseException) -> None:
        row = {
            "broker": None if broker is None else broker.name,
            "address": broker.addr if broker is not None else self.namesrv,
            "request": request,
            "error": str(e),
        }
        with self.lock:
            self.errors.append(row)

    def call(self, broker: _Broker, request: str, fn: Callable[[BrokerClient], R]) -> R | None:
        """``fn(client)``; a broker that fails at the connection level is recorded once and skipped
        from then on; a refusal (a response code) is recorded and the broker kept."""
        if broker.down is not None:
            return None
        try:
            return fn(broker.get())
        except BrokerResponseError as e:
            self.error(broker, request, e)
            return None
        except RemotingError as e:
            self.broker_down(broker, request, e)
            return None

    def broker_down(self, broker: _Broker, request: str, e: RemotingError) -> None:
        first = broker.down is None
        broker.mark_down(e)
        if first:
            self.error(broker, request, e)
            self.say(f"broker {broker.name} ({broker.addr}) does not answer: {e}")

    def read(self, running_info: bool) -> dict[str, Any]:
        say = self.say
        info = self.ns.cluster_info()  # no name server: RemotingConnectError, the whole read fails
        brokers = [
            _Broker(name, b.master_addr, self.timeout, self.credentials)
            for name, b in sorted(info.brokers.items())
            if b.master_addr is not None
        ]
        say(
            f"name server {self.namesrv}: {len(info.clusters)} cluster(s), {len(info.brokers)} broker set(s) "
            f"({', '.join(f'{b.name} {b.addr}' for b in brokers)})"
        )
        try:
            return self._read(info.clusters, brokers, running_info)
        finally:
            for b in brokers:
                b.close()
            self.ns.close()

    def _read(self, clusters: dict[str, list[str]], brokers: list[_Broker], running_info: bool) -> dict[str, Any]:
        say = self.say
        topics = self.ns.topic_list()
        routes: dict[str, Any] = {}
        failed_in_a_row = [0]
        ticker = _Ticker(say, "topic routes", len(topics))

        def route(topic: str) -> None:
            if failed_in_a_row[0] >= 3:
                return
            try:
                routes[topic] = self.ns.topic_route(topic).raw
                failed_in_a_row[0] = 0
            except BrokerResponseError as e:
                if e.code != ResponseCode.TOPIC_NOT_EXIST:  # deleted since the list was read: not an error
                    self.error(None, "GET_ROUTEINFO_BY_TOPIC", e)
            except RemotingError as e:
                failed_in_a_row[0] += 1
                self.error(None, f"GET_ROUTEINFO_BY_TOPIC {topic}", e)

        _pool_map(route, topics, self.workers, ticker)
        if failed_in_a_row[0] >= 3:
            missing = len(topics) - len(routes)
            self.error(
                None,
                "GET_ROUTEINFO_BY_TOPIC",
                RemotingError(f"name server stopped answering: {missing} routes not read"),
            )
        say(f"read {len(routes):,} topic routes of {len(topics):,} topics")

        groups: set[str] = set()
        offsets: list[dict[str, Any]] = []
        for b in brokers:
            subs = self.call(b, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", lambda c: c.subscription_groups())
            groups.update(subs or ())
            table = self.call(b, "GET_ALL_CONSUMER_OFFSET", lambda c: c.all_consumer_offsets())
            for (group, topic), queues in sorted((table or {}).items()):
                offsets += [
                    {"group": group, "topic": topic, "brokerName": b.name, "queueId": q, "offset": o}
                    for q, o in sorted(queues.items())
                ]
        say(f"{len(groups):,} consumer groups, {len(offsets):,} committed offsets on {len(brokers)} broker(s)")

        def connections(group: str) -> tuple[str, _Broker | None, ConsumerConnectionInfo | None]:
            for b in brokers:
                conns = self.call(b, f"GET_CONSUMER_CONNECTION_LIST {group}", lambda c: c.consumer_connections(group))
                if conns is not None:
                    return group, b, conns
            return group, None, None

        online = [
            g
            for g in _pool_map(
                connections, sorted(groups), self.workers, _Ticker(say, "consumer connections", len(groups))
            )
            if g[2] is not None and g[2].connections
        ]
        reported: dict[tuple[str, str], str] = {}
        if running_info:
            asks = [(g, b, c.client_id) for g, b, info in online for c in info.connections if b is not None]  # type: ignore[union-attr]
            asks = list(dict.fromkeys(asks))

            def ask(item: tuple[str, _Broker, str]) -> None:
                group, b, client_id = item
                if b.down is not None:
                    return
                try:
                    got = b.get().consumer_running_info(group, client_id)
                except BrokerResponseError:
                    return  # the client does not report (not a Java client, or it did not answer)
                except RemotingTimeoutError:
                    return  # the broker waits for the client (5 s); ours gave up first: no report
                except RemotingFrameError:
                    return  # the client's reply (forwarded as is) did not parse: the client's, not the broker's
                except RemotingError as e:
                    self.broker_down(b, "GET_CONSUMER_RUNNING_INFO", e)
                    return
                name = strategy_from_running_info(got)
                if name is not None:
                    reported[(group, client_id)] = name

            _pool_map(ask, asks, self.workers, _Ticker(say, "consumer running info", len(asks)))
            say(f"{len(reported):,} of {len(asks):,} clients reported their strategy")
        out_groups: dict[str, Any] = {}
        for group, _b, conn_info in online:
            assert conn_info is not None
            rows = []
            for c in conn_info.connections:
                row: dict[str, Any] = {"clientId": c.client_id}
                if c.client_addr:
                    row["clientAddr"] = c.client_addr
                if c.language:
                    row["language"] = c.language
                if c.version is not None:
                    row["version"] = c.version
                name = reported.get((group, c.client_id))
                if name is not None:
                    row["strategy"] = as_reported(name, f"{group}/{c.client_id}")
                rows.append(row)
            model = conn_info.message_model if conn_info.message_model in ("CLUSTERING", "BROADCASTING") else None
            out_groups[group] = {
                "messageModel": model or "CLUSTERING",
                "subscriptions": sorted(conn_info.subscriptions),
                "strategy": "AVG",
                "connections": rows,
            }
        say(
            f"{len(out_groups):,} groups online with {sum(len(g['connections']) for g in out_groups.values()):,} "
            f"connections; {len(self.errors)} read error(s)"
        )
        return {
            "topics": dict(sorted(routes.items())),
            "groups": out_groups,
            "offsets": offsets,
            "errors": self.errors,
            "meta": {
                "namesrv": self.namesrv,
                "takenAt": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "clusters": clusters,
                "brokers": {b.name: b.addr for b in brokers},
                "unreachableBrokers": sorted(b.name for b in brokers if b.down is not None),
                "groupsOffline": len(groups) - len(out_groups),
            },
        }


def as_reported(name: str, where: str) -> str | dict[str, str]:
    """A strategy a client reported, for the JSON snapshot: the name when a fleet audit computes it
    as it stands, else ``{"reported": name}`` (:class:`~mqbalance.fleet.rocketmq.snapshot.ReportedStrategy`:
    the group is not computed, never audited as another strategy). ``MACHINE_ROOM_NEARBY`` is
    always kept as reported: Java's running info names neither its inner strategy nor the client's
    machine room resolver (the audit's ``ROOM@NAME`` prefix rule is an assumption a snapshot's author
    may write, not something a client reports).

    >>> as_reported("AVG_BY_CIRCLE", "g/c"), as_reported("CONFIG", "g/c"), as_reported("MyAllocator", "g/c")
    ('AVG_BY_CIRCLE', {'reported': 'CONFIG'}, {'reported': 'MyAllocator'})
    >>> as_reported("MACHINE_ROOM_NEARBY-AVG", "g/c")
    {'reported': 'MACHINE_ROOM_NEARBY-AVG'}
    """
    if name.upper().startswith(StrategyName.MACHINE_ROOM_NEARBY.value):
        return {"reported": name}
    try:
        auditable_strategy(name, where)
    except MQBalanceError:
        return {"reported": name}
    return name


def read_cluster(
    namesrv: str,
    *,
    timeout: float = 3.0,
    running_info: bool = True,
    workers: int = 8,
    progress: Callable[[str], None] | None = None,
    credentials: AclCredentials | None = None,
) -> dict[str, Any]:
    """Read a cluster into a JSON snapshot (a dict with ``topics``, ``groups``, ``offsets``,
    ``errors`` and ``meta``). ``namesrv`` is ``host:port`` or several joined by ``;``;
    ``timeout`` is per request; ``workers`` requests are in flight at once;
    ``running_info=False`` skips asking each client for its strategy; ``credentials`` signs every
    request (brokers with ``authenticationEnabled``). Each argument is checked before anything is
    sent (an :class:`~mqbalance.exceptions.InvalidInputError` naming it)."""
    if _validate.count(workers, "workers", maximum=MAX_WORKERS) < 1:
        raise InvalidInputError(f"workers must be at least 1, got {workers!r}", workers)
    if progress is not None and not callable(progress):
        raise InvalidInputError(f"progress must be callable or None, got {progress!r:.40}", progress)
    if not isinstance(running_info, bool):
        raise InvalidInputError(f"running_info must be True or False, got {running_info!r:.40}", running_info)
    return _Reader(namesrv, timeout, workers, progress or (lambda message: None), credentials).read(running_info)


def live_snapshot(
    namesrv: str,
    *,
    timeout: float = 3.0,
    running_info: bool = True,
    workers: int = 8,
    progress: Callable[[str], None] | None = None,
    credentials: AclCredentials | None = None,
) -> Snapshot:
    """:func:`read_cluster`, validated into a :class:`~mqbalance.fleet.rocketmq.snapshot.Snapshot` whose
    source is ``rocketmq://<namesrv>``."""
    data = read_cluster(
        namesrv,
        timeout=timeout,
        running_info=running_info,
        workers=workers,
        progress=progress,
        credentials=credentials,
    )
    return snapshot_from_dict(data, f"rocketmq://{namesrv}")


def read_summary(data: dict[str, Any], snapshot: Snapshot) -> str:
    """What a live read holds (``data`` from :func:`read_cluster`, ``snapshot`` of it), for people."""
    return (
        f"{len(data['topics']):,} topics, {snapshot.readable_queue_count():,} readable queues, "
        f"{len(data['groups']):,} groups online ({data['meta']['groupsOffline']:,} offline), "
        f"{snapshot.connections.num_rows:,} connections, {snapshot.offsets.num_rows:,} committed offsets"
    )
