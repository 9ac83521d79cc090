"""The three member bugs the network-fault scenarios found, each pinned by a direct test on a real
ZooKeeper server (in-process members on loopback; the scenarios themselves run member processes in
network namespaces):

1. **A member deaf to ZooKeeper kept its session forever.** On a link whose requests reach
   ZooKeeper but whose answers do not, every reconnection attempt carries the session id and renews
   the session on the server, so the member's owner nodes never expired and its partitions stayed
   with a member that could not work them. Now a member disconnected for a whole session timeout
   gives its session up (``MemberSession.abandon``) and later replaces its own old registration.
2. **A release cut short by a lost connection leaked owner nodes.** The member forgot the
   partitions before deleting their owner nodes; a delete that failed on a dropped connection left
   a node held by its live session that nobody could ever claim (the group never converged). Now
   the deletes not yet answered are remembered and finished once connected
   (``Claims.release_leftovers``).
3. **A claim whose answer was lost blocked its own partition.** ZooKeeper applied the claim but
   the connection dropped before the answer came back; the owner node, held by the member's own
   live session, made every later claim of that partition conflict, and the group never converged
   (every-member mode retried forever; leader mode waited for an owner that was itself). Now a
   conflict with a node of its own session deletes it and claims again
   (``Claims.drop_own_leftover``).
4. **A session given up while the server was down outlived its member.** The close request of
   ``abandon`` never arrived, and a restarted ZooKeeper keeps every session it had for one session
   timeout from its start: the old session's owner nodes blocked those partitions, and stayed
   after the member left (the soak saw two). Now a member that connects a new session first attaches
   to each session it gave up and closes it (``MemberSession.close_abandoned``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss

from mqbalance.coordination import GroupMember, GroupPaths, MemberState, ZooKeeperServer, set_partitions
from nemesis_proxy import FaultProxy
from server_process import free_port
from zk_fixture import wait_until

pytestmark = pytest.mark.nemesis
pytest_plugins = ["zk_plugin"]  # `zk_server`, `zk`, `group`

FAST: dict[str, Any] = {"rebalance_backoff_ms": 100, "rebalance_max_retries": 10}


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as s:
        yield s


def _owner_sessions(zk: KazooClient, group: str, topic: str) -> dict[int, int]:
    p = GroupPaths(group)
    return {int(n): zk.exists(f"{p.owners}/{topic}/{n}").ephemeralOwner for n in zk.get_children(f"{p.owners}/{topic}")}


@pytest.mark.parametrize("mode", ["every-member", "leader"])
def test_member_deaf_to_zookeeper_gives_its_session_up(
    zk_server: ZooKeeperServer, zk: KazooClient, group: str, stack: ExitStack, mode: str
) -> None:
    set_partitions(zk, "t", 4)
    session_s = 2.0
    proxy = stack.enter_context(FaultProxy(("127.0.0.1", 0), ("127.0.0.1", zk_server.port), seed=3))
    deaf = stack.enter_context(
        GroupMember(
            f"127.0.0.1:{proxy.address[1]}", group, ["t"], client_id="a", mode=mode, session_timeout=session_s, **FAST
        )
    )
    other = stack.enter_context(
        GroupMember(zk_server.hosts, group, ["t"], client_id="b", mode=mode, session_timeout=session_s, **FAST)
    )
    wait_until(lambda: deaf.state is MemberState.ACQUIRED and other.state is MemberState.ACQUIRED and deaf.assignment)
    old = deaf._session.session
    t0 = time.monotonic()
    proxy.down.silent = True  # its requests (and reconnections) reach ZooKeeper, no answer comes back
    # without the fix "a" keeps its session (and its partitions) for as long as the link stays so
    # "b" gets every partition, and "a" gives its session up a whole session timeout after it was
    # cut off, in either order (on a loaded machine ZooKeeper may expire the session between two
    # reconnection attempts before "a" gives it up)
    seen: dict[str, float] = {}

    def taken_and_abandoned() -> bool:
        now = time.monotonic()
        if len(other.assignment) == 4:
            seen.setdefault("taken", now)
        if deaf.stats.sessions_abandoned:
            seen.setdefault("abandoned", now)
        return len(seen) == 2

    wait_until(taken_and_abandoned, timeout=3 * session_s + 4)
    assert not deaf.may_work() and deaf.stats.sessions_abandoned == 1
    assert seen["abandoned"] - t0 > session_s  # not before a whole session timeout disconnected
    proxy.heal()
    wait_until(
        lambda: (
            deaf.state is MemberState.ACQUIRED and len(deaf.assignment) + len(other.assignment) == 4 and deaf.assignment
        )
    )
    assert deaf._session.session not in (None, old)  # rejoined with a new session, under the same id
    assert zk.exists(GroupPaths(group).member("a")).ephemeralOwner == deaf._session.session


def test_release_cut_short_by_a_lost_connection_is_finished_later(
    zk_server: ZooKeeperServer, zk: KazooClient, group: str, stack: ExitStack
) -> None:
    set_partitions(zk, "t", 4)
    a = stack.enter_context(GroupMember(zk_server.hosts, group, ["t"], client_id="a", session_timeout=4.0, **FAST))
    wait_until(lambda: len(a.assignment) == 4)
    session = a._session
    real_delete = session.client.delete
    calls = []

    def delete_dropping_the_second(path: str, *args: Any, **kw: Any) -> Any:
        calls.append(path)
        if len(calls) == 2:  # the connection drops before this delete is sent
            raise ConnectionLoss()
        return real_delete(path, *args, **kw)

    session.client.delete = delete_dropping_the_second
    b = stack.enter_context(GroupMember(zk_server.hosts, group, ["t"], client_id="b", session_timeout=4.0, **FAST))
    # "a" releases everything (every-member) and claims its half again; the owner node whose delete
    # was lost is deleted once "a" handles its next event, so "b" gets its half
    wait_until(lambda: len(b.assignment) == 2 and len(a.assignment) == 2, timeout=15)
    assert len(calls) >= 2
    owners = _owner_sessions(zk, group, "t")
    assert sorted(owners.values()).count(a._session.session) == 2 and len(owners) == 4
    assert not a._claims.unreleased
    assert {tp.partition for tp in a.assignment} | {tp.partition for tp in b.assignment} == {0, 1, 2, 3}


def test_claim_whose_answer_was_lost_is_claimed_again(
    zk_server: ZooKeeperServer, zk: KazooClient, group: str, stack: ExitStack
) -> None:
    """Every-member mode (leader mode has the same guard where it waits for a partition's owner)."""
    mode = "every-member"
    set_partitions(zk, "t", 4)
    a = stack.enter_context(
        GroupMember(zk_server.hosts, group, ["t"], client_id="a", mode=mode, session_timeout=4.0, **FAST)
    )
    wait_until(lambda: len(a.assignment) == 4)
    claims = a._claims
    real_commit = claims.commit_tx
    lost = []

    def commit_then_lose_the_answer(tx: Any) -> list[Any]:
        result = real_commit(tx)  # applied by ZooKeeper...
        if not lost and not any(isinstance(r, Exception) for r in result):
            lost.append(result)
            raise ConnectionLoss()  # ...and the answer never arrives
        return result

    claims.commit_tx = commit_then_lose_the_answer  # type: ignore[method-assign]
    b = stack.enter_context(
        GroupMember(zk_server.hosts, group, ["t"], client_id="b", mode=mode, session_timeout=4.0, **FAST)
    )
    # the group rebalances; one of the claims' answers is lost: the group still converges
    wait_until(lambda: len(a.assignment) + len(b.assignment) == 4 and a.assignment and b.assignment, timeout=20)
    assert lost
    owners = _owner_sessions(zk, group, "t")
    assert len(owners) == 4
    mine = {tp.partition for tp in a.assignment}
    assert {p for p, s in owners.items() if s == a._session.session} == mine


def test_a_session_given_up_while_the_server_was_down_is_closed_when_it_is_back(group: str, stack: ExitStack) -> None:
    session_s = 4.0
    server = stack.enter_context(ZooKeeperServer(port=free_port()))  # restarted on this port
    admin = KazooClient(hosts=server.hosts, timeout=10)
    admin.start(timeout=30)
    stack.callback(admin.close)
    stack.callback(admin.stop)
    set_partitions(admin, "t", 4)
    a = stack.enter_context(GroupMember(server.hosts, group, ["t"], client_id="a", session_timeout=session_s, **FAST))
    wait_until(lambda: len(a.assignment) == 4)
    old = a._session.session
    server.stop(kill=True)
    wait_until(lambda: a.stats.sessions_abandoned == 1, timeout=3 * session_s + 10)
    server.start()  # it keeps the old session, for one session timeout from now
    paths = GroupPaths(group)

    def registered_anew() -> bool:
        try:
            stat = admin.exists(paths.member("a"))
        except Exception:  # noqa: BLE001 - the admin's own connection coming back
            return False
        return stat is not None and stat.ephemeralOwner != old

    wait_until(registered_anew, timeout=60)
    # the old session was closed before the new one registered: none of its owner nodes is left,
    # however soon after the restart this looks (it would keep them one session timeout)
    assert old not in _owner_sessions(admin, group, "t").values()
    assert a.stats.abandoned_closed == 1
    wait_until(lambda: len(a.assignment) == 4, timeout=30)
    assert set(_owner_sessions(admin, group, "t").values()) == {a._session.session}
