"""The strategy registry: one parser for every Java-style configuration, traits per strategy,
case-insensitive names, clear errors; where each strategy can run, decided in one place."""

from __future__ import annotations

import pytest

from mqbalance import (
    REGISTRY,
    IllegalArgumentError,
    InvalidInputError,
    MessageQueue,
    PreviousAssignmentRequiredError,
    StrategyName,
    StrategySpec,
    UnknownStrategyError,
    UnsupportedStrategyError,
    bulk,
    strategy,
)
from mqbalance.allocation.registry import Family, StrategyConfigError, Use, from_java_class, names_for

Q = [MessageQueue("T", f"{room}@b{i}", k) for i, room in enumerate(("hz", "sh")) for k in range(5)]
IDS = ["hz@c1", "sh@c2", "c3"]

# The same strategy written every way a user, a snapshot, a scenario or a vector file writes it.
SPELLINGS = [
    (["AVG", "avg", {"name": "Avg"}, {"strategy": "AVG"}], strategy("AVG")),
    (
        [
            {"name": "CONSISTENT_HASH", "virtualNodeCnt": 3},
            {"name": "consistent_hash", "virtual_node_cnt": 3},
            {"strategy": "CONSISTENT_HASH", "virtualNodeCnt": 3, "charset": "UTF-8"},
        ],
        strategy("CONSISTENT_HASH", virtual_node_cnt=3),
    ),
    (
        [
            {"name": "MACHINE_ROOM", "consumeridcs": ["sh", "hz"]},
            {"name": "MACHINE_ROOM", "consumer_idcs": ("hz", "sh")},
        ],
        strategy("MACHINE_ROOM", consumer_idcs={"hz", "sh"}),
    ),
    (
        [
            "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE",
            "machine_room_nearby-avg_by_circle",
            {"name": "MACHINE_ROOM_NEARBY", "inner": "AVG_BY_CIRCLE"},
            {"strategy": "MACHINE_ROOM_NEARBY", "fallback": {"strategy": "AVG_BY_CIRCLE"}},
        ],
        strategy("MACHINE_ROOM_NEARBY", inner=strategy("AVG_BY_CIRCLE")),
    ),
    (
        [{"name": "MACHINE_ROOM_NEARBY", "inner": "CONSISTENT_HASH", "virtualNodeCnt": 2}],
        strategy("MACHINE_ROOM_NEARBY", inner=strategy("CONSISTENT_HASH", virtual_node_cnt=2)),
    ),
]


@pytest.mark.parametrize("configs,expected", SPELLINGS, ids=[e.name for _, e in SPELLINGS])
def test_every_spelling_builds_the_same_strategy(configs, expected):
    specs = {StrategySpec.parse(c) for c in configs}
    want = expected.assign(Q, IDS, java_sort=True)
    for spec in specs:
        built = spec.build()
        assert built.name == expected.name and repr(built) == repr(expected)
        assert built.assign(Q, IDS, java_sort=True) == want
        assert StrategySpec.parse(spec.to_config()) == spec  # the config round-trips
        assert spec.build() is built  # built once per spec


def test_traits_drive_what_each_entry_point_accepts():
    assert {n for n, i in REGISTRY.items() if not i.has_owners} == {StrategyName.CONFIG}
    assert {n for n, i in REGISTRY.items() if i.needs_rooms} == {StrategyName.MACHINE_ROOM_NEARBY}
    assert set(REGISTRY) == set(StrategyName)
    with pytest.raises(UnsupportedStrategyError, match="no owner per queue"):
        bulk.owners("CONFIG", ["T"], ["b"], [0], ["a"])
    with pytest.raises(UnsupportedStrategyError, match="owners_by_pair"):
        bulk.owners_by_pair(["T"], ["b"], [0], [0, 1], ["MACHINE_ROOM_NEARBY-AVG"], [["a"]])
    # The core says which strategies read names: AVG with presorted=True never looks at them.
    assert not strategy("AVG")._handle.reads_queue_names
    assert strategy("CONSISTENT_HASH")._handle.reads_queue_names
    assert bulk.owners("AVG", [None] * 3, [None] * 3, [0, 1, 2], ["a", "b"], presorted=True).tolist() == [0, 0, 1]


@pytest.mark.parametrize(
    "config,error,message",
    [
        ("RANDOM", UnknownStrategyError, "unknown strategy 'RANDOM'"),
        ({"virtualNodeCnt": 3}, StrategyConfigError, "missing field 'name'"),
        ({"name": 7}, StrategyConfigError, "name: expected str"),
        ({"name": "AVG", "virtualNodeCnt": 3}, StrategyConfigError, "AVG takes no parameter 'virtual_node_cnt'"),
        ({"name": "CONSISTENT_HASH", "virtualNodeCnt": 2.5}, StrategyConfigError, "virtual_node_cnt: expected int"),
        ({"name": "CONSISTENT_HASH", "virtualNodeCnt": True}, StrategyConfigError, "expected int"),
        ({"name": "MACHINE_ROOM", "consumeridcs": "hz,sh"}, StrategyConfigError, "a list of idc names"),
        ({"name": "MACHINE_ROOM", "consumeridcs": ["hz", 3]}, StrategyConfigError, r"consumer_idcs\[1\]"),
        ({"name": "MACHINE_ROOM_NEARBY"}, StrategyConfigError, "needs an inner strategy"),
        ("MACHINE_ROOM_NEARBY-CONFIG", UnsupportedStrategyError, "cannot be the inner strategy"),
        ("MACHINE_ROOM_NEARBY-NOPE", UnknownStrategyError, "unknown strategy 'NOPE'"),
        (["AVG"], StrategyConfigError, "expected a strategy name or object"),
    ],
)
def test_bad_configs_name_where_and_what(config, error, message):
    with pytest.raises(error, match=message) as info:
        StrategySpec.parse(config, where="groups['g'].strategy")
    assert str(info.value).startswith("groups['g'].strategy")
    assert isinstance(info.value, InvalidInputError | UnknownStrategyError)  # ValueError or LookupError


def test_java_constructor_errors_come_from_the_strategy_itself():
    spec = StrategySpec.parse({"name": "CONSISTENT_HASH", "virtualNodeCnt": -1})
    with pytest.raises(IllegalArgumentError, match="illegal virtualNodeCnt :-1"):
        spec.build()


_PER_CLIENT = {"AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONSISTENT_HASH_BOUNDED"}
_ROOMS = {"MACHINE_ROOM", "MACHINE_ROOM_NEARBY"}
# Where each strategy runs, written out by hand from what each one needs (not from the registry):
# STICKY and Kafka's sticky need the previous assignment (one party: a leader, a what-if, the
# simulator's coordinator); CONFIG has no owner per queue; MACHINE_ROOM* and CONFIG need per-client
# configuration; range / roundrobin / sticky are Kafka's and run only in ZooKeeper groups.
RUNS_IN = {
    Use.ROCKETMQ_CLIENT: _PER_CLIENT | _ROOMS | {"CONFIG"},
    Use.ZOOKEEPER_EVERY_MEMBER: _PER_CLIENT | _ROOMS | {"range", "roundrobin"},
    Use.ZOOKEEPER_LEADER: _PER_CLIENT | _ROOMS | {"STICKY", "range", "roundrobin", "sticky"},
    Use.FLEET_AUDIT: _PER_CLIENT | _ROOMS,
    Use.WHAT_IF: _PER_CLIENT | {"STICKY"},
    Use.SCENARIO: _PER_CLIENT | {"STICKY"},
    Use.DATAFRAME: _PER_CLIENT | _ROOMS | {"STICKY"},
}
CONFIGS = {n.value: n.value for n in StrategyName} | {
    "MACHINE_ROOM_NEARBY": "MACHINE_ROOM_NEARBY-AVG",
    "CONFIG": {"name": "CONFIG", "messageQueueList": []},
}


@pytest.mark.parametrize("use", list(Use), ids=[u.name for u in Use])
def test_each_use_accepts_exactly_the_strategies_that_can_run_there(use):
    assert set(names_for(use)) == RUNS_IN[use]
    for name, config in CONFIGS.items():
        if name in RUNS_IN[use]:
            assert StrategySpec.parse(config, use=use).name.value == name
            continue
        with pytest.raises(UnsupportedStrategyError) as refused:
            StrategySpec.parse(config, where="--strategy", use=use)
        message = str(refused.value)
        assert message.startswith("--strategy: ") and use.value in message
        assert message.endswith(", ".join(names_for(use)))  # it names what would run
        if name in ("STICKY", "sticky"):
            assert isinstance(refused.value, PreviousAssignmentRequiredError)


def test_kafka_assignors_have_no_rocketmq_strategy_and_names_differ_by_more_than_case():
    for name in ("range", "RoundRobin", "sticky"):
        with pytest.raises(UnsupportedStrategyError, match="Kafka's assignors"):
            strategy(name)
        with pytest.raises(UnsupportedStrategyError, match="Kafka's assignors"):
            StrategySpec.parse(name).build()
    # STICKY and Kafka's sticky differ only by case: each is matched exactly, any other case is refused
    assert StrategySpec.parse("STICKY").name is StrategyName.STICKY
    assert StrategySpec.parse("sticky").name is StrategyName.KAFKA_STICKY
    with pytest.raises(UnknownStrategyError, match="'Sticky' is ambiguous: write 'STICKY' or 'sticky' exactly"):
        StrategySpec.parse("Sticky")
    assert StrategySpec.parse("avg_by_circle").name is StrategyName.AVG_BY_CIRCLE  # the others, any case
    assert len({n.value.upper() for n in StrategyName}) == len(StrategyName) - 1
    with pytest.raises(UnsupportedStrategyError, match="cannot be the inner strategy"):
        StrategySpec.parse("MACHINE_ROOM_NEARBY-range")


def test_parameters_given_apart_join_the_configuration():
    spec = StrategySpec.parse("CONSISTENT_HASH", params={"virtualNodeCnt": 4}, use=Use.ZOOKEEPER_LEADER)
    assert spec == StrategySpec.parse({"name": "CONSISTENT_HASH", "virtual_node_cnt": 4})
    assert StrategySpec.parse({"name": "CONSISTENT_HASH"}, params={"charset": "US-ASCII"}).charset == "US-ASCII"
    with pytest.raises(StrategyConfigError, match="parameters go with a strategy name or object"):
        StrategySpec.parse(spec, params={"virtualNodeCnt": 4})
    with pytest.raises(StrategyConfigError, match="AVG takes no parameter 'virtual_node_cnt'"):
        StrategySpec.parse("AVG", params={"virtualNodeCnt": 4})


def test_every_rocketmq_entry_builds_its_core_strategy():
    """A registry entry whose core arm is missing (``Strategy::from_name`` is a string match the
    compiler cannot check) fails here rather than at a user's first call."""
    for name, info in REGISTRY.items():
        if info.cls is not None:
            built = StrategySpec.parse(CONFIGS[name.value]).build()
            assert built.name.startswith(name.value)


def test_kafka_names_are_the_cores():
    """The Kafka assignors a ZooKeeper group runs are named as the core's registry names them."""
    from mqbalance.kafka import ASSIGNORS, ZK_ASSIGNORS

    kafka = {n.value for n, info in REGISTRY.items() if info.family is Family.KAFKA}
    assert kafka == set(ZK_ASSIGNORS) | {"sticky"} and kafka <= set(ASSIGNORS) | set(ZK_ASSIGNORS)


def test_java_class_names_are_in_the_registry():
    for name, info in REGISTRY.items():
        if info.java_class is not None:
            assert from_java_class(info.java_class) is name
    assert from_java_class("AllocateMessageQueueAveragely") is StrategyName.AVG
    assert from_java_class("SomethingElse") is None
