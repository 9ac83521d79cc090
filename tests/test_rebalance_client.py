"""Client-side RebalanceImpl wired to an in-memory broker (spec §3)."""

from __future__ import annotations

import pytest

from mqbalance import MessageQueue, strategy
from mqbalance.allocation.registry import StrategyConfigError, StrategySpec
from mqbalance.exceptions import PreviousAssignmentRequiredError, UnknownStrategyError
from mqbalance.rebalance import ConsumeFromWhere, InMemoryBroker, PushConsumer, RebalanceImpl

QUEUES = [MessageQueue("T", b, i) for b in ("broker-a", "broker-b") for i in range(4)]
OLD = dict.fromkeys(QUEUES, 1)  # queues whose first message is gone: no "young queue" answer of 0
ROUTES = {"T": QUEUES, "%RETRY%cg": [MessageQueue("%RETRY%cg", "broker-a", 0)]}


def client(broker, cid, topics=("T",), **kw):
    return RebalanceImpl(cid, "cg", broker, kw.pop("strategy", strategy("AVG")), ROUTES.get, topics=list(topics), **kw)


def owners(clients):
    out: dict[MessageQueue, list[str]] = {}
    for c in clients:
        for mq in c.process_queues:
            out.setdefault(mq, []).append(c.client_id)
    return out


def test_a_group_owns_every_queue_exactly_once_after_everyone_rebalanced():
    broker = InMemoryBroker(max_offsets=dict.fromkeys(QUEUES, 100), min_offsets=OLD)
    group = [client(broker, f"10.0.0.{i}@1") for i in range(3)]
    for c in group:
        broker.join(c, now_ms=0)
    for c in group:
        c.do_rebalance(now_ms=1)
    own = owners(group)
    assert sorted(own) == sorted(QUEUES) and all(len(v) == 1 for v in own.values())
    assert all(r.next_offset == 100 for c in group for r in c.pull_requests)  # LAST_OFFSET, nothing stored


def test_dropped_queue_persists_its_offset_and_the_new_owner_starts_there():
    broker = InMemoryBroker(max_offsets=dict.fromkeys(QUEUES, 100), min_offsets=OLD)
    a = client(broker, "10.0.0.1@1")
    broker.join(a, now_ms=0)
    a.do_rebalance(now_ms=0)
    assert len(a.process_queues) == 8
    for i, mq in enumerate(QUEUES):
        a.on_pull(mq, now_ms=10, consumed_offset=100 + i)
    b = client(broker, "10.0.0.2@1")
    broker.join(b, now_ms=20)
    assert a.do_rebalance(now_ms=20)  # a gives up broker-b's queues...
    assert sorted(a.process_queues) == QUEUES[:4]
    assert all(
        broker.offsets.query("cg", mq) == 100 + QUEUES.index(mq) for mq in QUEUES[4:]
    )  # ...after persisting them
    b.do_rebalance(now_ms=21)
    assert {r.mq: r.next_offset for r in b.pull_requests} == {mq: 100 + QUEUES.index(mq) for mq in QUEUES[4:]}


def test_start_offsets_per_consume_from_where():
    broker = InMemoryBroker(max_offsets=dict.fromkeys(QUEUES, 50), min_offsets=OLD)
    first = client(broker, "c", topics=("T", "%RETRY%cg"), consume_from_where=ConsumeFromWhere.FIRST_OFFSET)
    broker.join(first, now_ms=0)
    first.do_rebalance(now_ms=0)
    assert {r.next_offset for r in first.pull_requests} == {0}
    broker.offsets.commit("cg", QUEUES[0], 42)
    last = client(broker, "d", topics=("T", "%RETRY%cg"))
    assert last.compute_pull_from_where(QUEUES[0]) == 42  # stored offset wins
    assert last.compute_pull_from_where(QUEUES[1]) == 50  # LAST: broker max
    assert last.compute_pull_from_where(ROUTES["%RETRY%cg"][0]) == 0  # retry topic from 0


def test_topics_are_skipped_without_route_consumer_list_or_on_strategy_errors():
    broker = InMemoryBroker()
    c = client(broker, "c", topics=("T", "Unknown"))
    assert not c.do_rebalance(now_ms=0)  # not registered yet: the broker has no consumer list
    assert ("T", "no consumer list") in c.skipped and ("Unknown", "no route") in c.skipped
    broker.join(c, now_ms=0)
    bad = client(broker, "c", strategy=strategy("MACHINE_ROOM"))  # idcs unset
    routes = {"T": [MessageQueue("T", "hz@broker-a", 0)]}
    bad.route = routes.get
    assert not bad.do_rebalance(now_ms=1) and "consumer_idcs is not set" in bad.skipped[0][1] and not bad.process_queues


def test_broadcasting_owns_everything_and_unsubscribed_topics_are_dropped():
    broker = InMemoryBroker()
    b = client(broker, "b", message_model="BROADCASTING")
    b.do_rebalance(now_ms=0)
    assert sorted(b.process_queues) == QUEUES
    b.topics = []
    assert b.do_rebalance(now_ms=1) and not b.process_queues
    assert all(broker.offsets.query("cg", mq) == 0 for mq in QUEUES)  # persisted on the way out


def test_duplicated_client_id_takes_the_same_queues_and_strands_others():
    broker = InMemoryBroker()
    twins = [client(broker, "10.0.0.9@same"), client(broker, "10.0.0.9@same")]
    other = client(broker, "10.0.0.1@1")
    for c in (*twins, other):
        broker.join(c, now_ms=0)
    for c in (*twins, other):
        c.do_rebalance(now_ms=1)
    own = owners((*twins, other))
    assert sorted(twins[0].process_queues) == sorted(twins[1].process_queues)
    assert any(len(v) == 2 for v in own.values())
    assert len(own) < len(QUEUES)  # the second twin's slot is consumed by nobody


def test_a_queue_not_pulled_for_120s_is_dropped_and_recreated():
    broker = InMemoryBroker(max_offsets=dict.fromkeys(QUEUES, 5), min_offsets=OLD)
    c = client(broker, "c")
    broker.join(c, now_ms=0)
    c.do_rebalance(now_ms=0)
    for mq in QUEUES[1:]:
        c.on_pull(mq, now_ms=100_000)
    before = len(c.pull_requests)
    assert c.do_rebalance(now_ms=120_001)  # QUEUES[0] was last pulled at 0
    assert len(c.pull_requests) == before + 1 and c.pull_requests[-1].mq == QUEUES[0]
    assert c.sub_version == 120_001


def test_a_young_queue_without_a_stored_offset_is_consumed_from_its_beginning():
    """ConsumerManageProcessor answers 0 (not "not found") while a queue still holds its first
    message, so LAST_OFFSET does not skip what a new queue received before its first owner came."""
    broker = InMemoryBroker(
        max_offsets=dict.fromkeys(QUEUES, 30), min_offsets={QUEUES[0]: 0, **dict.fromkeys(QUEUES[1:], 4)}
    )
    c = client(broker, "c")
    broker.join(c, now_ms=0)
    c.do_rebalance(now_ms=0)
    assert {r.mq: r.next_offset for r in c.pull_requests} == {q: 0 if q == QUEUES[0] else 30 for q in QUEUES}


@pytest.mark.parametrize(
    "config",
    ["AVG", "avg", {"name": "AVG"}, StrategySpec.parse("AVG")],
    ids=["name", "lower-case name", "java-style config", "spec"],
)
def test_a_push_consumer_takes_a_strategy_by_name_or_config_and_owns_what_the_object_gives(config):
    """``PushConsumer(strategy="AVG")`` (issue 24): the registry builds the strategy, so the
    consumer owns the same queues as with ``strategy("AVG")``."""
    owned = []
    for s in (config, strategy("AVG")):
        broker = InMemoryBroker(max_offsets=dict.fromkeys(QUEUES, 100), min_offsets=OLD)
        other = client(broker, "10.0.0.2@1")
        c = PushConsumer("10.0.0.1@1", "cg", ["T"], s, broker, ROUTES.get, semantics="4.x")
        broker.join(other, now_ms=0)
        c.start(now_ms=0)
        c.tick(now_ms=0)
        owned.append(sorted(c.owned()))
    assert owned[0] == owned[1] == sorted(QUEUES)[:4]


def test_a_rebalance_impl_takes_a_consistent_hash_config_with_its_parameters():
    broker = InMemoryBroker(max_offsets=dict.fromkeys(QUEUES, 100), min_offsets=OLD)
    c = client(broker, "10.0.0.1@1", strategy={"name": "CONSISTENT_HASH", "virtualNodeCnt": 7})
    assert repr(c.strategy) == repr(strategy("CONSISTENT_HASH", virtual_node_cnt=7))
    assert c.strategy.virtual_node_cnt == 7


@pytest.mark.parametrize(
    ("config", "error", "named"),
    [
        ("NO_SUCH_STRATEGY", UnknownStrategyError, "NO_SUCH_STRATEGY"),
        (42, StrategyConfigError, "42"),
        ("STICKY", PreviousAssignmentRequiredError, "STICKY"),
    ],
)
def test_a_push_consumer_refuses_a_bad_strategy_with_a_typed_error_naming_it(config, error, named):
    with pytest.raises(error, match=named):
        PushConsumer("10.0.0.1@1", "cg", ["T"], config, InMemoryBroker(), ROUTES.get)
