"""Scenarios as data: a cluster, one consumer group, a timeline of events (YAML, JSON or a dict).

Durations are seconds (a number) or strings with a unit: ``"500ms"``, ``"20s"``, ``"10m"``,
``"1h"``. Every field except ``topics`` and ``group.consumers`` has the default shown::

    name: consumer-join
    seed: 1
    duration: 1h
    sample_interval: 1s
    semantics: 5.x                  # client and broker generation: 4.x | 5.x
    brokers: [broker-a, broker-b]
    topics:
      TopicTest: {queues_per_broker: 32, rate: 1000}   # producer msg/s over the write queues
    group:
      name: cg
      strategy: AVG                 # or {name: CONSISTENT_HASH, virtual_node_cnt: 10}
      consume_from_where: LAST_OFFSET
      consumers: 10                 # a count (ids 10.0.0.<i>@<1000+i>) or a list of {id, throughput, start}
      throughput: 200               # msg/s per consumer
      start_spread: 10s             # each starts at a seeded moment in [0, spread] unless given a start
    client: {rebalance_interval: 20s, min_interval: 1s, heartbeat_interval: 30s,
             persist_interval: 5s, poll_name_server_interval: 30s, pull_delay: 500ms}
    broker: {notify: true, channel_expired_timeout: 120s, scan_interval: 10s}
    network: {delay: 0s, loss: 0.0} # on notifications, heartbeats, offset commits, member queries
    compare: [AVG, AVG_BY_CIRCLE]   # optional: run once per strategy
    events:
      - {at: 10m, join: {id: 10.0.0.11@1011, throughput: 200}}  # join: <id> works too
      - {at: 20m, leave: 10.0.0.3@1003}         # graceful: persist offsets, unregister
      - {at: 30m, crash: 10.0.0.4@1004}         # silent: the broker expires it after 120 s
      - {at: 31m, crash: 10.0.0.5@1005, close_connection: true}   # the broker sees the socket close
      - {at: 40m, queues: {topic: TopicTest, queues_per_broker: 48}}
      - {at: 50m, network: {delay: 200ms, loss: 0.1}}
      - {at: 55m, notify: false}                # the broker stops sending NOTIFY_CONSUMER_IDS_CHANGED

``leave``/``crash`` act on the newest running consumer with that id (ids may be duplicated: that
is a hazard worth simulating). Errors name the file and the field (:class:`ScenarioError`).

>>> s = scenario_from_dict({"topics": {"T": {"queues_per_broker": 4, "rate": 10}},
...                         "group": {"consumers": 2}, "duration": "2m"})
>>> s.duration_ms, [c.client_id for c in s.consumers], [c.start_ms <= 10_000 for c in s.consumers]
(120000, ['10.0.0.1@1001', '10.0.0.2@1002'], [True, True])
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from mqbalance.exceptions import MQBalanceError

__all__ = [
    "ScenarioError",
    "Scenario",
    "ConsumerSpec",
    "ScenarioEvent",
    "TopicSpec",
    "ClientSettings",
    "BrokerSettings",
    "NetworkSettings",
    "load_scenario",
    "scenario_from_dict",
    "bundled_scenarios",
    "parse_duration_ms",
]


class ScenarioError(MQBalanceError, ValueError):
    """A scenario that cannot be run; the message names the file and the field."""


_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$")


def parse_duration_ms(value: Any, where: str) -> int:
    """``"500ms"`` → 500, ``"2m"`` → 120000, ``3`` → 3000 (a number is seconds)."""
    if isinstance(value, bool):
        raise ScenarioError(f"{where}: expected a duration like '20s', got {value!r}")
    if isinstance(value, (int, float)):
        ms = float(value) * 1000
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        ms = float(m.group(1)) * _UNITS[m.group(2)]
    else:
        raise ScenarioError(f"{where}: expected a duration like '500ms', '20s', '10m' or '1h', got {value!r}")
    if not ms >= 0 or ms != ms or ms > 10 * 86_400_000:  # NaN, negative, more than 10 days
        raise ScenarioError(f"{where}: duration must be between 0 and 10 days, got {value!r}")
    return round(ms)


@dataclass(frozen=True)
class TopicSpec:
    name: str
    queues_per_broker: int
    rate: float  # produced messages per second, round-robin over the write queues


@dataclass(frozen=True)
class ConsumerSpec:
    client_id: str
    throughput: float  # messages per second it can consume
    start_ms: int = 0


@dataclass(frozen=True)
class ClientSettings:
    rebalance_interval_ms: int = 20_000
    min_interval_ms: int | None = 1_000
    heartbeat_interval_ms: int = 30_000
    persist_interval_ms: int = 5_000
    poll_name_server_interval_ms: int = 30_000
    pull_delay_ms: int | None = None  # None: 500 ms under 5.x, 0 under 4.x


@dataclass(frozen=True)
class BrokerSettings:
    notify: bool = True
    channel_expired_timeout_ms: int = 120_000
    scan_interval_ms: int = 10_000


@dataclass(frozen=True)
class NetworkSettings:
    delay_ms: int = 0
    loss: float = 0.0


@dataclass(frozen=True)
class ScenarioEvent:
    """One timeline entry; ``kind`` is join, leave, crash, queues, network or notify."""

    at_ms: int
    kind: str
    client_id: str = ""
    throughput: float = 0.0
    close_connection: bool = False
    topic: str = ""
    queues_per_broker: int = 0
    network: NetworkSettings | None = None
    notify: bool = True

    def describe(self) -> str:
        if self.kind in ("join", "leave"):
            return f"{self.kind} {self.client_id}"
        if self.kind == "crash":
            return f"crash {self.client_id}" + (" (connection closed)" if self.close_connection else " (silent)")
        if self.kind == "queues":
            return f"{self.topic}: {self.queues_per_broker} queues per broker"
        if self.kind == "network" and self.network is not None:
            return f"network delay {self.network.delay_ms} ms, loss {self.network.loss:g}"
        return f"broker notification {'on' if self.notify else 'off'}"


@dataclass(frozen=True)
class Scenario:
    name: str
    source: str
    topics: tuple[TopicSpec, ...]
    consumers: tuple[ConsumerSpec, ...]
    events: tuple[ScenarioEvent, ...] = ()
    description: str = ""
    seed: int = 1
    duration_ms: int = 3_600_000
    sample_interval_ms: int = 1_000
    semantics: str = "5.x"
    brokers: tuple[str, ...] = ("broker-a", "broker-b")
    group: str = "cg"
    strategy: str = "AVG"
    strategy_params: tuple[tuple[str, Any], ...] = ()
    consume_from_where: str = "LAST_OFFSET"
    client: ClientSettings = field(default_factory=ClientSettings)
    broker: BrokerSettings = field(default_factory=BrokerSettings)
    network: NetworkSettings = field(default_factory=NetworkSettings)
    compare: tuple[str, ...] = ()

    def queue_count(self) -> dict[str, int]:
        """Queues per topic at the start."""
        return {t.name: t.queues_per_broker * len(self.brokers) for t in self.topics}

    def with_strategy(self, name: str) -> Scenario:
        """The same scenario under another strategy (its parameters kept only if the name is the same)."""
        return replace(
            self, strategy=name, strategy_params=self.strategy_params if name == self.strategy else (), compare=()
        )


class _Reader:
    """Typed access to one mapping, naming ``source: path.field`` in every error."""

    def __init__(self, data: Any, where: str, known: tuple[str, ...]) -> None:
        if not isinstance(data, dict):
            raise ScenarioError(f"{where}: expected a mapping, got {type(data).__name__}")
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise ScenarioError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(known)})")
        self.data, self.where = data, where

    def at(self, key: str) -> str:
        return f"{self.where}.{key}"

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def duration(self, key: str, default: int) -> int:
        return parse_duration_ms(self.data[key], self.at(key)) if self.has(key) else default

    def number(self, key: str, default: float, *, minimum: float = 0.0, maximum: float = 1e9) -> float:
        if not self.has(key):
            return default
        v = self.data[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not minimum <= v <= maximum:
            raise ScenarioError(f"{self.at(key)}: expected a number in [{minimum:g}, {maximum:g}], got {v!r}")
        return float(v)

    def integer(self, key: str, default: int, *, minimum: int = 0, maximum: int = 1_000_000) -> int:
        if not self.has(key):
            return default
        v = self.data[key]
        if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= maximum:
            raise ScenarioError(f"{self.at(key)}: expected an integer in [{minimum}, {maximum}], got {v!r}")
        return v

    def text(self, key: str, default: str, choices: tuple[str, ...] = ()) -> str:
        if not self.has(key):
            return default
        v = self.data[key]
        if not isinstance(v, str) or not v or (choices and v not in choices):
            expected = f"one of {', '.join(choices)}" if choices else "a non-empty string"
            raise ScenarioError(f"{self.at(key)}: expected {expected}, got {v!r}")
        return v

    def flag(self, key: str, default: bool) -> bool:
        if not self.has(key):
            return default
        v = self.data[key]
        if not isinstance(v, bool):
            raise ScenarioError(f"{self.at(key)}: expected true or false, got {v!r}")
        return v


def _network(data: Any, where: str, default: NetworkSettings = NetworkSettings()) -> NetworkSettings:
    r = _Reader(data or {}, where, ("delay", "loss"))
    return NetworkSettings(r.duration("delay", default.delay_ms), r.number("loss", default.loss, maximum=1.0))


def _strategy(data: Any, where: str) -> tuple[str, tuple[tuple[str, Any], ...]]:
    from mqbalance.strategies import strategy

    if isinstance(data, str):
        name, params = data, {}
    else:
        r = _Reader(data, where, ("name", "virtual_node_cnt", "charset"))
        name = r.text("name", "")
        if not name:
            raise ScenarioError(f"{where}.name: missing")
        params = {k: v for k, v in data.items() if k != "name"}
    if name == "CONFIG" or name.startswith("MACHINE_ROOM"):
        raise ScenarioError(
            f"{where}: strategy {name!r} needs per-client configuration a scenario does not carry; use AVG, "
            "AVG_BY_CIRCLE or CONSISTENT_HASH"
        )
    try:
        strategy(name, **params)
    except (MQBalanceError, TypeError) as e:
        raise ScenarioError(f"{where}: {e}") from e
    return name, tuple(sorted(params.items()))


def _consumers(r: _Reader, throughput: float, seed: int) -> tuple[ConsumerSpec, ...]:
    """The consumers running from the start; without an explicit ``start`` each starts at a
    seeded moment within ``start_spread`` (real consumers do not start in lockstep, and starting
    them together would align every periodic rebalance)."""
    spread = r.duration("start_spread", 10_000)
    rng = random.Random(seed)
    raw = r.data.get("consumers")
    if isinstance(raw, int) and not isinstance(raw, bool):
        if not 0 <= raw <= 10_000:
            raise ScenarioError(f"{r.at('consumers')}: expected 0..10000 consumers, got {raw!r}")
        return tuple(
            ConsumerSpec(f"10.0.0.{i}@{1000 + i}", throughput, rng.randrange(spread + 1)) for i in range(1, raw + 1)
        )
    if not isinstance(raw, list):
        raise ScenarioError(
            f"{r.at('consumers')}: expected a count or a list of {{id, throughput, start}}, got {raw!r}"
        )
    out = []
    for i, item in enumerate(raw):
        where = f"{r.at('consumers')}[{i}]"
        c = _Reader({"id": item} if isinstance(item, str) else item, where, ("id", "throughput", "start"))
        if not c.has("id"):
            raise ScenarioError(f"{where}.id: missing")
        start = rng.randrange(spread + 1)  # drawn for every entry, so adding a start keeps the others'
        out.append(ConsumerSpec(c.text("id", ""), c.number("throughput", throughput), c.duration("start", start)))
    return tuple(out)


_EVENT_KINDS = ("join", "leave", "crash", "queues", "network", "notify")


def _event(data: Any, where: str, topics: dict[str, TopicSpec], throughput: float) -> ScenarioEvent:
    r = _Reader(data, where, ("at", *_EVENT_KINDS, "close_connection"))
    if not r.has("at"):
        raise ScenarioError(f"{where}.at: missing")
    at = r.duration("at", 0)
    kinds = [k for k in _EVENT_KINDS if k in data]
    if len(kinds) != 1:
        raise ScenarioError(f"{where}: expected exactly one of {', '.join(_EVENT_KINDS)}, got {kinds or 'none'}")
    kind = kinds[0]
    if "close_connection" in data and kind != "crash":
        raise ScenarioError(f"{where}.close_connection: only applies to crash")
    value = data[kind]
    if kind == "join":
        j = _Reader({"id": value} if isinstance(value, str) else value, r.at("join"), ("id", "throughput"))
        if not j.has("id"):
            raise ScenarioError(f"{j.at('id')}: missing")
        return ScenarioEvent(at, "join", client_id=j.text("id", ""), throughput=j.number("throughput", throughput))
    if kind in ("leave", "crash"):
        if not isinstance(value, str) or not value:
            raise ScenarioError(f"{r.at(kind)}: expected a client id, got {value!r}")
        return ScenarioEvent(at, kind, client_id=value, close_connection=r.flag("close_connection", False))
    if kind == "queues":
        q = _Reader(value, r.at("queues"), ("topic", "queues_per_broker"))
        topic = q.text("topic", "")
        if topic not in topics:
            raise ScenarioError(f"{q.at('topic')}: unknown topic {topic!r} (topics: {', '.join(topics)})")
        if not q.has("queues_per_broker"):
            raise ScenarioError(f"{q.at('queues_per_broker')}: missing")
        return ScenarioEvent(
            at, "queues", topic=topic, queues_per_broker=q.integer("queues_per_broker", 0, maximum=65_536)
        )
    if kind == "network":
        return ScenarioEvent(at, "network", network=_network(value, r.at("network")))
    if not isinstance(value, bool):
        raise ScenarioError(f"{r.at('notify')}: expected true or false, got {value!r}")
    return ScenarioEvent(at, "notify", notify=value)


_TOP = (
    "name",
    "description",
    "seed",
    "duration",
    "sample_interval",
    "semantics",
    "brokers",
    "topics",
    "group",
    "client",
    "broker",
    "network",
    "compare",
    "events",
)


def scenario_from_dict(data: Any, source: str = "<scenario>") -> Scenario:
    """Validate and normalise a scenario mapping (see the module docstring for the schema)."""
    r = _Reader(data, source, _TOP)
    seed = r.integer("seed", 1, maximum=2**63 - 1)
    duration = r.duration("duration", 3_600_000)
    if duration <= 0:
        raise ScenarioError(f"{r.at('duration')}: must be positive")
    sample = r.duration("sample_interval", 1_000)
    if not 0 < sample <= duration:
        raise ScenarioError(
            f"{r.at('sample_interval')}: must be positive and at most the duration, got {data.get('sample_interval')!r}"
        )
    brokers = data.get("brokers", ["broker-a", "broker-b"])
    if (
        not isinstance(brokers, list)
        or not brokers
        or not all(isinstance(b, str) and b for b in brokers)
        or len(set(brokers)) != len(brokers)
    ):
        raise ScenarioError(f"{r.at('brokers')}: expected a list of distinct non-empty broker names, got {brokers!r}")
    if not r.has("topics") or not isinstance(data["topics"], dict) or not data["topics"]:
        raise ScenarioError(f"{r.at('topics')}: expected a mapping of topic name to {{queues_per_broker, rate}}")
    topics: dict[str, TopicSpec] = {}
    for name, spec in data["topics"].items():
        t = _Reader(spec, f"{r.at('topics')}.{name}", ("queues_per_broker", "rate"))
        if not t.has("queues_per_broker"):
            raise ScenarioError(f"{t.at('queues_per_broker')}: missing")
        topics[str(name)] = TopicSpec(
            str(name), t.integer("queues_per_broker", 0, maximum=65_536), t.number("rate", 0.0, maximum=1e7)
        )
    g = _Reader(
        data.get("group"),
        r.at("group"),
        ("name", "strategy", "consume_from_where", "consumers", "throughput", "start_spread"),
    )
    if not g.has("consumers"):
        raise ScenarioError(f"{g.at('consumers')}: missing")
    throughput = g.number("throughput", 1000.0, maximum=1e8)
    strategy_name, params = _strategy(g.data.get("strategy", "AVG"), g.at("strategy"))
    c = _Reader(
        data.get("client") or {},
        r.at("client"),
        (
            "rebalance_interval",
            "min_interval",
            "heartbeat_interval",
            "persist_interval",
            "poll_name_server_interval",
            "pull_delay",
        ),
    )
    client = ClientSettings(
        c.duration("rebalance_interval", 20_000),
        None if "min_interval" in c.data and c.data["min_interval"] is None else c.duration("min_interval", 1_000),
        c.duration("heartbeat_interval", 30_000),
        c.duration("persist_interval", 5_000),
        c.duration("poll_name_server_interval", 30_000),
        c.duration("pull_delay", 0) if c.has("pull_delay") else None,
    )
    for key, v in (
        ("rebalance_interval", client.rebalance_interval_ms),
        ("heartbeat_interval", client.heartbeat_interval_ms),
        ("persist_interval", client.persist_interval_ms),
        ("poll_name_server_interval", client.poll_name_server_interval_ms),
    ):
        if v <= 0:
            raise ScenarioError(f"{c.at(key)}: must be positive")
    b = _Reader(data.get("broker") or {}, r.at("broker"), ("notify", "channel_expired_timeout", "scan_interval"))
    broker = BrokerSettings(
        b.flag("notify", True), b.duration("channel_expired_timeout", 120_000), b.duration("scan_interval", 10_000)
    )
    if broker.scan_interval_ms <= 0:
        raise ScenarioError(f"{b.at('scan_interval')}: must be positive")
    compare = data.get("compare") or []
    if not isinstance(compare, list) or not all(isinstance(x, str) for x in compare):
        raise ScenarioError(f"{r.at('compare')}: expected a list of strategy names, got {compare!r}")
    for i, name in enumerate(compare):
        _strategy(name, f"{r.at('compare')}[{i}]")
    raw_events = data.get("events") or []
    if not isinstance(raw_events, list):
        raise ScenarioError(f"{r.at('events')}: expected a list, got {type(raw_events).__name__}")
    events = [_event(e, f"{r.at('events')}[{i}]", topics, throughput) for i, e in enumerate(raw_events)]
    consumers = _consumers(g, throughput, seed)
    known = {c.client_id for c in consumers}
    for i, e in sorted(enumerate(events), key=lambda p: p[1].at_ms):
        if e.at_ms > duration:
            raise ScenarioError(f"{r.at('events')}[{i}].at: {e.at_ms} ms is after the end of the run ({duration} ms)")
        if e.kind == "join":
            known.add(e.client_id)
        elif e.kind in ("leave", "crash") and e.client_id not in known:
            raise ScenarioError(
                f"{r.at('events')}[{i}].{e.kind}: no consumer {e.client_id!r} has started by then (consumers: "
                f"{', '.join(sorted(known)) or 'none'})"
            )
    return Scenario(
        name=r.text("name", Path(source).stem if source.endswith((".yaml", ".yml", ".json")) else "scenario"),
        source=source,
        description=r.text("description", ""),
        seed=seed,
        duration_ms=duration,
        sample_interval_ms=sample,
        semantics=r.text("semantics", "5.x", ("4.x", "5.x")),
        brokers=tuple(brokers),
        topics=tuple(topics.values()),
        group=g.text("name", "cg"),
        strategy=strategy_name,
        strategy_params=params,
        consume_from_where=g.text("consume_from_where", "LAST_OFFSET", ("LAST_OFFSET", "FIRST_OFFSET")),
        consumers=consumers,
        client=client,
        broker=broker,
        network=_network(data.get("network"), r.at("network")),
        compare=tuple(compare),
        events=tuple(sorted(events, key=lambda e: e.at_ms)),
    )


def bundled_scenarios() -> dict[str, str]:
    """Name → path of the scenarios shipped with the package (``mqbalance simulate <name>``)."""
    root = resources.files("mqbalance.sim") / "scenarios"
    return {
        p.name.rsplit(".", 1)[0]: str(p)
        for p in sorted(root.iterdir(), key=lambda p: p.name)
        if p.name.endswith(".yaml")
    }


def load_scenario(path_or_name: str | Path) -> Scenario:
    """A scenario file (``.yaml``/``.yml``/``.json``) or the name of a bundled one."""
    bundled = bundled_scenarios()
    path = Path(bundled.get(str(path_or_name), path_or_name))
    if not path.is_file():
        raise ScenarioError(f"{path_or_name}: no such scenario file (bundled: {', '.join(bundled)})")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".json":
            data = json.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            import yaml  # type: ignore[import-untyped]

            data = yaml.safe_load(text)
        else:
            raise ScenarioError(f"{path}: expected a .yaml, .yml or .json file")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ScenarioError(f"{path}: not valid JSON: {e}") from e
    except ImportError as e:  # pragma: no cover - pyyaml is a dependency
        raise ScenarioError(f"{path}: reading YAML needs PyYAML") from e
    except Exception as e:
        if type(e).__module__.startswith("yaml"):
            raise ScenarioError(f"{path}: not valid YAML: {e}") from e
        raise
    return scenario_from_dict(data, str(path))
