"""CONSISTENT_HASH_BOUNDED and STICKY (issue 14): the cap, exactly-once ownership, per-client =
whole-group, ε → ∞ = CONSISTENT_HASH on the golden vectors, a differential test against the literal
reference; STICKY's balance and minimum movement; every bad input with its class."""

from __future__ import annotations

import math
from collections import Counter
from functools import partial
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference as ref
from mqbalance import (
    REGISTRY,
    EmptyConsumersError,
    EmptyQueuesError,
    EpsilonTooSmallError,
    IllegalArgumentError,
    InvalidEpsilonError,
    InvalidInputError,
    InvalidPreviousAssignmentError,
    MessageQueue,
    PreviousAssignmentRequiredError,
    PreviousAssignmentWarning,
    StrategyName,
    StrategySpec,
    UnsupportedStrategyError,
    bulk,
    sort_client_ids,
    sort_queues,
    strategy,
)
from test_properties import _call_ref, ids_st, queues_st
from vector_cases import load_vectors, mq

CH_CASES = [c for c in load_vectors("rocketmq/allocate.jsonl.gz") if c["strategy"] == "CONSISTENT_HASH"]


def _queues(n: int) -> list[MessageQueue]:
    return [MessageQueue("TopicTest", f"broker-{'ab'[k % 2]}", k // 2) for k in range(n)]


def _ids(c: int) -> list[str]:
    return [f"10.0.{j // 250}.{j % 250}@{j}" for j in range(c)]


def _loads(owners: np.ndarray, c: int) -> np.ndarray:
    return np.bincount(owners[owners >= 0], minlength=c)


# ---- CONSISTENT_HASH_BOUNDED ---------------------------------------------------------------------


@given(
    n=st.integers(1, 20_000),
    c=st.integers(1, 1_000),
    vnodes=st.integers(1, 40),
    eps=st.sampled_from([0.0, 0.01, 0.1, 0.25, 0.5, 1.0, 4.0]) | st.floats(0, 3),
)
@settings(max_examples=60, deadline=None)
def test_cap_holds_and_every_queue_is_owned_once(n: int, c: int, vnodes: int, eps: float) -> None:
    s = strategy("CONSISTENT_HASH_BOUNDED", virtual_node_cnt=vnodes, epsilon=eps)
    q = _queues(n)
    owners = bulk.owners(s, [x.topic for x in q], [x.broker_name for x in q], [x.queue_id for x in q], _ids(c))
    assert (owners >= 0).all()  # exactly one owner per row, by construction of the column
    assert _loads(owners, c).max() <= math.ceil((1 + eps) * n / c)


@given(queues=queues_st, ids=ids_st, vnodes=st.integers(0, 6), eps=st.sampled_from([0.0, 0.1, 0.25, 1.0, 50.0]))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_differential_against_the_literal_reference(
    queues: list[tuple[str, str, int]], ids: list[str], vnodes: int, eps: float
) -> None:
    s = strategy("CONSISTENT_HASH_BOUNDED", virtual_node_cnt=vnodes, epsilon=eps)
    qs = [MessageQueue(*t) for t in queues]
    reference = partial(ref.consistent_hash_bounded, vnodes=vnodes, epsilon=eps)
    for cid in dict.fromkeys(ids):
        kind, want = _call_ref(reference, cid, queues, ids)
        if kind == "iae":
            with pytest.raises(IllegalArgumentError) as info:
                s.allocate("cg", cid, qs, ids)
            assert info.value.java_message == want
        else:
            assert s.allocate("cg", cid, qs, ids) == [qs[k] for k in want]


@given(queues=queues_st, ids=st.lists(st.sampled_from(_ids(40)), min_size=1, max_size=30), eps=st.floats(0, 2))
@settings(max_examples=100, deadline=None)
def test_each_clients_allocate_is_its_slice_of_the_group(queues: list[Any], ids: list[str], eps: float) -> None:
    s = strategy("CONSISTENT_HASH_BOUNDED", virtual_node_cnt=5, epsilon=eps)
    qs, cids = sort_queues(MessageQueue(*t) for t in queues), sort_client_ids(ids)
    whole = s.assign(qs, cids)
    for cid in cids:
        assert s.allocate("cg", cid, qs, cids) == whole[cid]
    assert Counter(q for lst in whole.values() for q in lst) == Counter(qs)


@pytest.mark.parametrize("case", CH_CASES, ids=[c["id"] for c in CH_CASES])
def test_unbounded_epsilon_is_consistent_hash_on_the_golden_vectors(case: dict[str, Any]) -> None:
    params = dict(case["params"])
    if "constructorError" in case:
        with pytest.raises(IllegalArgumentError) as info:
            StrategySpec.parse({"name": "CONSISTENT_HASH_BOUNDED", "epsilon": 1e9, **params}).build()
        assert info.value.java_message == case["constructorError"]["message"]
        return
    s = StrategySpec.parse({"name": "CONSISTENT_HASH_BOUNDED", "epsilon": 1e9, **params}).build()
    mq_all = None if case["mqAll"] is None else [mq(q) for q in case["mqAll"]]
    probes = [(cid, want) for cid, want in case["expected"].items()]
    probes += [(p["currentCID"], p["result"]) for p in case.get("probes", [])]
    for cid, want in probes:
        if isinstance(want, dict):
            with pytest.raises(IllegalArgumentError) as info:
                s.allocate(case["consumerGroup"], cid, mq_all, case["cidAll"])
            assert info.value.java_message == want["message"]
        else:
            assert mq_all is not None
            assert s.allocate(case["consumerGroup"], cid, mq_all, case["cidAll"]) == [mq_all[i] for i in want]


def test_worked_example_and_a_tighter_spread_than_consistent_hash() -> None:
    qs, ids = _queues(1000), _ids(100)
    cols = ([q.topic for q in qs], [q.broker_name for q in qs], [q.queue_id for q in qs])
    ch = _loads(bulk.owners("CONSISTENT_HASH", *cols, ids), 100)
    bounded = _loads(bulk.owners("CONSISTENT_HASH_BOUNDED", *cols, ids), 100)
    assert bounded.max() <= 13 < ch.max()
    assert bounded.sum() == 1000


def test_owners_by_pair_and_spec_round_trip() -> None:
    spec = StrategySpec.parse({"name": "consistent_hash_bounded", "virtualNodeCnt": 4, "epsilon": 0.5})
    assert spec == StrategySpec(StrategyName.CONSISTENT_HASH_BOUNDED, virtual_node_cnt=4, epsilon=0.5)
    assert StrategySpec.parse(spec.to_config()) == spec
    assert spec.build().name == "CONSISTENT_HASH_BOUNDED"
    assert repr(spec.build()) == "ConsistentHashBounded(virtual_node_cnt=4, charset='UTF-8', epsilon=0.5)"
    qs = _queues(50)
    cols = ([q.topic for q in qs], [q.broker_name for q in qs], [q.queue_id for q in qs])
    one = bulk.owners(spec.build(), *cols, _ids(7))
    both = bulk.owners_by_pair(*(c + c for c in cols), [0, 50, 100], [spec.build(), spec.build()], [_ids(7)] * 2)
    assert both[:50].tolist() == one.tolist() == both[50:].tolist()
    info = REGISTRY[StrategyName.CONSISTENT_HASH_BOUNDED]
    assert (info.has_owners, info.batchable, info.per_client_config, info.needs_previous) == (True, True, False, False)


@pytest.mark.parametrize(
    ("eps", "cls"),
    [
        (float("nan"), InvalidEpsilonError),
        (float("inf"), InvalidEpsilonError),
        (-float("inf"), InvalidEpsilonError),
        (10**400, InvalidEpsilonError),
        ("0.25", InvalidEpsilonError),
        (True, InvalidEpsilonError),
        (-0.01, EpsilonTooSmallError),
        (-1, EpsilonTooSmallError),
    ],
)
def test_bad_epsilon(eps: Any, cls: type[Exception]) -> None:
    with pytest.raises(cls) as info:
        strategy("CONSISTENT_HASH_BOUNDED", epsilon=eps)
    assert isinstance(info.value, InvalidInputError) and isinstance(info.value, ValueError)
    if cls is EpsilonTooSmallError:
        assert info.value.minimum == 0.0 and "the minimum is 0" in str(info.value)


def test_bad_epsilon_in_a_config_and_edge_groups() -> None:
    with pytest.raises(InvalidInputError):
        StrategySpec.parse({"name": "CONSISTENT_HASH_BOUNDED", "epsilon": "x"})
    with pytest.raises(EpsilonTooSmallError):
        StrategySpec.parse({"name": "CONSISTENT_HASH_BOUNDED", "epsilon": -0.5}).build()
    s = strategy("CONSISTENT_HASH_BOUNDED", epsilon=0.0)
    with pytest.raises(EmptyQueuesError):
        s.assign([], ["a"])
    with pytest.raises(EmptyConsumersError):
        s.allocate("cg", "a", _queues(3), [])
    # More consumers than queues: nobody above one queue (cap = ceil(3/10) = 1), all owned.
    whole = s.assign(_queues(3), _ids(10))
    assert sorted(len(v) for v in whole.values()) == [0] * 7 + [1] * 3
    assert strategy("CONSISTENT_HASH_BOUNDED", virtual_node_cnt=0).assign(_queues(3), ["a"]) == {"a": []}


# ---- STICKY --------------------------------------------------------------------------------------


def _max_kept(n: int, held: list[int]) -> int:
    """Most queues a balanced assignment can leave in place: each member keeps at most its quota,
    and only ``n % m`` quotas are the larger one."""
    q, extra = divmod(n, len(held))
    return sum(min(h, q) for h in held) + min(extra, sum(h > q for h in held))


@given(
    n=st.integers(1, 5_000),
    c=st.integers(1, 400),
    before=st.integers(1, 400),
    seed=st.integers(0, 2**32),
    holes=st.floats(0, 0.5),
)
@settings(max_examples=60, deadline=None)
def test_sticky_is_balanced_and_moves_the_minimum(n: int, c: int, before: int, seed: int, holes: float) -> None:
    rng = np.random.default_rng(seed)
    ids, old_ids = _ids(c), _ids(before)  # the first min(c, before) ids are in both groups
    prev_owner = rng.integers(0, before, n)
    prev_owner[rng.random(n) < holes] = -1
    previous = [old_ids[o] if o >= 0 else None for o in prev_owner]
    q = _queues(n)
    cols = ([x.topic for x in q], [x.broker_name for x in q], [x.queue_id for x in q])
    if before > c and any(p is not None and int(p.rsplit("@", 1)[1]) >= c for p in previous):
        with pytest.warns(PreviousAssignmentWarning, match="consumers not in the group"):
            owners = bulk.owners("STICKY", *cols, ids, previous=previous, presorted=True)
    else:
        owners = bulk.owners("STICKY", *cols, ids, previous=previous, presorted=True)
    loads = _loads(owners, c)
    assert (owners >= 0).all() and loads.max() - loads.min() <= 1
    valid = np.where(prev_owner < c, prev_owner, -1)
    held = np.bincount(valid[valid >= 0], minlength=c).tolist()
    kept = int(((owners == valid) & (valid >= 0)).sum())
    assert kept == _max_kept(n, held)


@given(n=st.integers(1, 300), c=st.integers(1, 40))
@settings(max_examples=80, deadline=None)
def test_sticky_first_run_is_avg_and_join_leave_move_the_lower_bound(n: int, c: int) -> None:
    qs, ids = _queues(n), _ids(c + 1)
    sticky = strategy("STICKY")
    first = sticky.assign(qs, ids[:c], previous={})
    assert first == strategy("AVG").assign(qs, ids[:c])
    joined = sticky.assign(qs, ids, previous=first)
    where = {q: cid for cid, lst in first.items() for q in lst}
    moved = sum(where[q] != cid for cid, lst in joined.items() for q in lst)
    assert moved == n // (c + 1)  # exactly what the newcomer must get
    if c >= 2:
        leaver = ids[c // 2]
        with pytest.warns(PreviousAssignmentWarning, match=repr(leaver)):  # the leaver's queues are freed
            left = sticky.assign(qs, [i for i in ids[:c] if i != leaver], previous=first)
        where2 = {q: cid for cid, lst in left.items() for q in lst}
        assert sum(where[q] != where2[q] for q in qs) == len(first[leaver])  # only the leaver's queues


def test_sticky_needs_a_previous_assignment() -> None:
    qs, ids = _queues(6), ["c1", "c2"]
    sticky = strategy("STICKY")
    with pytest.raises(PreviousAssignmentRequiredError, match="CONSISTENT_HASH_BOUNDED") as info:
        sticky.allocate("cg", "c1", qs, ids)
    assert isinstance(info.value, UnsupportedStrategyError) and info.value.value == "STICKY"
    with pytest.raises(PreviousAssignmentRequiredError, match="previous="):
        sticky.assign(qs, ids)
    with pytest.raises(PreviousAssignmentRequiredError):
        bulk.owners("STICKY", ["T"] * 2, ["b"] * 2, [0, 1], ids)
    with pytest.raises(UnsupportedStrategyError):
        bulk.owners_by_pair(["T"] * 2, ["b"] * 2, [0, 1], [0, 2], ["STICKY"], [ids])
    with pytest.raises(UnsupportedStrategyError):
        strategy("MACHINE_ROOM_NEARBY", inner=sticky)
    with pytest.raises(UnsupportedStrategyError):
        StrategySpec.parse("MACHINE_ROOM_NEARBY-STICKY")
    with pytest.raises(InvalidInputError, match="takes no previous"):
        bulk.owners("AVG", ["T"] * 2, ["b"] * 2, [0, 1], ids, previous=["c1", None])
    info2 = REGISTRY[StrategyName.STICKY]
    assert (info2.needs_previous, info2.batchable, info2.has_owners) == (True, False, True)


def test_sticky_bad_previous_assignments() -> None:
    qs, ids = _queues(6), ["c1", "c2"]
    sticky = strategy("STICKY")
    gone = MessageQueue("TopicTest", "broker-z", 0)
    with pytest.warns(PreviousAssignmentWarning, match=r"consumers not in the group: 'c9'.*broker-z"):
        out = sticky.assign(qs, ids, previous={"c1": qs[:3] + [gone], "c9": qs[3:]})
    assert out["c1"] == qs[:3] and out["c2"] == qs[3:]
    with pytest.raises(InvalidPreviousAssignmentError, match="owned twice"):
        sticky.assign(qs, ids, previous={"c1": qs[:2], "c2": qs[1:3]})
    other = [MessageQueue("OtherTopic", "broker-a", k) for k in range(3)]
    with pytest.raises(InvalidPreviousAssignmentError, match="shares no queue"):
        sticky.assign(qs, ids, previous={"c1": other})
    with pytest.raises(InvalidPreviousAssignmentError):
        sticky.assign(qs, ids, previous=[("c1", qs)])  # type: ignore[arg-type]
    with pytest.raises(InvalidPreviousAssignmentError):
        sticky.assign(qs, ids, previous={"c1": qs[0]})  # type: ignore[dict-item]
    with pytest.raises(EmptyQueuesError):
        sticky.assign([], ids, previous={})
    with pytest.raises(EmptyConsumersError):
        sticky.assign(qs, [], previous={})
    # More consumers than queues: one each for the first, nothing for the rest (max - min <= 1).
    many = sticky.assign(qs[:2], _ids(5), previous={})
    assert [len(v) for v in many.values()] == [1, 1, 0, 0, 0]
    # bulk: column form, aligned with rows, unknown ids warned about.
    with pytest.warns(PreviousAssignmentWarning, match="'zz'"):
        owners = bulk.owners("STICKY", ["T"] * 4, ["b"] * 4, [3, 2, 1, 0], ids, previous=["c2", "zz", None, "c1"])
    assert _loads(owners, 2).tolist() == [2, 2] and owners[0] == 1 and owners[3] == 0
    with pytest.raises(InvalidInputError):
        bulk.owners("STICKY", ["T"] * 2, ["b"] * 2, [0, 1], ids, previous=["c1"])
    with pytest.raises(InvalidPreviousAssignmentError):
        bulk.owners("STICKY", ["T"] * 2, ["b"] * 2, [0, 1], ids, previous=[1, None])


def test_snapshots_refuse_sticky_scenarios_take_it_and_bounded() -> None:
    from mqbalance import StrategyName, StrategySpec
    from mqbalance.exceptions import SnapshotError
    from mqbalance.fleet.rocketmq.snapshot import auditable_strategy
    from mqbalance.sim.scenario import ScenarioError, scenario_from_dict

    assert auditable_strategy({"name": "CONSISTENT_HASH_BOUNDED", "epsilon": 0.1}, "g").epsilon == 0.1
    with pytest.raises(SnapshotError, match="previous assignment"):
        auditable_strategy("STICKY", "g")
    base = {
        "name": "x",
        "duration": "1m",
        "topics": {"T": {"queues_per_broker": 4, "rate": 10}},
        "group": {"name": "g", "consumers": 2, "throughput": 10, "strategy": "STICKY"},
    }
    # A scenario runs STICKY through the simulator's group coordinator (sim/coordinator.py).
    assert scenario_from_dict(base).strategy == StrategySpec(StrategyName.STICKY)
    base["group"]["strategy"] = {"name": "STICKY", "epsilon": 0.5}  # type: ignore[index]
    with pytest.raises(ScenarioError, match="epsilon"):
        scenario_from_dict(base)
    base["group"]["strategy"] = {"name": "CONSISTENT_HASH_BOUNDED", "epsilon": 0.5}  # type: ignore[index]
    assert scenario_from_dict(base).strategy == StrategySpec(StrategyName.CONSISTENT_HASH_BOUNDED, epsilon=0.5)
