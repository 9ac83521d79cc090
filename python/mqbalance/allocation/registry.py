"""The strategy registry: every strategy (RocketMQ's, and Kafka's for ZooKeeper groups), what it
needs, how it is configured, and where it can run.

A :class:`StrategySpec` is a strategy's name plus its parameters, as plain hashable data. It is
what snapshots, Spark executors, bulk calls, scenarios and the test vectors pass around; one
:meth:`StrategySpec.parse` turns any Java-style configuration into one, and :meth:`~StrategySpec.build`
turns it into the strategy object (built once per distinct spec). What each strategy needs or allows
is in :data:`REGISTRY`.

>>> spec = StrategySpec.parse({"name": "MACHINE_ROOM_NEARBY", "inner": "CONSISTENT_HASH", "virtualNodeCnt": 5})
>>> spec.display_name, spec.inner
('MACHINE_ROOM_NEARBY-CONSISTENT_HASH', StrategySpec('CONSISTENT_HASH', virtual_node_cnt=5))
>>> StrategySpec.parse("avg").build().name  # names are case-insensitive
'AVG'
>>> REGISTRY[StrategyName.CONFIG].has_owners  # every consumer gets the same fixed list
False

>>> StrategySpec.parse({"name": "consistent_hash_bounded", "epsilon": 0.5})
StrategySpec('CONSISTENT_HASH_BOUNDED', epsilon=0.5)
>>> REGISTRY[StrategyName.STICKY].needs_previous  # one party computes it from the previous assignment
True

Where a strategy can run is decided here too, from its traits: every entry point parses with
``use=`` (a :class:`Use`), and a strategy that cannot work there is refused at once with
:class:`~mqbalance.exceptions.UnsupportedStrategyError`, naming the ones that can.

>>> StrategySpec.parse("STICKY", use=Use.ZOOKEEPER_LEADER).name  # a leader holds the previous generation
<StrategyName.STICKY: 'STICKY'>
>>> StrategySpec.parse("sticky", use=Use.ZOOKEEPER_LEADER).name  # Kafka's, by Kafka's name
<StrategyName.KAFKA_STICKY: 'sticky'>
>>> StrategySpec.parse("STICKY", use=Use.ROCKETMQ_CLIENT)
Traceback (most recent call last):
...
mqbalance.exceptions.PreviousAssignmentRequiredError: strategy: STICKY is computed by one party from ...

Adding a RocketMQ strategy: its core file under ``rust/core/src/allocate/`` and its arms in the
core's ``Strategy`` (``allocate/mod.rs``), its class in :mod:`mqbalance.allocation.strategies`, its
:class:`StrategyInfo` entry here (with its Java class name, if Java has one); the binding, the CLI,
snapshots, Spark, the simulator, the remoting client and the members follow (the README's
Contributing section lists the tests that ask for it).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.strategies import (
    AllocateStrategy,
    Avg,
    AvgByCircle,
    Config,
    ConsistentHash,
    ConsistentHashBounded,
    MachineRoom,
    MachineRoomNearby,
    Sticky,
)
from mqbalance.exceptions import (
    InvalidInputError,
    PreviousAssignmentRequiredError,
    StrategyConfigError,
    UnknownStrategyError,
    UnsupportedStrategyError,
)

__all__ = [
    "REGISTRY",
    "Family",
    "StrategyConfigError",
    "StrategyInfo",
    "StrategyName",
    "StrategySpec",
    "Use",
    "from_java_class",
    "lookup",
    "names_for",
    "strategy",
]

NEARBY_PREFIX = "MACHINE_ROOM_NEARBY-"


class StrategyName(enum.StrEnum):
    """The names users know: RocketMQ's (``getName()``) and, for ZooKeeper groups, Kafka's
    (``range`` and ``roundrobin``, the ZooKeeper-era ``partition.assignment.strategy`` values, and
    ``sticky``; :data:`mqbalance.kafka.ASSIGNORS`, the core's list, has every Kafka name). Matched
    ignoring case, except ``STICKY`` and Kafka's ``sticky``, which differ only by case and are
    matched exactly (:func:`lookup`)."""

    AVG = "AVG"
    AVG_BY_CIRCLE = "AVG_BY_CIRCLE"
    CONSISTENT_HASH = "CONSISTENT_HASH"
    CONSISTENT_HASH_BOUNDED = "CONSISTENT_HASH_BOUNDED"
    STICKY = "STICKY"
    MACHINE_ROOM = "MACHINE_ROOM"
    MACHINE_ROOM_NEARBY = "MACHINE_ROOM_NEARBY"
    CONFIG = "CONFIG"
    RANGE = "range"
    ROUNDROBIN = "roundrobin"
    KAFKA_STICKY = "sticky"


class Family(enum.StrEnum):
    """Whose strategy it is: RocketMQ's queue allocation (an :class:`AllocateStrategy` per topic
    over its subscribers) or Kafka's assignment (over the whole group, :mod:`mqbalance.kafka`)."""

    ROCKETMQ = "RocketMQ"
    KAFKA = "Kafka"


class Use(enum.Enum):
    """Where a strategy is asked to run; :meth:`StrategyInfo.refusal` says whether it can."""

    ROCKETMQ_CLIENT = "a RocketMQ client computing its own share"
    ZOOKEEPER_EVERY_MEMBER = "a ZooKeeper group in every-member mode"
    ZOOKEEPER_LEADER = "a ZooKeeper group in leader mode"
    FLEET_AUDIT = "a fleet audit"
    WHAT_IF = "a what-if"
    SCENARIO = "a simulated scenario"
    DATAFRAME = "a DataFrame assignment (mqbalance.spark)"


@dataclass(frozen=True, slots=True)
class StrategyInfo:
    """What one strategy needs and allows.

    ``cls``: the strategy class (RocketMQ's; ``None`` for Kafka's, which run only in ZooKeeper
    groups, :mod:`mqbalance.coordination.assignment`); a spec's non-``None`` fields are its keyword
    arguments.
    ``params``: the Java-style configuration keys it takes, mapped to :class:`StrategySpec` fields.
    ``has_owners``: every queue has at most one owner (bulk owners, fleet audits); ``needs_rooms``:
    machine rooms of queues and consumers are inputs; ``batchable``: many (group, topic) pairs can
    go through one core call; ``per_client_config``: needs configuration a group-level description
    (a scenario) does not carry; ``needs_previous``: computed by one party for the whole group from
    the previous assignment (``assign(..., previous=)``, ``bulk.owners(..., previous=)``, a
    ZooKeeper leader, the simulator's group coordinator) — a per-client ``allocate`` or a fleet
    audit cannot run it. ``family``: RocketMQ's or Kafka's. Where each can run follows from these
    (:meth:`refusal`). ``java_class``: the simple name of Java's class, where Java has one (what
    a Java client reports, :func:`from_java_class`).
    """

    name: StrategyName
    cls: Callable[..., AllocateStrategy] | None
    params: Mapping[str, str] = field(default_factory=dict)
    has_owners: bool = True
    needs_rooms: bool = False
    batchable: bool = True
    per_client_config: bool = False
    needs_previous: bool = False
    family: Family = Family.ROCKETMQ
    java_class: str | None = None

    def strategy_class(self) -> Callable[..., AllocateStrategy]:
        """:attr:`cls`, or :class:`~mqbalance.exceptions.UnsupportedStrategyError` for a Kafka assignor."""
        if self.cls is None:
            raise UnsupportedStrategyError(
                f"{self.name.value} is one of Kafka's assignors: it has no RocketMQ AllocateStrategy; ZooKeeper "
                "groups (mqbalance.coordination) run it, mqbalance.kafka computes Kafka's assignors",
                self.name.value,
            )
        return self.cls

    def refusal(self, use: Use) -> str | None:
        """Why this strategy cannot run in ``use``, or ``None`` when it can. The one place that
        decides it, from the traits above."""
        name = self.name.value
        if self.family is Family.KAFKA and use not in (Use.ZOOKEEPER_EVERY_MEMBER, Use.ZOOKEEPER_LEADER):
            return f"{name} is one of Kafka's assignors, which only ZooKeeper groups run"
        if self.needs_previous and use in (Use.ROCKETMQ_CLIENT, Use.ZOOKEEPER_EVERY_MEMBER, Use.FLEET_AUDIT):
            return (
                f"{name} is computed by one party from the group's previous assignment, which {use.value} does not have"
            )
        if not self.has_owners and use is not Use.SCENARIO and use is not Use.ROCKETMQ_CLIENT:
            return f"{name} gives every consumer the same fixed list; {use.value} needs one owner per queue"
        if self.per_client_config and use in (Use.WHAT_IF, Use.SCENARIO):
            return f"{name} needs per-client configuration, which {use.value} does not carry"
        return None


@dataclass(frozen=True, slots=True)
class StrategySpec:
    """A strategy and its parameters as plain, hashable data (``None`` = Java's default / unset).

    >>> StrategySpec.parse({"name": "MACHINE_ROOM", "consumeridcs": ["sh", "hz"]}).consumer_idcs
    ('hz', 'sh')
    """

    name: StrategyName
    virtual_node_cnt: int | None = None
    charset: str | None = None
    consumer_idcs: tuple[str, ...] | None = None
    inner: StrategySpec | None = None
    message_queues: tuple[MessageQueue, ...] | None = None
    epsilon: float | None = None

    def __repr__(self) -> str:
        shown = [repr(self.name.value)]
        for key in ("virtual_node_cnt", "charset", "epsilon", "consumer_idcs", "inner", "message_queues"):
            value = getattr(self, key)
            if value is not None:
                shown.append(f"{key}={value!r}")
        return f"StrategySpec({', '.join(shown)})"

    @property
    def info(self) -> StrategyInfo:
        return REGISTRY[self.name]

    @property
    def display_name(self) -> str:
        """Java's ``getName()``: ``MACHINE_ROOM_NEARBY-<inner>`` for the nearby strategy."""
        if self.inner is not None:
            return f"{NEARBY_PREFIX}{self.inner.display_name}"
        return self.name.value

    @property
    def unknown_settings(self) -> str | None:
        """What this spec lacks for a fleet audit to compute it, or ``None`` when it lacks nothing:
        ``MACHINE_ROOM`` without ``consumer_idcs`` (which a Java client's running info does not
        report, so a live snapshot never has them; an empty list is a setting).

        >>> StrategySpec.parse("MACHINE_ROOM").unknown_settings
        "MACHINE_ROOM's consumer idcs"
        >>> StrategySpec.parse({"name": "MACHINE_ROOM", "consumeridcs": []}).unknown_settings is None
        True
        """
        if self.name is StrategyName.MACHINE_ROOM and self.consumer_idcs is None:
            return "MACHINE_ROOM's consumer idcs"
        return None

    def build(self) -> AllocateStrategy:
        """The strategy object (one per distinct spec, shared: strategies are immutable); a Kafka
        assignor has none (:class:`~mqbalance.exceptions.UnsupportedStrategyError`)."""
        built = _BUILT.get(self)
        if built is None:
            cls = self.info.strategy_class()
            kwargs: dict[str, Any] = {}
            for key in ("virtual_node_cnt", "charset", "epsilon", "consumer_idcs", "message_queues"):
                if getattr(self, key) is not None:
                    kwargs[key] = getattr(self, key)
            if self.inner is not None:
                kwargs["inner"] = self.inner.build()
            built = _BUILT.setdefault(self, cls(**kwargs))
        return built

    def to_config(self) -> dict[str, Any]:
        """The Java-style configuration :meth:`parse` reads back (JSON-ready)."""
        out: dict[str, Any] = {"name": self.name.value}
        if self.virtual_node_cnt is not None:
            out["virtualNodeCnt"] = self.virtual_node_cnt
        if self.charset is not None:
            out["charset"] = self.charset
        if self.epsilon is not None:
            out["epsilon"] = self.epsilon
        if self.consumer_idcs is not None:
            out["consumeridcs"] = list(self.consumer_idcs)
        if self.inner is not None:
            out["inner"] = self.inner.to_config()
        if self.message_queues is not None:
            out["messageQueueList"] = [
                {"topic": q.topic, "brokerName": q.broker_name, "queueId": q.queue_id} for q in self.message_queues
            ]
        return out

    def check(self, use: Use, *, where: str = "strategy") -> StrategySpec:
        """This spec if it can run in ``use``, else :class:`~mqbalance.exceptions.UnsupportedStrategyError`
        (:class:`~mqbalance.exceptions.PreviousAssignmentRequiredError` when it lacks the previous
        assignment) saying why and naming the strategies that can."""
        _check_use(use)
        why = self.info.refusal(use)
        if why is None:
            return self
        error = PreviousAssignmentRequiredError if self.info.needs_previous else UnsupportedStrategyError
        raise error(f"{where}: {why}; {use.value} runs {', '.join(names_for(use))}", self.display_name)

    @classmethod
    def parse(
        cls,
        config: Any,
        *,
        where: str = "strategy",
        use: Use | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> StrategySpec:
        """A spec from a name (``"AVG"``, ``"MACHINE_ROOM_NEARBY-AVG"``, any case) or an object
        with Java's field names: ``{"name": ..., "virtualNodeCnt": n, "charset": ..., "epsilon": x, "consumeridcs":
        [...], "inner": <config>, "messageQueueList": [...]}``. Python keyword spellings
        (``virtual_node_cnt``, ``consumer_idcs``, ``message_queues``) and ``"strategy"`` for
        ``"name"`` / ``"fallback"`` for ``"inner"`` (the vector files' spelling) are read too.
        Parameters given next to ``inner`` configure the inner strategy when it takes them. With
        ``use``, a strategy that cannot run there is refused (:meth:`check`). ``params`` are more
        fields of the configuration (the ``strategy_params=`` of the members).

        >>> StrategySpec.parse("machine_room_nearby-avg_by_circle").display_name
        'MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE'
        """
        if params is not None and not isinstance(params, Mapping):
            raise StrategyConfigError(f"{where}: parameters must be a mapping, got {params!r}", params)
        if params:
            if isinstance(config, str):
                config = {"name": config}
            if not isinstance(config, Mapping):
                raise StrategyConfigError(
                    f"{where}: parameters go with a strategy name or object, got {config!r} and {params!r}", params
                )
            config = {**config, **params}
        spec = cls._parse(config, where)
        return spec if use is None else spec.check(use, where=where)

    @classmethod
    def _parse(cls, config: Any, where: str) -> StrategySpec:
        if isinstance(config, StrategySpec):
            return config
        if isinstance(config, str):
            return _from_name(config, {}, where)
        if isinstance(config, Mapping):
            params = dict(config)
            name = params.pop("name", None)
            if name is None:
                name = params.pop("strategy", None)
            if name is None:
                raise StrategyConfigError(f"{where}: missing field 'name'", dict(config))
            if not isinstance(name, str):
                raise StrategyConfigError(f"{where}.name: expected str, got {name!r}", name)
            return _from_name(name, params, where)
        raise StrategyConfigError(f"{where}: expected a strategy name or object, got {config!r}", config)


_ALIASES = {
    "virtualNodeCnt": "virtual_node_cnt",
    "consumeridcs": "consumer_idcs",
    "messageQueueList": "message_queues",
    "fallback": "inner",
}


_BY_NAME = {n.value: n for n in StrategyName}
#: Names by their upper case; ``None`` where two names differ only by case (then only the exact
#: spellings are accepted).
_BY_UPPER_NAME: dict[str, StrategyName | None] = {}
for _name in StrategyName:
    _BY_UPPER_NAME[_name.value.upper()] = None if _name.value.upper() in _BY_UPPER_NAME else _name


def lookup(text: str, where: str = "") -> tuple[StrategyName, str | None]:
    """The strategy a name means (any case; ``STICKY`` and Kafka's ``sticky`` exactly) and, for
    ``MACHINE_ROOM_NEARBY-<inner>``, the inner name.

    >>> [lookup(n)[0].value for n in ("Avg_By_Circle", "STICKY", "sticky", "RoundRobin")]
    ['AVG_BY_CIRCLE', 'STICKY', 'sticky', 'roundrobin']
    """
    inner = None
    given: object = text  # callers may pass anything
    if not isinstance(given, str):
        prefix = f"{where}: " if where else ""
        raise UnknownStrategyError(f"{prefix}a strategy name must be a str, got {given!r}", given)
    if text.upper().startswith(NEARBY_PREFIX):
        text, inner = StrategyName.MACHINE_ROOM_NEARBY.value, text[len(NEARBY_PREFIX) :]
    name = _BY_NAME.get(text)
    if name is None and text.upper() in _BY_UPPER_NAME:
        name = _BY_UPPER_NAME[text.upper()]
        if name is None:
            prefix = f"{where}: " if where else ""
            same = " or ".join(repr(n.value) for n in StrategyName if n.value.upper() == text.upper())
            raise UnknownStrategyError(f"{prefix}{text!r} is ambiguous: write {same} exactly", text)
    if name is None:
        known = ", ".join(s.value for s in StrategyName)
        prefix = f"{where}: " if where else ""
        raise UnknownStrategyError(f"{prefix}unknown strategy {text!r}; known: {known}", text)
    return name, inner


def from_java_class(name: str) -> StrategyName | None:
    """The strategy whose Java class has the simple name ``name``, or ``None``.

    >>> from_java_class("AllocateMessageQueueAveragelyByCircle")
    <StrategyName.AVG_BY_CIRCLE: 'AVG_BY_CIRCLE'>
    """
    given: object = name  # callers may pass anything
    if not isinstance(given, str):
        raise InvalidInputError(f"a Java class name must be a str, got {given!r}", given)
    return _BY_JAVA_CLASS.get(name)


def names_for(use: Use) -> tuple[str, ...]:
    """The names of the strategies that can run in ``use``, in the registry's order.

    >>> "STICKY" in names_for(Use.FLEET_AUDIT), "STICKY" in names_for(Use.ZOOKEEPER_LEADER)
    (False, True)
    """
    _check_use(use)
    return tuple(n.value for n, info in REGISTRY.items() if info.refusal(use) is None)


def _check_use(use: object) -> None:
    if not isinstance(use, Use):
        raise InvalidInputError(f"use must be a mqbalance.allocation.registry.Use, got {use!r}", use)


def _from_name(text: str, raw: dict[str, Any], where: str) -> StrategySpec:
    params = {_ALIASES.get(k, k): v for k, v in raw.items()}
    name, inner_name = lookup(text, where)
    if inner_name is not None:
        params.setdefault("inner", inner_name)
    info = REGISTRY[name]
    if name is StrategyName.MACHINE_ROOM_NEARBY:
        inner_config = params.pop("inner", None)
        if inner_config is None:
            raise StrategyConfigError(
                f"{where}: MACHINE_ROOM_NEARBY needs an inner strategy (Java: NullPointerException)", None
            )
        if isinstance(inner_config, str):
            inner_config = {"name": inner_config}
        if not isinstance(inner_config, Mapping):
            raise StrategyConfigError(f"{where}.inner: expected a strategy name or object, got {inner_config!r}")
        # Parameters written next to "inner" belong to the inner strategy (the snapshot layout).
        inner_params = {k: v for k, v in params.items() if k not in info.params.values()}
        inner = StrategySpec.parse({**inner_params, **inner_config}, where=f"{where}.inner")
        if (
            inner.name in (StrategyName.CONFIG, StrategyName.MACHINE_ROOM_NEARBY)
            or inner.info.needs_previous
            or inner.info.family is not Family.ROCKETMQ
        ):
            raise UnsupportedStrategyError(
                f"{where}: {inner.name.value} cannot be the inner strategy of MACHINE_ROOM_NEARBY", inner.name.value
            )
        return StrategySpec(name, inner=inner)
    unknown = sorted(set(params) - set(info.params.values()))
    if unknown:
        accepted = ", ".join(sorted(info.params)) or "none"
        raise StrategyConfigError(
            f"{where}: {name.value} takes no parameter {', '.join(map(repr, unknown))} (accepted: {accepted})",
            unknown,
        )
    fields: dict[str, Any] = {}
    for key, value in params.items():
        if value is not None:
            fields[key] = _PARAM_READERS[key](value, f"{where}.{key}")
    return StrategySpec(name, **fields)


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise StrategyConfigError(f"{where}: expected int, got {value!r}", value)
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise StrategyConfigError(f"{where}: expected str, got {value!r}", value)
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StrategyConfigError(f"{where}: expected a number, got {value!r}", value)
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _idcs(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise StrategyConfigError(f"{where}: expected a list of idc names, got {value!r}", value)
    items = list(value)
    for k, item in enumerate(items):
        if not isinstance(item, str):
            raise StrategyConfigError(f"{where}[{k}]: expected str, got {item!r}", item)
    return tuple(sorted(set(items)))


def _queues(value: Any, where: str) -> tuple[MessageQueue, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise StrategyConfigError(f"{where}: expected a list of message queues, got {value!r}", value)
    out = []
    for k, q in enumerate(value):
        if isinstance(q, MessageQueue):
            out.append(q)
        elif isinstance(q, Mapping) and {"topic", "brokerName", "queueId"} <= set(q):
            out.append(MessageQueue(q["topic"], q["brokerName"], q["queueId"]))
        else:
            raise StrategyConfigError(f"{where}[{k}]: expected a MessageQueue or {{topic, brokerName, queueId}}", q)
    return tuple(out)


_PARAM_READERS: dict[str, Callable[[Any, str], Any]] = {
    "virtual_node_cnt": _int,
    "charset": _text,
    "epsilon": _number,
    "consumer_idcs": _idcs,
    "message_queues": _queues,
}


REGISTRY: Mapping[StrategyName, StrategyInfo] = {
    info.name: info
    for info in (
        StrategyInfo(StrategyName.AVG, Avg, java_class="AllocateMessageQueueAveragely"),
        StrategyInfo(StrategyName.AVG_BY_CIRCLE, AvgByCircle, java_class="AllocateMessageQueueAveragelyByCircle"),
        StrategyInfo(
            StrategyName.CONSISTENT_HASH,
            ConsistentHash,
            params={"virtualNodeCnt": "virtual_node_cnt", "charset": "charset"},
            java_class="AllocateMessageQueueConsistentHash",
        ),
        StrategyInfo(
            StrategyName.CONSISTENT_HASH_BOUNDED,
            ConsistentHashBounded,
            params={"virtualNodeCnt": "virtual_node_cnt", "charset": "charset", "epsilon": "epsilon"},
        ),
        StrategyInfo(StrategyName.STICKY, Sticky, batchable=False, needs_previous=True),
        StrategyInfo(
            StrategyName.MACHINE_ROOM,
            MachineRoom,
            params={"consumeridcs": "consumer_idcs"},
            per_client_config=True,
            java_class="AllocateMessageQueueByMachineRoom",
        ),
        StrategyInfo(
            StrategyName.MACHINE_ROOM_NEARBY,
            MachineRoomNearby,
            params={"inner": "inner"},
            needs_rooms=True,
            batchable=False,
            per_client_config=True,
            java_class="AllocateMachineRoomNearby",
        ),
        StrategyInfo(
            StrategyName.CONFIG,
            Config,
            params={"messageQueueList": "message_queues"},
            has_owners=False,
            batchable=False,
            per_client_config=True,
            java_class="AllocateMessageQueueByConfig",
        ),
        StrategyInfo(StrategyName.RANGE, None, batchable=False, family=Family.KAFKA),
        StrategyInfo(StrategyName.ROUNDROBIN, None, batchable=False, family=Family.KAFKA),
        StrategyInfo(StrategyName.KAFKA_STICKY, None, batchable=False, needs_previous=True, family=Family.KAFKA),
    )
}

_BY_JAVA_CLASS = {info.java_class: name for name, info in REGISTRY.items() if info.java_class is not None}

_BUILT: dict[StrategySpec, AllocateStrategy] = {}


def strategy(name: str | StrategyName, **params: Any) -> AllocateStrategy:
    """Build a strategy by its RocketMQ name (any case).

    ``AVG``, ``AVG_BY_CIRCLE``; ``CONSISTENT_HASH`` (``virtual_node_cnt=10``, ``charset="UTF-8"``);
    ``CONSISTENT_HASH_BOUNDED`` (the same plus ``epsilon=0.25``); ``STICKY`` (whole group only, with
    ``previous=``);
    ``MACHINE_ROOM`` (``consumer_idcs=None``); ``MACHINE_ROOM_NEARBY`` (``inner=``, ``resolver=``
    defaulting to :class:`~mqbalance.allocation.rooms.PrefixRoomResolver`); ``CONFIG`` (``message_queues=None``).
    ``MACHINE_ROOM_NEARBY-<inner>`` names (what ``getName()`` prints) are accepted too.

    >>> strategy("CONSISTENT_HASH", virtual_node_cnt=4)
    ConsistentHash(virtual_node_cnt=4, charset='UTF-8')
    """
    kind, inner = lookup(str(name))
    cls = REGISTRY[kind].strategy_class()
    if inner is not None and "inner" not in params:
        params["inner"] = strategy(inner)
    try:
        return cls(**params)
    except TypeError as e:
        raise InvalidInputError(f"bad parameters for {kind.value}: {e}", params) from None
