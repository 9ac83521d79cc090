"""The strategy registry: one parser for every Java-style configuration, traits per strategy,
case-insensitive names, clear errors; and the old public names that keep working."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from mqbalance import (
    REGISTRY,
    IllegalArgumentError,
    InvalidInputError,
    MessageQueue,
    StrategyName,
    StrategySpec,
    UnknownStrategyError,
    UnsupportedStrategyError,
    bulk,
    strategy,
)
from mqbalance.registry import StrategyConfigError

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


@pytest.mark.parametrize("module", ["mqbalance.spark", "mqbalance.snapshot", "mqbalance.audit"])
def test_moved_modules_still_import_with_a_deprecation_warning(module):
    sys.modules.pop(module, None)
    with pytest.warns(DeprecationWarning, match="mqbalance.fleet"):
        importlib.import_module(module)


def test_old_bulk_names_still_work_with_a_deprecation_warning():
    cols = (["T"] * 3, ["b"] * 3, [2, 0, 1])
    with pytest.warns(DeprecationWarning, match="bulk.owners"):
        old = bulk.assign("AVG", *cols[:2], queue_ids_=cols[2], consumers=["x", "y"])
    np.testing.assert_array_equal(old, bulk.owners("AVG", *cols, ["x", "y"]))
    with pytest.warns(DeprecationWarning, match="owners_by_pair"):
        grouped = bulk.assign_groups(*cols, [0, 3], ["AVG"], [["x", "y"]])
    np.testing.assert_array_equal(grouped, old)
