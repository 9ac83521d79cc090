"""Consumer-group members on a real RocketMQ broker (the Rust port, started per module): sharing the
queues, reacting to the broker's notification, consuming everything, committing offsets, leaving
gracefully, surviving a broker that goes away and comes back or is not there at start."""

from __future__ import annotations

import threading
import time

import pytest

from mqbalance import MessageQueue, sort_client_ids, sort_queues, strategy
from mqbalance.cli import main
from mqbalance.remoting import BrokerClient
from mqbalance.rocketmq import MemberState, RocketMQMember, check_records
from mqbalance.rocketmq.worker import queue_name
from rocketmq_cluster import RocketMQCluster

FAST = {"heartbeat_interval_ms": 2_000, "persist_interval_ms": 500, "rebalance_wait_interval_ms": 5_000}


@pytest.fixture(scope="module")
def cluster():
    with RocketMQCluster(brokers=2) as c:
        yield c


def make_topic(cluster, topic, per_broker=4):
    cluster.create_topic(topic, {b.broker_name: per_broker for b in cluster.brokers})
    return [MessageQueue(topic, b.broker_name, i) for b in cluster.brokers for i in range(per_broker)]


def produce(cluster, queues, n_per_queue, tag="m"):
    """``n_per_queue`` messages to every queue; returns {queue name: max offset}."""
    ends = {}
    by_broker = {b.broker_name: BrokerClient(b.addr) for b in cluster.brokers}
    try:
        for mq in queues:
            for k in range(n_per_queue):
                r = by_broker[mq.broker_name].send(mq.topic, mq.queue_id, f"{tag}-{mq.queue_id}-{k}".encode())
                ends[queue_name(mq)] = r.queue_offset + 1
    finally:
        for bc in by_broker.values():
            bc.close()
    return ends


class Sink:
    """A consume callback that remembers (queue, offset) per member, as records do."""

    def __init__(self):
        self.lock = threading.Lock()
        self.records: dict[str, list[dict]] = {}

    def for_member(self, name):
        rows = self.records.setdefault(name, [])

        def consume(mq, messages):
            offs = [m.queue_offset for m in messages]
            with self.lock:
                rows.append({"e": "p", "q": queue_name(mq), "a": min(offs), "b": max(offs) + 1, "t0": time.monotonic()})

        return consume


def member(cluster, group, topic, sink, cid, **kw):
    opts = {**FAST, "semantics": "5.x", "consume_from_where": _first(), **kw}
    return RocketMQMember(cluster.namesrv_addr, group, [topic], consume=sink.for_member(cid), client_id=cid, **opts)


def _first():
    from mqbalance.rebalance import ConsumeFromWhere

    return ConsumeFromWhere.FIRST_OFFSET


def wait(predicate, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s: {what}")


def expected(queues, ids, cid, name="AVG"):
    return set(strategy(name).allocate("g", cid, sort_queues(queues), sort_client_ids(ids)))


@pytest.mark.parametrize(("semantics", "name"), [("5.x", "AVG"), ("4.x", "AVG_BY_CIRCLE"), ("5.x", "CONSISTENT_HASH")])
def test_members_share_the_queues_consume_everything_and_hand_over_on_leave(cluster, semantics, name):
    topic, group = f"T-share-{semantics[0]}-{name}", f"g-share-{semantics[0]}-{name}"
    queues = make_topic(cluster, topic)
    sink = Sink()
    ids = ["10.1.0.1@1", "10.1.0.2@2", "10.1.0.3@3"]
    members = [member(cluster, group, topic, sink, cid, semantics=semantics, strategy=name) for cid in ids]
    try:
        for m in members:
            m.start()

        def split_as_java():  # each owns exactly what the Java allocation gives it among the three
            return all(set(m.owned()) == expected(queues, ids, m.client_id, name) for m in members)

        wait(split_as_java, 20, "the three members own the Java split")
        assert sorted(q for m in members for q in m.owned()) == sort_queues(queues)
        ends = produce(cluster, queues, 5)
        wait(lambda: check_records(sink.records, ends).ok, 20, "everything consumed")
        # leave: the broker notifies, the others take the leaver's queues
        leaver = members.pop()
        t = time.monotonic()
        leaver.close()
        wait(
            lambda: all(set(m.owned()) == expected(queues, ids[:2], m.client_id, name) for m in members),
            10,
            "the two left own the Java split of two",
        )
        handover = time.monotonic() - t
        # the Rust broker (1.0.0) notifies nobody on an unregister: the others see it at their
        # periodic rebalance (5 s here) — a Java broker would notify them at once
        assert handover < 5 + 2, handover
        assert all(m.stats.notifications >= 1 for m in members)  # the joins were notified
        ends = produce(cluster, queues, 5, tag="after")
        wait(lambda: check_records(sink.records, ends).ok, 20, "everything consumed after the leave")
        # offsets reached the broker: a commit at least up to what was consumed before the leave
        with BrokerClient(cluster.broker("broker-a").addr) as bc:
            wait(
                lambda: all(
                    bc.query_offset(group, topic, q.queue_id) == ends[queue_name(q)]
                    for q in queues
                    if q.broker_name == "broker-a"
                ),
                10,
                "committed offsets reach the end",
            )
        assert leaver.state is MemberState.STOPPED and leaver.stats.errors == 0
    finally:
        for m in members:
            m.close()


def test_a_member_unreachable_at_start_keeps_trying_and_consumes_once_the_cluster_is_up():
    c = RocketMQCluster(brokers=1)  # its ports are chosen; nothing listens on them until it starts
    sink = Sink()
    m = RocketMQMember(
        c.namesrv_addr,
        "g-late",
        ["T-late"],
        consume=sink.for_member("m"),
        client_id="late@1",
        consume_from_where=_first(),
        timeout=0.5,
        poll_name_server_interval_ms=1_000,
        **FAST,
    )
    try:
        m.start()
        time.sleep(2)
        assert m.state is MemberState.RUNNING and m.stats.errors > 0 and not m.owned()
        with c:
            queues = make_topic(c, "T-late")
            wait(lambda: set(m.owned()) == set(queues), 40, "the member takes every queue once the cluster is up")
            ends = produce(c, queues, 3)
            wait(lambda: check_records(sink.records, ends).ok, 20, "everything consumed")
    finally:
        m.close()


def test_a_broker_that_goes_away_and_comes_back_does_not_lose_committed_progress():
    sink = Sink()
    with RocketMQCluster(brokers=1) as c:
        queues = make_topic(c, "T-restart")
        m = member(c, "g-restart", "T-restart", sink, "r@1", timeout=0.5)
        try:
            m.start()
            wait(lambda: set(m.owned()) == set(queues), 20, "the member takes every queue")
            ends = produce(c, queues, 5)
            wait(lambda: check_records(sink.records, ends).ok, 20, "consumed before the restart")
            with BrokerClient(c.brokers[0].addr) as bc:
                wait(
                    lambda: all(bc.query_offset("g-restart", "T-restart", q.queue_id) == 5 for q in queues),
                    10,
                    "committed before the restart",
                )
            c.brokers[0].stop()
            time.sleep(3)
            assert m.state is MemberState.RUNNING and m.stats.errors > 0  # failed pulls, reported, not raised
            c.start_broker("broker-a")
            ends = produce(c, queues, 5, tag="after")
            wait(lambda: check_records(sink.records, ends).ok, 40, "consumed after the restart")
            check = check_records(sink.records, ends)
            assert check.duplicates <= 0  # committed progress kept: nothing from before the restart redone
            with BrokerClient(c.brokers[0].addr) as bc:
                wait(
                    lambda: all(bc.query_offset("g-restart", "T-restart", q.queue_id) == 10 for q in queues),
                    10,
                    "committed after the restart",
                )
        finally:
            m.close()


def test_an_unknown_topic_is_reported_and_does_not_stop_the_member(cluster):
    sink = Sink()
    seen = []
    m = RocketMQMember(
        cluster.namesrv_addr,
        "g-unknown",
        ["NoSuchTopic-xyz"],
        consume=sink.for_member("m"),
        client_id="u@1",
        on_error=lambda w, e: seen.append((w, str(e))),
        **FAST,
    )
    with m:
        wait(lambda: seen, 10, "an error reported")
        time.sleep(1)
        assert m.state is MemberState.RUNNING and not m.owned()
    assert any("route of NoSuchTopic-xyz" in w and "TOPIC_NOT_EXIST" in e for w, e in seen), seen[:3]


def test_a_consume_callback_that_raises_gets_the_batch_again_and_the_member_goes_on(cluster):
    topic = "T-raise"
    queues = make_topic(cluster, topic)
    sink = Sink()
    record = sink.for_member("m")
    failed: set = set()

    def consume(mq, messages):
        if mq not in failed:
            failed.add(mq)
            raise RuntimeError("downstream unavailable")
        record(mq, messages)

    m = RocketMQMember(
        cluster.namesrv_addr, "g-raise", [topic], consume=consume, client_id="x@1", consume_from_where=_first(), **FAST
    )
    with m:
        wait(lambda: set(m.owned()) == set(queues), 20, "the member takes every queue")
        ends = produce(cluster, queues, 3)
        wait(lambda: check_records(sink.records, ends).ok, 20, "everything consumed after the failures")
        assert m.state is MemberState.RUNNING and m.stats.errors >= len(queues)


def test_cli_consume_refuses_bad_input(capsys):
    assert (
        main(["rocketmq-consume", "--namesrv", "127.0.0.1:1", "--group", "g", "--topic", "T", "--strategy", "NOPE"])
        == 2
    )
    assert "NOPE" in capsys.readouterr().err
    assert main(["rocketmq-consume", "--namesrv", "127.0.0.1:1", "--group", "g", "--topic", "T", "--timeout", "0"]) == 2
