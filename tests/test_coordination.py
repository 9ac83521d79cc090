"""GroupMember against a real ZooKeeper server (no mocks): both modes, every kind of strategy,
fenced commits, session loss, ACLs, bad input. Soak tests with member processes are in
``test_coordination_soak.py``."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoAuthError

from mqbalance import MessageQueue, UnknownStrategyError, strategy
from mqbalance.coordination import (
    CoordinationAuthError,
    DuplicateClientIdError,
    FencedCommitError,
    GroupMember,
    GroupPaths,
    InvalidCoordinationConfigError,
    MemberState,
    NoPartitionsError,
    RevokeReason,
    ZooKeeperServer,
    ZooKeeperUnreachableError,
    group_status,
    set_partitions,
)
from mqbalance.exceptions import (
    InvalidInputError,
    MQBalanceError,
    PreviousAssignmentRequiredError,
    UnsupportedStrategyError,
)
from mqbalance.kafka import TopicPartition, zk_assign
from server_process import free_port
from zk_fixture import expire_session, wait_until

pytest_plugins = ["zk_plugin"]  # the real ZooKeeper server fixtures

FAST = {"session_timeout": 2.0, "rebalance_backoff_ms": 100, "rebalance_max_retries": 10}


def owners(members: list[GroupMember]) -> dict[TopicPartition, str]:
    seen: dict[TopicPartition, str] = {}
    for m in members:
        for tp in m.assignment:
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {m.client_id}"
            seen[tp] = m.client_id
    return seen


def zk_owners(zk: KazooClient, group: str, topic: str) -> dict[TopicPartition, str]:
    """The owner nodes of ``topic`` as ZooKeeper holds them."""
    p = GroupPaths(group)
    return {
        TopicPartition(topic, int(n)): zk.get(f"{p.owners}/{topic}/{n}")[0].decode()
        for n in zk.get_children(f"{p.owners}/{topic}")
    }


def settled(members: list[GroupMember], total: int) -> bool:
    return all(m.state is MemberState.ACQUIRED for m in members) and len(owners(members)) == total


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as s:
        yield s


def start(stack: ExitStack, hosts: str, group: str, cid: str, topics: Any = ("t",), **kw: Any) -> GroupMember:
    return stack.enter_context(GroupMember(hosts, group, topics, client_id=cid, **{**FAST, **kw}))


@pytest.mark.parametrize("mode", ["every-member", "leader"])
@pytest.mark.parametrize("name", ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"])
def test_rocketmq_strategy_gives_what_every_java_client_computes(zk_server, zk, group, stack, mode, name):
    set_partitions(zk, f"{group}-t", 20)
    ids = ["10.0.0.9@a", "10.0.0.10@a", "10.0.0.1@b"]
    members = [start(stack, zk_server.hosts, group, cid, [f"{group}-t"], strategy=name, mode=mode) for cid in ids]
    queues = [MessageQueue(f"{group}-t", "broker-0", p) for p in range(20)]
    expected = {
        c: sorted(q.queue_id for q in qs) for c, qs in strategy(name).assign(queues, ids, java_sort=True).items()
    }
    wait_until(
        lambda: (
            settled(members, 20)
            and {m.client_id: sorted(tp.partition for tp in m.assignment) for m in members} == expected
        )
    )
    st = group_status(zk_server.hosts, group)
    assert st.unowned == 0 and len(st.members) == 3
    if mode == "leader":
        assert sum(m.is_leader for m in members) == 1 and st.generation is not None


@pytest.mark.parametrize("mode", ["every-member", "leader"])
def test_kafka_range_over_consumer_threads(zk_server, zk, group, stack, mode):
    set_partitions(zk, f"{group}-a", 7)
    set_partitions(zk, f"{group}-b", 3)
    subs = {"C1": {f"{group}-a": 2, f"{group}-b": 1}, "C2": {f"{group}-a": 1, f"{group}-b": 1}}
    members = [start(stack, zk_server.hosts, group, c, s, strategy="range", mode=mode) for c, s in subs.items()]
    wait_until(lambda: settled(members, 10) and all(len(m.assignment) >= 3 for m in members))
    expected = zk_assign(name="range", consumers=subs, partitions_per_topic={f"{group}-a": 7, f"{group}-b": 3})
    for thread, tps in expected.items():
        for tp in tps:  # the owner node names the consumer thread, as Kafka's does
            assert zk.get(GroupPaths(group).owner(*tp))[0].decode() == thread


def test_every_member_rebalance_on_join_leave_and_partition_change(zk_server, zk, group, stack):
    topic = f"{group}-t"
    set_partitions(zk, topic, 12)
    revoked: list[tuple[str, frozenset[TopicPartition], str]] = []
    kw = {"on_revoked": lambda m, tps, why: revoked.append((m.client_id, tps, why))}
    a = start(stack, zk_server.hosts, group, "a", [topic], **kw)
    wait_until(lambda: settled([a], 12))
    b = start(stack, zk_server.hosts, group, "b", [topic], **kw)
    wait_until(lambda: settled([a, b], 12) and len(b.assignment) == 6)
    assert ("a", frozenset(TopicPartition(topic, p) for p in range(12)), RevokeReason.REBALANCE) in revoked
    set_partitions(zk, topic, 16)  # the partition-change listener
    wait_until(lambda: settled([a, b], 16))
    b.close()
    wait_until(lambda: settled([a], 16))
    assert ("b", frozenset(TopicPartition(topic, p) for p in range(8, 16)), RevokeReason.CLOSE) in revoked
    assert a.stats.notifications >= 3 and a.stats.rebalances >= 4


def test_leader_mode_kafka_sticky_moves_only_what_it_must_and_fails_over(zk_server, zk, group, stack):
    topic = f"{group}-t"
    set_partitions(zk, topic, 30)
    kw = {"strategy": "sticky", "mode": "leader"}
    members = [start(stack, zk_server.hosts, group, f"m{i}", [topic], **kw) for i in "012"]
    # A member that registered after the leader last published is ACQUIRED with nothing until the
    # next generation: wait for the generation that counts all three.
    wait_until(lambda: settled(members, 30) and all(m.assignment for m in members))
    before = owners(members)
    assert sorted(Counter(before.values()).values()) == [10, 10, 10]
    d = start(stack, zk_server.hosts, group, "m3", [topic], **kw)
    members.append(d)
    wait_until(lambda: settled(members, 30) and len(d.assignment) >= 7)
    after = owners(members)
    moved = sum(1 for tp, m in after.items() if before[tp] != m)
    assert moved == len(d.assignment) == 7  # only the newcomer's share moved (AVG would move more)
    leader = next(m for m in members if m.is_leader)
    gen = leader.generation
    leader.close()
    rest = [m for m in members if m is not leader]
    wait_until(lambda: settled(rest, 30) and sum(m.is_leader for m in rest) == 1)
    assert all(m.generation > gen for m in rest)
    survivors_kept = sum(1 for tp, m in owners(rest).items() if after[tp] == m)
    assert survivors_kept == 30 - len([tp for tp, m in after.items() if m == leader.client_id])


def test_leader_mode_rocketmq_sticky_moves_only_what_it_must(zk_server, zk, group, stack):
    """RocketMQ's STICKY per topic from the previous generation: exactly what
    ``strategy("STICKY").assign(..., previous=)`` computes for the Java-sorted members and queues
    (two brokers, so the queues' Java order is not the partitions' order)."""
    topic = f"{group}-t"
    set_partitions(zk, topic, 30, brokers=2)
    queues = {p: MessageQueue(topic, f"broker-{p % 2}", p) for p in range(30)}
    kw = {"strategy": "STICKY", "mode": "leader"}
    ids = ["10.0.0.9@a", "10.0.0.10@a", "10.0.0.1@b"]
    members = [start(stack, zk_server.hosts, group, cid, [topic], **kw) for cid in ids]
    wait_until(lambda: settled(members, 30) and all(m.assignment for m in members))
    before = owners(members)  # every partition owned exactly once (owners() asserts it)
    assert sorted(Counter(before.values()).values()) == [10, 10, 10]
    assert zk_owners(zk, group, topic) == before
    previous = {c: [queues[tp.partition] for tp, who in before.items() if who == c] for c in ids}
    newcomer = "10.0.0.2@a"
    shares = strategy("STICKY").assign(list(queues.values()), [*ids, newcomer], java_sort=True, previous=previous)
    expected = {TopicPartition(topic, q.queue_id): c for c, qs in shares.items() for q in qs}
    assert len(expected) == 30 and len(shares[newcomer]) == 7
    d = start(stack, zk_server.hosts, group, newcomer, [topic], **kw)
    members.append(d)
    wait_until(lambda: settled(members, 30) and len(d.assignment) == 7)
    after = owners(members)
    assert after == expected
    assert sum(1 for tp, m in after.items() if before[tp] != m) == 7  # only the newcomer's share moved
    assert zk_owners(zk, group, topic) == after
    assert len({m.generation for m in members}) == 1


def test_rocketmq_sticky_is_refused_in_every_member_mode():
    """Each member computing its own share has no previous assignment: refused at construction
    (it used to be accepted and then sit in REBALANCING for ever)."""
    with pytest.raises(PreviousAssignmentRequiredError, match="STICKY is computed by one party") as e:
        GroupMember("127.0.0.1:1", "g", ["t"], strategy="STICKY", mode="every-member")
    assert e.value.value == "STICKY" and isinstance(e.value, UnsupportedStrategyError)


def test_leader_mode_members_do_not_wake_on_membership_changes(zk_server, zk, group, stack):
    topic = f"{group}-t"
    set_partitions(zk, topic, 64)
    members = [
        start(stack, zk_server.hosts, group, f"m{i}", [topic], strategy="CONSISTENT_HASH", mode="leader")
        for i in range(5)
    ]
    wait_until(lambda: settled(members, 64))
    time.sleep(0.3)
    base = {m.client_id: m.stats for m in members}
    extra = start(stack, zk_server.hosts, group, "m9", [topic], strategy="CONSISTENT_HASH", mode="leader")
    wait_until(lambda: settled([*members, extra], 64) and extra.assignment)
    time.sleep(0.3)
    for m in members:
        if not m.is_leader:  # one notification: the assignment node; never the member list
            assert m.stats.notifications - base[m.client_id].notifications == 1


def test_fenced_commit_refuses_a_member_that_lost_its_partition(zk_server, zk, group, stack):
    topic = f"{group}-t"
    set_partitions(zk, topic, 2)
    a = start(stack, zk_server.hosts, group, "a", [topic], session_timeout=6.0)  # no session loss under load
    wait_until(lambda: settled([a], 2))
    assert a.stats.rebalances == 1  # joining is one rebalance, however its first events are batched
    p = GroupPaths(group)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    v = a.commit(tp0, 10)
    assert zk.get(p.offset(*tp0))[0] == b"10" and a.commit(tp0, 12) == v + 1
    # someone else takes partition 0 over (what a successor's claim does: owner node + offset version bump)
    zk.delete(p.owner(*tp0))
    zk.create(p.owner(*tp0), b"intruder", ephemeral=True)
    zk.set(p.offset(*tp0), b"12")
    with pytest.raises(FencedCommitError) as e:
        a.commit(tp0, 20)
    assert e.value.value == tp0 and zk.get(p.offset(*tp0))[0] == b"12"
    # an owner node that vanished without a successor: fenced too
    zk.delete(p.owner(*tp1))
    with pytest.raises(FencedCommitError):
        a.commit(tp1, 5)
    assert zk.get(p.offset(*tp1))[0] == b"0"
    with pytest.raises(FencedCommitError):
        a.commit(TopicPartition(topic, 7), 1)
    with pytest.raises(InvalidInputError):
        a.commit(tp0, -1)
    zk.delete(p.owner(*tp0))  # let the member's own cleanup succeed


def test_session_loss_stops_work_first_then_rejoins(zk_server, zk, group, stack):
    topic = f"{group}-t"
    set_partitions(zk, topic, 4)
    events: list[Any] = []
    work_seen: list[bool] = []

    def revoked(m: GroupMember, tps: frozenset[TopicPartition], why: str) -> None:
        work_seen.append(m.may_work())  # by the time on_revoked runs, work is already refused
        events.append(("revoked", why, len(tps)))

    for mode in ("every-member", "leader"):
        events.clear()
        a = start(stack, zk_server.hosts, f"{group}-{mode}", "a", [topic], mode=mode, on_revoked=revoked)
        wait_until(lambda a=a: settled([a], 4) and a.may_work())
        old = a._session.client.client_id
        expire_session(zk_server.hosts, a._session.client)
        wait_until(lambda: ("revoked", RevokeReason.SESSION_LOST, 4) in events)
        wait_until(lambda a=a, old=old: settled([a], 4) and a._session.client.client_id != old and a.may_work())
        assert work_seen[-1] is False
        a.close()


def test_digest_acl_keeps_others_out(zk_server, zk, group, stack):
    topic = f"{group}-t"
    set_partitions(zk, topic, 3)
    a = start(stack, zk_server.hosts, group, "a", [topic], auth=("team", "s3cret"))
    wait_until(lambda: settled([a], 3))
    p = GroupPaths(group)
    assert zk.get_children(p.ids) == ["a"]  # readable by anyone
    before = {c: zk.get(f"{p.owners}/{topic}/{c}")[0] for c in zk.get_children(f"{p.owners}/{topic}")}
    with pytest.raises(NoAuthError):
        zk.create(f"{p.owners}/{topic}/9", b"x")
    with pytest.raises(NoAuthError):
        zk.delete(p.offset(topic, 0))
    with pytest.raises(NoAuthError):
        zk.set(p.offset(topic, 0), b"999")
    with pytest.raises(CoordinationAuthError, match="digest ACL"):
        GroupMember(zk_server.hosts, group, [topic], client_id="b", **FAST).start()
    with pytest.raises(CoordinationAuthError):
        GroupMember(zk_server.hosts, group, [topic], client_id="b", auth=("team", "wrong"), **FAST).start()
    assert {c: zk.get(f"{p.owners}/{topic}/{c}")[0] for c in zk.get_children(f"{p.owners}/{topic}")} == before
    assert zk.get_children(p.ids) == ["a"] and zk.get(p.offset(topic, 0))[0] == b"0"


def test_duplicated_client_id_is_refused(zk_server, zk, group, stack):
    set_partitions(zk, f"{group}-t", 2)
    start(stack, zk_server.hosts, group, "same", [f"{group}-t"])
    with pytest.raises(DuplicateClientIdError, match="already registered") as e:
        GroupMember(zk_server.hosts, group, [f"{group}-t"], client_id="same", **FAST).start()
    assert e.value.value == "same" and isinstance(e.value, ValueError)


def test_malformed_member_data_is_ignored_with_a_warning(zk_server, zk, group, stack, caplog):
    topic = f"{group}-t"
    set_partitions(zk, topic, 4)
    p = GroupPaths(group)
    zk.ensure_path(p.ids)
    zk.create(p.member("garbage"), b"\xff not json", ephemeral=True)
    caplog.set_level(logging.WARNING, logger="mqbalance.coordination")
    for mode in ("every-member", "leader"):
        a = start(stack, zk_server.hosts, group, f"a-{mode}", [topic], mode=mode)
        wait_until(lambda a=a: settled([a], 4))
        a.close()
    assert any(p.member("garbage") in r.getMessage() for r in caplog.records)
    zk.set(p.assignment, b"{not json")
    b = start(stack, zk_server.hosts, group, "b", [topic], mode="leader")
    wait_until(lambda: settled([b], 4))  # the leader replaces a malformed assignment
    assert any(p.assignment in r.getMessage() for r in caplog.records)


def test_unreachable_zookeeper_fails_within_the_connect_timeout():
    with ZooKeeperServer() as dead:  # a port nobody listens on once the server is gone
        hosts = dead.hosts
    t0 = time.monotonic()
    with pytest.raises(ZooKeeperUnreachableError, match="within 1.5 s") as e:
        GroupMember(hosts, "g", ["t"], connect_timeout=1.5).start()
    assert time.monotonic() - t0 < 1.5 + 2.0 and e.value.value == hosts
    threads = [t.name for t in threading.enumerate() if "kazoo" in t.name.lower() or "mqbalance" in t.name]
    assert not threads, threads


def test_topic_without_partition_node(zk_server, group):
    with pytest.raises(NoPartitionsError, match="no partition node /brokers/topics/") as e:
        GroupMember(zk_server.hosts, group, [f"{group}-missing"], **FAST).start()
    assert isinstance(e.value, LookupError)


@pytest.mark.parametrize(
    "kw",
    [
        {"session_timeout": 0},
        {"session_timeout": -1.0},
        {"connect_timeout": 0},
        {"rebalance_max_retries": 0},
        {"rebalance_max_retries": -2},
        {"rebalance_backoff_ms": -1},
        {"topics": {"t": 0}},
        {"topics": {"t": -1}},
        {"topics": []},
        {"topics": "t"},
        {"mode": "anarchy"},
        {"client_id": "a/b"},
        {"auth": ("user",)},
        {"group": ""},
    ],
)
def test_bad_parameters(kw):
    args = {"hosts": "127.0.0.1:1", "group": "g", "topics": ["t"], **kw}
    with pytest.raises(InvalidCoordinationConfigError) as e:
        GroupMember(args.pop("hosts"), args.pop("group"), args.pop("topics"), **args)
    assert isinstance(e.value, ValueError) and isinstance(e.value, MQBalanceError)


@pytest.mark.parametrize(
    ("config", "mode", "error", "message"),
    [
        (
            "STICKY",  # mqbalance's (RocketMQ-style) STICKY; "sticky" is Kafka's
            "every-member",
            PreviousAssignmentRequiredError,
            (
                "STICKY is computed by one party from the group's previous assignment, which a ZooKeeper group in "
                "every-member mode does not have; a ZooKeeper group in every-member mode runs AVG, "
            ),
        ),
        (
            "sticky",
            "every-member",
            PreviousAssignmentRequiredError,
            "sticky is computed by one party from the group's previous assignment",
        ),
        (
            {"name": "CONFIG", "messageQueueList": []},
            "leader",
            UnsupportedStrategyError,
            "CONFIG gives every consumer the same fixed list; a ZooKeeper group in leader mode needs one owner",
        ),
    ],
)
def test_strategy_the_mode_cannot_run_is_refused_at_construction(config, mode, error, message):
    with pytest.raises(error) as e:
        GroupMember("127.0.0.1:1", "g", ["t"], strategy=config, mode=mode)
    assert str(e.value).startswith(f"strategy: {message}")
    assert isinstance(e.value, InvalidInputError)
    if error is UnsupportedStrategyError:
        assert not isinstance(e.value, PreviousAssignmentRequiredError)


def test_unknown_strategy_and_bad_partition_counts(zk):
    with pytest.raises(UnknownStrategyError, match="known: AVG.*range, roundrobin, sticky"):
        GroupMember("127.0.0.1:1", "g", ["t"], strategy="FASTEST")
    for n in (0, -3):
        with pytest.raises(InvalidCoordinationConfigError):
            set_partitions(zk, "t", n)
    with pytest.raises(NoPartitionsError):
        set_partitions(zk, "never-created", 3, create=False)


def test_server_that_cannot_start_fails_clearly(monkeypatch):
    monkeypatch.setenv("MQBALANCE_ZOOKEEPER_CLASSPATH", "/nonexistent.jar")
    with pytest.raises(ZooKeeperUnreachableError, match="exited during start-up"), ZooKeeperServer():
        pass


def test_record_checker_catches_loss_overlap_and_backwards_commits():
    from mqbalance.coordination.records import check_records

    good = {
        "m1": [{"e": "p", "q": "t/0", "a": 0, "b": 5, "t0": 1.0, "t1": 1.1}, {"e": "c", "q": "t/0", "o": 5, "v": 1}],
        "m2": [{"e": "p", "q": "t/0", "a": 3, "b": 9, "t0": 2.0, "t1": 2.1}, {"e": "c", "q": "t/0", "o": 9, "v": 3}],
    }
    res = check_records(good, {"t/0": 9})
    assert res.ok and res.duplicates == 2 and res.processed == 11
    bad = {
        "m1": [{"e": "p", "q": "t/0", "a": 0, "b": 5, "t0": 1.0, "t1": 2.5}, {"e": "c", "q": "t/0", "o": 5, "v": 4}],
        "m2": [{"e": "p", "q": "t/0", "a": 6, "b": 9, "t0": 2.0, "t1": 2.1}, {"e": "c", "q": "t/0", "o": 9, "v": 3}],
    }
    res = check_records(bad, {"t/0": 9})
    assert res.lost == {"t/0": [(5, 6)]} and len(res.overlaps) == 1 and len(res.backwards) == 1 and not res.ok


def test_cli_group_status_and_unreachable(zk_server, zk, group, stack, capsys):
    import json

    from mqbalance.cli import main

    topic = f"{group}-t"
    set_partitions(zk, topic, 3, source_rate=10.0)
    a = start(stack, zk_server.hosts, group, "a", [topic], mode="leader")
    wait_until(lambda: settled([a], 3))
    a.commit(TopicPartition(topic, 1), 4)
    assert main(["group", "status", "--zk", zk_server.hosts, "--group", group, "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert [m["id"] for m in st["members"]] == ["a"] and st["leader"] == "a" and st["unowned"] == 0
    row = next(r for r in st["partitions"] if r["partition"] == 1)
    assert row["owner"] == "a" and row["offset"] == 4 and row["lag"] == row["end"] - 4
    assert main(["group", "status", "--zk", zk_server.hosts, "--group", group]) == 0
    assert "a" in capsys.readouterr().out
    with ZooKeeperServer() as dead:
        hosts = dead.hosts
    assert main(["group", "status", "--zk", hosts, "--group", group, "--timeout", "1"]) == 2
    assert "no ZooKeeper server answered" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["every-member", "leader"])
def test_members_watch_again_after_a_dropped_connection(stack, mode):
    """kazoo drops every watch with a connection and does not set them again when the session
    survives (here: the server killed and restarted under its members): members must, or they go
    deaf, keep what they own, and a later joiner never gets its share."""
    # A 2 s tick lets the server grant a 36 s session (at most 20 ticks): a kill -9 and restart of
    # its JVM on a loaded machine must not outlast the sessions this test says survive.
    server = stack.enter_context(ZooKeeperServer(tick_ms=2000))
    admin = KazooClient(hosts=server.hosts, timeout=10.0, connection_retry={"max_tries": -1, "max_delay": 0.5})
    admin.start(timeout=10)
    stack.callback(admin.close)
    stack.callback(admin.stop)
    set_partitions(admin, "t", 12)
    kw = {"mode": mode, "session_timeout": 36.0}
    a, b = (start(stack, server.hosts, "g", cid, ["t"], **kw) for cid in ("a", "b"))
    wait_until(lambda: settled([a, b], 12) and len(b.assignment) == 6)  # the restart comes after the rebalance
    sessions = [m._session.client.client_id[0] for m in (a, b)]
    server.restart(kill=True)
    # reconnected within their sessions or not at all (the next line checks the same sessions): wait
    # for as long as a session could still be alive, twice over, not a fixed figure
    wait_until(
        lambda: all(m._session.client.connected for m in (a, b)) and settled([a, b], 12),
        timeout=2 * kw["session_timeout"],
    )
    assert [m._session.client.client_id[0] for m in (a, b)] == sessions  # the same sessions: no re-registration
    c = start(stack, server.hosts, "g", "c", ["t"], **kw)
    # a deaf member never gives c its share; a loaded machine only delays it
    wait_until(
        lambda: settled([a, b, c], 12) and all(len(m.assignment) == 4 for m in (a, b, c)),
        timeout=2 * kw["session_timeout"],
    )


@pytest.mark.parametrize("mode", ["every-member", "leader"])
def test_a_reconnection_whose_check_was_cut_short_keeps_what_the_members_own(stack, mode):
    """The server restarts under its members and their sessions survive; the connection drops
    again while a member reads the group after reconnecting (as it can while an ensemble elects a
    leader). Its retry must find the same share and keep it: nobody stops work, nothing changes
    hands."""
    server = stack.enter_context(ZooKeeperServer(tick_ms=2000))  # a 36 s session: see the test above
    revoked: list[tuple[str, RevokeReason]] = []
    kw = {"mode": mode, "session_timeout": 36.0, "on_revoked": lambda m, tps, why: revoked.append((m.client_id, why))}
    admin = KazooClient(hosts=server.hosts, timeout=10.0)
    admin.start(timeout=10)
    stack.callback(admin.close)
    stack.callback(admin.stop)
    set_partitions(admin, "t", 12)
    a, b = (start(stack, server.hosts, "g", cid, ["t"], **kw) for cid in ("a", "b"))
    wait_until(lambda: settled([a, b], 12) and len(b.assignment) == 6)
    before, sessions = owners([a, b]), [m._session.client.client_id[0] for m in (a, b)]
    revoked.clear()
    real_read, reads = a._watches.read_members, []

    def cut_short(*args: Any, **kwargs: Any) -> Any:
        reads.append(time.monotonic())
        if len(reads) == 1:  # the first read after reconnecting: the connection drops
            raise ConnectionLoss()
        return real_read(*args, **kwargs)

    a._watches.read_members = cut_short  # type: ignore[method-assign]
    server.restart(kill=True)
    # the retry's read comes after any stop of work it decided on (a rebalance stops work, then reads)
    wait_until(lambda: len(reads) >= 2 and all(m._session.client.connected for m in (a, b)), timeout=72)
    wait_until(lambda: settled([a, b], 12), timeout=72)
    assert [m._session.client.client_id[0] for m in (a, b)] == sessions
    assert settled([a, b], 12) and owners([a, b]) == before and revoked == [], revoked


@pytest.mark.parametrize("mode", ["every-member", "leader"])
def test_a_claim_whose_answer_was_lost_leaves_no_owner_node_behind(zk_server, zk, group, stack, mode):
    """ZooKeeper applies a claim, then the connection drops before the answer arrives, and a member
    joins meanwhile: the claimer's next share leaves out what its cut-off attempt claimed. Those
    owner nodes are held by its live session, where nobody else could ever claim them, so it must
    delete them itself — or the joiner waits for its share for as long as that session lives."""
    topic = f"{group}-t"
    set_partitions(zk, topic, 12)
    b = GroupMember(zk_server.hosts, group, [topic], client_id="b", mode=mode, **FAST)
    real_commit = b._claims.commit_tx
    calls: list[str] = []
    joined: list[GroupMember] = []

    def answer_lost(tx: Any) -> list[Any]:
        result = real_commit(tx)
        if any(op.path.startswith(f"{GroupPaths(group).owners}/") for op in tx.operations):
            calls.append("claim")
        if len(calls) == 4 or mode == "leader" and calls:  # every-member claims one per multi; leader all in one
            b._claims.commit_tx = real_commit  # type: ignore[method-assign]
            joined.append(start(stack, zk_server.hosts, group, "a", [topic], mode=mode))
            raise ConnectionLoss()
        return result

    b._claims.commit_tx = answer_lost  # type: ignore[method-assign]
    stack.enter_context(b)
    a = wait_until(lambda: joined and joined[0])
    wait_until(lambda: settled([a, b], 12) and len(a.assignment) == 6, timeout=30.0)
    owner = GroupPaths(group).owner
    held = {tp: zk.exists(owner(*tp)).ephemeralOwner for tp in zk_owners(zk, group, topic)}
    assert held == {tp: m._session.client.client_id[0] for m in (a, b) for tp in m.assignment}


def test_a_leader_whose_publish_answer_was_lost_keeps_leading(zk_server, zk, group, stack):
    """ZooKeeper applies the leader's publish, then the connection drops before the answer: the
    leader's next publish is based on a stale version of the assignment node and fails. That is not
    a lost election — the leader must read the node again and publish, or no member ever publishes
    again and a later joiner waits for its share for good."""
    topic = f"{group}-t"
    set_partitions(zk, topic, 12)
    a = start(stack, zk_server.hosts, group, "a", [topic], mode="leader")
    wait_until(lambda: settled([a], 12) and a.is_leader)
    real_commit = a._claims.commit_tx

    def answer_lost(tx: Any) -> list[Any]:
        path = GroupPaths(group).assignment
        if any(op.path == path for op in tx.operations):  # the connection drops: kazoo's watches go with it
            a._session.client._data_watchers.pop(path, None)
        result = real_commit(tx)
        if any(op.path == path for op in tx.operations):
            a._claims.commit_tx = real_commit  # type: ignore[method-assign]
            raise ConnectionLoss()
        return result

    a._claims.commit_tx = answer_lost  # type: ignore[method-assign]
    b = start(stack, zk_server.hosts, group, "b", [topic], mode="leader")
    wait_until(lambda: settled([a, b], 12) and len(b.assignment) == 6 and a._claims.commit_tx == real_commit)
    c = start(stack, zk_server.hosts, group, "c", [topic], mode="leader")
    wait_until(lambda: settled([a, b, c], 12) and all(len(m.assignment) == 4 for m in (a, b, c)), timeout=30.0)
    assert a.is_leader


def test_a_server_that_never_answers_the_handshake_costs_a_few_seconds_not_the_session(zk_server, zk, group, stack):
    """A server that accepts the connection and never answers the handshake (seen after a ZooKeeper
    server's kill -9 and restart) is given up after a sixth of the session, not kazoo's whole session
    timeout: here the first connection is held silent, the next ones reach the real server."""
    zk_port = int(zk_server.hosts.rsplit(":", 1)[1])
    listener = socket.create_server(("127.0.0.1", free_port()))
    stack.callback(listener.close)
    held: list[socket.socket] = []

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                stack.callback(conn.close)
                if not held:
                    held.append(conn)  # accepted, never answered
                    continue
                upstream = socket.create_connection(("127.0.0.1", zk_port))
                stack.callback(upstream.close)
                for a, b in ((conn, upstream), (upstream, conn)):
                    threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    set_partitions(zk, f"{group}-t", 4)
    t0 = time.monotonic()
    m = start(stack, f"127.0.0.1:{listener.getsockname()[1]}", group, "a", [f"{group}-t"], session_timeout=36.0)
    wait_until(lambda: settled([m], 4), timeout=30.0)
    assert held and time.monotonic() - t0 < 36.0 / 2


def test_a_leader_whose_release_answer_was_lost_is_acquired_again(zk_server, zk, group, stack):
    """The leader hands half its partitions to a joiner; ZooKeeper applies the release, then the
    connection drops before the answer. Once connected again the leader has nothing left to do and
    must say so (ACQUIRED), not stay REBALANCING for good."""
    topic = f"{group}-t"
    set_partitions(zk, topic, 12)
    a = start(stack, zk_server.hosts, group, "a", [topic], mode="leader")
    wait_until(lambda: settled([a], 12) and a.is_leader)
    real_release = a._claims.release

    def answer_lost(tps: Any) -> None:
        real_release(tps)
        a._claims.release = real_release  # type: ignore[method-assign]
        raise ConnectionLoss()

    a._claims.release = answer_lost  # type: ignore[method-assign]
    b = start(stack, zk_server.hosts, group, "b", [topic], mode="leader")
    wait_until(lambda: settled([a, b], 12) and len(b.assignment) == 6, timeout=30.0)
    assert a._claims.release == real_release
