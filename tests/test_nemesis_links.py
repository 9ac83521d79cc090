"""Scenario 2 of the network-fault tests: one-way and flaky links between ZooKeeper members and
ZooKeeper, made by a fault-injecting TCP proxy (``nemesis_proxy.py``; the kernel here has no
``netem``). Each member runs in its own network namespace and reaches ZooKeeper (in another) only
through its own proxy, listening on the root side of the member's veth.

Per round:

1. **flaky links during a burst of joins and leaves**: every member's link gets 200 ms of delay
   each way and 20 % chunk loss (a lost chunk arrives one retransmission timeout late, everything
   behind it waits); two members join and two leave, at random moments; the group must converge
   (every queue owned as the strategy prescribes for the members alive) with the faults still on —
   the time from the last join/leave to convergence is reported;
2. **one-way silence** on one member's link, longer than its session, alternating by round:
   *answers lost* (its requests reach ZooKeeper, nothing comes back) or *requests lost* (the
   reverse). The member must stop working within its lease either way, the others must own its
   queues within ``OWNED_BOUND_S`` (when only the answers are lost, that needs the member to give
   its session up: see :meth:`mqbalance.coordination.session.MemberSession.abandon`), and after the
   heal it must rejoin with a new session.

Same invariants as everywhere (the record check): no queue worked by two members at overlapping
times, nothing lost below the committed offsets, commits never backwards.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from mqbalance.coordination import LEASE_FRACTION
from nemesis_net import Network, Node
from nemesis_proxy import FaultProxy
from nemesis_zk import Table, ZkGroup, conclude, held, paused_queue_seconds, rounds, seed_for
from zk_fixture import ZooKeeperEnsemble

pytestmark = pytest.mark.nemesis
pytest_plugins = ["nemesis_plugin"]  # `network`

SESSION_S = 4.0
QUEUES = 12
DELAY_S = 0.2
LOSS = 0.2
#: Convergence of the burst on flaky links: every-member rebalances retry on conflicts, each attempt
#: costs a few round trips of 0.4 s plus retransmission stalls.
CONVERGE_BOUND_S = 30.0
#: After one-way silence begins, the others own its queues within ``OWNED_BOUND_S[direction]``:
#: requests lost — ZooKeeper hears nothing, the session expires after SESSION_S, then one rebalance
#: (4 s of slack); answers lost — the member's reconnection attempts keep renewing its session on
#: the server, so it lasts until the member gives it up (``MemberSession.abandon``): disconnected
#: after ⅔ of the session (kazoo's read timeout), gives up after a whole session timeout
#: disconnected (checked every ¼ session), then ZooKeeper expires the session one session timeout
#: after the last attempt, then one rebalance: ≈ 2.9 × SESSION_S + 3 s of slack.
OWNED_BOUND_S = {"requests-lost": SESSION_S + 4.0, "answers-lost": 3 * SESSION_S + 3.0}
LEASE_SLACK_S = 0.15


class Links:
    """One proxy per member node, all to the one ZooKeeper server."""

    def __init__(self, zk: ZooKeeperEnsemble, seed: int) -> None:
        self.zk, self.seed = zk, seed
        self.proxies: dict[str, FaultProxy] = {}

    def hosts_for(self, node: Node) -> str:
        target = (self.zk.nodes[0].addr, self.zk.CLIENT_PORT)
        p = FaultProxy((node.gateway, 0), target, seed=self.seed + len(self.proxies))
        self.proxies[node.label] = p.start()
        return f"{p.address[0]}:{p.address[1]}"

    def flaky(self, on: bool) -> None:
        for p in self.proxies.values():
            for f in (p.up, p.down):
                f.delay, f.loss = (DELAY_S, LOSS) if on else (0.0, 0.0)

    def close(self) -> None:
        for p in self.proxies.values():
            p.close()


def _spawn(network: Network, g: ZkGroup, links: Links, cid: str) -> None:
    node = network.node(cid)
    g.spawn(cid, node, links.hosts_for(node))


def _burst(network: Network, g: ZkGroup, links: Links, rng: random.Random, serial: list[int]) -> dict[str, Any]:
    """Two joins and two leaves on flaky links; time to converge after the last one."""
    links.flaky(True)
    t_fault = time.monotonic()
    changes = ["join", "join", "leave", "leave"]
    rng.shuffle(changes)
    for change in changes:
        time.sleep(rng.uniform(0.0, 1.5))
        if change == "join":
            cid = f"m{serial[0]}"
            serial[0] += 1
            _spawn(network, g, links, cid)
        else:
            g.leave(rng.choice(g.live()))
    t_last = time.monotonic()
    converged = g.wait(lambda: g.converged(g.live()), CONVERGE_BOUND_S)
    for cid in g.leaving:  # a graceful leave completes, even on a flaky link
        g.procs[cid].wait(30)
    links.flaky(False)
    t_end = time.monotonic()
    return {"kind": "burst", "converged": converged, "t_fault": t_fault, "t_last": t_last, "t_end": t_end}


def _one_way(g: ZkGroup, links: Links, rng: random.Random, direction: str) -> dict[str, Any]:
    """One member's link silent in one direction for longer than its session."""
    members = g.live()
    assert g.wait(lambda: g.converged(members), 30) is not None, f"not converged: {g.owners()}"
    time.sleep(rng.uniform(0.2, 1.0))
    victim = rng.choice(sorted(set(g.owners().values())))
    survivors = [m for m in members if m != victim]
    proxy = links.proxies[g.nodes[victim].label]
    old_session = g.session_of(victim)
    down_s = OWNED_BOUND_S[direction] + rng.uniform(0.0, 2.0)
    t_fault = time.monotonic()
    (proxy.down if direction == "answers-lost" else proxy.up).silent = True
    owned_again = g.wait(lambda: g.owned_by(survivors), down_s)
    if owned_again is not None:
        time.sleep(max(0.0, t_fault + down_s - time.monotonic()))
    t_heal = time.monotonic()
    proxy.heal()
    rejoin = g.wait(lambda: g.converged(members), 20)
    if rejoin is None:
        print(f"not converged after the heal: members {members}, owners {g.owners()}, ids {g.registered()}")
    return {
        "kind": direction,
        "victim": victim,
        "survivors": survivors,
        "old_session": old_session,
        "new_session": g.session_of(victim),
        "owned_again": owned_again,
        "rejoin": rejoin,
        "down_s": down_s,
        "t_fault": t_fault,
        "t_heal": t_heal,
        "t_end": time.monotonic(),
    }


def _check_one_way(records: dict[str, list[dict[str, Any]]], rnd: dict[str, Any]) -> list[str]:
    bad = []
    v, t_fault, t_heal = rnd["victim"], rnd["t_fault"], rnd["t_heal"]
    what = f"{v}, {rnd['kind']}"
    if rnd["owned_again"] is None:
        bad.append(f"{what}: survivors did not own every queue within {rnd['down_s']:.1f} s")
    elif rnd["owned_again"] > OWNED_BOUND_S[rnd["kind"]]:
        bad.append(f"{what}: queues owned again after {rnd['owned_again']:.2f} s")
    if rnd["rejoin"] is None:
        bad.append(f"{what}: group not converged within 20 s of the heal")
    if rnd["new_session"] in (None, rnd["old_session"]):
        bad.append(f"{what}: did not rejoin with a new session")
    lease_end = t_fault + LEASE_FRACTION * SESSION_S + LEASE_SLACK_S
    late = [r for r in records[v] if r.get("e") == "p" and lease_end < r["t1"] <= t_heal]
    if late:
        bad.append(f"{what}: worked {len(late)} batches after its lease ran out")
    if held(records[v], t_fault) and not any(
        r.get("e") == "r" and r["t"] >= t_fault and r["why"] == "session-lost" for r in records[v]
    ):
        bad.append(f"{what}: never revoked on the lost session")
    return bad


@pytest.mark.parametrize(("mode", "strategy"), [("every-member", "AVG"), ("leader", "CONSISTENT_HASH")])
def test_flaky_and_one_way_links(network: Network, tmp_path: Path, mode: str, strategy: str) -> None:
    """Scenario 2: 20 % loss and 200 ms delay during joins and leaves; one-way silence past the session."""
    name = f"2: ZooKeeper flaky and one-way links ({mode})"
    seed = seed_for(name)
    rng = random.Random(seed)
    zk = ZooKeeperEnsemble([network.node("zk")], tmp_path / "zk").start()
    g = ZkGroup(zk.hosts, f"links-{mode}", mode, strategy, tmp_path, queues=QUEUES, session_s=SESSION_S)
    links = Links(zk, seed)
    table = Table(name)
    done: list[dict[str, Any]] = []
    serial = [0]
    try:
        for _ in range(3):
            _spawn(network, g, links, f"m{serial[0]}")
            serial[0] += 1
        assert g.wait(lambda: g.converged(g.live()), 30) is not None, "the group never converged"
        # one round each by default: the two tests cover both directions between them
        directions = ["answers-lost", "requests-lost"] if mode == "every-member" else ["requests-lost", "answers-lost"]
        for r in range(rounds(1)):
            done.append(_burst(network, g, links, rng, serial))
            done.append(_one_way(g, links, rng, directions[r % 2]))
        time.sleep(0.5)
        g.stop_all()
        check, records = g.check()
        violations = [] if check.ok else [json.dumps(check.summary())]
        for rnd in done:
            if rnd["kind"] == "burst":
                if rnd["converged"] is None:
                    violations.append(f"burst: no convergence within {CONVERGE_BOUND_S} s of the last join/leave")
                table.extra["converge_s[flaky burst]"].append(rnd["converged"] or float("inf"))
            else:
                violations += _check_one_way(records, rnd)
                table.owned_again_s.append(rnd["owned_again"] if rnd["owned_again"] is not None else float("inf"))
                table.extra[f"rejoin_s[{rnd['kind']}]"].append(rnd["rejoin"] or float("inf"))
            table.paused_queue_s.append(paused_queue_seconds(records, rnd["t_fault"], rnd["t_end"]))
        table.extra["lost_chunks"] = [float(sum(p.lost_chunks for p in links.proxies.values()))]
        conclude(table, len(done) // 2, violations, check, seed, QUEUES)
    except BaseException:
        print(f"seed {seed} (MQBALANCE_NEMESIS_SEED={seed} to replay)")
        print(g.logs())
        raise
    finally:
        links.close()
        g.close()
        zk.close()
