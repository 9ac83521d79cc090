"""A live snapshot: read a RocketMQ cluster through its name servers and brokers into the snapshot
format (:mod:`mqbalance.fleet.rocketmq.snapshot`), as ``mqadmin`` would show it.

What is read, and from where:

* clusters and broker sets — the name server's cluster info (106);
* topics and their routes — the name server's topic list (206), and each route built from every
  master broker's topic table (``GET_ALL_TOPIC_CONFIG``, 21: one request per broker, not one per
  topic) exactly as the name server builds it from the brokers' registrations; one route per
  broker (105) is read from the name server to check that it says the same (a name server that
  changed a broker's permissions, a static topic, a broker set without a master, a broker that
  does not answer 21 — the Rust port before it had it — and the reader asks the name server for
  each topic's route instead, as ``routes="name-server"`` always does); the lists of a route are
  sorted by broker name;
* consumer groups — every master broker's subscription groups (201);
* each group's connected clients — ``GET_CONSUMER_CONNECTION_LIST`` (203) from the first broker
  (by name) that has the group online, as ``mqadmin consumerConnection`` does, the requests of
  one broker pipelined on its connection; **every** connection the broker lists is kept, so an id
  a Java broker lists twice stays visible to the audit;
* the strategy each client reports, where it does — ``GET_CONSUMER_RUNNING_INFO`` (307), which the
  broker forwards to the client (Java clients report ``allocateMessageQueueStrategy``, the
  strategy object's class); a client that reports none runs the group default, ``AVG`` (Java's
  default); one the audit cannot compute (a custom class, ``CONFIG``, ``MACHINE_ROOM_NEARBY``) is
  kept as reported (:func:`as_reported`) and its group is not computed;
* committed offsets — every master broker's offset table (43).

:class:`ClusterReader` keeps its connections between reads (the watcher reads every tick) and
parses a broker's topic table or group table again only when its bytes changed.

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
import json
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
from mqbalance.remoting.api import ClusterInfo, TopicConfigs, strategy_from_running_info
from mqbalance.remoting.codes import RequestCode
from mqbalance.remoting.frame import RemotingCommand, loads_json

__all__ = ["ROUTE_SOURCES", "ClusterReader", "live_snapshot", "read_cluster", "read_summary"]

#: where routes come from: the brokers' topic tables (checked against the name server, which is
#: asked per topic when they do not agree), or always the name server, one request per topic
ROUTE_SOURCES = ("brokers", "name-server")

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


def _by_broker(items: Any) -> list[Any]:
    """A route's list (``brokerDatas`` / ``queueDatas``) sorted by broker name (name servers list
    them in hash order)."""
    return sorted(items or [], key=lambda d: str(d.get("brokerName", "")) if isinstance(d, dict) else "")


def _sorted_route(raw: dict[str, Any]) -> dict[str, Any]:
    out = dict(raw)
    for key in ("brokerDatas", "queueDatas"):
        if isinstance(out.get(key), list):
            out[key] = _by_broker(out[key])
    return out


class _RouteTemplate:
    """How one name server lays out a route: the keys around ``brokerDatas`` / ``queueDatas``
    (``filterServerTable``, ``orderTopicConf``… as it sends them when empty) and the key order of
    a ``queueDatas`` entry."""

    def __init__(self, probe: dict[str, Any]) -> None:
        self.extra = {k: v for k, v in probe.items() if k not in ("brokerDatas", "queueDatas")}
        queues = probe.get("queueDatas") or [{}]
        self.queue_keys = list(queues[0]) or ["brokerName", "perm", "readQueueNums", "topicSysFlag", "writeQueueNums"]

    def usable(self) -> bool:
        return all(v is None or v == {} or v == [] for v in self.extra.values())

    def queue_data(self, broker: str, config: dict[str, Any]) -> dict[str, Any]:
        values = {
            "brokerName": broker,
            "readQueueNums": int(config.get("readQueueNums", 0)),
            "writeQueueNums": int(config.get("writeQueueNums", 0)),
            "perm": int(config.get("perm", 0)),
            "topicSysFlag": int(config.get("topicSysFlag", 0) or 0),
        }
        return {k: values[k] for k in self.queue_keys if k in values} | values

    def route(self, brokers: list[dict[str, Any]], queues: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in self.extra.items():
            out[k] = v if not isinstance(v, (dict, list)) else type(v)()
        out["brokerDatas"], out["queueDatas"] = brokers, queues
        return out


#: the most answers of one group kept by their bytes (its connections listed in different orders)
_ANSWERS_PER_GROUP = 8


class _Answer:
    """One connection-list answer of a group: what it parsed to, what it says regardless of the
    order of its connections (:attr:`meaning`), and the snapshot entry built from it once (reads
    without running info: the entry depends on nothing else)."""

    __slots__ = ("entry", "info", "meaning")

    def __init__(self, info: ConsumerConnectionInfo) -> None:
        self.info = info
        self.meaning = (
            info.message_model,
            tuple(sorted(info.subscriptions)),
            tuple(
                sorted(
                    (c.client_id, c.client_addr or "", c.language or "", c.version is None, c.version or 0)
                    for c in info.connections
                )
            ),
        )
        self.entry: dict[str, Any] | None = None


class _Reader:
    def __init__(
        self,
        namesrv: str,
        timeout: float,
        workers: int,
        say: Callable[[str], None],
        credentials: AclCredentials | None = None,
        routes: str = "brokers",
    ) -> None:
        self.ns = NameServer(namesrv, timeout=timeout, credentials=credentials)
        self.credentials = credentials
        self.namesrv, self.timeout, self.workers, self.say = namesrv, timeout, workers, say
        self.route_source = routes
        self.errors: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.pool: dict[tuple[str, str], _Broker] = {}
        #: the last body of a broker's table and what was parsed from it: (kind, broker) -> (body, parsed)
        self.bodies: dict[tuple[str, str], tuple[bytes, Any]] = {}
        #: the routes last built from the brokers' tables and what they were built from
        self.built: tuple[Any, dict[str, Any]] | None = None
        #: how the last read got its routes: "brokers" or "name-server" (and why)
        self.routes_from = ""
        #: each group's connection-list answers by their bytes (a Java broker lists a group's
        #: connections in another order at another request: each order is one answer), and what
        #: each says: (broker, group) -> {body: _Answer}
        self.answers: dict[tuple[str, str], dict[bytes, _Answer]] = {}
        #: the routes last handed out, sorted, and what they were sorted from
        self.sorted_routes: tuple[dict[str, Any], dict[str, Any]] | None = None
        #: per group online in the last read, a token equal between reads when its answer says the
        #: same (same broker, connections in any order, subscriptions, message model)
        self.tokens: dict[str, tuple[str, Any]] = {}
        #: the groups the brokers' tables listed in the last read
        self.last_groups: list[str] = []

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

    def parsed(self, kind: str, broker: _Broker, body: bytes, parse: Callable[[bytes], T]) -> T:
        """``parse(body)``, or what it gave last time when the broker sent the same bytes."""
        key = (kind, broker.name)
        last = self.bodies.get(key)
        if last is not None and last[0] == body:
            return last[1]  # type: ignore[no-any-return]
        got = parse(body)
        self.bodies[key] = (body, got)
        return got

    def brokers(self, info: ClusterInfo) -> list[_Broker]:
        """The master brokers, keeping the connection of one listed at the same address as before
        (one that stopped answering is connected again)."""
        out = []
        for name, b in sorted(info.brokers.items()):
            if b.master_addr is None:
                continue
            key = (name, b.master_addr)
            broker = self.pool.get(key)
            if broker is None or broker.down is not None:
                if broker is not None:
                    broker.close()
                broker = self.pool[key] = _Broker(name, b.master_addr, self.timeout, self.credentials)
            out.append(broker)
        for key in set(self.pool) - {(b.name, b.addr) for b in out}:
            self.pool.pop(key).close()
        return out

    def read(self, running_info: bool, offsets: bool = True) -> dict[str, Any]:
        say = self.say
        self.errors = []
        raw = self.ns.cluster_info_json()  # no name server: RemotingConnectError, the whole read fails
        info = ClusterInfo.from_json(raw)
        brokers = self.brokers(info)
        say(
            f"name server {self.namesrv}: {len(info.clusters)} cluster(s), {len(info.brokers)} broker set(s) "
            f"({', '.join(f'{b.name} {b.addr}' for b in brokers)})"
        )
        return self._read(info, brokers, running_info, offsets)

    def close(self) -> None:
        for b in self.pool.values():
            b.close()
        self.pool.clear()
        self.ns.close()

    # -- routes ----------------------------------------------------------------------------------
    def _routes_by_topic(self, topics: list[str]) -> dict[str, Any]:
        """Each topic's route from the name server (``GET_ROUTEINFO_BY_TOPIC``, one per topic)."""
        routes: dict[str, Any] = {}
        failed_in_a_row = [0]
        ticker = _Ticker(self.say, "topic routes", len(topics))

        def route(topic: str) -> None:
            if failed_in_a_row[0] >= 3:
                return
            try:
                routes[topic] = _sorted_route(self.ns.topic_route(topic).raw)
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
        return routes

    def _topic_table(self, broker: _Broker) -> TopicConfigs | str:
        """The broker's topic table, or why not (a broker without the request, a failure)."""
        if broker.down is not None:
            return f"broker {broker.name} is down"
        try:
            body = broker.get().topic_configs_body()
        except BrokerResponseError as e:
            return f"broker {broker.name} answered GET_ALL_TOPIC_CONFIG with code {e.code}"
        except RemotingError as e:
            self.broker_down(broker, "GET_ALL_TOPIC_CONFIG", e)
            return f"broker {broker.name} is down"
        try:
            return self.parsed("topics", broker, body, lambda b: TopicConfigs.from_json(loads_json(b)))
        except (RemotingError, ValueError, TypeError, AttributeError) as e:
            return f"broker {broker.name}'s topic table did not parse: {e}"

    def _routes(self, topics: list[str], info: ClusterInfo, brokers: list[_Broker]) -> dict[str, Any]:
        if self.route_source == "name-server":
            self.routes_from = "name-server"
            return self._routes_by_topic(topics)
        why = self._routes_from_brokers(topics, info, brokers)
        if isinstance(why, dict):
            self.routes_from = "brokers"
            return why
        self.routes_from = f"name-server ({why})"
        self.say(f"topic routes from the name server, one per topic: {why}")
        return self._routes_by_topic(topics)

    def _routes_from_brokers(
        self, topics: list[str], info: ClusterInfo, brokers: list[_Broker]
    ) -> dict[str, Any] | str:
        """Every topic's route built from the brokers' topic tables as the name server builds it
        (a ``queueDatas`` entry per broker set whose table has the topic; its ``brokerDatas`` from
        the cluster info), or why it cannot be (then the name server is asked per topic)."""
        without_master = sorted(n for n, b in info.brokers.items() if b.master_addr is None)
        if without_master:
            return f"broker set(s) without a master: {', '.join(without_master)}"
        if not brokers:
            return "no broker"
        tables = _pool_map(self._topic_table, brokers, min(len(brokers), self.workers))
        for t in tables:
            if isinstance(t, str):
                return t
        table = dict(zip([b.name for b in brokers], tables, strict=True))
        # one route per broker from the name server: the layout, and proof that it says what the
        # broker's table says (a name server that wiped a broker's write permission does not)
        probes: dict[str, str] = {}
        listed = set(topics)
        for b in brokers:
            t = table[b.name]
            assert isinstance(t, TopicConfigs)
            own = b.name if b.name in t.topics and b.name in listed else None
            probe = own or next((n for n in sorted(t.topics) if n in listed and n not in t.static), None)
            if probe is not None:
                probes[b.name] = probe
        checked = _pool_map(self._probe, sorted(set(probes.values())), min(len(probes), self.workers))
        got = {topic: route for topic, route in checked if route is not None}
        if not got:
            return "no route could be read to check against"
        template = _RouteTemplate(got[min(got)])
        if not template.usable():
            return f"the name server's routes carry more than queues and brokers ({sorted(template.extra)})"
        key = (
            tuple(topics),
            json.dumps({n: b.raw for n, b in info.brokers.items()}, sort_keys=True),
            tuple(self.bodies[("topics", b.name)][0] for b in brokers),
            json.dumps(got, sort_keys=True),
        )
        if self.built is not None and self.built[0] == key:
            return self.built[1]
        datas = {name: b.raw or {"cluster": b.cluster, "brokerName": name} for name, b in info.brokers.items()}
        routes: dict[str, Any] = {}
        missing = []
        names = [b.name for b in brokers]
        for topic in topics:
            queues, owners = [], []
            static = False
            for name in names:
                t = table[name]
                assert isinstance(t, TopicConfigs)
                config = t.topics.get(topic)
                if config is None:
                    continue
                static = static or topic in t.static
                queues.append(template.queue_data(name, config))
                owners.append(datas[name])
            if static or not queues:
                missing.append(topic)  # a static topic, or one no broker has (yet): the name server's word
                continue
            routes[topic] = template.route(owners, queues)
        for topic, route in got.items():
            mine = routes.get(topic)
            if mine is None or _sorted_route(route) != mine:
                return f"the name server's route of {topic} is not the brokers' ({json.dumps(route)[:200]})"
        if missing:
            routes.update(self._routes_by_topic(missing))
            routes = dict(sorted(routes.items()))
        self.built = (key, routes)
        return routes

    def _probe(self, topic: str) -> tuple[str, dict[str, Any] | None]:
        try:
            return topic, self.ns.topic_route(topic).raw
        except RemotingError as e:
            if not (isinstance(e, BrokerResponseError) and e.code == ResponseCode.TOPIC_NOT_EXIST):
                self.error(None, f"GET_ROUTEINFO_BY_TOPIC {topic}", e)
            return topic, None

    # -- groups and connections ----------------------------------------------------------------
    def _groups(self, broker: _Broker) -> list[str]:
        def read(c: BrokerClient) -> list[str]:
            body = c.client.invoke_ok(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body
            return self.parsed(
                "groups",
                broker,
                body,
                lambda b: sorted(map(str, (loads_json(b) or {}).get("subscriptionGroupTable") or {})),
            )

        return self.call(broker, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", read) or []

    def _ask(self, broker: _Broker, groups: list[str]) -> dict[str, RemotingCommand | RemotingError]:
        """``GET_CONSUMER_CONNECTION_LIST`` of each of ``groups``, pipelined on the broker's
        connection: each group's response (any code) or error."""
        code = int(RequestCode.GET_CONSUMER_CONNECTION_LIST)
        requests = [(code, {"consumerGroup": g}) for g in groups]
        answers = broker.get().client.invoke_many(requests, window=max(1, self.workers) * 32)
        return dict(zip(groups, answers, strict=True))

    def _connections(
        self,
        groups: list[str],
        brokers: list[_Broker],
        early: tuple[_Broker, dict[str, RemotingCommand | RemotingError]] | None = None,
    ) -> dict[str, tuple[_Broker, _Answer]]:
        """Each group's connections from the first broker (by name) that has it online: every
        group asked of the first broker, pipelined; those it does not have online, of the next.
        ``early``: the answers a broker already gave in this read (asked while the group tables
        were read). An answer whose bytes equal one this group got from the broker before is not
        parsed again."""
        found: dict[str, tuple[_Broker, _Answer]] = {}
        remaining = list(groups)
        code = RequestCode.GET_CONSUMER_CONNECTION_LIST
        for b in brokers:
            if not remaining:
                break
            if b.down is not None:
                continue
            given = early[1] if early is not None and early[0] is b else {}
            try:
                answers = self._ask(b, [g for g in remaining if g not in given])
            except RemotingError as e:
                self.broker_down(b, "GET_CONSUMER_CONNECTION_LIST", e)
                continue
            left = []
            for group in remaining:
                got = given[group] if group in given else answers[group]
                if isinstance(got, RemotingError):
                    self.broker_down(b, f"GET_CONSUMER_CONNECTION_LIST {group}", got)
                elif got.code == ResponseCode.SUCCESS:
                    try:
                        found[group] = (b, self._answer(b, group, got.body))
                        continue
                    except RemotingFrameError as e:
                        self.broker_down(b, f"GET_CONSUMER_CONNECTION_LIST {group}", e)
                elif got.code != ResponseCode.CONSUMER_NOT_ONLINE:
                    self.error(b, f"GET_CONSUMER_CONNECTION_LIST {group}", b.get().client.response_error(code, got))
                left.append(group)
            remaining = left
            self.say(f"consumer connections: {len(found):,}/{len(groups):,} after broker {b.name}")
        return found

    def _answer(self, broker: _Broker, group: str, body: bytes) -> _Answer:
        """The group's answer ``body`` from ``broker``, parsed the first time these bytes come."""
        known = self.answers.get((broker.name, group))
        if known is None:
            known = self.answers[(broker.name, group)] = {}
        got = known.get(body)
        if got is None:
            try:
                data = loads_json(body) if body else {}
            except RemotingFrameError as e:
                raise RemotingFrameError(
                    f"{broker.addr}: body of the GET_CONSUMER_CONNECTION_LIST response is {e}", broker.addr
                ) from None
            got = _Answer(ConsumerConnectionInfo.from_json(data))
            if len(known) >= _ANSWERS_PER_GROUP:
                known.clear()
            known[body] = got
        return got

    def _members(
        self, brokers: list[_Broker], offsets: bool
    ) -> tuple[set[str], list[dict[str, Any]], dict[str, tuple[_Broker, _Answer]]]:
        """Every broker's groups (the brokers asked at once; and committed offsets, when
        ``offsets``), then each group's connections."""
        groups: set[str] = set()
        offset_rows: list[dict[str, Any]] = []
        # while the brokers' group tables are read, the first broker is asked the connections of
        # the groups the last read listed (those listed now and not then are asked after)
        first = next((b for b in brokers if b.down is None), None)
        early: tuple[_Broker, dict[str, RemotingCommand | RemotingError]] | None = None
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mqbalance-groups") as pool:
            tables = pool.submit(_pool_map, self._groups, brokers, min(len(brokers), self.workers))
            if first is not None and self.last_groups:
                try:
                    early = (first, self._ask(first, self.last_groups))
                except RemotingError:
                    early = None  # asked again below, where a broker that fails is recorded
            for listed in tables.result():
                groups.update(listed)
        self.last_groups = sorted(groups)
        for b in brokers:
            if not offsets:
                continue
            table = self.call(b, "GET_ALL_CONSUMER_OFFSET", lambda c: c.all_consumer_offsets())
            for (group, topic), queues in sorted((table or {}).items()):
                offset_rows += [
                    {"group": group, "topic": topic, "brokerName": b.name, "queueId": q, "offset": o}
                    for q, o in sorted(queues.items())
                ]
        self.say(f"{len(groups):,} consumer groups, {len(offset_rows):,} committed offsets on {len(brokers)} broker(s)")
        return groups, offset_rows, self._connections(self.last_groups, brokers, early)

    def _read(self, info: ClusterInfo, brokers: list[_Broker], running_info: bool, offsets: bool) -> dict[str, Any]:
        say = self.say
        clusters = info.clusters
        topics = self.ns.topic_list()
        # the routes (the brokers' topic tables) are read while the groups and connections are
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mqbalance-routes") as pool:
            pending = pool.submit(self._routes, topics, info, brokers)
            groups, offset_rows, found = self._members(brokers, offsets)
            routes = pending.result()
        say(f"read {len(routes):,} topic routes of {len(topics):,} topics (from the {self.routes_from})")
        online = [(g, b, a.info) for g, (b, a) in sorted(found.items()) if a.info.connections]
        for key in [k for k in self.answers if k[1] not in groups]:  # groups gone: their answers too
            del self.answers[key]
        reported: dict[tuple[str, str], str] = {}
        if running_info:
            asks = [(g, b, c.client_id) for g, b, info in online for c in info.connections if b is not None]
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
        self.tokens = {}
        for group, b, conn_info in online:
            if not running_info:  # the entry depends on the answer alone: built once per answer
                answer = found[group][1]
                if answer.entry is None:
                    answer.entry = _group_entry(group, conn_info, reported)
                out_groups[group] = answer.entry
                self.tokens[group] = (b.name, answer.meaning)
            else:
                out_groups[group] = _group_entry(group, conn_info, reported)
        say(
            f"{len(out_groups):,} groups online with {sum(len(g['connections']) for g in out_groups.values()):,} "
            f"connections; {len(self.errors)} read error(s)"
        )
        if self.sorted_routes is None or self.sorted_routes[0] is not routes:
            self.sorted_routes = (routes, dict(sorted(routes.items())))
        return {
            "topics": self.sorted_routes[1],
            "groups": out_groups,
            "offsets": offset_rows,
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


def _group_entry(group: str, conn_info: ConsumerConnectionInfo, reported: dict[tuple[str, str], str]) -> dict[str, Any]:
    """A group's snapshot entry: its connections (every one the broker listed, in its order, with
    the strategy its client reported), subscriptions and message model."""
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
    return {
        "messageModel": model or "CLUSTERING",
        "subscriptions": sorted(conn_info.subscriptions),
        "strategy": "AVG",
        "connections": rows,
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


def _check(workers: int, progress: Callable[[str], None] | None, routes: str) -> None:
    if _validate.count(workers, "workers", maximum=MAX_WORKERS) < 1:
        raise InvalidInputError(f"workers must be at least 1, got {workers!r}", workers)
    if progress is not None and not callable(progress):
        raise InvalidInputError(f"progress must be callable or None, got {progress!r:.40}", progress)
    if routes not in ROUTE_SOURCES:
        raise InvalidInputError(f"routes must be one of {', '.join(ROUTE_SOURCES)}, got {routes!r:.40}", routes)


class ClusterReader:
    """Reads a cluster again and again (the watcher's reader): the connections stay open between
    reads, and a broker's topic or group table is parsed again only when its bytes changed.
    :meth:`read` takes the arguments of :func:`read_cluster`'s read; ``routes_from`` says where
    the last read's routes came from.

    >>> with ClusterReader("127.0.0.1:9876") as reader:  # doctest: +SKIP
    ...     data = reader.read(running_info=False, offsets=False)
    ...     reader.routes_from
    'brokers'
    """

    def __init__(
        self,
        namesrv: str,
        *,
        timeout: float = 3.0,
        workers: int = 8,
        progress: Callable[[str], None] | None = None,
        credentials: AclCredentials | None = None,
        routes: str = "brokers",
    ) -> None:
        _check(workers, progress, routes)
        self._reader = _Reader(namesrv, timeout, workers, progress or (lambda message: None), credentials, routes)

    @property
    def routes_from(self) -> str:
        return self._reader.routes_from

    @property
    def group_tokens(self) -> dict[str, Any]:
        """Per group online in the last read (without running info), a token equal to the one of
        an earlier read when the group's answer said the same then: the same broker, the same
        connections in any order, subscriptions and message model. The read hands out the same
        entry object for an answer it had before, and the same ``topics`` object while the routes
        did not change: treat what :meth:`read` returns as read-only."""
        return self._reader.tokens

    def read(self, *, running_info: bool = True, offsets: bool = True) -> dict[str, Any]:
        """The cluster as a JSON snapshot (see :func:`read_cluster`); ``offsets=False`` leaves the
        committed offsets out (``offsets`` is ``[]``)."""
        for name, value in (("running_info", running_info), ("offsets", offsets)):
            if not isinstance(value, bool):
                raise InvalidInputError(f"{name} must be True or False, got {value!r:.40}", value)
        return self._reader.read(running_info, offsets)

    def close(self) -> None:
        self._reader.close()

    def __enter__(self) -> ClusterReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_cluster(
    namesrv: str,
    *,
    timeout: float = 3.0,
    running_info: bool = True,
    workers: int = 8,
    progress: Callable[[str], None] | None = None,
    credentials: AclCredentials | None = None,
    routes: str = "brokers",
) -> dict[str, Any]:
    """Read a cluster into a JSON snapshot (a dict with ``topics``, ``groups``, ``offsets``,
    ``errors`` and ``meta``). ``namesrv`` is ``host:port`` or several joined by ``;``;
    ``timeout`` is per request; ``workers`` requests are in flight at once;
    ``running_info=False`` skips asking each client for its strategy; ``credentials`` signs every
    request (brokers with ``authenticationEnabled``); ``routes`` is where topic routes come from
    (:data:`ROUTE_SOURCES`: ``"brokers"``, the brokers' topic tables checked against the name
    server, or ``"name-server"``, one request per topic: both give the same routes). Each argument
    is checked before anything is sent (an :class:`~mqbalance.exceptions.InvalidInputError` naming it)."""
    _check(workers, progress, routes)
    if not isinstance(running_info, bool):
        raise InvalidInputError(f"running_info must be True or False, got {running_info!r:.40}", running_info)
    with ClusterReader(
        namesrv, timeout=timeout, workers=workers, progress=progress, credentials=credentials, routes=routes
    ) as reader:
        return reader.read(running_info=running_info)


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
