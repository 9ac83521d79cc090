"""The remoting client against a real name server and broker (the Rust port of RocketMQ, same
protocol): every typed request, the broker's notifications interleaved with replies, requests
forwarded to a client, many threads on one connection, the broker's own refusals."""

from __future__ import annotations

import json
import threading
import time

import pytest

from mqbalance.cli import main
from mqbalance.exceptions import BrokerResponseError, RemotingConnectError
from mqbalance.fleet.rocketmq.files import load_snapshot
from mqbalance.fleet.rocketmq.live import live_snapshot
from mqbalance.remoting import (
    AclCredentials,
    BrokerClient,
    ConsumerData,
    NameServer,
    PullStatus,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    strategy_from_running_info,
)
from rocketmq_cluster import RocketMQCluster


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(0.05)
    return value


@pytest.fixture(scope="module")
def broker_addr(rocketmq: RocketMQCluster) -> str:
    return rocketmq.brokers[0].addr


def test_cluster_info_and_topics(rocketmq: RocketMQCluster, broker_addr: str):
    with NameServer(rocketmq.namesrv_addr) as ns:
        info = ns.cluster_info()
        assert info.clusters == {"mqbalance-test": ["broker-a"]}
        b = info.brokers["broker-a"]
        assert (b.cluster, b.broker_name, b.master_addr) == ("mqbalance-test", "broker-a", broker_addr)
        with BrokerClient(broker_addr) as broker:
            broker.create_topic("TopicRoute", read=8, write=6, perm=6)
        route = wait_until(lambda: _route_or_none(ns, "TopicRoute"))
        assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queues] == [
            ("broker-a", 8, 6, 6)
        ]
        assert [(x.broker_name, x.master_addr) for x in route.brokers] == [("broker-a", broker_addr)]
        assert "TopicRoute" in ns.topic_list()


def _route_or_none(ns: NameServer, topic: str):
    try:
        return ns.topic_route(topic)
    except BrokerResponseError as e:
        if e.code != ResponseCode.TOPIC_NOT_EXIST:
            raise
        return None


def test_unknown_topic_route(rocketmq: RocketMQCluster):
    with NameServer(rocketmq.namesrv_addr) as ns, pytest.raises(BrokerResponseError) as info:
        ns.topic_route("NoSuchTopic")
    e = info.value
    assert e.code == ResponseCode.TOPIC_NOT_EXIST and e.request_code == RequestCode.GET_ROUTEINFO_BY_TOPIC
    assert "TOPIC_NOT_EXIST (17)" in str(e) and e.remark and str(e).endswith(e.remark)  # "Topic route was not found"


def test_name_server_failover(rocketmq: RocketMQCluster):
    from server_process import free_port

    with NameServer(f"127.0.0.1:{free_port()};{rocketmq.namesrv_addr}", timeout=1.0) as ns:
        assert "broker-a" in ns.cluster_info().brokers


def test_group_membership_notifications_and_unregister(broker_addr: str):
    notes: list[RemotingCommand] = []
    group, topic = "cg-members", "TopicMembers"
    with (
        BrokerClient(broker_addr, on_request=lambda c, cmd: notes.append(cmd)) as first,
        BrokerClient(broker_addr) as second,
    ):
        first.create_topic(topic, read=4, write=4)
        data = ConsumerData(group, [topic])
        first.heartbeat("10.0.0.1@1", [data])
        assert first.consumer_ids(group) == ["10.0.0.1@1"]
        second.heartbeat("10.0.0.2@2", [data])
        assert sorted(first.consumer_ids(group)) == ["10.0.0.1@1", "10.0.0.2@2"]
        # The broker told the first connection that the group changed (code 40, one-way or not).
        note = wait_until(lambda: [n for n in notes if n.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED])[0]
        assert note.ext_fields.get("consumerGroup") == group and not note.is_response
        conns = first.consumer_connections(group)
        assert conns is not None
        assert sorted(c.client_id for c in conns.connections) == ["10.0.0.1@1", "10.0.0.2@2"]
        assert all(c.client_addr and c.client_addr.startswith("127.0.0.1:") for c in conns.connections)
        assert {c.language for c in conns.connections} == {"JAVA"}
        assert conns.message_model == "CLUSTERING" and topic in conns.subscriptions
        assert group in first.subscription_groups()
        second.unregister_client("10.0.0.2@2", group)
        assert first.consumer_ids(group) == ["10.0.0.1@1"]
        first.unregister_client("10.0.0.1@1", group)
        assert first.consumer_ids(group) == []
        assert first.consumer_connections(group) is None  # CONSUMER_NOT_ONLINE


def test_send_pull_and_offsets(broker_addr: str):
    group, topic = "cg-offsets", "TopicOffsets"
    with BrokerClient(broker_addr) as b:
        b.create_topic(topic, read=2, write=2)
        sent = [b.send(topic, 1, f"m{i}".encode(), tags="tagA", keys=f"k{i}") for i in range(3)]
        assert [s.queue_offset for s in sent] == [0, 1, 2] and all(s.queue_id == 1 for s in sent)
        # the consume queue is built from the commit log asynchronously (the broker's reput service)
        wait_until(lambda: b.max_offset(topic, 1) == 3)
        assert b.max_offset(topic, 0) == 0
        b.heartbeat("10.0.0.3@3", [ConsumerData(group, [topic])])  # the group exists from here on
        result = b.pull(group, topic, 1, 0, 32)
        assert result.status is PullStatus.FOUND and result.next_begin_offset == 3
        assert [(m.body, m.tags, m.keys, m.queue_offset, m.topic) for m in result.messages] == [
            (f"m{i}".encode(), "tagA", f"k{i}", i, topic) for i in range(3)
        ]
        assert b.pull(group, topic, 1, 3).status is PullStatus.NO_NEW_MSG
        assert b.query_offset(group, topic, 1) == -1
        b.update_offset(group, topic, 1, 2)
        assert b.query_offset(group, topic, 1) == 2
        b.update_offset(group, topic, 0, 0, oneway=True)
        wait_until(lambda: b.query_offset(group, topic, 0) == 0)
        assert b.all_consumer_offsets()[(group, topic)] == {0: 0, 1: 2}


def test_long_poll_wakes_on_send(broker_addr: str):
    group, topic = "cg-longpoll", "TopicLongPoll"
    with BrokerClient(broker_addr) as b, BrokerClient(broker_addr) as producer:
        b.create_topic(topic, read=1, write=1)
        b.heartbeat("10.0.0.4@4", [ConsumerData(group, [topic])])
        late = threading.Timer(0.5, lambda: producer.send(topic, 0, b"late"))
        late.start()
        start = time.monotonic()
        result = b.pull(group, topic, 0, 0, suspend_ms=5000)
        took = time.monotonic() - start
        late.join(30)  # the send's reply may still be on its way: the producer closes after it
        assert result.status is PullStatus.FOUND and [m.body for m in result.messages] == [b"late"]
        assert took < 4.5


def test_running_info_forwarded_to_the_client(broker_addr: str):
    group, topic = "cg-running", "TopicRunning"
    info = {
        "properties": {
            "allocateMessageQueueStrategy": "org.apache.rocketmq.client.consumer.rebalance."
            "AllocateMessageQueueAveragelyByCircle@6d06d69c",
            "PROP_CONSUMER_START_TIMESTAMP": "1700000000000",
        },
        "subscriptionSet": [],
        "mqTable": {},
        "statusTable": {},
    }

    def answer(client, cmd: RemotingCommand):
        if cmd.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            return cmd.response(body=json.dumps(info).encode())
        return None

    with BrokerClient(broker_addr, on_request=answer) as member, BrokerClient(broker_addr) as admin:
        member.create_topic(topic, read=1, write=1)
        member.heartbeat("10.0.0.5@5", [ConsumerData(group, [topic])])
        got = admin.consumer_running_info(group, "10.0.0.5@5")
        assert got["properties"] == info["properties"] and strategy_from_running_info(got) == "AVG_BY_CIRCLE"
        with pytest.raises(BrokerResponseError, match="not online") as refused:
            admin.consumer_running_info(group, "10.9.9.9@9")
        assert refused.value.code == ResponseCode.SYSTEM_ERROR


def test_many_threads_share_one_connection(broker_addr: str):
    group, topic = "cg-threads", "TopicThreads"
    with BrokerClient(broker_addr) as b:
        b.create_topic(topic, read=16, write=16)
        b.heartbeat("10.0.0.6@6", [ConsumerData(group, [topic])])
        for q in range(16):
            b.update_offset(group, topic, q, 1000 + q)
        errors: list[BaseException] = []

        def work(q: int) -> None:
            try:
                for _ in range(50):
                    assert b.query_offset(group, topic, q) == 1000 + q
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=work, args=(q,)) for q in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [] and b.client.connects == 1


def test_broker_refusals_carry_code_and_remark(broker_addr: str):
    with BrokerClient(broker_addr) as b:
        with pytest.raises(BrokerResponseError) as info:
            b.pull("cg-refusals", "NoSuchTopicHere", 0, 0)
        assert info.value.code == ResponseCode.TOPIC_NOT_EXIST and "NoSuchTopicHere" in str(info.value)
        with pytest.raises(BrokerResponseError) as info:
            b.client.invoke_ok(12345)
        assert info.value.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert f"{broker_addr} answered unknown code 12345 with REQUEST_CODE_NOT_SUPPORTED (3)" in str(info.value)
        with pytest.raises(BrokerResponseError) as info:
            b.create_topic("bad topic name!")
        assert info.value.code != ResponseCode.SUCCESS and info.value.remark
        assert b.consumer_ids("cg-nobody") == [] and b.consumer_connections("cg-nobody") is None


def test_broker_restart_fails_requests_in_flight_then_reconnects():
    with RocketMQCluster(brokers=1) as cluster:
        broker = cluster.brokers[0]
        group, topic = "cg-restart", "TopicRestart"
        with BrokerClient(broker.addr, timeout=3.0) as b:
            b.create_topic(topic, read=1, write=1)
            b.heartbeat("10.0.0.7@7", [ConsumerData(group, [topic])])
            b.update_offset(group, topic, 0, 41)
            failures: list[BaseException] = []
            poll = threading.Thread(target=lambda: _pull_expecting_failure(b, group, topic, failures))
            poll.start()
            time.sleep(0.5)  # the long poll is parked in the broker
            start = time.monotonic()
            broker.stop()  # SIGTERM: the broker persists offsets on the way down
            poll.join(10)
            assert len(failures) == 1 and isinstance(failures[0], RemotingConnectError), failures
            assert time.monotonic() - start < 8  # the request failed when the connection dropped
            with pytest.raises(RemotingConnectError, match="cannot connect"):
                b.query_offset(group, topic, 0)
            cluster.start_broker("broker-a")
            assert b.query_offset(group, topic, 0) == 41  # reconnected; committed progress kept
            assert b.client.connects == 2


def _pull_expecting_failure(b: BrokerClient, group: str, topic: str, failures: list[BaseException]) -> None:
    try:
        b.pull(group, topic, 0, 0, suspend_ms=20_000)
    except Exception as e:
        failures.append(e)


def test_acl_signing_with_authentication_enabled(monkeypatch, tmp_path):
    """A broker with ``authenticationEnabled`` refuses unsigned requests and wrong secrets (code 16)
    and serves requests signed as the Java ``AclClientRPCHook`` signs them."""
    config = {
        "authenticationEnabled": "true",
        "initAuthenticationUser": '{"username":"mqadmin","password":"secret-123"}',
        "innerClientAuthenticationCredentials": '{"accessKey":"mqadmin","secretKey":"secret-123"}',
    }
    with RocketMQCluster(brokers=1, broker_config=config) as cluster:
        addr = cluster.brokers[0].addr
        for credentials in (None, AclCredentials("mqadmin", "wrong-secret")):
            with BrokerClient(addr, credentials=credentials) as b, pytest.raises(BrokerResponseError) as info:
                b.subscription_groups()
            assert info.value.code == ResponseCode.NO_PERMISSION and "credentials are invalid" in str(info.value)
        with BrokerClient(addr, credentials=AclCredentials("mqadmin", "secret-123")) as b:
            assert isinstance(b.subscription_groups(), dict)
            b.create_topic("TopicAcl", read=2, write=2)
            assert b.send("TopicAcl", 0, b"signed").queue_offset == 0
        # the live snapshot signs too (credentials from the environment in the CLI)
        unsigned = live_snapshot(cluster.namesrv_addr, timeout=2.0)
        assert "credentials are invalid" in unsigned.error_lines()[0]
        monkeypatch.setenv("MQBALANCE_ACCESS_KEY", "mqadmin")
        monkeypatch.setenv("MQBALANCE_SECRET_KEY", "secret-123")
        assert main(["snapshot", "--namesrv", cluster.namesrv_addr, "-o", str(tmp_path / "f.json"), "--quiet"]) == 0
        signed = load_snapshot(tmp_path / "f.json")
        assert signed.error_lines() == [] and signed.readable_routes()["TopicAcl"] == [("broker-a", 2)]
