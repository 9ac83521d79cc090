"""The live reader of ``mqbalance snapshot --namesrv`` and ``mqbalance watch``, on both broker
implementations (the Rust port and Apache RocketMQ's Java 5.3.3 name server and brokers):

* routes built from the brokers' topic tables (``GET_ALL_TOPIC_CONFIG``, one request per broker)
  equal the name server's route of every topic (one request per topic), and the whole read —
  groups, connections, offsets — equals the reader that asks per topic;
* a name server that says something else than the brokers' tables (its write permission of a
  broker wiped, as ``mqadmin wipeWritePerm`` does) is caught and asked per topic;
* connection lists pipelined on one connection come back in order;
* a watcher's unchanged tick sends as many requests after 200 more topics as before, and its
  owners, recomputed only for the groups that changed, equal a fresh watcher's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mqbalance.fleet.rocketmq.live import ClusterReader, read_cluster
from mqbalance.history.collector import Collector
from mqbalance.remoting import BrokerClient, ConsumerConnectionInfo, ConsumerData, RemotingClient
from rocketmq_cluster import RocketMQCluster
from rocketmq_java_cluster import module_cluster

pytestmark = pytest.mark.java


@pytest.fixture(scope="module", params=["rust", "java"])
def fleet(request: pytest.FixtureRequest) -> Iterator[tuple[RocketMQCluster, list[BrokerClient]]]:
    """Two broker sets with topics of every kind (on both, on one, read-only, write-only), groups
    online on both, on one, and offline, and committed offsets."""
    if request.param == "java":
        clusters: Any = module_cluster(request, brokers=2)
        cluster = next(clusters)
    else:
        clusters = None
        cluster = RocketMQCluster(brokers=2).__enter__()
    clients: list[BrokerClient] = []
    try:
        cluster.create_topic("Both", {"broker-a": 4, "broker-b": 2})
        cluster.create_topic("OnlyA", {"broker-a": 3})
        cluster.create_topic("ReadOnly", {"broker-b": 5}, perm=4)
        cluster.create_topic("WriteOnly", {"broker-a": 2}, perm=2)
        for b in cluster.brokers:
            c = BrokerClient(b.addr)
            c.heartbeat("10.0.0.1@c1", [ConsumerData("g-both", ["Both"]), ConsumerData("g-two", ["OnlyA", "ReadOnly"])])
            clients.append(c)
        c2 = BrokerClient(cluster.brokers[1].addr)
        c2.heartbeat("10.0.0.2@c2", [ConsumerData("g-b-only", ["ReadOnly"])])
        clients.append(c2)
        if _has_batch(clients[0]):
            clients[0].create_subscription_groups(["g-offline"])  # a group no client is in
        clients[0].update_offset("g-both", "Both", 0, 7)
        clients[1].update_offset("g-two", "ReadOnly", 1, 3)
        yield cluster, clients
    finally:
        for c in clients:
            c.close()
        if clusters is not None:
            clusters.close()
        else:
            cluster.close()


def _same(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "meta": {k: v for k, v in data["meta"].items() if k != "takenAt"}}


def test_routes_from_the_brokers_tables_equal_the_name_servers(
    fleet: tuple[RocketMQCluster, list[BrokerClient]],
) -> None:
    cluster, _ = fleet
    per_topic = read_cluster(cluster.namesrv_addr, running_info=False, routes="name-server")
    with ClusterReader(cluster.namesrv_addr) as reader:
        sent = RemotingClient.requests_sent
        by_broker = reader.read(running_info=False)
        requests = RemotingClient.requests_sent - sent
        assert reader.routes_from == "brokers"
        tokens = dict(reader.group_tokens)
        again = reader.read(running_info=False)  # the tables parsed once: the same answer
        # each group's answer says the same as before (a Java broker may list its connections in
        # another order): the same token, and an answer seen before is not parsed again
        assert reader.group_tokens == tokens and sorted(tokens) == sorted(again["groups"])
    assert by_broker["errors"] == [] and set(per_topic["topics"]) >= {"Both", "OnlyA", "ReadOnly", "WriteOnly"}
    assert _same(by_broker) == _same(per_topic) == _same(again)
    assert [q["perm"] for q in by_broker["topics"]["ReadOnly"]["queueDatas"]] == [4]
    assert [q["brokerName"] for q in by_broker["topics"]["Both"]["queueDatas"]] == ["broker-a", "broker-b"]
    assert sorted(by_broker["groups"]) == ["g-b-only", "g-both", "g-two"]
    # cluster info, topic list, per broker: topic table + one route + groups + offsets; one per group
    # (and per broker for a group offline on the first): not one per topic
    assert requests < 2 + 4 * 2 + 2 * len(by_broker["groups"]) + 2 * 16 < len(per_topic["topics"]) + 2 * 16


def test_connection_lists_pipelined_come_back_in_order(fleet: tuple[RocketMQCluster, list[BrokerClient]]) -> None:
    cluster, _ = fleet
    groups = [f"g-absent-{i}" for i in range(300)]
    groups[17], groups[250] = "g-both", "g-two"
    with BrokerClient(cluster.brokers[0].addr) as c:
        answers = c.consumer_connections_many(groups, window=8)
    assert len(answers) == 300
    online = {i for i, a in enumerate(answers) if isinstance(a, ConsumerConnectionInfo) and a.connections}
    assert online == {17, 250}
    assert all(a is None or isinstance(a, ConsumerConnectionInfo) for a in answers)
    assert sorted(answers[17].subscriptions) == ["Both"]  # type: ignore[union-attr]


def test_an_unchanged_tick_costs_no_more_with_more_topics(
    fleet: tuple[RocketMQCluster, list[BrokerClient]], tmp_path: Path
) -> None:
    cluster, clients = fleet
    collector = Collector(cluster.namesrv_addr, tmp_path / "h", interval=1, offsets_interval=10**6)
    try:
        collector.tick()  # the checkpoint
        unchanged = collector.tick()
        tokens = dict(collector.reader.group_tokens)
        before = read_ticks_requests(tmp_path / "h")
        more = [f"More{i:03d}" for i in range(200)]
        if _has_batch(clients[0]):
            clients[0].create_topics(more, read=2, write=2)
        else:
            for topic in more:
                clients[0].create_topic(topic, read=2, write=2)
        cluster.create_topic("More199", {"broker-a": 2})  # waits until the name server lists them
        collector.tick()  # the new topics' routes: nobody subscribes them, no event
        after = collector.tick()
        assert unchanged.events == after.events == 0 and after.bytes_written < 1024
        assert read_ticks_requests(tmp_path / "h")[-1] == before[-1]
        # a member joins: owners recomputed for its group only, equal to a fresh watcher's
        extra = BrokerClient(cluster.brokers[0].addr)
        try:
            extra.heartbeat("10.0.0.3@c3", [ConsumerData("g-both", ["Both"])])
            changed = collector.tick()
            now = collector.reader.group_tokens
            assert {g for g in tokens if now.get(g) != tokens[g]} == {"g-both"}  # the others kept as they were
            fresh = Collector(cluster.namesrv_addr, tmp_path / "fresh", interval=1)
            try:
                check = fresh.tick()
            finally:
                fresh.close()
        finally:
            extra.close()
        assert changed.events > 0
        assert changed.state.ownership == check.state.ownership and changed.state.members == check.state.members
    finally:
        collector.close()


def read_ticks_requests(root: Path) -> list[int]:
    from mqbalance.history.writer import read_ticks

    return [int(r) for r in read_ticks(root).column("requests").to_pylist()]


def _has_batch(client: BrokerClient) -> bool:
    from mqbalance.exceptions import BrokerResponseError
    from mqbalance.remoting import ResponseCode

    try:
        client.create_topics([])
    except BrokerResponseError as e:
        if e.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            return False
    return True


def test_a_name_server_that_says_otherwise_is_asked_per_topic(
    fleet: tuple[RocketMQCluster, list[BrokerClient]],
) -> None:
    """Last in the module: the wiped permission lasts until the broker registers again."""
    cluster, _ = fleet
    with RemotingClient(cluster.namesrv_addr) as ns:
        wiped = ns.invoke_ok(205, {"brokerName": "broker-b"})  # WIPE_WRITE_PERM_OF_BROKER
    assert int(wiped.ext_fields["wipeTopicCount"]) >= 1
    per_topic = read_cluster(cluster.namesrv_addr, running_info=False, routes="name-server")
    with ClusterReader(cluster.namesrv_addr) as reader:
        by_broker = reader.read(running_info=False)
        assert reader.routes_from.startswith("name-server (the name server's route of")
    assert _same(by_broker) == _same(per_topic)
    assert [q["perm"] for q in by_broker["topics"]["Both"]["queueDatas"]] == [6, 4]
