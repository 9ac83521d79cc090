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
             persist_interval: 5s, poll_name_server_interval: 30s, pull_delay: 500ms,
             startup: 0s,           # start() to the first heartbeat (a consumer or join may say its own)
             commit_on_pull: false} # true: each pull carries the consumed offset to the broker (Java)
    broker: {notify: true, channel_expired_timeout: 120s, scan_interval: 10s,
             client_ids: per-connection,    # Java; per-client-id: the Rust port's one connection per id
             notify_on_leave: true}         # Java; the Rust port drops a leaver silently
    network: {delay: 0s, loss: 0.0, # on notifications, heartbeats, offset commits, member queries
              round_trip: 0s}       # between a client's requests to one broker and the next
    compare: [AVG, AVG_BY_CIRCLE]   # optional: run once per strategy
    events:
      - {at: 10m, join: {id: 10.0.0.11@1011, throughput: 200}}  # join: <id> works too
      - {at: 20m, leave: 10.0.0.3@1003}         # graceful: persist offsets, unregister
      - {at: 30m, crash: 10.0.0.4@1004}         # silent: the broker expires it after 120 s
      - {at: 31m, crash: 10.0.0.5@1005, close_connection: true}   # the broker sees the socket close
      - {at: 40m, queues: {topic: TopicTest, queues_per_broker: 48}}
      - {at: 50m, network: {delay: 200ms, loss: 0.1}}
      - {at: 55m, notify: false}                # the broker stops sending NOTIFY_CONSUMER_IDS_CHANGED
      - {at: 58m, partition: {id: 10.0.0.6@1006, for: 30s}}   # cut off from the broker, still running

Each event becomes one typed object (:mod:`.model`: :class:`~.model.Join`, :class:`~.model.Leave`,
:class:`~.model.Crash`, :class:`~.model.QueueCountChange`, :class:`~.model.NetworkChange`,
:class:`~.model.NotificationSwitch`, :class:`~.model.Partition`). ``leave``/``crash``/``partition``
act on the newest running consumer with that id (ids may be duplicated: the duplicated-client-id
hazard). Errors name the file, the field
path and the bad value (:class:`ScenarioError`); the mapping is read by the small declarative
reader of :mod:`._schema`.

>>> s = scenario_from_dict({"topics": {"T": {"queues_per_broker": 4, "rate": 10}},
...                         "group": {"consumers": 2}, "duration": "2m"})
>>> s.duration_ms, [c.client_id for c in s.consumers], [c.start_ms <= 10_000 for c in s.consumers]
(120000, ['10.0.0.1@1001', '10.0.0.2@1002'], [True, True])
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from mqbalance.allocation.registry import StrategyName, StrategySpec, Use
from mqbalance.exceptions import MQBalanceError, ScenarioError
from mqbalance.sim._schema import (
    Key,
    Schema,
    SchemaError,
    duration,
    fail,
    flag,
    integer,
    mapping,
    number,
    optional,
    text,
)
from mqbalance.sim._schema import parse_duration as _parse_duration
from mqbalance.sim.model import (
    BrokerSettings,
    ClientSettings,
    ConsumerSpec,
    Crash,
    Join,
    Leave,
    NetworkChange,
    NetworkSettings,
    NotificationSwitch,
    Partition,
    QueueCountChange,
    Scenario,
    ScenarioEvent,
    TopicSpec,
)

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


def parse_duration_ms(value: Any, where: str) -> int:
    """``"500ms"`` → 500, ``"2m"`` → 120000, ``3`` → 3000 (a number is seconds)."""
    try:
        return _parse_duration(value, where)
    except SchemaError as e:
        raise ScenarioError(e.message, e.value, path=e.path) from None


# ---- the schema ----------------------------------------------------------------------------------


def _strategy(value: Any, where: str) -> StrategySpec:
    """``AVG`` or ``{name: CONSISTENT_HASH, virtual_node_cnt: 10, charset: UTF-8}``: any configuration
    :meth:`StrategySpec.parse` reads, of a strategy a scenario can run (:attr:`Use.SCENARIO`: not one
    needing per-client configuration; ``STICKY`` runs through the simulator's group coordinator,
    :mod:`mqbalance.sim.coordinator`), whose parameters build."""
    try:
        spec = StrategySpec.parse(value, where=where, use=Use.SCENARIO)
        spec.build()
    except MQBalanceError as e:
        fail(where, str(e).removeprefix(f"{where}: "), value)
    return spec


def scenario_strategy(value: Any, where: str) -> StrategySpec:
    """:func:`_strategy` for callers outside the schema (``--strategy``, ``compare``): a
    :class:`ScenarioError` naming ``where``, the same verdict a scenario file gets."""
    try:
        return _strategy(value, where)
    except SchemaError as e:
        raise ScenarioError(e.message, e.value, path=e.path) from None


def _section(schema: Schema[Any]) -> Callable[[Any, str], Any]:
    """A settings section: an empty or false-y value means every default."""
    return lambda value, where: schema.read(value or {}, where)


_NETWORK = Schema(
    NetworkSettings,
    {
        "delay": Key("delay_ms", duration()),
        "loss": Key("loss", number(maximum=1.0)),
        "round_trip": Key("round_trip_ms", duration()),
    },
)
_CLIENT = Schema(
    ClientSettings,
    {
        "rebalance_interval": Key("rebalance_interval_ms", duration(positive=True)),
        "min_interval": Key("min_interval_ms", optional(duration()), null=True),  # null: no minimum
        "heartbeat_interval": Key("heartbeat_interval_ms", duration(positive=True)),
        "persist_interval": Key("persist_interval_ms", duration(positive=True)),
        "poll_name_server_interval": Key("poll_name_server_interval_ms", duration(positive=True)),
        "pull_delay": Key("pull_delay_ms", duration()),
        "startup": Key("startup_ms", duration()),
        "commit_on_pull": Key("commit_on_pull", flag),
    },
)
_BROKER = Schema(
    BrokerSettings,
    {
        "notify": Key("notify", flag),
        "channel_expired_timeout": Key("channel_expired_timeout_ms", duration()),
        "scan_interval": Key("scan_interval_ms", duration(positive=True)),
        "client_ids": Key("client_ids", text("per-connection", "per-client-id")),
        "notify_on_leave": Key("notify_on_leave", flag),
    },
)
_TOPIC = Schema(
    TopicSpec,
    {
        "queues_per_broker": Key("queues_per_broker", integer(maximum=65_536), required=True),
        "rate": Key("rate", number(maximum=1e7)),
    },
)
_CONSUMER = Schema(
    ConsumerSpec,
    {
        "id": Key("client_id", text(), required=True),
        "throughput": Key("throughput", number()),
        "start": Key("start_ms", duration()),
        "startup": Key("startup_ms", duration()),
    },
    shorthand="id",
)


@dataclass(frozen=True, slots=True)
class _Group:
    consumers: Any  # a count or a list, read with the seed and the spread once known
    throughput: float = 1000.0
    strategy: StrategySpec = StrategySpec(StrategyName.AVG)
    start_spread_ms: int = 10_000
    name: str = "cg"
    consume_from_where: str = "LAST_OFFSET"


_GROUP = Schema(
    _Group,
    {
        "name": Key("name", text()),
        "strategy": Key("strategy", _strategy),
        "consume_from_where": Key("consume_from_where", text("LAST_OFFSET", "FIRST_OFFSET")),
        "consumers": Key("consumers", lambda value, where: value, required=True),
        "throughput": Key("throughput", number(maximum=1e8)),
        "start_spread": Key("start_spread_ms", duration()),
    },
)


def _brokers(value: Any, where: str) -> tuple[str, ...]:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(b, str) and b for b in value)
        or len(set(value)) != len(value)
    ):
        fail(where, f"expected a list of distinct non-empty broker names, got {value!r}", value)
    return tuple(value)


_TOPICS_EXPECTED = "expected a mapping of topic name to {queues_per_broker, rate}"


def _topics(value: Any, where: str) -> dict[str, TopicSpec]:
    if not isinstance(value, dict) or not value:
        fail(where, _TOPICS_EXPECTED, value)
    return {str(name): _TOPIC.read(spec, f"{where}.{name}", name=str(name)) for name, spec in value.items()}


def _compare(value: Any, where: str) -> tuple[StrategySpec, ...]:
    names = value or []
    if not isinstance(names, list):
        fail(where, f"expected a list of strategies, got {names!r}", value)
    return tuple(_strategy(name, f"{where}[{i}]") for i, name in enumerate(names))


def _raw_events(value: Any, where: str) -> tuple[Any, ...]:
    events = value or []
    if not isinstance(events, list):
        fail(where, f"expected a list, got {type(events).__name__}", value)
    return tuple(events)


@dataclass(frozen=True, slots=True)
class _Document:
    """The top level as read; consumers and events are finished with the values they depend on."""

    name: str | None = None
    description: str = ""
    seed: int = 1
    duration_ms: int = 3_600_000
    sample_interval_ms: int = 1_000
    semantics: str = "5.x"
    brokers: tuple[str, ...] = ("broker-a", "broker-b")
    topics: dict[str, TopicSpec] | None = None
    group: _Group | None = None
    client: ClientSettings = ClientSettings()
    broker: BrokerSettings = BrokerSettings()
    network: NetworkSettings = NetworkSettings()
    compare: tuple[StrategySpec, ...] = ()
    events: tuple[Any, ...] = ()


_TOP = Schema(
    _Document,
    {
        "name": Key("name", text()),
        "description": Key("description", text()),
        "seed": Key("seed", integer(maximum=2**63 - 1)),
        "duration": Key("duration_ms", duration(positive=True)),
        "sample_interval": Key("sample_interval_ms", duration()),
        "semantics": Key("semantics", text("4.x", "5.x")),
        "brokers": Key("brokers", _brokers),
        "topics": Key("topics", _topics),
        "group": Key("group", _GROUP.read, required=True),
        "client": Key("client", _section(_CLIENT)),
        "broker": Key("broker", _section(_BROKER)),
        "network": Key("network", _section(_NETWORK)),
        "compare": Key("compare", _compare),
        "events": Key("events", _raw_events),
    },
)


# ---- what depends on other fields: consumers and events ------------------------------------------


def _consumers(group: _Group, where: str, seed: int) -> tuple[ConsumerSpec, ...]:
    """The consumers running from the start; without an explicit ``start`` each starts at a
    seeded moment within ``start_spread`` (real consumers do not start in lockstep, and starting
    them together would align every periodic rebalance)."""
    spread, raw = group.start_spread_ms, group.consumers
    rng = random.Random(seed)
    if isinstance(raw, int) and not isinstance(raw, bool):
        if not 0 <= raw <= 10_000:
            fail(where, f"expected 0..10000 consumers, got {raw!r}", raw)
        return tuple(
            ConsumerSpec(f"10.0.0.{i}@{1000 + i}", group.throughput, rng.randrange(spread + 1))
            for i in range(1, raw + 1)
        )
    if not isinstance(raw, list):
        fail(where, f"expected a count or a list of {{id, throughput, start}}, got {raw!r}", raw)
    out = []
    for i, item in enumerate(raw):
        start = rng.randrange(spread + 1)  # drawn for every entry, so adding a start keeps the others'
        out.append(_CONSUMER.read(item, f"{where}[{i}]", throughput=group.throughput, start_ms=start))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _EventContext:
    topics: dict[str, TopicSpec]
    throughput: float  # a joiner's default


_JOIN = Schema(
    Join,
    {
        "id": Key("client_id", text(), required=True),
        "throughput": Key("throughput", number()),
        "startup": Key("startup_ms", duration()),
    },
    shorthand="id",
)
_QUEUES = Schema(
    QueueCountChange,
    {
        "topic": Key("topic", text(), required=True),
        "queues_per_broker": Key("queues_per_broker", integer(maximum=65_536), required=True),
    },
)


def _client_id(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        fail(where, f"expected a client id, got {value!r}", value)
    return value


def _join(at: int, entry: dict[Any, Any], where: str, ctx: _EventContext) -> ScenarioEvent:
    return _JOIN.read(entry["join"], f"{where}.join", at_ms=at, throughput=ctx.throughput)


def _leave(at: int, entry: dict[Any, Any], where: str, ctx: _EventContext) -> ScenarioEvent:
    return Leave(at, _client_id(entry["leave"], f"{where}.leave"))


def _crash(at: int, entry: dict[Any, Any], where: str, ctx: _EventContext) -> ScenarioEvent:
    close = entry.get("close_connection")
    client_id = _client_id(entry["crash"], f"{where}.crash")
    return Crash(at, client_id, close is not None and flag(close, f"{where}.close_connection"))


def _queues(at: int, entry: dict[Any, Any], where: str, ctx: _EventContext) -> ScenarioEvent:
    event = _QUEUES.read(entry["queues"], f"{where}.queues", at_ms=at)
    if event.topic not in ctx.topics:
        fail(f"{where}.queues.topic", f"unknown topic {event.topic!r} (topics: {', '.join(ctx.topics)})", event.topic)
    return event


def _network(at: int, entry: dict[Any, Any], where: str, ctx: _EventContext) -> ScenarioEvent:
    return NetworkChange(at, _NETWORK.read(entry["network"] or {}, f"{where}.network"))


def _notify(at: int, entry: dict[Any, Any], where: str, ctx: _EventContext) -> ScenarioEvent:
    return NotificationSwitch(at, flag(entry["notify"], f"{where}.notify"))


_PARTITION = Schema(
    Partition,
    {"id": Key("client_id", text(), required=True), "for": Key("duration_ms", duration(positive=True), required=True)},
)


def _partition(at: int, entry: dict[Any, Any], where: str, ctx: _EventContext) -> ScenarioEvent:
    return _PARTITION.read(entry["partition"], f"{where}.partition", at_ms=at)


_EventReader = Callable[[int, dict[Any, Any], str, _EventContext], ScenarioEvent]
_EVENT_KINDS: dict[str, _EventReader] = {
    "join": _join,
    "leave": _leave,
    "crash": _crash,
    "queues": _queues,
    "network": _network,
    "notify": _notify,
    "partition": _partition,
}


def _event(data: Any, where: str, ctx: _EventContext) -> tuple[str, ScenarioEvent]:
    """One timeline entry: ``at`` plus exactly one kind key (``close_connection`` goes with ``crash``)."""
    entry = mapping(data, where, ("at", *_EVENT_KINDS, "close_connection"))
    if entry.get("at") is None:
        fail(f"{where}.at", "missing")
    at = _parse_duration(entry["at"], f"{where}.at")
    kinds = [k for k in _EVENT_KINDS if k in entry]
    if len(kinds) != 1:
        fail(where, f"expected exactly one of {', '.join(_EVENT_KINDS)}, got {kinds or 'none'}")
    kind = kinds[0]
    if "close_connection" in entry and kind != "crash":
        fail(f"{where}.close_connection", "only applies to crash")
    return kind, _EVENT_KINDS[kind](at, entry, where, ctx)


def _check_timeline(events: list[tuple[str, ScenarioEvent]], where: str, duration_ms: int, known: set[str]) -> None:
    """Every event within the run; a leave or crash only of an id started by then."""
    for i, (kind, e) in sorted(enumerate(events), key=lambda p: p[1][1].at_ms):
        if e.at_ms > duration_ms:
            fail(f"{where}[{i}].at", f"{e.at_ms} ms is after the end of the run ({duration_ms} ms)", e.at_ms)
        if isinstance(e, Join):
            known.add(e.client_id)
        elif isinstance(e, (Leave, Crash, Partition)) and e.client_id not in known:
            fail(
                f"{where}[{i}].{kind}",
                f"no consumer {e.client_id!r} has started by then (consumers: {', '.join(sorted(known)) or 'none'})",
                e.client_id,
            )


#: The most samples (``duration / sample_interval``) a run records: a day at 0.1 s.
MAX_SAMPLES = 1_000_000
#: The most periodic timer firings (per consumer: rebalance, heartbeat, persist, name-server poll;
#: the broker's scan) a run may schedule: beyond this a run would take hours.
MAX_TIMER_FIRINGS = 20_000_000


def _check_work(doc: Any, data: Any, source: str, consumers: int) -> None:
    """Refuse, before running, a scenario whose samples or timers cannot fit: the count is named."""
    samples = doc.duration_ms // doc.sample_interval_ms if doc.sample_interval_ms > 0 else 0
    if samples > MAX_SAMPLES:
        fail(
            f"{source}.sample_interval",
            f"{doc.duration_ms} ms / {doc.sample_interval_ms} ms = {samples:,} samples, more than the "
            f"{MAX_SAMPLES:,} a run can record; use a sample_interval of at least "
            f"{-(-doc.duration_ms // MAX_SAMPLES)} ms",
            data.get("sample_interval") if isinstance(data, dict) else None,
        )
    c = doc.client
    per_consumer = sum(
        doc.duration_ms // ms
        for ms in (
            c.rebalance_interval_ms,
            c.heartbeat_interval_ms,
            c.persist_interval_ms,
            c.poll_name_server_interval_ms,
        )
    )
    firings = per_consumer * max(consumers, 1) + doc.duration_ms // doc.broker.scan_interval_ms
    if firings > MAX_TIMER_FIRINGS:
        fail(
            f"{source}.client",
            f"the client and broker intervals over {doc.duration_ms} ms fire {firings:,} times, more than "
            f"{MAX_TIMER_FIRINGS:,}; use longer intervals or a shorter duration",
            firings,
        )


def _check_unicode(value: Any, path: str) -> None:
    """Every string of the document (keys too) must encode as UTF-8: a lone surrogate (YAML's and
    JSON's ``"\\ud800"`` escapes make them) is refused here, with its path, not deep in a run."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            fail(path, f"not valid Unicode (a lone surrogate?): {value!r}", value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_unicode(k, f"{path}.{k!r}")
            _check_unicode(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_unicode(v, f"{path}[{i}]")


def _read(data: Any, source: str) -> Scenario:
    _check_unicode(data, source)
    doc = _TOP.read(data, source)
    if doc.topics is None:
        fail(f"{source}.topics", _TOPICS_EXPECTED)
    assert doc.group is not None  # required
    if doc.sample_interval_ms <= 0 or doc.sample_interval_ms > doc.duration_ms:
        fail(
            f"{source}.sample_interval",
            f"must be positive and at most the duration, got {data.get('sample_interval')!r}",
            data.get("sample_interval"),
        )
    ctx = _EventContext(doc.topics, doc.group.throughput)
    events = [_event(e, f"{source}.events[{i}]", ctx) for i, e in enumerate(doc.events)]
    consumers = _consumers(doc.group, f"{source}.group.consumers", doc.seed)
    _check_work(doc, data, source, len(consumers))
    _check_timeline(events, f"{source}.events", doc.duration_ms, {c.client_id for c in consumers})
    return Scenario(
        name=doc.name or (Path(source).stem if source.endswith((".yaml", ".yml", ".json")) else "scenario"),
        source=source,
        description=doc.description,
        seed=doc.seed,
        duration_ms=doc.duration_ms,
        sample_interval_ms=doc.sample_interval_ms,
        semantics=doc.semantics,
        brokers=doc.brokers,
        topics=tuple(doc.topics.values()),
        group=doc.group.name,
        strategy=doc.group.strategy,
        consume_from_where=doc.group.consume_from_where,
        consumers=consumers,
        client=doc.client,
        broker=doc.broker,
        network=doc.network,
        compare=doc.compare,
        events=tuple(sorted((e for _, e in events), key=lambda e: e.at_ms)),
    )


def scenario_from_dict(data: Any, source: str = "<scenario>") -> Scenario:
    """Validate and normalise a scenario mapping (see the module docstring for the schema)."""
    try:
        return _read(data, source)
    except SchemaError as e:
        raise ScenarioError(e.message, e.value, path=e.path) from None
    except RecursionError:  # a structure that contains itself, or nested thousands deep
        raise ScenarioError(f"{source}: nested too deeply (or contains itself)", None) from None


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
    if not isinstance(path_or_name, (str, Path)) or "\x00" in str(path_or_name):
        raise ScenarioError(f"a scenario must be a file path or a bundled name, got {path_or_name!r}", path_or_name)
    bundled = bundled_scenarios()
    path = Path(bundled.get(str(path_or_name), path_or_name))
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise ScenarioError(f"a scenario path that no file system can hold: {path_or_name!r}", path_or_name) from None
    if not path.is_file():
        raise ScenarioError(f"{path_or_name}: no such scenario file (bundled: {', '.join(bundled)})")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read: {e.strerror or e}", str(path)) from None
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {e.start})", str(path)) from None
    if path.suffix not in (".json", ".yaml", ".yml"):
        raise ScenarioError(f"{path}: expected a .yaml, .yml or .json file", str(path))
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as e:  # JSONDecodeError, a 5000-digit number, deep nesting
            raise ScenarioError(f"{path}: not valid JSON: {e}", str(path)) from None
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except (yaml.YAMLError, ValueError, RecursionError) as e:
            raise ScenarioError(f"{path}: not valid YAML: {' '.join(str(e).split())}", str(path)) from None
    return scenario_from_dict(data, str(path))
