"""Network faults between ZooKeeper members and ZooKeeper, with real kernel partitions (scenarios 1
and 5 of the network-fault tests; ``pytest -m nemesis`` runs all of them).

Every member is an ``mqbalance zk-consume`` process in its own network namespace; ZooKeeper (the Debian
package's server) runs in another; the only path between them is the veths (see
``nemesis_net.py``). A partition takes a member's veth down: its packets vanish, its TCP connection
to ZooKeeper hangs without a reset, and it keeps running — the network zombie.

Scenario 1 (both modes): the zombie is cut off for longer than its session (``SESSION_S`` + 3 to
5 s, seeded), then healed. Scenario 5 (leader mode): the zombie is the leader; the others see a
leader change. What must hold, from the record files and ZooKeeper:

* the zombie stops working within its lease (``LEASE_FRACTION`` × the session after the partition
  began) and before anyone else works its queues; no two members ever worked one queue at
  overlapping times; nothing was lost below the committed offsets; commits never went backwards;
* ZooKeeper ends the zombie's session within ``SESSION_S + OWNED_BOUND_S``, and every queue is
  owned again by the survivors within ``OWNED_BOUND_S`` of that;
* the zombie's late commit (its last fencing token, sent from its namespace after the heal) and,
  in scenario 5, the deposed leader's publication (its old election node) are refused by ZooKeeper;
  every generation published after the leader change names the new leader;
* the zombie revoked everything it held (reason ``session-lost``: it gives its session up after a
  whole session timeout disconnected, or learns at the heal that it expired), rejoined with a new
  session after the heal, and the group converged with it again.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from kazoo.recipe.watchers import DataWatch

from mqbalance.coordination import LEASE_FRACTION
from mqbalance.coordination.layout import parse_assignment
from nemesis_net import Network
from nemesis_zk import (
    Table,
    ZkGroup,
    conclude,
    first_work_after,
    held,
    last_work,
    paused_queue_seconds,
    replay,
    rounds,
    seed_for,
)
from zk_fixture import ZooKeeperEnsemble

pytestmark = pytest.mark.nemesis
pytest_plugins = ["nemesis_plugin"]  # the `network` fixture

SESSION_S = 2.0
MEMBERS = 3
QUEUES = 12
#: Every queue is owned by the survivors within this of ZooKeeper ending the zombie's session (seen
#: as its registration going): one rebalance (every-member: a few 250 ms back-offs on conflicts;
#: leader: an election and one publication), with slack for a loaded 2-core machine. The session
#: itself must end within SESSION_S + this of the partition (ZooKeeper's tick is 0.5 s; its JVM
#: shares the loaded machine too).
OWNED_BOUND_S = 3.0
#: Time for the zombie to notice the heal, learn its session is gone, rejoin and the group to settle.
REJOIN_BOUND_S = 15.0
#: Scheduling slack on the lease check (the member's worker polls every 10 ms; a loaded machine).
LEASE_SLACK_S = 0.15


def _setup(network: Network, tmp_path: Path, mode: str, strategy: str) -> tuple[ZooKeeperEnsemble, ZkGroup]:
    zk = ZooKeeperEnsemble([network.node("zk")], tmp_path / "zk").start()
    g = ZkGroup(zk.hosts, f"nem-{mode}", mode, strategy, tmp_path, queues=QUEUES, session_s=SESSION_S)
    for i in range(MEMBERS):
        g.spawn(f"m{i}", network.node(f"m{i}"), zk.hosts)
    return zk, g


def _leader(g: ZkGroup) -> tuple[str, str]:
    """``(client id, election node path)`` of the current leader."""
    children = sorted(g.admin.get_children(g.paths.leader), key=lambda n: n.rsplit("_", 1)[-1])
    path = f"{g.paths.leader}/{children[0]}"
    return g.admin.get(path)[0].decode(), path


def _zombie_round(
    network: Network, zk: ZooKeeperEnsemble, g: ZkGroup, rng: random.Random, table: Table, *, leader: bool
) -> dict[str, Any]:
    """One partition of one member past its session; the checks that concern this round."""
    members = sorted(g.procs)
    assert g.wait(lambda: g.converged(members), 30) is not None, f"group not converged: {g.owners()}"
    election_node = None
    if leader:
        victim, election_node = _leader(g)
    else:
        victim = rng.choice(sorted(set(g.owners().values())))
    # the round replays the victim's last commit before the partition: on a busy machine a member
    # that has just been given its queues may not have committed yet, so the fault waits for one
    committed = g.wait(lambda: any(r.get("e") == "c" for r in g_records(g, victim)), 60)
    assert committed is not None, f"{victim} made no commit within 60 s of the group converging"
    time.sleep(rng.uniform(0.2, 1.5))  # random phase against the members' pings and commits
    if leader:
        assignment_version = g.admin.exists(g.paths.assignment).version
    survivors = [m for m in members if m != victim]
    old_session = g.session_of(victim)
    down_s = SESSION_S + OWNED_BOUND_S + rng.uniform(0.0, 2.0)
    t_fault = time.monotonic()
    network.partition(g.nodes[victim])
    expired: list[float] = []  # when ZooKeeper ended the zombie's session (its registration went)

    def taken_over() -> bool:
        if not expired and g.session_of(victim) != old_session:
            expired.append(time.monotonic() - t_fault)
        return g.owned_by(survivors)

    owned_again = g.wait(taken_over, down_s)
    if owned_again is not None:
        time.sleep(max(0.0, t_fault + down_s - time.monotonic()))
    new_leader = _leader(g)[0] if leader else None
    t_heal = time.monotonic()
    network.heal(g.nodes[victim])
    rejoin = g.wait(lambda: g.converged(members), REJOIN_BOUND_S)
    t_end = time.monotonic()
    return {
        "victim": victim,
        "survivors": survivors,
        "old_session": old_session,
        "new_session": g.session_of(victim),
        "t_fault": t_fault,
        "t_heal": t_heal,
        "t_end": t_end,
        "down_s": down_s,
        "owned_again": owned_again,
        "expired": expired[0] if expired else None,
        "rejoin": rejoin,
        "election_node": election_node,
        "assignment_version": assignment_version if leader else None,
        "new_leader": new_leader,
    }


def _late_commit(network: Network, zk: ZooKeeperEnsemble, g: ZkGroup, rnd: dict[str, Any]) -> dict[str, Any] | None:
    """Replay the zombie's last fencing token (its last commit before the partition) from its namespace."""
    rows = [r for r in g_records(g, rnd["victim"]) if r.get("e") == "c" and r["t"] < rnd["t_fault"]]
    if not rows:
        return None
    last = rows[-1]
    topic, p = last["q"].rsplit("/", 1)
    action = {
        "kind": "commit",
        "group": g.name,
        "topic": topic,
        "partition": int(p),
        "offset": 10**9,
        "offset_version": last["v"],
    }
    return {"queue": last["q"], "token": last["v"], **replay(g.nodes[rnd["victim"]], zk.hosts, action)}


def g_records(g: ZkGroup, cid: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    path = g.records(cid)
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            break
    return rows


def _check_round(g: ZkGroup, records: dict[str, list[dict[str, Any]]], rnd: dict[str, Any]) -> list[str]:
    """The checks of one round on the final records; the violations found."""
    bad: list[str] = []
    v, t_fault, t_heal = rnd["victim"], rnd["t_fault"], rnd["t_heal"]
    vrows = records[v]
    held_then = held(vrows, t_fault)
    if rnd["owned_again"] is None:
        bad.append(
            f"{v} partitioned: survivors {rnd['survivors']} did not own every queue within {rnd['down_s']:.1f} s"
        )
    elif rnd["expired"] is None:
        bad.append(f"ZooKeeper did not end {v}'s session within the round ({rnd['down_s']:.1f} s)")
    elif rnd["expired"] > SESSION_S + OWNED_BOUND_S:
        bad.append(f"ZooKeeper ended {v}'s session after {rnd['expired']} s > {SESSION_S + OWNED_BOUND_S} s")
    elif (took := rnd["owned_again"] - rnd["expired"]) > OWNED_BOUND_S:
        bad.append(f"queues owned again {took:.2f} s after the session ended > {OWNED_BOUND_S} s")
    if rnd["rejoin"] is None:
        bad.append(f"{v}: group not converged within {REJOIN_BOUND_S} s of the heal")
    if rnd["new_session"] is None or rnd["new_session"] == rnd["old_session"]:
        bad.append(f"{v}: did not rejoin with a new session ({rnd['old_session']} -> {rnd['new_session']})")
    # the lease: no work after LEASE_FRACTION x session from the partition, while partitioned
    during = [r for r in vrows if r.get("e") == "p" and t_fault <= r["t1"] <= t_heal]
    lease_end = t_fault + LEASE_FRACTION * SESSION_S + LEASE_SLACK_S
    late = [r for r in during if r["t1"] > lease_end]
    if late:
        bad.append(
            f"{v} worked {len(late)} batches after its lease ran out (last ended {late[-1]['t1'] - t_fault:.2f} s in)"
        )
    late_commits = [r for r in vrows if r.get("e") == "c" and lease_end < r["t"] <= t_heal]
    if late_commits:
        bad.append(f"{v} committed after its lease ran out: {late_commits[:3]}")
    # the successor starts after the zombie stopped, on every queue the zombie held
    for q in sorted(held_then):
        stop = last_work([r for r in vrows if r.get("t1", 0) <= t_heal], {q})
        nxt = first_work_after(records, q, t_fault, exclude=v)
        if nxt is not None and nxt[0] < stop:
            bad.append(f"{q}: {nxt[1]} started at {nxt[0]:.3f} before zombie {v} stopped at {stop:.3f}")
    # the zombie let go of everything it held because its session was lost: it gave the session up
    # itself after a whole session timeout disconnected, or learned at the heal that it had expired
    revoked = {
        q for r in vrows if r.get("e") == "r" and r["t"] >= t_fault and r["why"] == "session-lost" for q in r["q"]
    }
    if held_then and not held_then <= revoked:
        bad.append(f"{v} never revoked {sorted(held_then - revoked)} with session-lost")
    return bad


def _run(network: Network, tmp_path: Path, mode: str, strategy: str, *, leader: bool, name: str) -> None:
    seed = seed_for(name)
    rng = random.Random(seed)
    table = Table(name)
    zk, g = _setup(network, tmp_path, mode, strategy)
    publications: list[tuple[float, int, str]] = []
    rounds_done: list[dict[str, Any]] = []
    try:
        if leader:

            def seen(data: bytes | None, stat: Any) -> None:
                a = parse_assignment(data)
                if a is not None:
                    publications.append((time.monotonic(), a.generation, a.leader))

            DataWatch(g.admin, g.paths.assignment, seen)
        for _ in range(rounds(2)):
            rnd = _zombie_round(network, zk, g, rng, table, leader=leader)
            rnd["late_commit"] = _late_commit(network, zk, g, rnd)
            if leader:
                rnd["late_publish"] = replay(
                    g.nodes[rnd["victim"]],
                    zk.hosts,
                    {
                        "kind": "publish",
                        "group": g.name,
                        "election_node": rnd["election_node"],
                        "assignment_version": rnd["assignment_version"],
                    },
                )
            rounds_done.append(rnd)
        time.sleep(0.5)
        g.stop_all()
        check, records = g.check()
        violations = [] if check.ok else [json.dumps(check.summary())]
        for rnd in rounds_done:
            violations += _check_round(g, records, rnd)
            lc = rnd["late_commit"]
            if lc is None:
                violations.append(f"{rnd['victim']} made no commit before the partition: nothing to replay")
            elif not lc["refused"] or lc["after"] == str(10**9):
                violations.append(f"late commit of {rnd['victim']} accepted: {lc}")
            if leader:
                lp = rnd["late_publish"]
                if not lp["refused"] or "zombie" in lp["after"]:
                    violations.append(f"publication of deposed leader {rnd['victim']} accepted: {lp}")
                if rnd["new_leader"] == rnd["victim"]:
                    violations.append(f"{rnd['victim']} still led after its partition")
                after = [p for p in publications if p[0] > rnd["t_fault"] + SESSION_S and p[2] == rnd["victim"]]
                after = [p for p in after if p[0] < rnd["t_end"]]
                if after:
                    violations.append(f"deposed leader {rnd['victim']} published after losing its session: {after}")
            table.owned_again_s.append(rnd["owned_again"] if rnd["owned_again"] is not None else float("inf"))
            table.paused_queue_s.append(paused_queue_seconds(records, rnd["t_fault"], rnd["t_end"]))
            table.extra["rejoin_s"].append(rnd["rejoin"] if rnd["rejoin"] is not None else float("inf"))
            table.extra["session_ended_s"].append(rnd["expired"] if rnd["expired"] is not None else float("inf"))
        gens = [p[1] for p in publications]
        if gens != sorted(gens):
            violations.append(f"published generations went backwards: {gens}")
        table.extra["fenced_by_zk"] = [
            float(sum(1 for r in rounds_done if r["late_commit"] and r["late_commit"]["refused"]))
        ]
        conclude(table, len(rounds_done), violations, check, seed, QUEUES)
    except BaseException:
        print(f"seed {seed} (MQBALANCE_NEMESIS_SEED={seed} to replay)")
        print(g.logs())
        print(zk.logs()[-4000:])
        raise
    finally:
        g.close()
        zk.close()


@pytest.mark.parametrize(("mode", "strategy"), [("every-member", "AVG"), ("leader", "CONSISTENT_HASH")])
def test_zombie_partitioned_from_zookeeper(network: Network, tmp_path: Path, mode: str, strategy: str) -> None:
    """Scenario 1: a member partitioned from ZooKeeper past its session while it keeps running."""
    _run(
        network,
        tmp_path,
        mode,
        strategy,
        leader=False,
        name=f"1: ZooKeeper member partitioned past its session ({mode})",
    )


def test_leader_partitioned_publications_fenced(network: Network, tmp_path: Path) -> None:
    """Scenario 5: the leader is partitioned past its session; the others elect a new one; the
    deposed leader's publications are refused."""
    _run(
        network,
        tmp_path,
        "leader",
        "sticky",
        leader=True,
        name="5: ZooKeeper leader partitioned, publications fenced (leader)",
    )
